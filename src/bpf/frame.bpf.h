/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU scratch for one callback's call chain, kept apart from the CPU's
 * state (struct sis_cpu_ctx, types.bpf.h). The verifier forces it: it
 * checks a global (__noinline) function once, on its own, and such a
 * function takes at most five scalar arguments and returns one scalar. So
 * what a judge found (the task's pid, vtime and wait) comes back through
 * here, and the rules a pull judges by go in through here. A callback
 * writes the fields before the calls that read them; nothing here outlives
 * the callback, and no other CPU reads it.
 */
#ifndef __SIS_FRAME_BPF_H
#define __SIS_FRAME_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"

struct sis_cpu_frame {
	/* The task a steal or pull judged (its pid, its vtime): the move takes that one only. */
	s32 judged_pid;
	u64 judged_vtime;
	u64 judged_wait; /* how long the task a move took had waited queued */
	u64 head_vtime;	 /* the vtime dsq_head_vtime() found */
	u64 steal_cap;	 /* the most a steal's bar asks of a wait (pace.bpf.h) */
	/*
	 * The pull being judged (pull.bpf.h): the balance lag, steal-min, the
	 * puller's own runnable tasks, and the average run from which a running
	 * task counts as one that stays runnable.
	 */
	u64 pull_lag;
	u64 pull_min;
	u64 pull_queued;
	u64 pull_bound_run;
	u64 pull_limit; /* a pull moves only a task whose vtime is still below this */
};

struct sis_cpu_frame cpu_frames[SIS_MAX_CPUS];

/* @cpu's frame: the caller's own CPU (the index is masked for the verifier; SIS_MAX_CPUS is a power
 * of two). */
static __always_inline struct sis_cpu_frame *cpu_frame(s32 cpu)
{
	return &cpu_frames[(u32)cpu & (SIS_MAX_CPUS - 1)];
}

#endif /* __SIS_FRAME_BPF_H */
