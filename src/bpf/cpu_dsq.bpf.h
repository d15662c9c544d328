/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPUs' own DSQs: each CPU's queue, keyed by virtual deadline
 * (vtime.bpf.h), which steals, pulls and the wakeup kick read: its id, its
 * head's vtime, and how many of its tasks another CPU may take.
 */
#ifndef __SIS_CPU_DSQ_BPF_H
#define __SIS_CPU_DSQ_BPF_H

#include <scx/common.bpf.h>
#include "calls.bpf.h"
#include "frame.bpf.h"
#include "task.bpf.h"

/* A CPU's own DSQ has the CPU's id; intf.h's sis_dsq puts the other DSQs above every CPU id. */
static __always_inline u64 cpu_dsq(s32 cpu)
{
	return (u64)cpu;
}

/*
 * The vtime of @dsq's first task, for @cpu (the caller's CPU): 1 and the
 * vtime in @cpu's frame (head_vtime), or 0 when the DSQ is empty. Global: before
 * 7.1 a peek is a DSQ iterator, and the verifier would walk one at every
 * caller.
 */
__noinline int dsq_head_vtime(u64 dsq, s32 cpu)
{
	struct task_struct *head = dsq_head(dsq);

	if (!head)
		return 0;
	cpu_frame(cpu)->head_vtime = head->scx.dsq_vtime;
	return 1;
}

/* vtime of @dsq's first task, or false when it is empty. */
static __always_inline bool head_vtime(u64 dsq, u64 *vtime)
{
	s32 cpu = bpf_get_smp_processor_id();

	if (!dsq_head_vtime(dsq, cpu))
		return false;
	*vtime = cpu_frame(cpu)->head_vtime;
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

#endif /* __SIS_CPU_DSQ_BPF_H */
