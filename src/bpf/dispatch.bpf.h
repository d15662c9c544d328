/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ops.dispatch: where a CPU that needs a task finds one, in order (the
 * first source that succeeds ends the call). Every source behind a loop or
 * another CPU's queue is gated by a summary read without a call: the work
 * bits (workmask.bpf.h), the held-CPU count, the wakequeue task counts and
 * the plain FIFO's hint. So an idle CPU with nothing anywhere asks the
 * kernel one thing, its own DSQ, as the peers' dispatch does.
 */
#ifndef __SIS_DISPATCH_BPF_H
#define __SIS_DISPATCH_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "cpu_dsq.bpf.h"
#include "held.bpf.h"
#include "held_rescue.bpf.h"
#include "pull.bpf.h"
#include "stats.bpf.h"
#include "steal.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"
#include "wakeq.bpf.h"
#include "workmask.bpf.h"

/*
 * The plain FIFO may hold tasks: set by every insert into it, cleared by a
 * dispatch of the sis preset that found it empty, set again by the timer
 * while tasks wait there (an insert lands after ops.enqueue returns, so a
 * clearer can miss one). Outside the plain preset the FIFO only drains.
 */
bool plain_fifo_maybe;

/* The clock, read once per callback: *@now is 0 until the first read. */
static __always_inline u64 clock_once(u64 *now)
{
	if (!*now)
		*now = now_ns();
	return *now;
}

/* @dsq's first task is earlier than @vtime (an empty DSQ's is not). */
static __always_inline bool ahead_of(u64 dsq, u64 vtime)
{
	u64 head;

	return head_vtime(dsq, &head) && time_before(head, vtime);
}

/*
 * ops.dispatch runs before a still-runnable @prev is put back in the queue,
 * so the DSQ's head only competes with the others, not with @prev. Keep
 * @prev running while it is still ahead in vtime (or alone), or nice would
 * mean nothing between two tasks sharing a CPU.
 */
static __always_inline bool keep_prev(struct task_struct *prev, s32 cpu, u64 now,
				      const struct sis_tunables *t)
{
	struct sis_task_ctx *tctx = task_ctx(prev);
	struct sis_cpu_ctx *cctx;
	u64 vtime = vtime_charged(prev, tctx, now);
	/* The own DSQ is ordered by key (task_key()): prev competes there with its own. */
	u64 key = task_key(prev, tctx, vtime, t);

	if ((work_maybe(cpu) && ahead_of(cpu_dsq(cpu), key)) ||
	    (llc_wakeq_maybe(llc_of(cpu)) && ahead_of(shard_dsq(own_slot(cpu, t)), vtime)))
		return false;
	/* prev is still the queue's minimum: the CPU's clock moves with it. */
	cctx = cpu_ctx(cpu);
	if (cctx && time_before(cctx->vtime_now, vtime))
		cctx->vtime_now = vtime;
	task_set_slice(prev, tun_slice_ns(t));
	return true;
}

/* Serve own shard before own DSQ when its head is earlier (an empty shard is never earlier). */
static __always_inline bool shard_first(s32 cpu, const struct sis_tunables *t)
{
	u64 shard, own;

	if (!llc_wakeq_maybe(llc_of(cpu)) || !head_vtime(shard_dsq(own_slot(cpu, t)), &shard))
		return false;
	return !head_vtime(cpu_dsq(cpu), &own) || time_before(shard, own);
}

/* This CPU's own DSQ, whatever its work bit says (it can lag an insert; workmask.bpf.h). */
static __always_inline bool take_own(s32 cpu)
{
	if (dsq_move_to_local(cpu_dsq(cpu))) {
		stat_inc(SIS_CNT_DISPATCH_LOCAL);
		return true;
	}
	if (work_maybe(cpu))
		work_clear(cpu, cpu_dsq(cpu));
	return false;
}

/*
 * Other LLCs' wakequeue shards, last: their own CPUs serve them first.
 * Global: the verifier checks the two loops once.
 */
__noinline int take_remote_shard(u32 llc)
{
	u32 other, i;

	if (!wakeq_elsewhere(llc))
		return 0;
	calls_loop();
	bpf_for (other, 0, nr_llcs) {
		calls_pass();
		if (other == llc || !llc_wakeq_maybe(other))
			continue;
		calls_loop();
		bpf_for (i, 0, SIS_MAX_SHARDS) {
			calls_pass();
			if (take_from_slot(other * SIS_MAX_SHARDS + i)) {
				stat_inc(SIS_CNT_DISPATCH_REMOTE);
				return 1;
			}
		}
	}
	return 0;
}

/*
 * The plain preset, scx_simple's dispatch: the one FIFO. What waited in this
 * CPU's own queues before the switch goes first (nothing new enters them
 * now), or a FIFO that yielding tasks keep full would starve tasks pinned
 * here; both are gated by their summaries, so the FIFO is the one
 * call of an idle dispatch. Global, as is dispatch_sis(): the verifier walks
 * each preset once, not once per outcome of the tunables snapshot before it.
 */
__noinline int dispatch_plain(s32 cpu, const struct sis_tunables *t)
{
	if (!t)
		return 0;
	if (work_maybe(cpu) && take_own(cpu))
		return 1;
	if (wakeq_dispatch(cpu, t)) {
		stat_inc(SIS_CNT_DISPATCH_LOCAL);
		return 1;
	}
	if (move_traced(SIS_DSQ_PLAIN, SIS_MOVE_PLAIN_FIFO)) {
		stat_inc(SIS_CNT_DISPATCH_LOCAL);
		return 1;
	}
	return 0;
}

/*
 * After switching away from the plain preset: drain its FIFO before anything
 * else. A dispatch that took nothing clears the hint only when the FIFO is
 * empty: what is left may be a task bound to another CPU, and were the hint
 * cleared, that CPU would pass the FIFO by at every dispatch while its
 * neighbours' dispatches cleared each renewal, until the watchdog ejects
 * the scheduler.
 */
static __always_inline bool drain_plain_fifo(void)
{
	if (!plain_fifo_maybe)
		return false;
	if (move_traced(SIS_DSQ_PLAIN, SIS_MOVE_PLAIN_FIFO)) {
		stat_inc(SIS_CNT_DISPATCH_LOCAL);
		return true;
	}
	if (!dsq_nr_queued(SIS_DSQ_PLAIN))
		plain_fifo_maybe = false;
	return false;
}

/*
 * From the timer, under the sis preset: wake each idle CPU whose task waits
 * in the plain FIFO. An insert that lands after a dispatch found the FIFO
 * empty reaches an idle CPU's queue with the hint cleared; that CPU's one
 * dispatch passed the FIFO by, and nothing else would wake it for a task
 * bound to it. A busy CPU drains the FIFO at its next dispatch.
 */
static __always_inline void wake_plain_waiters(void)
{
	struct task_struct *p;

	/* Outside a struct_ops callback the DSQ iterator needs an RCU section (6.12). */
	bpf_rcu_read_lock();
	bpf_for_each (scx_dsq, p, SIS_DSQ_PLAIN, 0)
		kick_cpu(task_cpu(p), SCX_KICK_IDLE);
	bpf_rcu_read_unlock();
}

/*
 * The sis preset's sources after prev: the wakequeue's shards, @cpu's own
 * queue, a steal (@kicker: the CPU that kicked this one, -1 for none), other
 * LLCs' shards. @now: the clock if this dispatch read it already, else 0.
 * Global: the verifier walks these once, not once per outcome of the
 * sources before them.
 */
__noinline int dispatch_sources(s32 cpu, s32 kicker, u64 now, const struct sis_tunables *t)
{
	u32 llc = llc_of(cpu);

	if (!t)
		return 0;
	if (shard_first(cpu, t) && wakeq_dispatch(cpu, t))
		return 1;
	if (take_own(cpu))
		return 1;
	if (wakeq_dispatch(cpu, t))
		return 1;
	if (kicker >= 0 || llc_work_maybe(llc) || (nr_llcs > 1 && other_llc_work_maybe(llc))) {
		switch (steal(cpu, llc, kicker, clock_once(&now), t)) {
		case STOLE_LLC:
			stat_inc(SIS_CNT_DISPATCH_LLC);
			return 1;
		case STOLE_REMOTE:
			stat_inc(SIS_CNT_DISPATCH_REMOTE);
			return 1;
		default:
			break;
		}
	}
	return take_remote_shard(llc);
}

/*
 * A still-runnable @prev, whose slice ended: a pull for service owed, else
 * @prev again while it is still ahead. Global: the verifier walks the pull
 * and keep_prev() once, not once per outcome of the sources before them.
 */
__noinline int dispatch_prev(struct task_struct *prev __arg_trusted, s32 cpu, u64 now,
			     const struct sis_tunables *t)
{
	if (!prev || !t)
		return 0;
	if (balance_pull(prev, cpu, llc_of(cpu), now, t))
		return 1;
	if (!keep_prev(prev, cpu, now, t))
		return 0;
	stat_inc(SIS_CNT_DISPATCH_KEEP);
	return 1;
}

/*
 * The sis preset. @kicker: the CPU that kicked this one to steal its work,
 * -1 for none. A still-runnable @prev (NULL: none) means its slice ended on
 * a busy CPU. @preempted: a wakeup or a tick preempted @prev for a task of
 * this CPU's queue (take_preempting()); that task goes first, before a pull
 * and before @prev, which competes again only if the queue is gone.
 */
__noinline int dispatch_sis(s32 cpu, struct task_struct *prev __arg_trusted __arg_nullable,
			    s32 kicker, bool preempted, const struct sis_tunables *t)
{
	bool prev_runnable = prev && (prev->scx.flags & SCX_TASK_QUEUED);
	u32 llc = llc_of(cpu);
	u64 now = 0;

	if (!t)
		return 0;
	if (drain_plain_fifo())
		return 1;
	if (wakeq_take_orphan(cpu, t))
		return 1;
	if (nr_held_cpus && take_from_held(cpu, llc, clock_once(&now)))
		return 1;
	if (prev_runnable && !preempted && dispatch_prev(prev, cpu, clock_once(&now), t))
		return 1;
	if (dispatch_sources(cpu, kicker, now, t))
		return 1;
	return prev_runnable && preempted && dispatch_prev(prev, cpu, clock_once(&now), t);
}

/* A kick to steal is good for the dispatch it caused: read and clear it (-1: none). */
static __always_inline s32 take_kicker(struct sis_cpu_ctx *cctx)
{
	s32 kicker;

	if (!cctx || !cctx->kicked_by)
		return -1;
	kicker = cctx->kicked_by - 1;
	cctx->kicked_by = 0;
	return kicker;
}

/* A preemption is good for the dispatch it caused: read and clear it. */
static __always_inline bool take_preempting(struct sis_cpu_ctx *cctx)
{
	if (!cctx || !cctx->preempting)
		return false;
	cctx->preempting = 0;
	return true;
}

#endif /* __SIS_DISPATCH_BPF_H */
