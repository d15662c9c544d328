/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stealing on expected wait, the kernel's task_hot() and avg_idle reasoning:
 * a CPU out of work takes a task queued on another CPU only when leaving it
 * there would cost it more than the move does (steal-min, about the kernel's
 * 0.5 ms migration cost). Stealing whatever was queued moved hackbench's
 * tasks away from warm CPUs that would have run them microseconds later.
 *
 * What a steal saves: the head of a queue would still wait for what the
 * running task has left of its average run, and each task behind the head
 * waits one run of the head less. A head that ran on its CPU within
 * steal-min is still cache-hot there and must save twice as much. A head
 * that has already waited steal-min goes whatever the estimate says, since
 * the estimate was wrong. Among the heads worth taking, the one that ran
 * longest ago goes (its cache is the coldest). Other LLCs are looked at
 * at most once per balance interval per LLC, the busiest first, and a steal
 * from there must save twice as much.
 */
#ifndef __SIS_STEAL_BPF_H
#define __SIS_STEAL_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "balance.bpf.h"
#include "sis_util.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "workmask.bpf.h"

enum {
	/* Weight of the newest run in a task's average run length: 1/4 (shift 2). */
	SIS_RUN_AVG_SHIFT = 2,
};

/* When a CPU of each LLC last stole from another LLC. */
u64 llc_remote_steal_at[SIS_MAX_LLCS];

/* At stopping: fold a run of @ran ns into the task's average run length. */
static __always_inline void run_avg_update(struct sis_task_ctx *tctx, u64 ran)
{
	tctx->avg_run =
		tctx->avg_run - (tctx->avg_run >> SIS_RUN_AVG_SHIFT) + (ran >> SIS_RUN_AVG_SHIFT);
}

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
	ran = now - cctx->curr_at;
	return cctx->curr_avg_run > ran ? cctx->curr_avg_run - ran : cctx->curr_avg_run;
}

/*
 * Whether taking @head, first of the @nr tasks queued on @victim, saves at
 * least @min (see the top of this file); counts the heads left, in @s.
 * *@stopped: when @head last ran, for the choice between heads.
 */
static __always_inline bool worth_stealing(s32 victim, struct task_struct *head, u64 nr, u64 now,
					   u64 min, struct sis_llc_stats *s, u64 *stopped)
{
	struct sis_task_ctx *h = task_ctx(head);
	struct sis_cpu_ctx *vc = cpu_ctx(victim);
	u64 saves, need = min;

	*stopped = 0;
	if (!h || !vc)
		return true;
	*stopped = h->stopped_at;
	if (now - h->queued_at >= min)
		return true;
	saves = curr_remaining(vc, now) + (nr - 1) * h->avg_run;
	if (now - h->stopped_at < min)
		need = 2 * min;
	if (saves >= need)
		return true;
	stat_add(s, saves >= min ? SIS_CNT_STEAL_SKIP_HOT : SIS_CNT_STEAL_SKIP_YOUNG, 1);
	return false;
}

/*
 * The CPU of @llc, other than @cpu, with a queue head worth stealing at
 * @min, the head that ran longest ago first; -1 if none. A CPU a higher
 * class holds wins outright. Visits only the CPUs whose work bit is set.
 * Global, so that the verifier checks its loops once, on their own.
 */
__noinline s32 steal_victim(s32 cpu, u32 llc, u64 now, u64 min)
{
	struct sis_llc_stats *s = my_stats();
	u32 words = (llc_size(llc) + 63) / 64, looked = 0, wi, b;
	u64 oldest = ~0ULL;
	s32 best = -1;
	bool done = false;

	bpf_for (wi, 0, words) {
		u64 w = llc_work[llc & (SIS_MAX_LLCS - 1)][wi & (SIS_WORK_WORDS - 1)];

		bpf_for (b, 0, 64) {
			struct task_struct *head;
			u64 nr, stopped;
			s32 victim;

			if (!(w >> b))
				break;
			if (!((w >> b) & 1))
				continue;
			victim = llc_cpu_at(llc, wi * 64 + b);
			if (victim == cpu)
				continue;
			looked++;
			nr = scx_bpf_dsq_nr_queued(cpu_dsq(victim));
			if (!nr) {
				work_clear(victim, cpu_dsq(victim));
				continue;
			}
			if (cpu_held(victim, now)) {
				best = victim;
				done = true;
				break;
			}
			head = __COMPAT_scx_bpf_dsq_peek(cpu_dsq(victim));
			if (!head || !worth_stealing(victim, head, nr, now, min, s, &stopped))
				continue;
			if (best < 0 || stopped < oldest) {
				best = victim;
				oldest = stopped;
			}
		}
		if (done)
			break;
	}
	stat_add(s, SIS_CNT_STEAL_LOOKED, looked);
	return best;
}

/* Summed utilization of @llc per CPU (SIS_CAPACITY is one busy CPU). */
static __always_inline u64 llc_util_per_cpu(u32 llc)
{
	u32 n = llc_size(llc);

	return n ? llc_util[llc & (SIS_MAX_LLCS - 1)] / n : 0;
}

/*
 * The busiest other LLC that may have work queued, if no CPU of @llc looked
 * at another LLC within @interval; -1 otherwise. Claims the interval for
 * @llc when it returns an LLC. No utilization gate: PELT trails an idle CPU
 * by tens of ms, and gating on it left CPUs idle while CPU hogs waited in
 * the other LLC (util fell to 90% under a hog per CPU). What a remote steal
 * must save, twice steal-min, is the gate.
 */
static __always_inline s32 remote_llc(u32 llc, u64 now, u64 interval)
{
	u64 *at = &llc_remote_steal_at[llc & (SIS_MAX_LLCS - 1)], last = *at;
	s32 found = -1;
	u64 best = 0;
	u32 other;

	if (nr_llcs < 2 || now - last < interval)
		return -1;
	bpf_for (other, 0, nr_llcs) {
		u64 util;

		if (other == llc || !llc_work_maybe(other))
			continue;
		util = llc_util_per_cpu(other);
		if (found < 0 || util > best) {
			best = util;
			found = other;
		}
	}
	/* One CPU of the LLC per interval: the others see the new time and stay home. */
	if (found >= 0 && __sync_val_compare_and_swap(at, last, now) != last)
		return -1;
	return found;
}

enum steal_result { STOLE_NONE, STOLE_LLC, STOLE_REMOTE };

/* Move the first task @cpu may run of @victim's DSQ here; record how long the head had waited. */
static __always_inline bool steal_from(s32 victim, u64 now, struct sis_llc_stats *s)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(cpu_dsq(victim));
	struct sis_task_ctx *h = head ? task_ctx(head) : NULL;
	u64 waited = h && now > h->queued_at ? now - h->queued_at : 0;
	const struct sis_tunables *t;
	s32 cpu;

	if (!scx_bpf_dsq_move_to_local(cpu_dsq(victim), 0))
		return false;
	if (s)
		stat_duration(s->steal_wait_hist, &s->counters[SIS_CNT_STEAL_WAIT_NS], waited);
	t = trace_live();
	if (head && t) {
		cpu = bpf_get_smp_processor_id();
		if (trace_wants(head, t))
			trace_move(head,
				   llc_of(victim) == llc_of(cpu) ? SIS_MOVE_STEAL_LLC
								 : SIS_MOVE_STEAL_REMOTE,
				   victim, cpu);
	}
	return true;
}

/*
 * Idle @cpu looks for work: first on the CPU that kicked it (that CPU judged
 * its wait worth a steal when it kicked), then in its LLC, then, rarely, in
 * another LLC, where a steal must save twice as much.
 */
static __always_inline enum steal_result steal(s32 cpu, u32 llc, u64 now,
					       const struct sis_tunables *t)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_llc_stats *s = my_stats();
	u64 min = tun_steal_min_ns(t);
	s32 victim, other;

	stat_add(s, SIS_CNT_STEAL_SCANS, 1);
	if (cctx && cctx->kicked_by) {
		victim = cctx->kicked_by - 1;
		cctx->kicked_by = 0;
		if (victim != cpu && steal_from(victim, now, s)) {
			stat_add(s, SIS_CNT_STEAL_KICKER, 1);
			return llc_of(victim) == llc ? STOLE_LLC : STOLE_REMOTE;
		}
	}
	victim = llc_work_maybe(llc) ? steal_victim(cpu, llc, now, min) : -1;
	if (victim >= 0 && steal_from(victim, now, s))
		return STOLE_LLC;
	other = remote_llc(llc, now, tun_timer_period_ns(t));
	if (other < 0)
		return STOLE_NONE;
	victim = steal_victim(cpu, other, now, 2 * min);
	if (victim >= 0 && steal_from(victim, now, s))
		return STOLE_REMOTE;
	return STOLE_NONE;
}

/* @head (NULL: none) has waited in its queue for at least @min. */
static __always_inline bool head_waited(struct task_struct *head, u64 now, u64 min)
{
	struct sis_task_ctx *h = head ? task_ctx(head) : NULL;

	return h && now - h->queued_at >= min;
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

#endif /* __SIS_STEAL_BPF_H */
