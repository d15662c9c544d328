/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-task state (struct sis_task_ctx, types.bpf.h), kept in task storage,
 * and the run-length average that stopping keeps in it: steals, pulls and
 * kicks estimate a queued task's wait from it.
 */
#ifndef __SIS_TASK_BPF_H
#define __SIS_TASK_BPF_H

#include <scx/common.bpf.h>
#include "calls.bpf.h"
#include "types.bpf.h"

enum {
	/* Weight of the newest run in a task's average run length: 1/4 (shift 2). */
	SIS_RUN_AVG_SHIFT = 2,
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sis_task_ctx);
} task_ctxs SEC(".maps");

/* @p's context, or NULL if it has none: every caller copes with NULL. */
static __always_inline struct sis_task_ctx *task_ctx(struct task_struct *p)
{
	calls_add(1);
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/*
 * @p can run only on the CPU it is on: pinned there, or migration-disabled.
 * No other CPU may take it from a queue, so no stealer should be woken for it.
 */
static __always_inline bool bound_to_cpu(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1 || is_migration_disabled(p);
}

/* At stopping: fold a run of @ran ns into the task's average run length. */
static __always_inline void run_avg_update(struct sis_task_ctx *tctx, u64 ran)
{
	tctx->avg_run =
		tctx->avg_run - (tctx->avg_run >> SIS_RUN_AVG_SHIFT) + (ran >> SIS_RUN_AVG_SHIFT);
}

#endif /* __SIS_TASK_BPF_H */
