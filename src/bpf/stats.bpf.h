/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters: a per-CPU array keyed by LLC. Each CPU writes only its own copy,
 * so the hot path needs no atomics, and an event is filed under the LLC it is
 * about, not the LLC of the CPU that happened to run the callback (a waker in
 * LLC 0 waking a task whose prev is in LLC 1 counts under LLC 1). The daemon
 * sizes the map to the LLCs present and sums the CPUs of each key.
 */
#ifndef __SIS_STATS_BPF_H
#define __SIS_STATS_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "topo.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SIS_MAX_LLCS);
	__type(key, u32);
	__type(value, struct sis_llc_stats);
} llc_stats SEC(".maps");

/* This CPU's copy of @llc's counters. */
static __always_inline struct sis_llc_stats *stats_of_llc(u32 llc)
{
	return bpf_map_lookup_elem(&llc_stats, &llc);
}

/* This CPU's copy of its own LLC's counters. */
static __always_inline struct sis_llc_stats *my_stats(void)
{
	return stats_of_llc(llc_of(bpf_get_smp_processor_id()));
}

/* A NULL @s (failed lookup) counts nothing; the bound test is for the verifier when @c varies. */
static __always_inline void stat_add(struct sis_llc_stats *s, enum sis_counter c, u64 v)
{
	if (s && c < SIS_NR_COUNTERS)
		s->counters[c] += v;
}

/* One event, under the LLC of the CPU this runs on. */
static __always_inline void stat_inc(enum sis_counter c)
{
	stat_add(my_stats(), c, 1);
}

/* @v events, under the LLC of the CPU this runs on. */
static __always_inline void stat_inc_by(enum sis_counter c, u64 v)
{
	stat_add(my_stats(), c, v);
}

/* One wakeup, under the stage (path) that placed it. */
static __always_inline void stat_path(struct sis_llc_stats *s, enum sis_path path)
{
	if (s && path < SIS_NR_PATHS)
		s->paths[path]++;
}

/* log2 bucket of @ns; the last bucket also takes everything longer. */
static __always_inline u32 log2_bucket(u64 ns)
{
	u32 bucket = ns ? 63 - __builtin_clzll(ns) : 0;

	return bucket < SIS_COST_BUCKETS ? bucket : SIS_COST_BUCKETS - 1;
}

/*
 * One duration: its log2 bucket in @hist, its ns in @total. The daemon takes
 * the average from the total and the p99 from the buckets.
 */
static __always_inline void stat_duration(u64 *hist, u64 *total, u64 ns)
{
	hist[log2_bucket(ns)]++;
	*total += ns;
}

/* select_cpu's own cost, in ns. */
static __always_inline void stat_cost(struct sis_llc_stats *s, u64 ns)
{
	if (!s)
		return;
	stat_duration(s->cost_hist, &s->counters[SIS_CNT_COST_NS], ns);
}

#endif /* __SIS_STATS_BPF_H */
