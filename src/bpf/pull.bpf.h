/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pulls for owed service: at the end of its task's slice, a busy CPU takes
 * a task that waits on another CPU while owed service.
 *
 * Why: with a queue per CPU, three loops on two CPUs put two on one CPU and
 * one on the other, and nothing moves them (50/50/100% of a CPU). Stealing
 * whenever a queue is not empty would fix that at the price of a migration
 * per slice. Instead the busy CPU compares the vtime it would run next with
 * the other CPUs' waiting tasks and takes one only once it lags by the
 * balance lag: the loops rotate, each move pays for a lag's worth of
 * fairness, and a queue whose tasks keep pace is left alone.
 *
 * What counts as owed. Vtimes are comparable across CPUs only where they
 * record service received: a task requeued at its slice end carries the
 * vtime its runs earned. A woken task's vtime was floored to its own CPU's
 * clock at wakeup (vtime.bpf.h), so its lag against another CPU measures
 * how far the two clocks drifted, not service owed; such a task is pulled
 * only once it has waited a whole lag. No task moves twice within a lag
 * unless it waited that long, and none is pulled from a CPU that would run
 * it within steal-min anyway, or that has no more runnable tasks than the
 * puller (as the kernel balances only an imbalance: with loads alike, the
 * lag is the noise of which task happened to run last, and moving it buys
 * nothing the next slice would not undo). Runnable counts the puller's own
 * task and the victim's running task only if it is CPU-bound: a task that
 * waits behind a short run (a reader that woke beside a CPU hog) runs there
 * in a moment, and pulling it would leave that CPU idle once the short run
 * sleeps, beside two hogs sharing the puller.
 */
#ifndef __SIS_PULL_BPF_H
#define __SIS_PULL_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "frame.bpf.h"
#include "cpu_dsq.bpf.h"
#include "move.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"
#include "wait.bpf.h"
#include "workmask.bpf.h"

enum {
	/* A pull from another LLC needs this many balance lags (a cold cache has to pay). */
	SIS_REMOTE_LAGS = 2,
};

/*
 * The tasks on @victim that will want it for a while: those queued, and the
 * running one if its average run is at least @bound_run (CPU-bound; a short
 * run is about to sleep and leave the CPU to its queue).
 */
static __always_inline u64 runnable_load(s32 victim, u64 bound_run)
{
	struct sis_cpu_ctx *vc = cpu_ctx(victim);
	u64 nr = dsq_nr_queued(cpu_dsq(victim));

	return vc && vc->running && vc->curr_avg_run >= bound_run ? nr + 1 : nr;
}

/*
 * Whether @victim's first task that @cpu may take may be pulled (the rules
 * above, at the lag and steal-min balance_pull() left in @cpu's frame)
 * and trails @limit; its vtime and pid go to the frame's judged_vtime and
 * judged_pid. Global, so that the verifier checks the DSQ iterator once.
 */
__noinline int pull_judge(s32 cpu, s32 victim, u64 now, u64 limit)
{
	struct sis_cpu_frame *f = cpu_frame(cpu);
	u64 lag = f->pull_lag, min = f->pull_min, waited;
	struct task_struct *head;
	struct sis_task_ctx *h;

	if (victim < 0 || victim == cpu || !work_maybe(victim))
		return 0;
	head = first_movable(cpu_dsq(victim), cpu);
	if (!head || !time_before(head->scx.dsq_vtime, limit))
		return 0;
	h = task_ctx(head);
	if (!h)
		return 0;
	waited = time_since(now, h->queued_at);
	if (waited < lag && (!h->requeued || time_since(now, h->moved_at) < lag))
		return 0;
	/* The task at the head of its queue waits only what the running task has left. */
	if (!wait_exceeds(victim, 1, now, min))
		return 0;
	if (runnable_load(victim, f->pull_bound_run) <= f->pull_queued)
		return 0;
	f->judged_vtime = head->scx.dsq_vtime;
	f->judged_pid = head->pid;
	return 1;
}

/* What a pull looks for, and the best candidate so far. */
struct pull_search {
	s32 cpu;
	u64 now;
	u64 limit; /* a candidate's vtime must be before this */
	u64 best;  /* the lowest candidate vtime so far */
	s32 found; /* its CPU, -1 for none */
	s32 pid;
};

static __always_inline void pull_consider(struct pull_search *ps, struct sis_cpu_frame *f,
					  s32 victim)
{
	if (!pull_judge(ps->cpu, victim, ps->now, ps->limit))
		return;
	if (ps->found >= 0 && !time_before(f->judged_vtime, ps->best))
		return;
	ps->best = f->judged_vtime;
	ps->found = victim;
	ps->pid = f->judged_pid;
}

/* The CPUs of @llc. */
static __always_inline void pull_search_llc(struct pull_search *ps, struct sis_cpu_frame *f,
					    u32 llc)
{
	u32 n = llc_size(llc), i;

	calls_loop();
	bpf_for (i, 0, n) {
		calls_pass();
		pull_consider(ps, f, llc_cpu_at(llc, i));
	}
}

/* The CPUs of every LLC but @llc that may have work queued. */
static __always_inline void pull_search_elsewhere(struct pull_search *ps, struct sis_cpu_frame *f,
						  u32 llc)
{
	s32 victim;

	calls_loop();
	bpf_for (victim, 0, nr_cpus) {
		calls_pass();
		if (llc_of(victim) != llc && llc_work_maybe(llc_of(victim)))
			pull_consider(ps, f, victim);
	}
}

/*
 * The task a pull moved trails @limit, as its judge found: counted when not,
 * which would mean the move took a task nobody judged (a pinned head passed
 * over for whatever followed it).
 */
static __always_inline void pull_check_moved(const struct sis_cpu_frame *f, u64 limit)
{
	if (!time_before(f->judged_vtime, limit))
		stat_inc(SIS_CNT_PULLS_UNLAGGED);
}

/*
 * Pull for busy @cpu, whose next task has vtime @next: the most lagging
 * task owed service in the LLC, or, at most once per balance lag, in
 * another LLC at twice the lag. Global: the verifier checks it once.
 */
__noinline int pull_owed(s32 cpu, u32 llc, u64 now, u64 next)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_cpu_frame *f = cpu_frame(cpu);
	u64 lag = f->pull_lag;
	struct pull_search ps = {
		.cpu = cpu,
		.now = now,
		.found = -1,
	};

	if (!cctx)
		return 0;
	if (llc_work_maybe(llc)) {
		ps.limit = next - lag;
		f->pull_limit = ps.limit;
		pull_search_llc(&ps, f, llc);
		if (ps.found >= 0 &&
		    move_judged(cpu_dsq(ps.found), cpu, ps.pid, now, SIS_MOVE_PULL)) {
			stat_inc(SIS_CNT_PULLS);
			pull_check_moved(f, ps.limit);
			return 1;
		}
	}
	if (nr_llcs < 2 || !other_llc_work_maybe(llc) || now - cctx->remote_balance_at < lag)
		return 0;
	cctx->remote_balance_at = now;
	ps.limit = next - SIS_REMOTE_LAGS * lag;
	f->pull_limit = ps.limit;
	ps.found = -1;
	pull_search_elsewhere(&ps, f, llc);
	if (ps.found >= 0 &&
	    move_judged(cpu_dsq(ps.found), cpu, ps.pid, now, SIS_MOVE_PULL_REMOTE)) {
		stat_inc(SIS_CNT_PULLS_REMOTE);
		pull_check_moved(f, ps.limit);
		return 1;
	}
	return 0;
}

/* At the end of @prev's slice on busy @cpu: pull_owed(), when some CPU may have work queued. */
static __always_inline bool balance_pull(struct task_struct *prev, s32 cpu, u32 llc, u64 now,
					 const struct sis_tunables *t)
{
	struct sis_cpu_frame *f = cpu_frame(cpu);
	u64 next, own;

	if (!llc_work_maybe(llc) && !(nr_llcs > 1 && other_llc_work_maybe(llc)))
		return false;
	/*
	 * Unscaled by the pace (pace.bpf.h): a pull serves owed service between
	 * CPU-bound tasks, whose runs last a slice on any machine. A scaled
	 * steal-min can exceed the slice and would then forbid every such pull
	 * (the victim's task always has less than that left), so N+1 CPU-bound
	 * tasks on N CPUs would not share them evenly.
	 */
	f->pull_lag = tun_balance_lag_ns(t);
	f->pull_min = tun_steal_min_ns(t);
	/* @prev is still runnable: it counts beside what waits here. */
	f->pull_queued = dsq_nr_queued(cpu_dsq(cpu)) + 1;
	f->pull_bound_run = tun_slice_ns(t) / 2;
	next = vtime_charged(prev, task_ctx(prev), now);
	if (head_vtime(cpu_dsq(cpu), &own) && time_before(own, next))
		next = own;
	return pull_owed(cpu, llc, now, next);
}

#endif /* __SIS_PULL_BPF_H */
