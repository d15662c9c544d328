/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-task state (struct sis_task_ctx), kept in task storage,
 * and the run-length average that stopping keeps in it: steals, pulls and
 * kicks estimate a queued task's wait from it.
 */
#ifndef __SIS_TASK_BPF_H
#define __SIS_TASK_BPF_H

#include <scx/common.bpf.h>
#include "calls.bpf.h"
#include "types.bpf.h"

/* Per task (task storage): utilization, last CPU (for migrations), run start and length. */
struct sis_task_ctx {
	struct sis_pelt util;
	u64 running_at;
	u64 stopped_at; /* when it last stopped running: its cache is warm for a while after */
	u64 queued_at;	/* when it was queued in a CPU's DSQ (steal.bpf.h's expected wait) */
	u64 avg_run;	/* average length of a run, ns (an EWMA; see run_avg_update()) */
	u64 wakeq_at;	/* when it was queued in a wakequeue shard */
	s32 wakeq_slot; /* that shard's slot, -1 when not in one */
	s32 last_cpu;
	/* The CPU whose clock its vtime was last bounded to (task_vtime()); -1: none. */
	s32 vt_cpu;
	u32 slept; /* it blocked since it last ran: the sleeper's vtime floor applies */
	/* Queued at its slice end, not at a wakeup: its vtime records service (pull.bpf.h). */
	u32 requeued;
	u64 moved_at; /* when a pull or steal last moved it */
	/* When it was last woken (or forked) and has not run since; 0 once it runs. */
	u64 woken_at;
	/* The sync stage put it on its waker's CPU, queues empty: the waker is about to sleep. */
	u32 placed_sync;
	/* Created by a fork (init_task): ops.enable starts it at its parent's vtime. */
	u32 forked;
	/* The address space own_exe was found for (latency.bpf.h, runs_scx_sis()). */
	u64 exe_mm;
	/* That address space runs the daemon's executable, as root. */
	u32 own_exe;
	/*
	 * While it waits in a CPU's DSQ: its key there less its vtime, the run it
	 * is expected to make (vtime.bpf.h, task_key()); 0 otherwise.
	 */
	u64 key_gap;
	/* The trace (trace.bpf.h): what brought the task here since it last ran, and when. */
	u64 trace_decided_at;
	s32 trace_cpu;
	u16 trace_cause;
	u8 trace_cause_kind;
};

enum {
	/* Weight of the newest run in a task's average run length: 1/4 (shift 2). */
	SIS_RUN_AVG_SHIFT = 2,
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sis_task_ctx);
} task_ctxs SEC(".maps");

/* @p's context, or NULL if it has none: every caller copes with NULL. */
static __always_inline struct sis_task_ctx *task_ctx(struct task_struct *p)
{
	calls_add(1);
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/*
 * @p can run only on the CPU it is on: pinned there, or migration-disabled.
 * No other CPU may take it from a queue, so no stealer should be woken for it.
 */
static __always_inline bool bound_to_cpu(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1 || is_migration_disabled(p);
}

/* At stopping: fold a run of @ran ns into the task's average run length. */
static __always_inline void run_avg_update(struct sis_task_ctx *tctx, u64 ran)
{
	tctx->avg_run =
		tctx->avg_run - (tctx->avg_run >> SIS_RUN_AVG_SHIFT) + (ran >> SIS_RUN_AVG_SHIFT);
}

#endif /* __SIS_TASK_BPF_H */
