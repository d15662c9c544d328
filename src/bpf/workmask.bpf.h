/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which CPUs may have work waiting in their own DSQ: a bit per CPU, by its
 * position in its LLC's row. A CPU looking for work to steal asks only the
 * DSQs whose bit is set, instead of every CPU's (a kfunc call each: with the
 * shards, 46 calls per idle dispatch on 8 CPUs, about 1,500 on 512).
 *
 * A bit may be set with nothing queued (the task was taken; the next look
 * clears it). It may also be clear for a moment while work is queued: an
 * insert from ops.enqueue lands in the DSQ only after ops.enqueue returns,
 * so a clearer that asks the DSQ in between does not see it. So the bit is
 * only a hint for other CPUs: a CPU always asks its own DSQ, and its tick
 * sets the bit again while work waits (a pinned kworker once waited 30 s
 * behind a clear bit, and the watchdog ejected the scheduler).
 */
#ifndef __SIS_WORKMASK_BPF_H
#define __SIS_WORKMASK_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "topo.bpf.h"

#define SIS_WORK_WORDS (SIS_MAX_LLC_CPUS / 64)

u64 llc_work[SIS_MAX_LLCS][SIS_WORK_WORDS];

/* The word of llc_work holding @cpu's bit, and the bit. */
static __always_inline u64 *work_word(s32 cpu, u64 *bit)
{
	u32 pos = llc_pos_of(cpu);

	*bit = 1ULL << (pos & 63);
	return &llc_work[llc_of(cpu) & (SIS_MAX_LLCS - 1)][(pos / 64) & (SIS_WORK_WORDS - 1)];
}

/* Something was queued in @cpu's DSQ. Reading first keeps the atomic off the common path. */
static __always_inline void work_mark(s32 cpu)
{
	u64 bit, *w = work_word(cpu, &bit);

	if (!(*w & bit))
		__sync_fetch_and_or(w, bit);
}

/* @cpu's DSQ may hold work (a set bit); false means it holds none. */
static __always_inline bool work_maybe(s32 cpu)
{
	u64 bit, *w = work_word(cpu, &bit);

	return *w & bit;
}

/* @cpu's DSQ (@dsq) was found empty: clear its bit, then set it back if work came meanwhile. */
static __always_inline void work_clear(s32 cpu, u64 dsq)
{
	u64 bit, *w = work_word(cpu, &bit);

	__sync_fetch_and_and(w, ~bit);
	if (scx_bpf_dsq_nr_queued(dsq))
		__sync_fetch_and_or(w, bit);
}

/* Some CPU of @llc may have work queued. */
static __always_inline bool llc_work_maybe(u32 llc)
{
	u32 words = (llc_size(llc) + 63) / 64, i;

	bpf_for (i, 0, words) {
		if (llc_work[llc & (SIS_MAX_LLCS - 1)][i & (SIS_WORK_WORDS - 1)])
			return true;
	}
	return false;
}

#endif /* __SIS_WORKMASK_BPF_H */
