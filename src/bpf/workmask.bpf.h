/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which CPUs may have work waiting in their own DSQ: a bit per CPU, by its
 * position in its LLC's row. A CPU looking for work to steal asks only the
 * DSQs whose bit is set, instead of every CPU's (a kfunc call each, so an
 * idle dispatch would cost calls in proportion to the machine's size).
 *
 * A bit may be set with nothing queued (the task was taken; the next look
 * clears it). It may also be clear for a moment while work is queued: an
 * insert from ops.enqueue lands in the DSQ only after ops.enqueue returns,
 * so a clearer that asks the DSQ in between does not see it. So the bit is
 * only a hint for other CPUs: a CPU always asks its own DSQ, and its tick
 * and the timer set the bit again while work waits, so no queued task waits
 * for good behind a clear bit.
 */
#ifndef __SIS_WORKMASK_BPF_H
#define __SIS_WORKMASK_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "topo.bpf.h"

#define SIS_WORK_WORDS (SIS_MAX_LLC_CPUS / 64)

u64 llc_work[SIS_MAX_LLCS][SIS_WORK_WORDS];
/*
 * A bit per LLC: some CPU bit of its row may be set. An idle dispatch asks
 * this one word before any loop, so on an idle machine it finds out with no
 * call that there is nothing to steal anywhere. It follows the CPU bits:
 * set after a CPU bit is set, and cleared only after its row was seen empty
 * and checked again, so a set CPU bit always has its LLC bit set.
 */
u64 llcs_with_work;

/* The word of llc_work holding @cpu's bit, and the bit. */
static __always_inline u64 *work_word(s32 cpu, u64 *bit)
{
	u32 pos = llc_pos_of(cpu);

	*bit = 1ULL << (pos & 63);
	return &llc_work[llc_of(cpu) & (SIS_MAX_LLCS - 1)][(pos / 64) & (SIS_WORK_WORDS - 1)];
}

static __always_inline u64 llc_bit(u32 llc)
{
	return 1ULL << (llc & (SIS_MAX_LLCS - 1));
}

/* Some CPU bit of @llc's row is set. A plain loop of at most four words: no iterator calls. */
static __always_inline bool llc_row_set(u32 llc)
{
	u32 words = (llc_size(llc) + 63) / 64, i;

	for (i = 0; i < SIS_WORK_WORDS; i++) {
		if (i >= words)
			break;
		if (llc_work[llc & (SIS_MAX_LLCS - 1)][i])
			return true;
	}
	return false;
}

/* Something was queued in @cpu's DSQ. Reading first keeps the atomics off the common path. */
static __always_inline void work_mark(s32 cpu)
{
	u64 bit, *w = work_word(cpu, &bit), lbit = llc_bit(llc_of(cpu));

	if (!(*w & bit))
		__sync_fetch_and_or(w, bit);
	if (!(llcs_with_work & lbit))
		__sync_fetch_and_or(&llcs_with_work, lbit);
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
	u32 llc = llc_of(cpu);

	__sync_fetch_and_and(w, ~bit);
	if (dsq_nr_queued(dsq)) {
		__sync_fetch_and_or(w, bit);
		return;
	}
	if (llc_row_set(llc))
		return;
	__sync_fetch_and_and(&llcs_with_work, ~llc_bit(llc));
	/* A CPU of the LLC marked between the look and the clear: its LLC bit goes back. */
	if (llc_row_set(llc))
		__sync_fetch_and_or(&llcs_with_work, llc_bit(llc));
}

/* Some CPU of @llc may have work queued. */
static __always_inline bool llc_work_maybe(u32 llc)
{
	return llcs_with_work & llc_bit(llc);
}

/* Some CPU of an LLC other than @llc may have work queued. */
static __always_inline bool other_llc_work_maybe(u32 llc)
{
	return llcs_with_work & ~llc_bit(llc);
}

/*
 * Timer: set the bit of every CPU whose DSQ holds work with its bit clear
 * (an insert a clearer missed), also where no tick runs to repair it: an
 * idle CPU's own queue, or any CPU's under the plain preset. Global, so the
 * verifier checks the loop once, on its own.
 */
__noinline int work_repair(void)
{
	s32 cpu;

	bpf_for (cpu, 0, nr_cpus) {
		if (!work_maybe(cpu) && scx_bpf_dsq_nr_queued(cpu))
			work_mark(cpu);
	}
	return 0;
}

#endif /* __SIS_WORKMASK_BPF_H */
