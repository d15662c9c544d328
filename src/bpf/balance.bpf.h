/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Moving waiting tasks between CPUs: busy CPUs pull a task that lags in
 * vtime, and work waiting on a CPU that a higher sched class (RT, deadline)
 * holds moves on. (Idle CPUs' steals: steal.bpf.h.)
 *
 * Why a lag pull: with a queue per CPU, three loops on two CPUs put two on
 * one CPU and one on the other, and nothing ever moved them (50/50/100% of a
 * CPU). Stealing whenever a queue is not empty would fix that at the price of
 * a migration per slice. Instead a busy CPU, when its task's slice ends,
 * compares the vtime it would run next with the heads of the other CPUs'
 * queues, and takes a head only once it lags by the balance lag: the loops
 * rotate, each move pays for a lag's worth of fairness, and a queue whose
 * tasks keep pace is left alone.
 */
#ifndef __SIS_BALANCE_BPF_H
#define __SIS_BALANCE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "stats.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"

enum {
	/* The migration stopper holds a CPU for microseconds; longer than this, treat it as held.
	 */
	SIS_STOPPER_HOLD_NS = 1000000,
	/* A pull from another LLC needs this many balance lags (a cold cache has to pay). */
	SIS_REMOTE_LAGS = 2,
};

/* CPUs a higher class holds now; wakeups and ticks look closer only while any is. */
u32 nr_held_cpus;

/* A CPU's own DSQ has the CPU's id; intf.h's sis_dsq puts the other DSQs above every CPU id. */
static __always_inline u64 cpu_dsq(s32 cpu)
{
	return (u64)cpu;
}

/*
 * A higher sched class holds @cpu: tasks queued there wait until it lets go.
 * The migration stopper counts only once it outlasts a tick, so that
 * stress-ng's hundreds of affinity changes a second do not move work around.
 */
static __always_inline bool cpu_held(s32 cpu, u64 now)
{
	struct sis_cpu_ctx *cctx;

	if (!nr_held_cpus)
		return false;
	cctx = cpu_ctx(cpu);
	if (!cctx || !cctx->released)
		return false;
	return !cctx->released_stop || now - cctx->released_at > SIS_STOPPER_HOLD_NS;
}

/*
 * @cpu is held and was already held at @since, when a decision began. A CPU
 * the higher class takes while the decision runs (the ext server on 7.x hands
 * it back and takes it again every period) is a race the decision could not
 * see.
 */
static __always_inline bool cpu_held_since(s32 cpu, u64 since)
{
	struct sis_cpu_ctx *cctx;

	if (!cpu_held(cpu, since))
		return false;
	cctx = cpu_ctx(cpu);
	return cctx && cctx->released_at <= since;
}

/* vtime of @dsq's first task, or false when it is empty. */
static __always_inline bool head_vtime(u64 dsq, u64 *vtime)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(dsq);

	if (!head)
		return false;
	*vtime = head->scx.dsq_vtime;
	return true;
}

/*
 * Note @victim's queue head if it lags more than the best so far (*@best,
 * *@found). True to stop looking: a held CPU with work waiting wins outright.
 */
static __always_inline bool note_lagging(s32 victim, u64 now, u64 *best, s32 *found)
{
	u64 v;

	if (!head_vtime(cpu_dsq(victim), &v))
		return false;
	if (cpu_held(victim, now)) {
		*found = victim;
		return true;
	}
	if (time_before(v, *best)) {
		*best = v;
		*found = victim;
	}
	return false;
}

/* The CPU of @llc, other than @cpu, whose queue head lags @next most, by more than @lag; or -1. */
static __always_inline s32 most_lagging_in_llc(s32 cpu, u32 llc, u64 next, u64 lag, u64 now)
{
	u64 best = next - lag;
	u32 n = llc_size(llc), i;
	s32 found = -1;

	bpf_for (i, 0, n) {
		s32 victim = llc_cpu_at(llc, i);

		if (victim != cpu && note_lagging(victim, now, &best, &found))
			break;
	}
	return found;
}

/* The same over the CPUs of every other LLC. */
static __always_inline s32 most_lagging_elsewhere(u32 llc, u64 next, u64 lag, u64 now)
{
	u64 best = next - lag;
	s32 found = -1, victim;

	bpf_for (victim, 0, nr_cpus) {
		if (llc_of(victim) != llc && note_lagging(victim, now, &best, &found))
			break;
	}
	return found;
}

/*
 * At the end of @prev's slice on busy @cpu: pull the most lagging waiting
 * task of the LLC, or, at most once per balance lag, of another LLC.
 */
static __always_inline bool balance_pull(struct task_struct *prev, s32 cpu, u32 llc,
					 const struct sis_tunables *t)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	u64 lag = tun_balance_lag_ns(t), now = bpf_ktime_get_ns(), next, own;
	s32 victim;

	if (!cctx || !prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	next = vtime_charged(prev);
	if (head_vtime(cpu_dsq(cpu), &own) && time_before(own, next))
		next = own;

	victim = most_lagging_in_llc(cpu, llc, next, lag, now);
	if (victim >= 0 && move_traced(cpu_dsq(victim), SIS_MOVE_PULL)) {
		stat_inc(SIS_CNT_PULLS);
		return true;
	}
	if (nr_llcs < 2 || now - cctx->remote_balance_at < lag)
		return false;
	cctx->remote_balance_at = now;
	victim = most_lagging_elsewhere(llc, next, SIS_REMOTE_LAGS * lag, now);
	if (victim >= 0 && move_traced(cpu_dsq(victim), SIS_MOVE_PULL_REMOTE)) {
		stat_inc(SIS_CNT_PULLS_REMOTE);
		return true;
	}
	return false;
}

/*
 * Any dispatch while a CPU of @llc is held: take what waits there first.
 * Busy CPUs rarely reach a slice end under wakeup-heavy work (their tasks
 * block first), so waiting for balance_pull() left hackbench's tasks behind
 * an RT hog for most of a second.
 */
static __always_inline bool take_from_held(s32 cpu, u32 llc, u64 now)
{
	u32 n = llc_size(llc), i;

	if (!nr_held_cpus)
		return false;
	bpf_for (i, 0, n) {
		s32 victim = llc_cpu_at(llc, i);

		if (victim != cpu && cpu_held(victim, now) &&
		    scx_bpf_dsq_nr_queued(cpu_dsq(victim)) &&
		    move_traced(cpu_dsq(victim), SIS_MOVE_RESCUE_HELD)) {
			stat_inc(SIS_CNT_RESCUES);
			return true;
		}
	}
	return false;
}

/*
 * Wake an idle CPU to steal the work waiting on @from, counted in @counter:
 * in @llc if one is idle, else anywhere (idle CPUs steal from other LLCs
 * too). The woken CPU looks at @from first. False when no CPU is idle.
 * Traced as @why, unless the trace follows chosen tasks (a kick has none).
 */
static __always_inline bool wake_stealer(u32 llc, s32 from, enum sis_counter counter,
					 enum sis_move why)
{
	const struct cpumask *mask = llc_mask(llc);
	s32 idle = mask ? scx_bpf_pick_idle_cpu(mask, 0) : -1;
	const struct sis_tunables *t;
	struct sis_cpu_ctx *ictx;

	if (idle < 0) {
		mask = scx_bpf_get_idle_cpumask();
		idle = scx_bpf_pick_idle_cpu(mask, 0);
		scx_bpf_put_idle_cpumask(mask);
	}
	if (idle < 0)
		return false;
	ictx = cpu_ctx(idle);
	if (ictx)
		ictx->kicked_by = from + 1;
	scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
	stat_inc(counter);
	t = trace_live();
	if (t && !t->trace_tgid && !t->trace_comm[0])
		trace_move(NULL, why, from, idle);
	return true;
}

/*
 * A busy CPU's tick: a held CPU of @llc with work waiting gets a stealer.
 * The held CPU's own tick does not run while the higher class has it, and
 * its cpu_release fired once, when the hold began; without this, a task
 * queued there afterwards waited for the RT task to let go.
 */
static __always_inline void rescue_from_held(u32 llc, u64 now)
{
	u32 n = llc_size(llc), i;

	if (!nr_held_cpus)
		return;
	bpf_for (i, 0, n) {
		s32 cpu = llc_cpu_at(llc, i);

		if (cpu_held(cpu, now) && scx_bpf_dsq_nr_queued(cpu_dsq(cpu))) {
			wake_stealer(llc, cpu, SIS_CNT_RESCUES, SIS_MOVE_HELD_KICK);
			return;
		}
	}
}

#endif /* __SIS_BALANCE_BPF_H */
