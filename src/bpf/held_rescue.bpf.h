/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a CPU held by a higher sched class (RT, deadline) changes: work
 * waiting on it moves on, and idle CPUs are woken to steal it. (Which CPUs
 * are held: held.bpf.h; busy CPUs' pulls: pull.bpf.h; idle CPUs' steals:
 * steal.bpf.h.)
 */
#ifndef __SIS_HELD_RESCUE_BPF_H
#define __SIS_HELD_RESCUE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "cpu_dsq.bpf.h"
#include "held.bpf.h"
#include "stats.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "wakeq.bpf.h"

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

#endif /* __SIS_HELD_RESCUE_BPF_H */
