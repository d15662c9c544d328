/* SPDX-License-Identifier: GPL-2.0 */
/*
 * When a CPU is held by a higher sched class (RT, deadline, the migration
 * stopper) and when it comes back: the bookkeeping both ways of learning it
 * share. Kernels before 6.19 tell the scheduler through ops.cpu_release and
 * ops.cpu_acquire; from 6.19 those are deprecated (they miss events), and the
 * sched_switch tracepoint with a reenqueue callable from anywhere replaces
 * them. The daemon picks one at load; main.bpf.c holds both entry points.
 * (What the held state changes, wakeups, steals, pulls: balance.bpf.h.)
 */
#ifndef __SIS_HELD_BPF_H
#define __SIS_HELD_BPF_H

#include <scx/common.bpf.h>
#include "balance.bpf.h"
#include "intf.h"
#include "calls.bpf.h"
#include "topo.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "wakeq.bpf.h"

#ifndef MAX_RT_PRIO
/* prio below this is RT, deadline or the stopper (include/linux/sched/prio.h). */
#define MAX_RT_PRIO 100
#endif

/*
 * The migration stopper looks like a SCHED_FIFO kthread at the top priority
 * (sched_set_stop_task()); its class is not visible to a tracepoint without
 * a kernel data symbol, so it is told apart by its name, migration/N.
 */
static __always_inline bool is_stopper(const struct task_struct *p)
{
	static const char name[] = "migration/";
	u32 i;

	if (!(p->flags & PF_KTHREAD) || p->prio != 0)
		return false;
	for (i = 0; i < sizeof(name) - 1; i++)
		if (p->comm[i] != name[i])
			return false;
	return true;
}

/*
 * A higher class (@stopper: the migration stopper) took @cpu. True when the
 * work waiting there should move on now: the hold begins, or a stopper's
 * hold passes to an RT or deadline task. A hold by the stopper alone moves
 * nothing: it lasts microseconds, and stress-ng's affinity changes run it
 * hundreds of times a second, so sending work away each time only churned
 * tasks between CPUs. cpu_held() judges a stopper hold by its length.
 */
static __always_inline bool hold_begin(s32 cpu, bool stopper)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (!cctx)
		return !stopper;
	if (cctx->released && (stopper || !cctx->released_stop))
		return false;
	if (!cctx->released)
		__sync_fetch_and_add(&nr_held_cpus, 1);
	cctx->released = 1;
	cctx->released_stop = stopper;
	cctx->released_at = now_ns();
	return !stopper;
}

/* The higher class let go of @cpu: it is no longer held. */
static __always_inline void hold_end(s32 cpu)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (cctx && cctx->released) {
		cctx->released = 0;
		__sync_fetch_and_sub(&nr_held_cpus, 1);
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

#endif /* __SIS_HELD_BPF_H */
