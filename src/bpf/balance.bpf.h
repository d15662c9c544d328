/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU queues and the CPUs a higher sched class (RT, deadline) holds:
 * work waiting on a held CPU moves on, and idle CPUs are woken to steal.
 * (Busy CPUs' pulls: pull.bpf.h; idle CPUs' steals: steal.bpf.h.)
 */
#ifndef __SIS_BALANCE_BPF_H
#define __SIS_BALANCE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"

enum {
	/* The migration stopper holds a CPU for microseconds; longer than this, treat it as held.
	 */
	SIS_STOPPER_HOLD_NS = 1000000,
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

/*
 * The vtime of @dsq's first task, for @cpu (the caller's CPU): 1 and the
 * vtime in @cpu's head_vtime, or 0 when the DSQ is empty. Global: before
 * 7.1 a peek is a DSQ iterator, and the verifier would walk one at every
 * caller.
 */
__noinline int dsq_head_vtime(u64 dsq, s32 cpu)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct task_struct *head;

	if (!cctx)
		return 0;
	head = dsq_head(dsq);
	if (!head)
		return 0;
	cctx->head_vtime = head->scx.dsq_vtime;
	return 1;
}

/* vtime of @dsq's first task, or false when it is empty. */
static __always_inline bool head_vtime(u64 dsq, u64 *vtime)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct sis_cpu_ctx *cctx;

	if (!dsq_head_vtime(dsq, cpu))
		return false;
	cctx = cpu_ctx(cpu);
	if (!cctx)
		return false;
	*vtime = cctx->head_vtime;
	return true;
}

/*
 * Any dispatch while a CPU of @llc is held: take what waits there first.
 * Busy CPUs rarely reach a slice end under wakeup-heavy work (their tasks
 * block first), so waiting for balance_pull() left hackbench's tasks behind
 * an RT hog for most of a second. Global: the verifier checks it once.
 */
__noinline int take_from_held(s32 cpu, u32 llc, u64 now)
{
	u32 n = llc_size(llc), i;

	if (!nr_held_cpus)
		return false;
	calls_loop();
	bpf_for (i, 0, n) {
		s32 victim = llc_cpu_at(llc, i);

		calls_pass();
		if (victim != cpu && cpu_held(victim, now) && dsq_nr_queued(cpu_dsq(victim)) &&
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
	s32 idle = mask ? pick_idle_cpu(mask, 0) : -1;
	const struct sis_tunables *t;
	struct sis_cpu_ctx *ictx;

	if (idle < 0) {
		calls_add(2);
		mask = scx_bpf_get_idle_cpumask();
		idle = pick_idle_cpu(mask, 0);
		scx_bpf_put_idle_cpumask(mask);
	}
	if (idle < 0)
		return false;
	ictx = cpu_ctx(idle);
	if (ictx)
		ictx->kicked_by = from + 1;
	kick_cpu(idle, SCX_KICK_IDLE);
	stat_inc(counter);
	t = trace_live();
	if (t && !t->trace_tgid && !t->trace_comm[0])
		trace_move(NULL, why, from, idle);
	return true;
}

/*
 * How many tasks queued on @cpu may run on another CPU, counting up to @max.
 * A task bound to @cpu (a per-CPU kthread, a pinned or migration-disabled
 * task) waits out a hold whatever happens: a stealer woken for it finds
 * nothing, and a busy CPU's tick would wake one at every tick of the hold.
 * Global: the verifier checks the DSQ iterator once.
 */
__noinline int queued_movable(s32 cpu, u32 max)
{
	struct task_struct *p;
	u32 n = 0;

	calls_loop();
	bpf_for_each (scx_dsq, p, cpu_dsq(cpu), 0) {
		calls_pass();
		if (!bound_to_cpu(p) && ++n >= max)
			break;
	}
	return n;
}

/*
 * A busy CPU's tick: a held CPU of @llc with work another CPU may take gets
 * a stealer. The held CPU's own tick does not run while the higher class
 * has it, and its cpu_release fired once, when the hold began; without
 * this, a task queued there afterwards waited for the RT task to let go.
 */
static __always_inline void rescue_from_held(u32 llc, u64 now)
{
	u32 n = llc_size(llc), i;

	if (!nr_held_cpus)
		return;
	calls_loop();
	bpf_for (i, 0, n) {
		s32 cpu = llc_cpu_at(llc, i);

		calls_pass();
		if (cpu_held(cpu, now) && dsq_nr_queued(cpu_dsq(cpu)) && queued_movable(cpu, 1)) {
			wake_stealer(llc, cpu, SIS_CNT_RESCUES, SIS_MOVE_HELD_KICK);
			return;
		}
	}
}

#endif /* __SIS_BALANCE_BPF_H */
