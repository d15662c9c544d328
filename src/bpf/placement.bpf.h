/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wakeup placement: select_idle_sibling() rebuilt as ordered stages. Each
 * stage can be switched off through the tunables and each decision is
 * counted under the stage's path name.
 */
#ifndef __SIS_PLACEMENT_BPF_H
#define __SIS_PLACEMENT_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "held.bpf.h"
#include "pelt.bpf.h"
#include "sis_util.bpf.h"
#include "stats.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "types.bpf.h"

/* Policies of the higher sched classes (uapi sched.h; vmlinux.h has no macros). */
enum {
	SIS_SCHED_FIFO = 1,
	SIS_SCHED_RR = 2,
	SIS_SCHED_DEADLINE = 6,
};

/* A wakeup's placement: what select_cpu inserts, counts and traces. */
struct placed {
	s32 cpu;
	enum sis_path path;
	bool idle;   /* @cpu was idle and is now claimed for the task */
	u32 nr_scan; /* SIS_UTIL's limit for prev's LLC, and the CPUs the scan tested (trace) */
	u32 tested;
};

/* The stages' working state: the placement, and prev's LLC's counters. */
struct placement {
	struct sis_llc_stats *s;
	struct placed out;
};

/* @p may run on @cpu; a negative @cpu (no CPU) never matches. No cpumask test for most tasks. */
static __always_inline bool task_allows(struct task_struct *p, s32 cpu)
{
	if (cpu < 0)
		return false;
	if (p->nr_cpus_allowed >= nr_cpus)
		return true;
	calls_add(1);
	return bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

/*
 * Record a decision and count it under its path; true, so that a stage can
 * end with "return place(...)". Counted here, where @path is a constant,
 * rather than from pl->path after the stages: an array index makes the
 * verifier track its register precisely, and a precise path back to each
 * stage's constant would make it walk select_cpu's tail once per stage.
 */
static __always_inline bool place(struct placement *pl, s32 cpu, enum sis_path path, bool idle)
{
	pl->out.cpu = cpu;
	pl->out.path = path;
	pl->out.idle = idle;
	stat_path(pl->s, path);
	return true;
}

/* With SMT, an idle CPU whose sibling is busy is a worse pick than a whole idle core. */
static __always_inline bool core_idle(s32 cpu)
{
	const struct cpumask *idle_smt;
	bool ret;

	if (!smt_enabled)
		return true;
	calls_add(3);
	idle_smt = scx_bpf_get_idle_smtmask();
	ret = bpf_cpumask_test_cpu(cpu, idle_smt);
	scx_bpf_put_idle_cpumask(idle_smt);
	return ret;
}

/*
 * sync: the waker is about to sleep, so run the wakee where the waker is,
 * when nothing else waits there: it runs as soon as the waker sleeps, on a
 * cache the two share, and no other CPU is woken for it. Else prev, if
 * idle. Prev first (the kernel's scx_select_cpu_dfl() order since 6.13)
 * sends a pipe's two tasks each to the other's idle prev: a cross-CPU
 * wakeup, an IPI to an idle CPU, per message of work that is serial anyway.
 * @prev_busy: an ext task runs on prev, so it is not idle (no kfunc needed).
 */
static __always_inline bool stage_sync(struct task_struct *p, s32 prev, bool prev_busy, u64 now,
				       struct placement *pl)
{
	s32 waker = bpf_get_smp_processor_id();
	struct task_struct *current = (void *)bpf_get_current_task_btf();
	u32 policy = current->policy;

	if (llc_of(waker) != llc_of(prev) || (current->flags & PF_EXITING))
		return false;
	/* An RT or deadline waker keeps its CPU after it wakes us: do not queue behind it. */
	if (policy == SIS_SCHED_FIFO || policy == SIS_SCHED_RR || policy == SIS_SCHED_DEADLINE ||
	    cpu_held(waker, now))
		return false;
	if (task_allows(p, waker) && !dsq_nr_queued(SCX_DSQ_LOCAL_ON | waker) &&
	    !dsq_nr_queued(waker))
		return place(pl, waker, SIS_PATH_SYNC, false);
	if (!prev_busy && task_allows(p, prev) && test_and_clear_idle(prev))
		return place(pl, prev, SIS_PATH_PREV_IDLE, true);
	return false;
}

/*
 * prev_almost_idle (Desnoyers' WAKEUP_BIAS_PREV_IDLE, with Chen Yu's review):
 * prev's utilization without @p is at most the threshold, in per-mille of
 * capacity. Utilization, not load: load_avg can exceed its nominal maximum.
 */
static __always_inline bool prev_almost_idle(struct task_struct *p, s32 prev,
					     const struct sis_cpu_ctx *pc, u64 now,
					     const struct sis_tunables *t)
{
	u64 limit = (u64)t->prev_bias_threshold_permille * SIS_CAPACITY;
	u64 util = sis_pelt_peek(&pc->util, now, pc->running);
	struct sis_task_ctx *tctx;
	u64 own;

	/* Below the threshold with the task's own share counted: no task lookup needed. */
	if (util * 1000 <= limit)
		return true;
	tctx = task_ctx(p);
	if (tctx && tctx->last_cpu == prev) {
		own = sis_pelt_peek(&tctx->util, now, false);
		util = util > own ? util - own : 0;
	}
	return util * 1000 <= limit;
}

/*
 * llc_scan (Chen Yu's SIS_UTIL): test at most nr_scan allowed CPUs of the
 * LLC, starting after @target and wrapping, as select_idle_cpu() does.
 */
static __always_inline s32 llc_scan(struct task_struct *p, s32 target, u32 llc, u32 nr,
				    struct sis_llc_stats *s, struct placement *pl)
{
	u32 n = llc_size(llc), pos = llc_pos_of(target), visited = 0, i;
	s32 found = -1;

	stat_add(s, SIS_CNT_SCAN_RUNS, 1);
	stat_add(s, SIS_CNT_SCAN_DEPTH, nr);

	calls_loop();
	bpf_for (i, 1, n + 1) {
		u32 idx = pos + i;
		s32 cpu;

		calls_pass();
		if (idx >= n)
			idx -= n;
		cpu = llc_cpu_at(llc, idx);
		if (!task_allows(p, cpu))
			continue;
		visited++;
		if (test_and_clear_idle(cpu)) {
			found = cpu;
			break;
		}
		if (visited >= nr)
			break;
	}

	stat_add(s, SIS_CNT_SCAN_VISITED, visited);
	pl->out.tested = visited;
	if (found >= 0)
		stat_add(s, SIS_CNT_SCAN_FOUND, 1);
	return found;
}

/* cross_llc: an idle CPU (whole idle core first) in any other LLC. */
static __always_inline s32 cross_llc_idle(struct task_struct *p, u32 own_llc)
{
	u32 llc, pass;

	calls_loop();
	bpf_for (pass, 0, smt_enabled ? 2 : 1) {
		u64 flags = smt_enabled && pass == 0 ? SCX_PICK_IDLE_CORE : 0;

		calls_pass();
		calls_loop();
		bpf_for (llc, 0, nr_llcs) {
			const struct cpumask *mask;
			s32 cpu;

			calls_pass();
			if (llc == own_llc)
				continue;
			mask = llc_mask_for(p, llc);
			if (!mask)
				continue;
			cpu = pick_idle_cpu(mask, flags);
			if (cpu >= 0)
				return cpu;
		}
	}
	return -1;
}

/*
 * prev is held by a higher class: an idle CPU the task may use anywhere;
 * else a CPU that is not held, the waker's or one of prev's LLC (it waits
 * there behind fair work, not behind an RT task); prev only when every
 * allowed CPU is held (counted as held_wakeups by the caller).
 */
static __always_inline void place_off_held(struct task_struct *p, s32 prev, u64 now,
					   struct sis_llc_stats *s, struct placement *pl)
{
	s32 cpu = pick_idle_cpu(p->cpus_ptr, 0), waker = bpf_get_smp_processor_id();
	u32 llc = llc_of(prev), n = llc_size(llc), pos = llc_pos_of(prev), i;

	if (cpu >= 0) {
		place(pl, cpu, SIS_PATH_FALLBACK, true);
		stat_add(s, SIS_CNT_HELD_AVOIDED, 1);
		return;
	}
	if (task_allows(p, waker) && !cpu_held(waker, now)) {
		place(pl, waker, SIS_PATH_FALLBACK, false);
		stat_add(s, SIS_CNT_HELD_AVOIDED, 1);
		return;
	}
	calls_loop();
	bpf_for (i, 1, n) {
		u32 idx = pos + i;

		calls_pass();
		if (idx >= n)
			idx -= n;
		cpu = llc_cpu_at(llc, idx);
		if (task_allows(p, cpu) && !cpu_held(cpu, now)) {
			place(pl, cpu, SIS_PATH_FALLBACK, false);
			stat_add(s, SIS_CNT_HELD_AVOIDED, 1);
			return;
		}
	}
	place(pl, prev, SIS_PATH_FALLBACK, false);
}

/*
 * select_cpu's stages in order: the first that decides writes @pl.
 *
 * Cost matters here more than anywhere: this runs on every wakeup, and a
 * saturated LLC (prev busy, nr_scan 0) gains nothing from any search. That
 * path asks the kernel for nothing but prev's and the task's context (two
 * map lookups) after select_cpu's own tunables, stats and clock: whether prev
 * is busy comes from our own per-CPU state, not from the idle masks, and the
 * cpumask tests are skipped for tasks allowed everywhere.
 */
static __always_inline void pick_stages(struct task_struct *p, s32 prev, u64 wake_flags, u64 now,
					const struct sis_tunables *t, struct sis_llc_stats *s,
					struct placement *pl)
{
	u32 llc = llc_of(prev);
	u32 nr = llc_nr_scan[llc & (SIS_MAX_LLCS - 1)];
	struct sis_cpu_ctx *pc = cpu_ctx(prev);
	bool prev_ok = task_allows(p, prev), held = cpu_held(prev, now);
	/* An ext task runs there now; if that went stale, the enqueue's kick still wakes prev. */
	bool prev_busy = pc && pc->running;
	const struct cpumask *mask;
	s32 cpu;

	pl->out.nr_scan = nr;
	if (t->wake_sync && (wake_flags & SCX_WAKE_SYNC) && stage_sync(p, prev, prev_busy, now, pl))
		return;

	if (prev_ok && !prev_busy && core_idle(prev) && test_and_clear_idle(prev)) {
		place(pl, prev, SIS_PATH_PREV_IDLE, true);
		return;
	}

	if (t->prev_bias && prev_ok && !held && pc && prev_almost_idle(p, prev, pc, now, t)) {
		/*
		 * Claim prev if it happens to be idle: unclaimed, an SMT
		 * sibling's dispatch can steal it first and the task migrates.
		 */
		place(pl, prev, SIS_PATH_PREV_ALMOST_IDLE, test_and_clear_idle(prev));
		return;
	}

	/*
	 * Busy LLC (nr_scan 0): no scan and no walk of the other LLCs (Abel
	 * Wu's regression: a search LLC by LLC is the costliest there is), but
	 * one last look at the LLC's idle mask, then, with cross_llc, one at
	 * the mask of every CPU the task may use. In the kernel a scan tests
	 * CPUs one by one, so stopping saves real work; here an idle mask
	 * answers in one call, and an idle CPU given up costs the wakee a wait
	 * behind a busy one (request/response work with about twice as many
	 * tasks as CPUs: busy enough for nr_scan 0, yet CPUs idle between
	 * requests; a busy LLC beside an idle one).
	 */
	if (!nr) {
		stat_add(s, SIS_CNT_SCAN_SKIPPED, 1);
		mask = llc_mask_for(p, llc);
		cpu = mask ? pick_idle_cpu(mask, 0) : -1;
		if (cpu >= 0) {
			stat_add(s, SIS_CNT_SCAN_LAST_LOOK, 1);
			place(pl, cpu, SIS_PATH_LLC_SCAN, true);
			return;
		}
		if (t->cross_llc && nr_llcs > 1) {
			cpu = pick_idle_cpu(p->cpus_ptr, 0);
			/* A CPU of its own LLC that idled since the look above. */
			if (cpu >= 0 && llc_of(cpu) == llc) {
				place(pl, cpu, SIS_PATH_LLC_SCAN, true);
				return;
			}
			if (cpu >= 0) {
				place(pl, cpu, SIS_PATH_CROSS_LLC, true);
				return;
			}
		}
		goto fallback;
	}

	if (smt_enabled && t->idle_core) {
		mask = llc_mask_for(p, llc);
		cpu = mask ? pick_idle_cpu(mask, SCX_PICK_IDLE_CORE) : -1;
		if (cpu >= 0) {
			place(pl, cpu, SIS_PATH_IDLE_CORE, true);
			return;
		}
	}

	/* No idle core: prev itself idle (its sibling busy) still beats moving. */
	if (smt_enabled && prev_ok && !prev_busy && test_and_clear_idle(prev)) {
		place(pl, prev, SIS_PATH_PREV_IDLE, true);
		return;
	}

	cpu = llc_scan(p, prev, llc, nr, s, pl);
	if (cpu >= 0) {
		place(pl, cpu, SIS_PATH_LLC_SCAN, true);
		return;
	}

	if (t->cross_llc) {
		cpu = cross_llc_idle(p, llc);
		if (cpu >= 0) {
			place(pl, cpu, SIS_PATH_CROSS_LLC, true);
			return;
		}
	}

fallback:
	if (held) {
		place_off_held(p, prev, now, s, pl);
		return;
	}
	place(pl, prev, SIS_PATH_FALLBACK, false);
}

/*
 * Place @p's wakeup through the stages: @out holds prev's CPU on entry and
 * the placement on return; the path is counted under prev's LLC. Global:
 * the verifier walks the stages once, on their own, and select_cpu's tail
 * (insert, counters, trace) once rather than once per stage outcome.
 */
__noinline int pick_cpu(struct task_struct *p __arg_trusted, u64 wake_flags, u64 now,
			const struct sis_tunables *t, struct placed *out)
{
	struct placement pl = {};
	s32 prev;

	if (!p || !t || !out)
		return 0;
	prev = out->cpu;
	pl.s = stats_of_llc(llc_of(prev));
	pl.out.cpu = prev;
	pl.out.path = SIS_PATH_FALLBACK;
	pick_stages(p, prev, wake_flags, now, t, pl.s, &pl);
	*out = pl.out;
	return 0;
}

#endif /* __SIS_PLACEMENT_BPF_H */
