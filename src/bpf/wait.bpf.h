/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wait model: how long a task queued on a busy CPU would still wait
 * there, from what the running task is expected to run still and the runs
 * of the tasks ahead. Steals (steal.bpf.h), pulls (pull.bpf.h), the tick
 * and the wakeup kick ask it whether moving a task, or waking a CPU to take
 * it, saves more than it costs.
 */
#ifndef __SIS_WAIT_BPF_H
#define __SIS_WAIT_BPF_H

#include <scx/common.bpf.h>
#include "calls.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "types.bpf.h"

/*
 * What @cctx's running task is expected to run still: its average run less
 * what it has run. Past its average it is taken to run as long again (a
 * CPU-bound task's average is its slice, and it runs it out).
 */
static __always_inline u64 curr_remaining(const struct sis_cpu_ctx *cctx, u64 now)
{
	u64 ran;

	if (!cctx->running)
		return 0;
	ran = time_since(now, cctx->curr_at);
	return cctx->curr_avg_run > ran ? cctx->curr_avg_run - ran : cctx->curr_avg_run;
}

/* @head (NULL: none) has waited in its queue for at least @min. */
static __always_inline bool head_waited(struct task_struct *head, u64 now, u64 min)
{
	struct sis_task_ctx *h = head ? task_ctx(head) : NULL;

	return h && time_since(now, h->queued_at) >= min;
}

/*
 * Whether a task queued on busy @cpu, behind @nr - 1 others, would wait at
 * least @min for @cpu: what the running task has left, plus a run of the
 * running task's length for each task ahead. Below that, waking a stealer
 * only moves a task that would have run here soon.
 */
static __always_inline bool wait_exceeds(s32 cpu, u64 nr, u64 now, u64 min)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (!cctx)
		return true;
	return curr_remaining(cctx, now) + (nr ? nr - 1 : 0) * cctx->curr_avg_run >= min;
}

#endif /* __SIS_WAIT_BPF_H */
