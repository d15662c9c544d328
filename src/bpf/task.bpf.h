/* SPDX-License-Identifier: GPL-2.0 */
/* Per-task state (struct sis_task_ctx, types.bpf.h), kept in task storage. */
#ifndef __SIS_TASK_BPF_H
#define __SIS_TASK_BPF_H

#include <scx/common.bpf.h>
#include "calls.bpf.h"
#include "types.bpf.h"

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

#endif /* __SIS_TASK_BPF_H */
