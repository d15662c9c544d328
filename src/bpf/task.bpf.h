/* SPDX-License-Identifier: GPL-2.0 */
/* Per-task state: utilization, last CPU (for migrations) and run start. */
#ifndef __SIS_TASK_BPF_H
#define __SIS_TASK_BPF_H

#include <scx/common.bpf.h>
#include "pelt.bpf.h"

struct sis_task_ctx {
	struct sis_pelt util;
	u64 running_at;
	u64 wakeq_at;	/* when it was queued in a wakequeue shard */
	s32 wakeq_slot; /* that shard's slot, -1 when not in one */
	s32 last_cpu;
	u32 slept; /* it blocked since it last ran: the sleeper's vtime floor applies */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sis_task_ctx);
} task_ctxs SEC(".maps");

static __always_inline struct sis_task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

#endif /* __SIS_TASK_BPF_H */
