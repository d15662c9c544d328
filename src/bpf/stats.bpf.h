/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU counters: each CPU writes only its own copy, so the hot path needs
 * no atomics. The daemon sums the copies per LLC.
 */
#ifndef __SIS_STATS_BPF_H
#define __SIS_STATS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct sis_cpu_stats);
} cpu_stats SEC(".maps");

static __always_inline struct sis_cpu_stats *my_stats(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_stats, &zero);
}

static __always_inline void stat_add(struct sis_cpu_stats *s, enum sis_counter c, u64 v)
{
	if (s && c < SIS_NR_COUNTERS)
		s->counters[c] += v;
}

static __always_inline void stat_inc(enum sis_counter c)
{
	stat_add(my_stats(), c, 1);
}

static __always_inline void stat_path(struct sis_cpu_stats *s, enum sis_path path)
{
	if (s && path < SIS_NR_PATHS)
		s->paths[path]++;
}

static __always_inline void stat_cost(struct sis_cpu_stats *s, u64 ns)
{
	u32 bucket = ns ? 63 - __builtin_clzll(ns) : 0;

	if (!s)
		return;
	if (bucket >= SIS_COST_BUCKETS)
		bucket = SIS_COST_BUCKETS - 1;
	s->cost_hist[bucket]++;
	s->counters[SIS_CNT_COST_NS] += ns;
}

#endif /* __SIS_STATS_BPF_H */
