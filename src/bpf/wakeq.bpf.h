/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared wakequeue (Vernet's swqueue / SHARED_RUNQ), sharded. A waking task
 * that found no idle CPU waits in a queue shared by its LLC, so whichever CPU
 * of the LLC frees up first runs it. One queue per LLC would serialise every
 * wakeup of the LLC on one lock, which large LLCs contend for, so each LLC
 * has several shard DSQs: a CPU queues into and serves its own shard first, then the
 * others.
 */
#ifndef __SIS_WAKEQ_BPF_H
#define __SIS_WAKEQ_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"

/* Shards per LLC when the tunable says 0 (computed by the daemon). */
const volatile u32 llc_auto_shards[SIS_MAX_LLCS];

#define SIS_NR_SLOTS (SIS_MAX_LLCS * SIS_MAX_SHARDS)

/*
 * Per-shard bookkeeping for the daemon. Atomics, but only on the wakequeue
 * path, whose DSQ lock the same CPUs contend for anyway.
 */
u64 shard_enqueued[SIS_NR_SLOTS]; /* tasks queued */
u64 shard_ran[SIS_NR_SLOTS];	  /* queued tasks that then ran */
u64 shard_left[SIS_NR_SLOTS];	  /* queued tasks that left otherwise (requeue, exit) */
u32 shard_depth[SIS_NR_SLOTS];	  /* sampled by the timer */
u32 shard_max_depth[SIS_NR_SLOTS];
u32 llc_shards[SIS_MAX_LLCS]; /* shards in use, sampled by the timer */
/*
 * Tasks waiting in slots that no CPU owns since a reshard (fewer shards than
 * before), sampled by the timer. Busy CPUs serve them (wakeq_take_orphan()),
 * or on a busy LLC, where no CPU idles to walk every slot, they would wait
 * for good.
 */
u32 llc_orphaned[SIS_MAX_LLCS];
/*
 * Tasks in each LLC's shards, never fewer than are there: counted before the
 * insert, uncounted after the task left. An LLC at 0 has nothing to serve,
 * and a dispatch skips its 16 slots (a kfunc call each) without asking.
 */
s64 llc_wakeq_tasks[SIS_MAX_LLCS];
/*
 * A bit per LLC whose shards may hold tasks: set at every shard insert
 * (read first), cleared by a CPU of another LLC that found the LLC's count
 * at 0. A dispatch asks this word before it walks other LLCs' shards.
 */
u64 llcs_with_wakeq;

/* Shard @slot's DSQ id: above every CPU id, so it never meets a CPU's DSQ. */
static __always_inline u64 shard_dsq(u32 slot)
{
	return SIS_DSQ_SHARD_BASE + slot;
}

/* Shards in use in @llc: the tunable, else the daemon's choice for its size; 1 to its CPUs. */
static __always_inline u32 nr_shards(u32 llc, const struct sis_tunables *t)
{
	u32 n = t->wakeq_shards, size = llc_size(llc);

	if (!n)
		n = llc_auto_shards[llc & (SIS_MAX_LLCS - 1)];
	if (n > size)
		n = size;
	if (n > SIS_MAX_SHARDS)
		n = SIS_MAX_SHARDS;
	return n ? n : 1;
}

/* The shard slot (llc * SIS_MAX_SHARDS + shard) that @cpu queues into and serves first. */
static __always_inline u32 own_slot(s32 cpu, const struct sis_tunables *t)
{
	u32 llc = llc_of(cpu);

	return llc * SIS_MAX_SHARDS + llc_pos_of(cpu) % nr_shards(llc, t);
}

/* Atomic: every CPU of the LLC writes these books. The mask is for the verifier. */
static __always_inline void slot_add(u64 *counters, s32 slot)
{
	if (slot >= 0)
		__sync_fetch_and_add(&counters[(u32)slot & (SIS_NR_SLOTS - 1)], 1);
}

/* A task that was queued in a shard and leaves it: account where it went. */
static __always_inline void wakeq_forget(struct sis_task_ctx *tctx, u64 *counters)
{
	if (tctx->wakeq_slot >= 0) {
		slot_add(counters, tctx->wakeq_slot);
		__sync_fetch_and_add(
			&llc_wakeq_tasks[(tctx->wakeq_slot / SIS_MAX_SHARDS) & (SIS_MAX_LLCS - 1)],
			-1);
		tctx->wakeq_slot = -1;
	}
}

/* @llc's shards may hold tasks. */
static __always_inline bool llc_wakeq_maybe(u32 llc)
{
	return llc_wakeq_tasks[llc & (SIS_MAX_LLCS - 1)] > 0;
}

/*
 * The shards of an LLC other than @llc may hold tasks. Clears the bits of
 * LLCs whose count is back at 0; an insert racing with the clear counts
 * before it inserts and sets the bit after, so a bit that goes is set again.
 */
static __always_inline bool wakeq_elsewhere(u32 llc)
{
	u64 others = llcs_with_wakeq & ~(1ULL << (llc & (SIS_MAX_LLCS - 1)));
	u32 other;

	if (!others)
		return false;
	calls_loop();
	bpf_for (other, 0, nr_llcs) {
		calls_pass();
		if (((others >> other) & 1) && !llc_wakeq_maybe(other)) {
			__sync_fetch_and_and(&llcs_with_wakeq, ~(1ULL << other));
			if (llc_wakeq_maybe(other))
				__sync_fetch_and_or(&llcs_with_wakeq, 1ULL << other);
		}
	}
	return llcs_with_wakeq & ~(1ULL << (llc & (SIS_MAX_LLCS - 1)));
}

/*
 * Queue a waking task into the shard of the CPU it was placed on and kick an
 * idle CPU of the LLC. Tasks bound to one CPU keep to that CPU's own DSQ.
 */
static __always_inline bool wakeq_enqueue(struct task_struct *p, s32 cpu, u64 vtime, u64 enq_flags,
					  const struct sis_tunables *t)
{
	struct sis_task_ctx *tctx = task_ctx(p);
	const struct cpumask *mask;
	u32 slot, depth;
	s32 idle;

	if (!t->wakeq || !(enq_flags & SCX_ENQ_WAKEUP) || p->nr_cpus_allowed == 1 || !tctx)
		return false;

	/* Booked before the insert: a CPU may run the task before this returns. */
	slot = own_slot(cpu, t) & (SIS_NR_SLOTS - 1);
	tctx->wakeq_slot = slot;
	tctx->wakeq_at = now_ns();
	slot_add(shard_enqueued, slot);
	__sync_fetch_and_add(&llc_wakeq_tasks[llc_of(cpu) & (SIS_MAX_LLCS - 1)], 1);
	if (!(llcs_with_wakeq & (1ULL << (llc_of(cpu) & (SIS_MAX_LLCS - 1)))))
		__sync_fetch_and_or(&llcs_with_wakeq, 1ULL << (llc_of(cpu) & (SIS_MAX_LLCS - 1)));
	stat_inc(SIS_CNT_WAKEQ_ENQ);
	dsq_insert_vtime(p, shard_dsq(slot), tun_slice_ns(t), vtime, enq_flags);

	depth = dsq_nr_queued(shard_dsq(slot));
	if (depth > shard_max_depth[slot])
		shard_max_depth[slot] = depth;
	if (t->trace && trace_wants(p, t))
		trace_queued(p, cpu, SIS_QUEUE_SHARD, depth ? depth - 1 : 0);

	mask = llc_mask_for(p, llc_of(cpu));
	idle = mask ? pick_idle_cpu(mask, 0) : -1;
	kick_cpu(idle >= 0 ? idle : cpu, SCX_KICK_IDLE);
	return true;
}

static __always_inline bool take_from_slot(u32 slot)
{
	u64 dsq = shard_dsq(slot);

	return dsq_nr_queued(dsq) && move_traced(dsq, SIS_MOVE_WAKEQ);
}

/* wakeq_dispatch()'s walk, @own being @cpu's slot. Global: the verifier checks it once. */
__noinline int wakeq_serve(s32 cpu, u32 own)
{
	u32 base = llc_of(cpu) * SIS_MAX_SHARDS, i;

	if (take_from_slot(own)) {
		stat_inc(SIS_CNT_WAKEQ_DISP_OWN);
		return 1;
	}
	calls_loop();
	bpf_for (i, 0, SIS_MAX_SHARDS) {
		calls_pass();
		if (base + i != own && take_from_slot(base + i)) {
			stat_inc(SIS_CNT_WAKEQ_DISP_OTHER);
			return 1;
		}
	}
	return 0;
}

/*
 * Serve @cpu's own shard, then the LLC's other shards. Every shard slot of
 * the LLC is looked at, not just the current count: tasks queued before the
 * wakequeue was switched off or resharded must still run.
 */
static __always_inline bool wakeq_dispatch(s32 cpu, const struct sis_tunables *t)
{
	if (!llc_wakeq_maybe(llc_of(cpu)))
		return false;
	return wakeq_serve(cpu, own_slot(cpu, t));
}

/* wakeq_take_orphan()'s walk. Global: the verifier checks its loop once. */
__noinline int wakeq_serve_orphans(s32 cpu, const struct sis_tunables *t)
{
	u32 llc = llc_of(cpu), base = llc * SIS_MAX_SHARDS, i;

	if (!t)
		return 0;
	calls_loop();
	bpf_for (i, nr_shards(llc, t), SIS_MAX_SHARDS) {
		calls_pass();
		if (take_from_slot(base + i)) {
			stat_inc(SIS_CNT_WAKEQ_DISP_OTHER);
			return 1;
		}
	}
	return 0;
}

/*
 * A busy CPU serves the orphaned slots of its LLC (see llc_orphaned) before
 * keeping its own task.
 */
static __always_inline bool wakeq_take_orphan(s32 cpu, const struct sis_tunables *t)
{
	if (!llc_orphaned[llc_of(cpu) & (SIS_MAX_LLCS - 1)])
		return false;
	return wakeq_serve_orphans(cpu, t);
}

/* A task starts running: if it came out of a shard, record how long it waited. */
static __always_inline void wakeq_running(struct sis_task_ctx *tctx, u64 now)
{
	struct sis_llc_stats *s;
	u64 wait;

	if (tctx->wakeq_slot < 0)
		return;
	wakeq_forget(tctx, shard_ran);
	wait = now > tctx->wakeq_at ? now - tctx->wakeq_at : 0;
	s = my_stats();
	if (!s)
		return;
	s->counters[SIS_CNT_WAKEQ_WAITS]++;
	stat_duration(s->wakeq_wait_hist, &s->counters[SIS_CNT_WAKEQ_WAIT_NS], wait);
}

/* Timer: sample every shard's depth for the daemon, and find orphaned slots. */
__noinline int wakeq_sample(const struct sis_tunables *t)
{
	u32 llc, i;

	if (!t)
		return 0;
	bpf_for (llc, 0, nr_llcs) {
		u32 n = nr_shards(llc, t), orphaned = 0;

		bpf_for (i, 0, SIS_MAX_SHARDS) {
			u32 slot = (llc * SIS_MAX_SHARDS + i) & (SIS_NR_SLOTS - 1);
			u32 depth = dsq_nr_queued(shard_dsq(slot));

			shard_depth[slot] = depth;
			if (i >= n)
				orphaned += depth;
		}
		if (llc < SIS_MAX_LLCS) {
			llc_shards[llc] = n;
			llc_orphaned[llc] = orphaned;
		}
	}
	return 0;
}

/* Every slot, not just those in use: the count changes live, and DSQs are made only in ops.init. */
static __always_inline s32 wakeq_init(void)
{
	u32 llc, i;
	s32 err;

	bpf_for (llc, 0, nr_llcs) {
		bpf_for (i, 0, SIS_MAX_SHARDS) {
			err = scx_bpf_create_dsq(shard_dsq(llc * SIS_MAX_SHARDS + i), -1);
			if (err)
				return err;
		}
	}
	return 0;
}

#endif /* __SIS_WAKEQ_BPF_H */
