/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Runtime tunables live in a map rather than .rodata so that a change made
 * while the scheduler runs takes effect on the very next decision.
 *
 * `scx_sis tune` rewrites the whole value while callbacks run, so a callback
 * that read the map field by field could mix old and new values within one
 * decision. Each callback takes one snapshot (tun_snapshot()) and decides
 * from that copy only.
 */
#ifndef __SIS_TUNABLES_BPF_H
#define __SIS_TUNABLES_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"

enum {
	SIS_DFL_SLICE_NS = 3000000,
	SIS_DFL_SIS_UTIL_PERIOD_US = 4000,
	SIS_DFL_BALANCE_LAG_US = 12000,
	SIS_DFL_STEAL_MIN_US = 500,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct sis_tunables);
} tunables SEC(".maps");

/* Used only if the map lookup ever fails: everything off, 3 ms slices. */
static const struct sis_tunables sis_fallback_tunables = {
	.slice_ns = SIS_DFL_SLICE_NS,
	.sis_util_period_us = SIS_DFL_SIS_UTIL_PERIOD_US,
	.balance_lag_us = SIS_DFL_BALANCE_LAG_US,
	.steal_min_us = SIS_DFL_STEAL_MIN_US,
};

/* Copy the live tunables into @t: one consistent view for one callback. */
static __always_inline void tun_snapshot(struct sis_tunables *t)
{
	u32 zero = 0;
	const struct sis_tunables *live = bpf_map_lookup_elem(&tunables, &zero);

	__builtin_memcpy(t, live ? live : &sis_fallback_tunables, sizeof(*t));
}

/* 0 (a value nobody wrote) means the default, never a zero-length slice. */
static __always_inline u64 tun_slice_ns(const struct sis_tunables *t)
{
	return t->slice_ns ? t->slice_ns : SIS_DFL_SLICE_NS;
}

/* In ns; 0 means the default, as for the slice. */
static __always_inline u64 tun_balance_lag_ns(const struct sis_tunables *t)
{
	return (u64)(t->balance_lag_us ? t->balance_lag_us : SIS_DFL_BALANCE_LAG_US) * 1000;
}

/* In ns. 0 is a real value here: steal whatever waits (the eager policy, for A/B runs). */
static __always_inline u64 tun_steal_min_ns(const struct sis_tunables *t)
{
	return (u64)t->steal_min_us * 1000;
}

/* The scheduler timer's period: the SIS_UTIL period, which the other periodic work shares. */
static __always_inline u64 tun_timer_period_ns(const struct sis_tunables *t)
{
	u64 us = t->sis_util_period_us;

	return (us ? us : SIS_DFL_SIS_UTIL_PERIOD_US) * 1000;
}

#endif /* __SIS_TUNABLES_BPF_H */
