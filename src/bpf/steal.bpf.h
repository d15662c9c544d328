/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stealing on expected wait, the kernel's task_hot() and avg_idle reasoning:
 * a CPU out of work takes a task queued on another CPU only when leaving it
 * there would cost it more than the move does (steal-min, about the kernel's
 * 0.5 ms migration cost). Stealing whatever is queued would move tasks away
 * from warm CPUs about to run them.
 *
 * What a steal saves: the head of a queue would still wait for what the
 * running task has left of its average run, and each task behind the head
 * waits one run of the head less. A head that ran on its CPU within
 * steal-min is still cache-hot there and must save twice as much. A head
 * that has already waited steal-min goes whatever the estimate says, since
 * the estimate was wrong. Among the heads worth taking, the one expected to
 * run longest goes. Other LLCs are looked at at most once per timer period
 * per LLC, the busiest first, and a steal from there must save twice as
 * much. The head judged is always the task moved: the first task of the
 * queue that the stealer may run (first_movable(), move_judged()).
 */
#ifndef __SIS_STEAL_BPF_H
#define __SIS_STEAL_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "frame.bpf.h"
#include "cpu_dsq.bpf.h"
#include "held.bpf.h"
#include "move.bpf.h"
#include "pace.bpf.h"
#include "sis_util.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "wait.bpf.h"
#include "workmask.bpf.h"

enum {
	/* Weight of the newest idle period in a CPU's average, 1/8, as the kernel's avg_idle. */
	SIS_IDLE_AVG_SHIFT = 3,
	/* One idle period counts for at most this much (ns): one long sleep is not a habit. */
	SIS_IDLE_AVG_MAX_NS = 100000000,
};

/* When a CPU of each LLC last looked for work in another LLC. */
u64 llc_remote_steal_at[SIS_MAX_LLCS];

/* At running, after the CPU idled for @idle ns: fold it into the CPU's average idle period. */
static __always_inline void idle_avg_update(struct sis_cpu_ctx *cctx, u64 idle)
{
	if (idle > SIS_IDLE_AVG_MAX_NS)
		idle = SIS_IDLE_AVG_MAX_NS;
	if (!cctx->avg_idle) {
		cctx->avg_idle = idle;
		return;
	}
	cctx->avg_idle = cctx->avg_idle - (cctx->avg_idle >> SIS_IDLE_AVG_SHIFT) +
			 (idle >> SIS_IDLE_AVG_SHIFT);
}

/*
 * Whether taking @head, the first task @victim's queue would give the
 * stealer, with @nr queued there, saves enough (see the top of this file):
 * it has waited @min, or its expected wait there is at least @wait_min
 * (twice that if it ran a moment ago, its cache still warm there), where no
 * bar on the wait asks more than @cap. Counts the heads left, in @s.
 */
static __always_inline bool worth_stealing(s32 victim, struct task_struct *head, u64 nr, u64 now,
					   u64 min, u64 wait_min, u64 cap, struct sis_llc_stats *s)
{
	struct sis_task_ctx *h = task_ctx(head);
	struct sis_cpu_ctx *vc = cpu_ctx(victim);
	u64 bar = capped(wait_min, cap), saves, need = bar;

	if (!h || !vc)
		return true;
	if (h->queued_at > now)
		stat_add(s, SIS_CNT_CLOCK_BEHIND, 1);
	if (time_since(now, h->queued_at) >= min)
		return true;
	saves = curr_remaining(vc, now) + (nr ? nr - 1 : 0) * h->avg_run;
	if (time_since(now, h->stopped_at) < min)
		need = capped(2 * wait_min, cap);
	if (saves >= need)
		return true;
	stat_add(s, saves >= bar ? SIS_CNT_STEAL_SKIP_HOT : SIS_CNT_STEAL_SKIP_YOUNG, 1);
	return false;
}

/*
 * Judge @victim's queue for a steal by @cpu at @min and @wait_min (see
 * worth_stealing()): 0 when the first task @cpu may take there is not worth
 * stealing (or there is none), else a score, higher better: a held CPU's
 * task beats all, then the task expected to run longest (it has the most to
 * lose waiting). The task's pid goes to @cpu's frame (judged_pid). Global, so that
 * the verifier checks the DSQ iterator once, on its own, however many loops
 * call it.
 */
__noinline u64 steal_score(s32 cpu, s32 victim, u64 now, u64 min, u64 wait_min)
{
	struct sis_llc_stats *s = my_stats();
	struct sis_cpu_frame *f = cpu_frame(cpu);
	struct task_struct *head;
	struct sis_task_ctx *h;
	u64 nr;

	if (victim < 0 || victim == cpu)
		return 0;
	nr = dsq_nr_queued(cpu_dsq(victim));
	if (!nr) {
		work_clear(victim, cpu_dsq(victim));
		return 0;
	}
	head = first_movable(cpu_dsq(victim), cpu);
	if (!head)
		return 0;
	f->judged_pid = head->pid;
	if (cpu_held(victim, now))
		return ~0ULL;
	if (!worth_stealing(victim, head, nr, now, min, wait_min, f->steal_cap, s))
		return 0;
	h = task_ctx(head);
	return (h ? h->avg_run : 0) + 1;
}

/*
 * The CPU of @llc, other than @cpu, with the best steal_score() at @min and
 * @wait_min; -1 if none. Its task's pid is left in @cpu's frame, for
 * the move. Judges only the CPUs whose work bit is set, in one loop over
 * the LLC's positions that ends past the last set bit: a loop over each
 * word's bits nested in one over the words multiplies what the verifier
 * walks, and one over the set bits alone (the lowest set bit found by a
 * multiply and a table) does not converge. Global, so that the verifier
 * checks the loop once, on its own.
 */
__noinline s32 steal_victim(s32 cpu, u32 llc, u64 now, u64 min, u64 wait_min)
{
	struct sis_llc_stats *s = my_stats();
	struct sis_cpu_frame *f = cpu_frame(cpu);
	u32 n = llc_size(llc), last_word = n ? (n - 1) / 64 : 0, looked = 0, pos;
	u64 best_score = 0;
	s32 best = -1, best_pid = 0;

	calls_loop();
	bpf_for (pos, 0, n) {
		u64 w = llc_work[llc & (SIS_MAX_LLCS - 1)][(pos / 64) & (SIS_WORK_WORDS - 1)];
		s32 victim;
		u64 score;

		calls_pass();
		/* No bit left in the last word: the rest of the row has no work. */
		if (!(w >> (pos & 63)) && pos / 64 == last_word)
			break;
		if (!((w >> (pos & 63)) & 1))
			continue;
		victim = llc_cpu_at(llc, pos);
		if (victim == cpu)
			continue;
		looked++;
		score = steal_score(cpu, victim, now, min, wait_min);
		if (score > best_score) {
			best_score = score;
			best = victim;
			best_pid = f->judged_pid;
			if (score == ~0ULL)
				break;
		}
	}
	stat_add(s, SIS_CNT_STEAL_LOOKED, looked);
	f->judged_pid = best_pid;
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
 * at another LLC within @interval; -1 otherwise. Every look claims the
 * interval, found or not, so the LLCs are walked at most once per interval
 * per LLC. No utilization gate: PELT trails an idle CPU by tens of ms, and
 * gating on it would leave CPUs idle while CPU hogs wait in the other LLC.
 * What a remote steal must save, twice steal-min, is the gate.
 */
static __always_inline s32 remote_llc(u32 llc, u64 now, u64 interval)
{
	u64 *at = &llc_remote_steal_at[llc & (SIS_MAX_LLCS - 1)], last = *at;
	s32 found = -1;
	u64 best = 0;
	u32 other;

	if (time_since(now, last) < interval || __sync_val_compare_and_swap(at, last, now) != last)
		return -1;
	calls_loop();
	bpf_for (other, 0, nr_llcs) {
		u64 util;

		calls_pass();
		if (other == llc || !llc_work_maybe(other))
			continue;
		util = llc_util_per_cpu(other);
		if (found < 0 || util > best) {
			best = util;
			found = other;
		}
	}
	return found;
}

enum steal_result { STOLE_NONE, STOLE_LLC, STOLE_REMOTE };

/*
 * Move @victim's judged task (its pid in @cpu's frame) here; record how
 * long it had waited.
 */
static __always_inline bool steal_from(s32 cpu, s32 victim, u64 now, struct sis_llc_stats *s)
{
	struct sis_cpu_frame *f = cpu_frame(cpu);

	if (!move_judged(cpu_dsq(victim), cpu, f->judged_pid, now,
			 llc_of(victim) == llc_of(cpu) ? SIS_MOVE_STEAL_LLC
						       : SIS_MOVE_STEAL_REMOTE))
		return false;
	if (s)
		stat_duration(s->steal_wait_hist, &s->counters[SIS_CNT_STEAL_WAIT_NS],
			      f->judged_wait);
	return true;
}

/*
 * Idle @cpu looks for work: first on the CPU that kicked it for this
 * dispatch (@kicker, -1 for none), then in its LLC, then, rarely, in
 * another LLC, where a steal must save twice as much. The kernel's newidle
 * rule: a CPU whose idle periods are shorter than a migration costs looks
 * no further than its kicker; the busy CPU's tick kick still bounds any
 * wait. The bar is the capped one: idle periods are often a timer's
 * (a task that sleeps 10 ms), whose length does not grow with the pace, and
 * a CPU idling a quarter of its time beside a queue of CPU hogs would not
 * look under the scaled bar.
 */
static __always_inline enum steal_result steal(s32 cpu, u32 llc, s32 kicker, u64 now,
					       const struct sis_tunables *t)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_llc_stats *s = my_stats();
	s32 victim = -1, other;
	u64 min = steal_min_ns(t, cctx), wait_min = steal_wait_min_ns(t, cctx), far;

	/* In the stealer's frame: steal_score() has the five arguments a global function may. */
	cpu_frame(cpu)->steal_cap = steal_wait_cap_ns(t);
	stat_add(s, SIS_CNT_STEAL_SCANS, 1);
	/*
	 * The kick named @kicker a moment ago; it is no reason to take a task
	 * the stealer would not take from anyone: the same test as any victim.
	 */
	if (kicker >= 0) {
		/* Across LLCs a steal must save twice as much. */
		far = llc_of(kicker) == llc ? 1 : 2;
		if (steal_score(cpu, kicker, now, far * min, far * wait_min))
			victim = kicker;
	}
	/*
	 * A kick is a reason to look at the kicker, not at everyone: past it,
	 * the newidle rule holds for a kicked CPU too, or every queued wakeup
	 * and tick that kicks would start steals by CPUs about to get work.
	 */
	if (victim < 0 && cctx && cctx->avg_idle && cctx->avg_idle < wait_min) {
		stat_add(s, SIS_CNT_STEAL_SKIP_SHORT_IDLE, 1);
		return STOLE_NONE;
	}
	if (victim < 0 && llc_work_maybe(llc))
		victim = steal_victim(cpu, llc, now, min, wait_min);
	if (victim < 0 && nr_llcs > 1 && other_llc_work_maybe(llc)) {
		other = remote_llc(llc, now, tun_timer_period_ns(t));
		if (other >= 0)
			victim = steal_victim(cpu, other, now, 2 * min, 2 * wait_min);
	}
	if (victim < 0 || !steal_from(cpu, victim, now, s))
		return STOLE_NONE;
	if (victim == kicker)
		stat_add(s, SIS_CNT_STEAL_KICKER, 1);
	return llc_of(victim) == llc ? STOLE_LLC : STOLE_REMOTE;
}

#endif /* __SIS_STEAL_BPF_H */
