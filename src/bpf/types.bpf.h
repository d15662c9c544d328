/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The BPF side's own state per CPU and per LLC (per task: task.bpf.h, with
 * its storage). Nothing here is seen by the daemon (what is lives in
 * intf.h), so these structs may change without touching the Rust side. The
 * maps that hold them and their accessors live in topo.bpf.h (CPU and LLC
 * arrays).
 */
#ifndef __SIS_TYPES_BPF_H
#define __SIS_TYPES_BPF_H

#include <scx/common.bpf.h>

/* A PELT-like utilization signal (pelt.bpf.h advances and reads it). */
struct sis_pelt {
	u64 last_ns;
	u32 avg;      /* utilization as of the last finished period */
	u32 cur_busy; /* busy ns accumulated in the current period */
};

/* Per CPU: utilization, vtime clock, the running task, and whether a higher class holds it. */
struct sis_cpu_ctx {
	struct sis_pelt util;
	/*
	 * The largest vtime this CPU has picked. The DSQ hands out its smallest
	 * vtime first, so this follows the queue's minimum (CFS's min_vruntime):
	 * a low-weight task's fast-moving vtime does not drag everyone forward.
	 */
	u64 vtime_now;
	/* The running task's vtime, weight and average run length when it started, and when. */
	u64 curr_vtime;
	u64 curr_at;
	u64 curr_avg_run;
	u32 curr_weight;
	/*
	 * CPU + 1 of the busy CPU that kicked this one to steal its work; 0 for
	 * none. Read and cleared by the next dispatch here, whatever it finds:
	 * a kick is a reason to look at that CPU now, not at a later idle.
	 */
	u32 kicked_by;
	/*
	 * A wakeup or a tick asked the running task to make way for a queued
	 * one: the next dispatch serves the own queue before a pull or prev.
	 * Read and cleared by that dispatch.
	 */
	u32 preempting;
	/* A dispatch here found nothing: the CPU idles from stopped_at until a task runs. */
	u32 went_idle;
	/* Average length of this CPU's idle periods, ns (0: none seen yet; steal.bpf.h). */
	u64 avg_idle;
	/* Average back-to-back switch on this CPU, ns (0: none seen yet; pace.bpf.h). */
	u64 avg_switch;
	u32 running;	       /* an ext task is on this CPU right now */
	u64 stopped_at;	       /* when the last task stopped: a long gap means it idled */
	u64 remote_balance_at; /* last look at other LLCs for a lagging task */
	u64 held_since;	       /* when the hold began */
	u32 held;	       /* a higher sched class holds it (cpu_release .. cpu_acquire) */
	u32 held_by_stopper;   /* ... and it was the migration stopper that took it */
	/* The trace: the reason + 1 of the last move to this CPU since a task last started here. */
	u32 trace_moved;
	/* Scratch mask for "LLC and the task's affinity" while placing. */
	struct bpf_cpumask __kptr *scratch;
};

/* Per LLC: its CPUs as a cpumask, for the idle-CPU kfuncs. */
struct sis_llc_ctx {
	struct bpf_cpumask __kptr *cpus;
};

#endif /* __SIS_TYPES_BPF_H */
