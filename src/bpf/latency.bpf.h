/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What bounds a woken task's wait behind a busy CPU, as EEVDF bounds it:
 * a slice that shrinks as the CPU's queue grows, so a task woken behind the
 * queue waits about one slice however long the queue is, and wakeup
 * preemption of a running task that has had more than its share beside the
 * wakee. Both keep a floor of steal-min scaled by the pace (pace.bpf.h): a
 * task always runs at least what a switch and a migration cost, so a
 * CPU-bound task keeps its throughput under any stream of wakeups. And the
 * wait itself, wakeup (or fork) to running, goes to a per-LLC histogram
 * (wake_wait_hist), so it shows without a benchmark.
 */
#ifndef __SIS_LATENCY_BPF_H
#define __SIS_LATENCY_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "cpu_dsq.bpf.h"
#include "pace.bpf.h"
#include "pelt.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"

/*
 * The daemon's executable (its inode number and the kernel's device number of
 * its file system), written before load; 0: none.
 */
const volatile u64 daemon_exe_ino;
const volatile u32 daemon_exe_dev;

/* A thread of scx_sis is served first while it uses under half a CPU (PELT). */
#define SIS_OWN_UTIL_MAX (SIS_CAPACITY / 2)

/*
 * @p runs the daemon's executable as root: the daemon itself, or one of
 * its clients (monitor, tune, ab, trace). Looked up once per address space
 * (an exec gives a new one) and kept in @tctx.
 */
static __always_inline bool runs_scx_sis(const struct task_struct *p, struct sis_task_ctx *tctx)
{
	struct mm_struct *mm = p->mm;
	struct inode *inode;

	if (!daemon_exe_ino || !mm)
		return false;
	if (tctx->exe_mm == (u64)mm)
		return tctx->own_exe;
	tctx->exe_mm = (u64)mm;
	inode = mm->exe_file ? mm->exe_file->f_inode : NULL;
	tctx->own_exe = inode && inode->i_ino == daemon_exe_ino &&
			inode->i_sb->s_dev == daemon_exe_dev && p->cred->euid.val == 0;
	return tctx->own_exe;
}

/*
 * Tasks that go ahead of their CPU's queue, into its local DSQ: a per-CPU
 * kernel thread (a kworker, ksoftirqd: no other CPU may take its work, and
 * what waits on that work waits with it), and scx_sis's own threads, the
 * daemon's and its clients', so that a stats, tune or ab request answers
 * under the load the scheduler schedules. A request crosses several threads
 * (the client starting up, scx_stats' listener, per-client and proxy
 * threads, the poll loop), some new, some spinning for a reply: each turn
 * must skip the queue, or each waits behind it. The bound is the thread's
 * share of a CPU, not its run length, which an emulator stretches: one that
 * uses more than half a CPU takes its turn in the queue like any task, so a
 * busy daemon or client cannot starve the machine.
 */
static __always_inline bool served_first(const struct task_struct *p, struct sis_task_ctx *tctx)
{
	if ((p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1)
		return true;
	/* Decayed to now: its last value is the share at its last run's end. */
	return tctx && runs_scx_sis(p, tctx) &&
	       sis_pelt_peek(&tctx->util, now_ns(), false) < SIS_OWN_UTIL_MAX;
}

/*
 * At select_cpu: @p was woken (or forked) at @now. @sync: the sync stage put
 * it on the waker's CPU, whose queues were empty, so it runs once the waker
 * sleeps.
 */
static __always_inline void wake_stamp(struct task_struct *p, u64 now, bool sync)
{
	struct sis_task_ctx *tctx = task_ctx(p);

	if (!tctx)
		return;
	tctx->woken_at = now;
	tctx->placed_sync = sync;
}

/* At running: a woken or new task waited @ns for its CPU. */
static __always_inline void stat_wake_wait(struct sis_llc_stats *s, u64 ns)
{
	if (s)
		stat_duration(s->wake_wait_hist, &s->counters[SIS_CNT_WAKE_WAIT_NS], ns);
	stat_add(s, SIS_CNT_WAKE_WAITS, 1);
}

/*
 * At running on @cpu: @p's slice is a whole one when nothing waits there,
 * else the slice divided among the waiting and @p (bpfland's slice_max /
 * nr_waiting), never below steal-min scaled by the pace. keep_prev() gives a
 * task that is still the queue's minimum a whole slice again.
 */
static __always_inline void slice_share(struct task_struct *p, s32 cpu, struct sis_cpu_ctx *cctx,
					struct sis_llc_stats *s, const struct sis_tunables *t)
{
	u64 nr = dsq_nr_queued(cpu_dsq(cpu)), slice, floor;

	if (!nr || t->plain)
		return;
	slice = tun_slice_ns(t) / (nr + 1);
	floor = steal_wait_min_ns(t, cctx);
	if (slice < floor)
		slice = floor;
	if (slice >= p->scx.slice)
		return;
	task_set_slice(p, slice);
	stat_add(s, SIS_CNT_SLICE_SHORTENED, 1);
}

/*
 * The running task's virtual deadline: the vtime it started at plus the run
 * it was expected to make (its average, up to a slice), at its weight, as
 * task_key() keyed it in the queue.
 */
static __always_inline u64 curr_deadline(const struct sis_cpu_ctx *cctx,
					 const struct sis_tunables *t)
{
	u64 run = tun_slice_ns(t);

	if (cctx->curr_avg_run < run)
		run = cctx->curr_avg_run;
	return cctx->curr_vtime + vtime_charge(run, cctx->curr_weight);
}

/*
 * The deadline a queued task must beat to take @cctx's CPU at @now: the
 * running task's, or the vtime it has reached if it ran past it.
 */
static __always_inline u64 curr_bar(const struct sis_cpu_ctx *cctx, u64 now,
				    const struct sis_tunables *t)
{
	u64 reached = curr_vtime_at(cctx, now), deadline = curr_deadline(cctx, t);

	return time_before(reached, deadline) ? deadline : reached;
}

/*
 * EEVDF's wakeup preemption, in vtime: the wakee's virtual deadline (its
 * vtime plus the run it is expected to make, its average up to a slice, at
 * its weight) is earlier than the running task's deadline, or than the vtime
 * that task has reached if it ran past its deadline. A running task whose
 * vtime still trails the wakee's (it waited long in a queue) is preempted
 * for a wakee that asks for less: deadline against deadline, as EEVDF
 * compares them. The running task keeps the CPU for as long as the wakee is
 * expected to hold it, and never less than steal-min (scaled by the pace)
 * unless the wakee's run is shorter: a stream of wakeups cannot have it
 * switch out before it did more work than each wakee will, while a short
 * wakee (a timer's) waits for no more than its own run. A task that can run
 * nowhere else (@p bound: a per-CPU kthread, a pinned or migration-disabled
 * task) preempts as soon as it is earlier in vtime, as no other CPU can
 * take it. The verdict is the counter it goes to: SIS_CNT_WAKEUP_PREEMPTS
 * to preempt, SIS_CNT_NOPREEMPT_HOLD or SIS_CNT_NOPREEMPT_DEADLINE for why
 * not, SIS_NR_COUNTERS when wakeup preemption is off.
 */
static __always_inline u32 wakeup_verdict(struct task_struct *p, struct sis_task_ctx *tctx,
					  struct sis_cpu_ctx *cctx, u64 vtime, u64 now,
					  const struct sis_tunables *t)
{
	u64 run = tun_slice_ns(t), hold;

	if (bound_to_cpu(p))
		return time_before(vtime, curr_vtime_at(cctx, now)) ? SIS_CNT_WAKEUP_PREEMPTS
								    : SIS_CNT_NOPREEMPT_DEADLINE;
	if (!t->wakeup_preempt)
		return SIS_NR_COUNTERS;
	if (tctx && tctx->avg_run < run)
		run = tctx->avg_run;
	hold = steal_wait_min_ns(t, cctx);
	if (run < hold)
		hold = run;
	if (time_since(now, cctx->curr_at) < hold)
		return SIS_CNT_NOPREEMPT_HOLD;
	return time_before(vtime + vtime_charge(run, p->scx.weight), curr_bar(cctx, now, t))
		       ? SIS_CNT_WAKEUP_PREEMPTS
		       : SIS_CNT_NOPREEMPT_DEADLINE;
}

/*
 * At a tick, EEVDF's check of the running task against the queue: the
 * CPU's first queued task, keyed @key (its virtual deadline, task_key()),
 * beats the running task's deadline and that task has run steal-min (scaled
 * by the pace). A wakee that found the running task within its hold at
 * wakeup, or a task queued again behind one whose slice keep_prev() renewed,
 * then runs at the next tick, not at the slice's end.
 */
static __always_inline bool tick_preempts(u64 key, const struct sis_cpu_ctx *cctx, u64 now,
					  const struct sis_tunables *t)
{
	if (!t->wakeup_preempt || !cctx->running ||
	    time_since(now, cctx->curr_at) < steal_wait_min_ns(t, cctx))
		return false;
	return time_before(key, curr_bar(cctx, now, t));
}

#endif /* __SIS_LATENCY_BPF_H */
