/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Runtime tunables live in a map rather than .rodata so that a change made
 * while the scheduler runs takes effect on the very next decision.
 *
 * `scx_sis tune` rewrites the values while callbacks run, so a callback that
 * read the map field by field could mix old and new values within one
 * decision. Each callback takes one snapshot (tun_snapshot()) and decides from
 * that copy only, and a snapshot is taken only from a whole copy: the map holds
 * two, each with a sequence count that is odd while a writer changes it, and the
 * writer changes them one after the other (struct sis_tunables in intf.h).
 */
#ifndef __SIS_TUNABLES_BPF_H
#define __SIS_TUNABLES_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "stats.bpf.h"

enum {
	SIS_DFL_SLICE_NS = 3000000,
	SIS_DFL_SIS_UTIL_PERIOD_US = 4000,
	SIS_DFL_BALANCE_LAG_US = 12000,
	SIS_DFL_STEAL_MIN_US = 500,
	/* Rounds over both copies before a snapshot gives up on them (tun_snapshot_slow()). */
	SIS_TUN_ROUNDS = 2,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2); /* two copies: see struct sis_tunables */
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

/*
 * Copy @live into @t; true when the copy is whole: @live's count was even (no
 * writer inside) and the same after the copy as before it (no writer came and
 * went). The compiler barriers keep the copy between the two reads of the
 * count; the CPU keeps loads in order (x86: TSO).
 */
static __always_inline bool tun_copy_whole(struct sis_tunables *t, const struct sis_tunables *live)
{
	u64 before = READ_ONCE(live->seq), after;

	barrier();
	__builtin_memcpy(t, live, sizeof(*t));
	barrier();
	after = READ_ONCE(live->seq);
	return !(before & 1) && before == after;
}

/*
 * A snapshot whose first copy raced a write: take copy 1, which the writer
 * finished before it touched copy 0, else copy 0 again, a few rounds at most.
 * Counted in tun_raced. No whole copy in all those rounds (a writer killed half
 * way, with the other copy being rewritten) leaves the built-in defaults, a
 * consistent if plain view, counted in tun_torn. A global function: the
 * verifier walks it once, not in every callback, and the callbacks pay a call
 * only when they raced.
 */
__noinline int tun_snapshot_slow(struct sis_tunables *t)
{
	const struct sis_tunables *copy0, *copy1;
	u32 zero = 0, one = 1, round;

	if (!t)
		return 0;
	copy0 = bpf_map_lookup_elem(&tunables, &zero);
	copy1 = bpf_map_lookup_elem(&tunables, &one);
	if (copy0 && copy1) {
		stat_inc(SIS_CNT_TUN_RACED);
		for (round = 0; round < SIS_TUN_ROUNDS; round++) {
			if (tun_copy_whole(t, copy1) || tun_copy_whole(t, copy0))
				return 0;
		}
		stat_inc(SIS_CNT_TUN_TORN);
	}
	__builtin_memcpy(t, &sis_fallback_tunables, sizeof(*t));
	return 0;
}

/* One whole copy of the live tunables in @t: one consistent view for one callback. */
static __always_inline void tun_snapshot(struct sis_tunables *t)
{
	u32 zero = 0;
	const struct sis_tunables *live = bpf_map_lookup_elem(&tunables, &zero);

	if (live && tun_copy_whole(t, live))
		return;
	tun_snapshot_slow(t);
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
