/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The machine's pace: how long this CPU takes to go from one task's stop to
 * the next task's start when it did not idle in between (the scheduler's own
 * path: put_prev, dispatch, pick, set_next). Everything the scheduler does
 * is slower by the same factor on a slower machine, the tasks' runs too:
 * under an emulator a switch and a run both take many times their hardware
 * length. steal-min is a migration's cost on hardware; scaled by the pace it
 * stays in proportion to the tasks' runs on any machine, so one default
 * holds back the same steals on hardware and under emulation.
 *
 * On hardware the switch path takes well under SIS_PACE_HW_SWITCH_NS, so
 * the pace is 1 there and steal-min is what it says. Each CPU keeps its own
 * average (no cache line shared between CPUs on every switch).
 */
#ifndef __SIS_PACE_BPF_H
#define __SIS_PACE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "stats.bpf.h"
#include "topo.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"

enum {
	/* Above a back-to-back switch through ops.dispatch on hardware: the pace is 1 there. */
	SIS_PACE_HW_SWITCH_NS = 2000,
	/* Weight of the newest switch in the average: 1/16. */
	SIS_PACE_AVG_SHIFT = 4,
	/* Largest pace: a switch longer than this many hardware switches was not one (a stall). */
	SIS_PACE_MAX = 256,
};

/*
 * At running on @cpu, after a task stopped there and the CPU did not idle
 * (went_idle not yet cleared): fold the gap into the CPU's average switch
 * and count it. Global, so that the verifier walks its branches once rather
 * than once per path through ops.running.
 */
__noinline int pace_sample(s32 cpu, u64 now)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_llc_stats *s;
	u64 gap;

	if (!cctx || cctx->went_idle || !cctx->stopped_at || now <= cctx->stopped_at)
		return 0;
	gap = now - cctx->stopped_at;
	if (gap > SIS_PACE_MAX * SIS_PACE_HW_SWITCH_NS)
		return 0;
	s = my_stats();
	stat_add(s, SIS_CNT_SWITCHES, 1);
	stat_add(s, SIS_CNT_SWITCH_NS, gap);
	if (!cctx->avg_switch) {
		cctx->avg_switch = gap;
		return 1;
	}
	cctx->avg_switch = cctx->avg_switch - (cctx->avg_switch >> SIS_PACE_AVG_SHIFT) +
			   (gap >> SIS_PACE_AVG_SHIFT);
	return 1;
}

/* @cctx's pace: its average switch in hardware switches, at least 1 (NULL: 1). */
static __always_inline u64 pace_of(const struct sis_cpu_ctx *cctx)
{
	u64 pace = cctx ? cctx->avg_switch / SIS_PACE_HW_SWITCH_NS : 1;

	return pace > 1 ? pace : 1;
}

/* steal-min on @cctx's CPU, ns: the tunable, scaled by the CPU's pace. */
static __always_inline u64 steal_min_ns(const struct sis_tunables *t,
					const struct sis_cpu_ctx *cctx)
{
	return tun_steal_min_ns(t) * pace_of(cctx);
}

/*
 * The most any bar on an estimated wait asks, ns: half a slice, or the
 * tunable if it is set above that (a lazy policy in an A/B run). The slice
 * is not scaled: a CPU-bound task runs a whole slice on any machine, so the
 * wait behind one is a slice wherever it is. A bar above that, however it
 * was reached (the pace, another LLC, a cache-hot head), would leave a CPU
 * idle beside a queue of CPU hogs for good.
 */
static __always_inline u64 steal_wait_cap_ns(const struct sis_tunables *t)
{
	u64 min = tun_steal_min_ns(t), half = tun_slice_ns(t) / 2;

	return min > half ? min : half;
}

/* @bar, at most @cap. */
static __always_inline u64 capped(u64 bar, u64 cap)
{
	return bar < cap ? bar : cap;
}

/*
 * The least expected wait worth a move, ns, for the tests that estimate a
 * wait from run lengths (the steal's, the kicks', the conservation
 * sample's): steal_min_ns() up to steal_wait_cap_ns().
 */
static __always_inline u64 steal_wait_min_ns(const struct sis_tunables *t,
					     const struct sis_cpu_ctx *cctx)
{
	return capped(steal_min_ns(t, cctx), steal_wait_cap_ns(t));
}

#endif /* __SIS_PACE_BPF_H */
