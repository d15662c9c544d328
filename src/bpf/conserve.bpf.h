/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Work conservation, measured: how long CPUs sat idle while a task waited
 * on another CPU of their LLC for longer than steal-min. Fewer migrations
 * are worth nothing if they are bought with idle CPUs; this figure is what
 * shows the price. Sampled by the timer: every period, each LLC whose
 * queues hold a head that has waited steal-min adds its idle CPUs times
 * the period (idle_waiting_ns). A CPU counts as idle when no ext task runs
 * on it and no higher class holds it. A head that may run only on its own
 * CPU (a per-CPU kthread, a migration-disabled task) is not counted: no
 * idle CPU could take it, and one waiting out an RT task's hold would
 * charge the whole hold to the LLC. Other affinity masks are not looked
 * at, so the figure is an upper bound.
 */
#ifndef __SIS_CONSERVE_BPF_H
#define __SIS_CONSERVE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "types.bpf.h"
#include "workmask.bpf.h"

/*
 * The sample's running counts. In .bss, not on the stack: the verifier
 * tracks a stack counter's exact value through the loop and walks it once
 * per value; a map value is just a number to it.
 */
u32 conserve_idle;
u32 conserve_waiting;

/* Timer: one sample per LLC of @period ns, heads older than @min. Global: verified once. */
__noinline int conservation_sample(u64 now, u64 period, u64 min)
{
	u32 llc, i;

	bpf_for (llc, 0, nr_llcs) {
		u32 n = llc_size(llc);

		if (!llc_work_maybe(llc))
			continue;
		conserve_idle = 0;
		conserve_waiting = 0;
		bpf_for (i, 0, n) {
			s32 cpu = llc_cpu_at(llc, i);
			struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
			struct task_struct *head;
			struct sis_task_ctx *h;

			if (!cctx)
				continue;
			if (!cctx->running && !cctx->held)
				conserve_idle++;
			if (conserve_waiting || !work_maybe(cpu))
				continue;
			/* The timer runs outside the ops' RCU section; the DSQ peek needs one. */
			bpf_rcu_read_lock();
			head = __COMPAT_scx_bpf_dsq_peek(cpu);
			h = head ? bpf_task_storage_get(&task_ctxs, head, 0, 0) : NULL;
			if (h && !bound_to_cpu(head) && time_since(now, h->queued_at) >= min)
				conserve_waiting = 1;
			bpf_rcu_read_unlock();
		}
		if (conserve_waiting && conserve_idle)
			stat_add(stats_of_llc(llc), SIS_CNT_IDLE_WAITING_NS,
				 (u64)conserve_idle * period);
	}
	return 0;
}

#endif /* __SIS_CONSERVE_BPF_H */
