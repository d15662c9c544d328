/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Virtual time: one scale for all the CPUs a task may move between.
 *
 * Each CPU keeps its own clock (the largest vtime it has picked, so it
 * follows its queue's minimum), and a task keeps its vtime when it moves:
 * the vtimes of tasks on different CPUs stay comparable, so a task that sat
 * behind others while another CPU's tasks ran ahead shows as lagging, and
 * the balancer (pull.bpf.h) moves it. What keeps the CPUs' clocks close
 * is that balancing itself, plus a resync to the average clock of the busy
 * CPUs (vclock): a CPU that idled catches up at once (its clock stood still,
 * and every task it then ran would look owed), and no CPU's clock trails
 * vclock by more than a runnable task's debt bound. Without the second, the
 * CPUs of an LLC that idled while another LLC ran would keep a clock that
 * far behind, and their tasks would look owed to the other LLC for good.
 */
#ifndef __SIS_VTIME_BPF_H
#define __SIS_VTIME_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"

enum {
	/* Most slices of vtime a task may lead its CPU's clock by (see task_vtime()). */
	SIS_MAX_LEAD_SLICES = 16,
	/* A runnable task's debt is bounded at this many balance lags (see task_vtime()). */
	SIS_DEBT_LAGS = 4,
	/* A task that moved arrives with at most this many slices of credit (see task_vtime()). */
	SIS_MIGRANT_CREDIT_SLICES = 2,
	/* A CPU that ran nothing for this long idled: resync its clock (ns). */
	SIS_IDLE_GAP_NS = 1000000,
};

/* Average clock of the busy CPUs, sampled by the timer; 0 until one was busy. */
u64 vclock;

/* @cpu's vtime clock; 0 without a context. */
static __always_inline u64 cpu_vtime_now(s32 cpu)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	return cctx ? cctx->vtime_now : 0;
}

/* Run time @ns of a task of @weight, in vtime (100 = nice 0). */
static __always_inline u64 vtime_charge(u64 ns, u32 weight)
{
	return weight ? ns * 100 / weight : ns;
}

/* @vtime after a run at @weight from @since to @now: the one place run time becomes vtime. */
static __always_inline u64 vtime_after_run(u64 vtime, u32 weight, u64 since, u64 now)
{
	return now > since ? vtime + vtime_charge(now - since, weight) : vtime;
}

/* @tctx's task comes to @cpu from the clock of another CPU (task_vtime()). */
static __always_inline bool task_moved(const struct sis_task_ctx *tctx, s32 cpu)
{
	return tctx && tctx->vt_cpu >= 0 && tctx->vt_cpu != cpu;
}

/*
 * @p's place in @cpu's queue, kept near the CPU's clock; @tctx is @p's
 * context (NULL: none), whose vt_cpu, the CPU whose clock @p's vtime was
 * last bounded to, becomes @cpu.
 *
 * Floor: a task that slept (@slept) gets at most one slice of credit, as
 * CFS's sleeper credit. A runnable task keeps up to SIS_DEBT_LAGS balance
 * lags of debt where it waits: enough for the balancer, which pulls at one
 * lag (two across LLCs), to see it, and bounded so that a task that could
 * not run for long (its CPU held by pinned work) cannot then hold a new CPU
 * for seconds. Once it has moved (a steal, a pull, a wakeup elsewhere) it
 * keeps at most SIS_MIGRANT_CREDIT_SLICES slices of that credit, as EEVDF
 * clamps a migrant's lag to about two slices: the credit is how long it
 * keeps its new CPU before anything queued there, and no wakee can preempt
 * a task still owed service, so four lags of it would shut out every wakee
 * on that CPU for as long.
 *
 * Ceiling: a few slices of the task's own weighted charge ahead, more than
 * a task can earn between two looks at the clock, so a vtime earned at a
 * lower weight before a nice change cannot make it wait until the CPU
 * catches up. The lead is also capped in absolute slices: a task waits
 * about lead x the tasks queued ahead of it, and a SCHED_IDLE task (weight
 * 1) would otherwise lead by 400 slices. The cap cuts a share only where
 * one slice charges more than 16 slices (weight below 6, about nice 13):
 * nice 0 vs 10 still runs 9:1. A task that moved to a CPU whose clock
 * trails its vtime takes the place it had against its previous CPU's clock
 * (ahead or behind it), not its vtime: the clocks drift apart (each follows
 * its own queue's minimum), and a light task that moved from a CPU whose
 * clock ran ahead would otherwise wait behind every task queued on a slower
 * one, each running the drift before it.
 */
static __always_inline u64 task_vtime(struct task_struct *p, struct sis_task_ctx *tctx, s32 cpu,
				      bool slept, const struct sis_tunables *t)
{
	u64 now = cpu_vtime_now(cpu), slice = tun_slice_ns(t);
	u64 vtime = p->scx.dsq_vtime, home, credit, floor, ceil;
	u64 lead = 4 * vtime_charge(slice, p->scx.weight);
	bool moved = task_moved(tctx, cpu);

	if (slept)
		credit = slice;
	else if (moved)
		credit = SIS_MIGRANT_CREDIT_SLICES * slice;
	else
		credit = SIS_DEBT_LAGS * tun_balance_lag_ns(t);
	if (moved && time_before(now, vtime)) {
		/* Where it stood against its previous CPU's clock, ahead or behind. */
		home = cpu_vtime_now(tctx->vt_cpu);
		vtime = time_before(home, vtime) ? now + (vtime - home) : now - (home - vtime);
	}
	if (tctx)
		tctx->vt_cpu = cpu;
	floor = now - credit;
	ceil = now + (lead < SIS_MAX_LEAD_SLICES * slice ? lead : SIS_MAX_LEAD_SLICES * slice);
	if (time_before(vtime, floor))
		return floor;
	return time_before(ceil, vtime) ? ceil : vtime;
}

/*
 * @p's key in a CPU's DSQ, EEVDF's virtual deadline: its @vtime plus the run
 * it is expected to make (its average, at most a slice; half a slice before
 * it first ran, as EEVDF places a new task), at its weight. Among tasks of
 * about the same vtime the one that will give the CPU back soonest goes
 * first, so a short-running wakee passes the tasks queued ahead of it by up
 * to their runs, without taking more than its share: the key orders the
 * queue, and the task is charged its run as ever. Whoever queues @p with it
 * keeps the difference in key_gap, for task_key_strip().
 */
static __always_inline u64 task_key(struct task_struct *p, struct sis_task_ctx *tctx, u64 vtime,
				    const struct sis_tunables *t)
{
	u64 run = tun_slice_ns(t);

	if (!tctx)
		return vtime;
	if (tctx->last_cpu < 0)
		run /= 2;
	else if (tctx->avg_run < run)
		run = tctx->avg_run;
	return vtime + vtime_charge(run, p->scx.weight);
}

/*
 * Where @p's DSQ key stands in for its vtime (it was queued in a CPU's DSQ
 * and left it, to run or to be queued again), put the vtime back.
 */
static __always_inline void task_key_strip(struct task_struct *p, struct sis_task_ctx *tctx)
{
	if (!tctx || !tctx->key_gap)
		return;
	task_set_dsq_vtime(p, p->scx.dsq_vtime - tctx->key_gap);
	tctx->key_gap = 0;
}

/*
 * @p's vtime at @now, including the run it is in the middle of (charged only
 * at stopping). @tctx is @p's context, looked up by the caller, who needs it too.
 */
static __always_inline u64 vtime_charged(struct task_struct *p, const struct sis_task_ctx *tctx,
					 u64 now)
{
	if (!tctx)
		return p->scx.dsq_vtime;
	return vtime_after_run(p->scx.dsq_vtime, p->scx.weight, tctx->running_at, now);
}

/* The vtime @cctx's running task has reached by @now. */
static __always_inline u64 curr_vtime_at(const struct sis_cpu_ctx *cctx, u64 now)
{
	return vtime_after_run(cctx->curr_vtime, cctx->curr_weight, cctx->curr_at, now);
}

/* The debt a runnable task may carry (see task_vtime()), also the most a CPU's clock trails vclock.
 */
static __always_inline u64 vtime_debt_max(const struct sis_tunables *t)
{
	return SIS_DEBT_LAGS * tun_balance_lag_ns(t);
}

/* Before a CPU starts a task: bring its clock up to vclock (after idling) or near it. */
static __always_inline void vtime_resync(struct sis_cpu_ctx *cctx, u64 now,
					 const struct sis_tunables *t)
{
	u64 ref = vclock;

	if (!ref)
		return;
	if (!cctx->stopped_at || now - cctx->stopped_at < SIS_IDLE_GAP_NS)
		ref -= vtime_debt_max(t);
	if (time_before(cctx->vtime_now, ref))
		cctx->vtime_now = ref;
}

/*
 * The timer's running sums. They live in .bss, not on the stack: the
 * verifier tracks a stack counter's exact value and would walk every value
 * the loop can give it (past its limit, E2BIG); a map value is just a number
 * to it.
 */
u64 vclock_sum;
u32 vclock_busy;

/* Timer: vclock, as offsets from CPU 0's clock so the sum cannot overflow. */
__noinline int vtime_sample(void)
{
	u64 base = cpu_vtime_now(0);
	u32 busy;
	s64 sum;
	s32 cpu;

	vclock_sum = 0;
	vclock_busy = 0;
	bpf_for (cpu, 0, nr_cpus) {
		struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

		if (cctx && cctx->running) {
			vclock_sum += cctx->vtime_now - base;
			vclock_busy++;
		}
	}
	sum = (s64)vclock_sum;
	busy = vclock_busy;
	if (!busy)
		return 0;
	/* BPF has no signed division before cpu v4: divide the magnitude. */
	vclock = sum >= 0 ? base + (u64)sum / busy : base - (u64)(-sum) / busy;
	return 0;
}

#endif /* __SIS_VTIME_BPF_H */
