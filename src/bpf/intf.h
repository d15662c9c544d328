/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types shared by the BPF scheduler and the Rust daemon (through bindgen).
 * Every name carries a SIS_/sis_ prefix so it cannot collide with vmlinux.h.
 */
#ifndef __SIS_INTF_H
#define __SIS_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int s32;
typedef long long s64;
#endif

enum sis_limits {
	SIS_MAX_CPUS = 512,
	SIS_MAX_LLCS = 64,
	/* An LLC's CPU list is a fixed row so the scan can index it directly. */
	SIS_MAX_LLC_CPUS = 256,
	SIS_MAX_SHARDS = 16,
	/* Resolution of the SIS_UTIL curve tables: util is looked up in 1/128 steps. */
	SIS_UTIL_STEPS = 128,
	SIS_COST_BUCKETS = 32,
	/* select_cpu times one call in this many (a power of two); bpf_stats times them all. */
	SIS_COST_SAMPLE_EVERY = 64,
	SIS_CAPACITY = 1024,
	SIS_COMM_LEN = 16, /* TASK_COMM_LEN */
	/* The trace ring buffer's default size; the daemon may set another at load. */
	SIS_TRACE_RING_KIB = 8192,
};

/* User DSQ ids: one per CPU (id == cpu) and one per wakequeue shard. */
enum sis_dsq {
	SIS_DSQ_SHARD_BASE = 1 << 20,
	SIS_DSQ_PLAIN = 1 << 21, /* the one FIFO of the plain preset */
};

/* Where a wakeup was placed: the stage of select_cpu that decided it. */
enum sis_path {
	SIS_PATH_SYNC,
	SIS_PATH_PREV_IDLE,
	SIS_PATH_PREV_ALMOST_IDLE,
	SIS_PATH_IDLE_CORE,
	SIS_PATH_LLC_SCAN,
	SIS_PATH_CROSS_LLC,
	SIS_PATH_FALLBACK,
	SIS_PATH_KERNEL_DFL, /* plain preset: the kernel's scx_bpf_select_cpu_dfl() */
	SIS_NR_PATHS,
};

enum sis_curve {
	SIS_CURVE_OFF,
	SIS_CURVE_LINEAR,
	SIS_CURVE_QUADRATIC,
	SIS_NR_CURVES,
};

/*
 * Plain event counters. Each CPU keeps one copy per LLC (a per-CPU array keyed
 * by LLC), so no counter needs an atomic; the daemon sums the CPUs of each key.
 * select_cpu files a wakeup under prev's LLC, everything else under the LLC of
 * the CPU it happens on.
 */
enum sis_counter {
	SIS_CNT_WAKEUPS,	  /* select_cpu calls */
	SIS_CNT_DIRECT_DISPATCH,  /* idle CPU found and claimed in select_cpu */
	SIS_CNT_ENQUEUE,	  /* ops.enqueue calls */
	SIS_CNT_MIGRATIONS,	  /* a task ran on another CPU than last time */
	SIS_CNT_DISPATCH_LOCAL,	  /* dispatch took from the CPU's own DSQ */
	SIS_CNT_DISPATCH_LLC,	  /* dispatch stole from a sibling CPU of the LLC */
	SIS_CNT_DISPATCH_REMOTE,  /* dispatch stole from another LLC */
	SIS_CNT_SCAN_RUNS,	  /* llc_scan stage entered with nr_scan > 0 */
	SIS_CNT_SCAN_SKIPPED,	  /* llc_scan stage skipped because nr_scan == 0 */
	SIS_CNT_SCAN_DEPTH,	  /* sum of the nr_scan limits used */
	SIS_CNT_SCAN_VISITED,	  /* sum of CPUs actually tested */
	SIS_CNT_SCAN_FOUND,	  /* scans that found an idle CPU */
	SIS_CNT_COST_NS,	  /* sum of select_cpu cost in ns */
	SIS_CNT_TICK_KICKS,	  /* idle CPUs kicked by a busy CPU's tick */
	SIS_CNT_DISPATCH_KEEP,	  /* dispatch kept the running task (still ahead in vtime) */
	SIS_CNT_WAKEQ_ENQ,	  /* wakeups queued in a wakequeue shard */
	SIS_CNT_WAKEQ_DISP_OWN,	  /* dispatches from the CPU's own shard */
	SIS_CNT_WAKEQ_DISP_OTHER, /* dispatches from another shard of the LLC */
	SIS_CNT_WAKEQ_WAITS,	  /* shard-queued tasks that started running */
	SIS_CNT_WAKEQ_WAIT_NS,	  /* their summed wait, enqueue to running */
	SIS_CNT_PULLS,		  /* a busy CPU took a task lagging in vtime from its LLC */
	SIS_CNT_RESCUES,	  /* tasks sent to an idle CPU when a higher class took theirs */
	SIS_CNT_PULLS_REMOTE,	  /* a busy CPU took a task lagging in vtime from another LLC */
	SIS_CNT_HELD_WAKEUPS,	  /* wakeups placed on a CPU held when the decision began */
	SIS_CNT_HELD_AVOIDED,	  /* wakeups whose prev a higher class held, placed elsewhere */
	SIS_CNT_WAKEUP_PREEMPTS,  /* a wakee earlier in vtime preempted a running task */
	SIS_CNT_WAKEUP_KICKS,	  /* idle CPUs kicked to take a wakee queued behind a busy one */
	SIS_CNT_COST_SAMPLES,	  /* select_cpu calls timed (one in SIS_COST_SAMPLE_EVERY) */
	SIS_CNT_STEAL_SCANS,	  /* idle dispatches that looked for work to steal */
	SIS_CNT_STEAL_LOOKED,	  /* CPUs whose queue those dispatches looked at */
	SIS_CNT_STEAL_KICKER,	  /* steals from the CPU that kicked the stealer */
	SIS_CNT_STEAL_SKIP_YOUNG, /* heads left: expected wait below steal-min */
	SIS_CNT_STEAL_SKIP_HOT,	  /* heads left: cache-hot, expected wait below 2x steal-min */
	SIS_CNT_STEAL_WAIT_NS,	  /* summed wait of stolen tasks, queued to stolen */
	SIS_CNT_KICKS_SKIPPED,	  /* stealer kicks not sent: the wait would be below steal-min */
	SIS_CNT_TRACE_EVENTS,	  /* trace events written to the ring buffer */
	SIS_CNT_TRACE_DROPS,	  /* trace events lost: the ring buffer was full */
	SIS_CNT_DISPATCHES,	  /* ops.dispatch calls */
	SIS_CNT_DISPATCH_CALLS,	  /* kfunc, helper and iterator calls they made (calls.bpf.h) */
	SIS_CNT_DISPATCH_EMPTY,	  /* dispatches that found nothing: the CPU idles */
	SIS_CNT_DISPATCH_EMPTY_CALLS,  /* calls those made */
	SIS_CNT_SELECT_CALLS,	       /* calls made by select_cpu */
	SIS_CNT_ENQUEUE_CALLS,	       /* calls made by ops.enqueue */
	SIS_CNT_RUNS,		       /* ops.running calls */
	SIS_CNT_RUN_CALLS,	       /* calls made by ops.running and ops.stopping */
	SIS_CNT_STEAL_SKIP_SHORT_IDLE, /* idle dispatches that did not look: short idle periods */
	SIS_CNT_SCAN_LAST_LOOK, /* nr_scan 0, and the one look at the LLC's idle mask found a CPU */
	SIS_CNT_IDLE_WAITING_NS, /* idle CPU time beside a task waiting over steal-min (timer) */
	SIS_CNT_SWITCHES,	 /* back-to-back switches timed for the pace (pace.bpf.h) */
	SIS_CNT_SWITCH_NS,	 /* their summed length, one task's stop to the next one's start */
	SIS_CNT_PULLS_UNLAGGED,	 /* pulls that moved a task not trailing by the lag: must stay 0 */
	SIS_CNT_TUN_RACED,    /* tunables snapshots whose copy raced a write and was taken again */
	SIS_CNT_TUN_TORN,     /* ... that found no whole copy: the built-in defaults decided */
	SIS_CNT_WAKE_WAITS,   /* woken or new tasks that started running (wake_wait_hist) */
	SIS_CNT_WAKE_WAIT_NS, /* their summed wait, wakeup (or fork) to running */
	SIS_CNT_CLOCK_BEHIND, /* steals judged on a head queued after the stealer read its clock */
	SIS_CNT_SLICE_SHORTENED, /* tasks started with less than a slice: others waited there */
	SIS_CNT_TICK_PREEMPTS,	 /* a tick preempted for a queued task of earlier deadline */
	SIS_CNT_SERVED_FIRST,	 /* per-CPU kthreads and scx_sis queued ahead of the CPU's DSQ */
	SIS_CNT_NOPREEMPT_HOLD,	 /* queued wakees that did not preempt: the task ran too little */
	SIS_CNT_NOPREEMPT_DEADLINE, /* ... the running task's deadline was earlier */
	SIS_CNT_NOPREEMPT_SYNC,	    /* ... a sync wakee behind its waker, which is to sleep */
	SIS_CNT_MIGRANT_CREDIT_NS,  /* vtime credit of moved tasks: runs no wakee preempts */
	SIS_NR_COUNTERS,
};

struct sis_llc_stats {
	u64 counters[SIS_NR_COUNTERS];
	u64 paths[SIS_NR_PATHS];
	/* select_cpu cost, bucket i counts calls taking [2^i, 2^(i+1)) ns. */
	u64 cost_hist[SIS_COST_BUCKETS];
	/* Wakequeue wait (enqueue to running), same buckets. */
	u64 wakeq_wait_hist[SIS_COST_BUCKETS];
	/* How long a stolen task had waited in its queue, same buckets. */
	u64 steal_wait_hist[SIS_COST_BUCKETS];
	/* Wakeup (or fork) to running, of the tasks that started on this LLC, same buckets. */
	u64 wake_wait_hist[SIS_COST_BUCKETS];
};

/*
 * Everything a user may change while the scheduler runs. BPF reads it on
 * every decision; writers bump @generation so readers notice changes.
 *
 * The tunables map holds two copies (keys 0 and 1), each with its own @seq:
 * odd while a writer is changing that copy, even when it is whole. The writer
 * (src/policy/tunables/seqlock.rs, write()) changes copy 1, then copy 0, each
 * in three steps: @seq odd with the old values, the new values, @seq even.
 * So one copy is whole at any moment, and a reader that finds @seq even and
 * unchanged across its copy has a whole one (tun_snapshot() in
 * tunables.bpf.h). Two rules keep that true: one writer at a time (tune and
 * trace hold the pin directory's lock; the daemon writes before it pins),
 * and each write's final even @seq is new, past both copies' counts, so a
 * reader whose two reads straddle a whole write cannot see the same count.
 */
struct sis_tunables {
	u64 seq;
	u64 generation;
	u64 slice_ns;
	u32 prev_bias;
	u32 prev_bias_threshold_permille;
	u32 sis_util_curve; /* enum sis_curve */
	u32 sis_util_period_us;
	u32 idle_core;
	u32 wake_sync;
	u32 cross_llc;
	u32 wakeq;
	u32 wakeq_shards; /* per LLC; 0: derived from the LLC's size */
	/* Plain preset: what scx_simple does (kernel default pick, one global FIFO). */
	u32 plain;
	/*
	 * vtime lag (ns of nice-0 run time, in us) a CPU's next task must lead
	 * another CPU's waiting head by before it pulls that head over.
	 */
	u32 balance_lag_us;
	/*
	 * Steal a queued task (or kick a CPU to) only when it would otherwise
	 * wait at least this long, in us: about what a migration costs.
	 */
	u32 steal_min_us;
	/* A wakee whose virtual deadline is earlier preempts the running task (latency.bpf.h). */
	u32 wakeup_preempt;
	/* Test-only: non-zero makes the next dispatch call scx_bpf_error(). */
	u32 test_inject_error;
	/* Placement trace (trace.bpf.h): on or off, and which tasks (0 / "" for all). */
	u32 trace;
	u32 trace_tgid;
	char trace_comm[SIS_COMM_LEN];
};

/* The placement trace: one record per event, written only while the trace tunable is on. */
enum sis_trace_kind {
	SIS_TRACE_DECISION, /* select_cpu placed a wakeup */
	SIS_TRACE_QUEUED,   /* ops.enqueue queued a task to wait (no idle CPU was claimed) */
	SIS_TRACE_MOVE,	    /* a steal, pull or rescue moved a task, or a CPU was kicked to */
	SIS_TRACE_RUN,	    /* a task started running */
	SIS_TRACE_STOP,	    /* a task stopped running */
	SIS_NR_TRACE_KINDS,
};

/* Why a MOVE happened (what moved the task, or why a CPU was kicked). */
enum sis_move {
	SIS_MOVE_STEAL_LLC,    /* an idle CPU stole from a CPU of its LLC */
	SIS_MOVE_STEAL_REMOTE, /* ... from another LLC */
	SIS_MOVE_PULL,	       /* a busy CPU pulled a task lagging in vtime, same LLC */
	SIS_MOVE_PULL_REMOTE,  /* ... from another LLC */
	SIS_MOVE_RESCUE_HELD,  /* taken from a CPU a higher class holds */
	SIS_MOVE_RESCUE_REENQ, /* requeued off a CPU a higher class took, to an idle one */
	SIS_MOVE_WAKEQ,	       /* taken from another CPU's wakequeue shard */
	SIS_MOVE_PLAIN_FIFO,   /* plain preset: taken from the one FIFO */
	SIS_MOVE_TICK_KICK,    /* a busy CPU's tick woke an idle CPU to steal */
	SIS_MOVE_WAKEUP_KICK,  /* a wakee queued behind a busy CPU woke an idle one */
	SIS_MOVE_HELD_KICK,    /* a CPU taken by a higher class woke idle CPUs */
	SIS_NR_MOVES,
};

/* Where a QUEUED task waits. */
enum sis_queue {
	SIS_QUEUE_CPU,	 /* its CPU's DSQ */
	SIS_QUEUE_SHARD, /* a wakequeue shard */
	SIS_QUEUE_PLAIN, /* the plain preset's FIFO */
	SIS_NR_QUEUES,
};

/* What a RUN's cause field holds: the path that placed it, or the move that brought it. */
enum sis_cause_kind {
	SIS_CAUSE_NONE, /* neither since it last ran: it stayed where it was queued */
	SIS_CAUSE_PATH,
	SIS_CAUSE_MOVE,
};

struct sis_trace_event {
	u64 ts;
	/*
	 * DECISION: the select_cpu cost; MOVE: how long the task had waited in
	 * its queue; RUN: the wait from its decision to this run (0 without one).
	 */
	u64 ns;
	/* RUN: the timestamp of the decision it follows (0: none); ties the two. */
	u64 decision_ts;
	u32 pid;
	u32 tgid;
	/* DECISION: the chosen CPU; QUEUED: the queue's CPU; MOVE: to; RUN, STOP: this CPU. */
	s32 cpu;
	/* DECISION: prev; MOVE: from; RUN: where it last ran (-1: never). */
	s32 from_cpu;
	s32 waker_cpu; /* DECISION: the CPU select_cpu ran on */
	u32 wake_flags;
	u32 nr_scan; /* DECISION: SIS_UTIL's scan limit for prev's LLC */
	u32 tested;  /* DECISION: CPUs the LLC scan tested */
	u32 depth;   /* QUEUED: tasks already waiting there */
	u16 kind;    /* enum sis_trace_kind */
	/* DECISION: enum sis_path; MOVE: enum sis_move; QUEUED: enum sis_queue; RUN: per
	 * cause_kind. */
	u16 cause;
	u8 cause_kind; /* RUN: enum sis_cause_kind */
	u8 idle;       /* DECISION: the CPU was idle and is claimed for the task */
	u8 migrated;   /* RUN: on another CPU than last time */
	u8 pad;
	char comm[SIS_COMM_LEN];
};

#endif /* __SIS_INTF_H */
