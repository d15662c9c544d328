/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Runtime tunables live in a map rather than .rodata so that a change made
 * while the scheduler runs takes effect on the very next decision.
 */
#ifndef __SIS_TUNABLES_BPF_H
#define __SIS_TUNABLES_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct sis_tunables);
} tunables SEC(".maps");

/* Used only if the map lookup ever fails: everything off, 3 ms slices. */
static const struct sis_tunables sis_fallback_tunables = {
	.slice_ns = 3000000,
	.sis_util_period_us = 4000,
};

static __always_inline const struct sis_tunables *tun(void)
{
	u32 zero = 0;
	const struct sis_tunables *t = bpf_map_lookup_elem(&tunables, &zero);

	return t ? t : &sis_fallback_tunables;
}

static __always_inline u64 slice_ns(void)
{
	u64 slice = tun()->slice_ns;

	return slice ? slice : 3000000;
}

#endif /* __SIS_TUNABLES_BPF_H */
