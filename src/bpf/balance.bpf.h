/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU queues, and what a CPU held by a higher sched class (RT, deadline)
 * changes: work waiting on a held CPU moves on, and idle CPUs are woken to
 * steal. (Which CPUs are held: held.bpf.h; busy CPUs' pulls: pull.bpf.h;
 * idle CPUs' steals: steal.bpf.h.)
 */
#ifndef __SIS_BALANCE_BPF_H
#define __SIS_BALANCE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "held.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"
#include "wakeq.bpf.h"

/* A CPU's own DSQ has the CPU's id; intf.h's sis_dsq puts the other DSQs above every CPU id. */
static __always_inline u64 cpu_dsq(s32 cpu)
{
	return (u64)cpu;
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
 * block first), so a rescue left to balance_pull() would leave those tasks
 * behind the RT task for as long as it runs. Global: the verifier checks it
 * once.
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

/*
 * After the local DSQ went back through ops.enqueue (which sends it to idle
 * CPUs): for this CPU's own queue and shard, wake one idle CPU per waiting
 * task that another CPU may take.
 */
static __always_inline void wake_stealers_for_held(s32 cpu)
{
	struct sis_tunables t;
	u64 waiting;
	u32 i;

	tun_snapshot(&t);
	waiting = queued_movable(cpu, nr_cpus) + dsq_nr_queued(shard_dsq(own_slot(cpu, &t)));
	bpf_for (i, 0, waiting < nr_cpus ? waiting : nr_cpus) {
		if (!wake_stealer(llc_of(cpu), cpu, SIS_CNT_RESCUES, SIS_MOVE_HELD_KICK))
			break;
	}
}

#endif /* __SIS_BALANCE_BPF_H */
