/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The placement trace: a record per decision, queueing, move and run, for
 * `scx_sis trace`, in a ring buffer the daemon pins. Off, it costs one
 * tunables read where the caller has no snapshot, and no reserve.
 *
 * What moved a task: each decision and each move writes its cause into the
 * task's context, and the task's next run reports it and clears it, so a
 * run on another CPU than last time names the path or the move behind it.
 *
 * Records are submitted without waking the reader (BPF_RB_NO_WAKEUP): a
 * wakeup per record would send an irq_work from inside the scheduler on
 * every event, and the reader drains the buffer on its own clock anyway.
 * A record that finds the buffer full is counted as dropped, never lost
 * silently.
 */
#ifndef __SIS_TRACE_BPF_H
#define __SIS_TRACE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"

/* Sized by the daemon before load (--trace-buffer-kib); this is the default. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SIS_TRACE_RING_KIB * 1024);
} trace_ring SEC(".maps");

/*
 * For callers without a snapshot of the tunables: the live tunables when the
 * trace is on and no writer is inside the copy (its count is even), else
 * NULL. Its filter fields are read in place, not copied: a `tune` that starts
 * during one record can only misfilter that record.
 */
static __always_inline const struct sis_tunables *trace_live(void)
{
	u32 zero = 0;
	const struct sis_tunables *live = bpf_map_lookup_elem(&tunables, &zero);

	return live && !(READ_ONCE(live->seq) & 1) && live->trace ? live : NULL;
}

/* @p is a task the trace follows: all of them, or the tgid and comm asked for. */
static __always_inline bool trace_wants(const struct task_struct *p, const struct sis_tunables *t)
{
	u64 want[SIS_COMM_LEN / 8], comm[SIS_COMM_LEN / 8];

	if (t->trace_tgid && p->tgid != t->trace_tgid)
		return false;
	if (!t->trace_comm[0])
		return true;
	/*
	 * Whole words, not a loop over bytes: these tests are inlined into
	 * select_cpu, enqueue and dispatch, and a byte loop's branches would
	 * multiply what the verifier walks there. The kernel pads comm with NULs
	 * (strscpy_pad), and the daemon pads the filter, so the words match.
	 */
	__builtin_memcpy(want, t->trace_comm, sizeof(want));
	if (bpf_probe_read_kernel(comm, sizeof(comm), p->comm))
		return false;
	return comm[0] == want[0] && comm[1] == want[1];
}

/* A zeroed record of @kind about @p (NULL: no task), or NULL, counted, when the buffer is full. */
static __always_inline struct sis_trace_event *trace_reserve(u16 kind, struct task_struct *p)
{
	struct sis_trace_event *e = bpf_ringbuf_reserve(&trace_ring, sizeof(*e), 0);

	if (!e) {
		stat_inc(SIS_CNT_TRACE_DROPS);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts = now_ns();
	e->kind = kind;
	e->from_cpu = -1;
	e->waker_cpu = -1;
	if (p) {
		e->pid = p->pid;
		e->tgid = p->tgid;
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	}
	return e;
}

static __always_inline void trace_submit(struct sis_trace_event *e)
{
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	stat_inc(SIS_CNT_TRACE_EVENTS);
}

/* What brought @p to @cpu, where it will run: read (and cleared) by its next run. */
static __always_inline void trace_cause(struct task_struct *p, u8 kind, u16 cause, s32 cpu,
					u64 decided_at)
{
	struct sis_task_ctx *tctx = task_ctx(p);

	if (!tctx)
		return;
	tctx->trace_cause_kind = kind;
	tctx->trace_cause = cause;
	tctx->trace_cpu = cpu;
	if (decided_at)
		tctx->trace_decided_at = decided_at;
}

/* select_cpu placed @p on @cpu by @path, starting at @start and costing @cost ns. */
static __always_inline void trace_decision(struct task_struct *p, s32 prev, u64 wake_flags, s32 cpu,
					   u32 path, bool idle, u32 nr_scan, u32 tested, u64 start,
					   u64 cost)
{
	struct sis_trace_event *e;

	trace_cause(p, SIS_CAUSE_PATH, path, cpu, start);
	e = trace_reserve(SIS_TRACE_DECISION, p);
	if (!e)
		return;
	e->ts = start;
	e->ns = cost;
	e->cpu = cpu;
	e->from_cpu = prev;
	e->waker_cpu = bpf_get_smp_processor_id();
	e->wake_flags = wake_flags;
	e->cause = path;
	e->idle = idle;
	e->nr_scan = nr_scan;
	e->tested = tested;
	trace_submit(e);
}

/* ops.enqueue queued @p to wait in @queue of @cpu, behind @depth others. */
static __always_inline void trace_queued(struct task_struct *p, s32 cpu, enum sis_queue queue,
					 u64 depth)
{
	struct sis_trace_event *e = trace_reserve(SIS_TRACE_QUEUED, p);

	if (!e)
		return;
	e->cpu = cpu;
	e->cause = queue;
	e->depth = depth;
	trace_submit(e);
}

/* @p (NULL for a kick with no task in view) moved, or a CPU was kicked, from @from to @to. */
static __always_inline void trace_move(struct task_struct *p, enum sis_move why, s32 from, s32 to)
{
	struct sis_task_ctx *tctx = p ? task_ctx(p) : NULL;
	struct sis_trace_event *e;
	u64 now = now_ns();

	/* A kick (the last reasons) wakes a CPU; it moves nothing by itself. */
	if (p && why < SIS_MOVE_TICK_KICK) {
		struct sis_cpu_ctx *cctx = cpu_ctx(to);

		trace_cause(p, SIS_CAUSE_MOVE, why, to, 0);
		if (cctx)
			cctx->trace_moved = why + 1;
	}
	e = trace_reserve(SIS_TRACE_MOVE, p);
	if (!e)
		return;
	e->cpu = to;
	e->from_cpu = from;
	e->cause = why;
	if (tctx && tctx->queued_at && now > tctx->queued_at)
		e->ns = now - tctx->queued_at;
	trace_submit(e);
}

/*
 * scx_bpf_dsq_move_to_local() of @dsq, on the dispatching CPU, traced as
 * @why when the trace is on. The head is peeked before the move, which takes
 * the first task this CPU may run: the head, unless affinity passes it over.
 * A task already on this CPU (its own queue, its own shard) did not move.
 * Global: before 7.1 the peek is a DSQ iterator, which the verifier would
 * otherwise walk at every one of the many dispatch sources that move.
 */
__noinline int move_traced(u64 dsq, u32 why)
{
	const struct sis_tunables *t = trace_live();
	struct task_struct *head;
	s32 cpu, from;

	if (!t)
		return dsq_move_to_local(dsq);
	head = dsq_head(dsq);
	/* Before the move, which makes this CPU the task's. */
	from = head ? task_cpu(head) : -1;
	if (!dsq_move_to_local(dsq))
		return false;
	if (!head)
		return true;
	cpu = bpf_get_smp_processor_id();
	if (from != cpu && trace_wants(head, t))
		trace_move(head, why, from, cpu);
	return true;
}

/*
 * @p starts running on @cpu, last run on @last (-1: never): what brought it, and after how long.
 * The cause is the task's own (its decision or the move that took it) where it sent the task
 * here. Otherwise a move to this CPU since a task last started here: a move peeks the head it
 * expects to take, and when another CPU took that head first, the task it did take is the one
 * starting now.
 */
static __always_inline void trace_run(struct task_struct *p, struct sis_task_ctx *tctx, s32 cpu,
				      s32 last, u64 now)
{
	struct sis_trace_event *e = trace_reserve(SIS_TRACE_RUN, p);
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	u32 moved = cctx ? cctx->trace_moved : 0;

	if (cctx)
		cctx->trace_moved = 0;

	if (e) {
		e->ts = now;
		e->cpu = cpu;
		e->from_cpu = last;
		e->migrated = last >= 0 && last != cpu;
		/*
		 * A cause that sent the task elsewhere did not bring it here:
		 * something untraced did (a move whose peek saw another head).
		 * Reported as no cause, so that it shows as unexplained rather
		 * than as the wrong stage.
		 */
		if (tctx && tctx->trace_cause_kind && tctx->trace_cpu == cpu) {
			e->cause_kind = tctx->trace_cause_kind;
			e->cause = tctx->trace_cause;
		} else if (moved && e->migrated) {
			e->cause_kind = SIS_CAUSE_MOVE;
			e->cause = moved - 1;
		}
		if (tctx) {
			e->decision_ts = tctx->trace_decided_at;
			if (tctx->trace_decided_at && now > tctx->trace_decided_at)
				e->ns = now - tctx->trace_decided_at;
		}
		trace_submit(e);
	}
	if (tctx) {
		tctx->trace_cause_kind = SIS_CAUSE_NONE;
		tctx->trace_decided_at = 0;
	}
}

static __always_inline void trace_stop(struct task_struct *p, s32 cpu)
{
	struct sis_trace_event *e = trace_reserve(SIS_TRACE_STOP, p);

	if (!e)
		return;
	e->cpu = cpu;
	trace_submit(e);
}

#endif /* __SIS_TRACE_BPF_H */
