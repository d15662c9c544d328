/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which CPUs a higher sched class (RT, deadline, the migration stopper)
 * holds: the queries the other concerns ask (cpu_held(), cpu_held_since()),
 * and the bookkeeping at a hold's start and end that both ways of learning
 * it share. Kernels before 6.19 tell the scheduler through ops.cpu_release and
 * ops.cpu_acquire; from 6.19 those are deprecated (they miss events), and the
 * sched_switch tracepoint with a reenqueue callable from anywhere replaces
 * them. The daemon picks one at load; main.bpf.c holds both entry points.
 * (What the held state changes: held_rescue.bpf.h moves the work waiting on a
 * held CPU; placement, steals and the tick ask cpu_held().)
 */
#ifndef __SIS_HELD_BPF_H
#define __SIS_HELD_BPF_H

#include <scx/common.bpf.h>
#include "calls.bpf.h"
#include "topo.bpf.h"
#include "types.bpf.h"

#ifndef MAX_RT_PRIO
/* prio below this is RT, deadline or the stopper (include/linux/sched/prio.h). */
#define MAX_RT_PRIO 100
#endif

enum {
	/* The migration stopper holds a CPU for microseconds; longer than this, treat it as held.
	 */
	SIS_STOPPER_HOLD_NS = 1000000,
};

/* CPUs a higher class holds now; wakeups and ticks look closer only while any is. */
u32 nr_held_cpus;

/*
 * A higher sched class holds @cpu: tasks queued there wait until it lets go.
 * The migration stopper counts only once it outlasts SIS_STOPPER_HOLD_NS, so
 * that its brief holds, which frequent affinity changes cause, move no work.
 */
static __always_inline bool cpu_held(s32 cpu, u64 now)
{
	struct sis_cpu_ctx *cctx;

	if (!nr_held_cpus)
		return false;
	cctx = cpu_ctx(cpu);
	if (!cctx || !cctx->held)
		return false;
	return !cctx->held_by_stopper || now - cctx->held_since > SIS_STOPPER_HOLD_NS;
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
	return cctx && cctx->held_since <= since;
}

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
 * nothing: it lasts microseconds and affinity changes can run it hundreds of
 * times a second, so sending work away at each would only churn tasks
 * between CPUs. cpu_held() judges a stopper hold by its length.
 */
static __always_inline bool hold_begin(s32 cpu, bool stopper)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (!cctx)
		return !stopper;
	if (cctx->held && (stopper || !cctx->held_by_stopper))
		return false;
	if (!cctx->held)
		__sync_fetch_and_add(&nr_held_cpus, 1);
	cctx->held = 1;
	cctx->held_by_stopper = stopper;
	cctx->held_since = now_ns();
	return !stopper;
}

/* The higher class let go of @cpu: it is no longer held. */
static __always_inline void hold_end(s32 cpu)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (cctx && cctx->held) {
		cctx->held = 0;
		__sync_fetch_and_sub(&nr_held_cpus, 1);
	}
}

#endif /* __SIS_HELD_BPF_H */
