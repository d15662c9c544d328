/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PELT-like utilization, tracked by us because the kernel keeps no util_avg
 * for tasks of the ext class.
 *
 * Time is cut into periods of 2^20 ns (~1.05 ms, the kernel's 1024 us). The
 * busy fraction of each finished period (0..SIS_CAPACITY) enters an
 * exponential average that halves every 32 periods (~33 ms), like PELT.
 * Updates are lazy: a signal is advanced only when its owner changes state,
 * and readers advance a private copy to "now".
 */
#ifndef __SIS_PELT_BPF_H
#define __SIS_PELT_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "types.bpf.h"

#define SIS_PELT_PERIOD_SHIFT 20
#define SIS_PELT_HALFLIFE 32

/* y^n * 2^32 for y = 0.5^(1/32), n = 0..31 */
static const u32 sis_pelt_y_inv[SIS_PELT_HALFLIFE] = {
	0xffffffff, 0xfa83b2db, 0xf5257d15, 0xefe4b99b, 0xeac0c6e7, 0xe5b906e7, 0xe0ccdeec,
	0xdbfbb797, 0xd744fcca, 0xd2a81d91, 0xce248c15, 0xc9b9bd86, 0xc5672a11, 0xc12c4cca,
	0xbd08a39f, 0xb8fbaf47, 0xb504f333, 0xb123f581, 0xad583eea, 0xa9a15ab4, 0xa5fed6a9,
	0xa2704303, 0x9ef53260, 0x9b8d39b9, 0x9837f051, 0x94f4efa8, 0x91c3d373, 0x8ea4398b,
	0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
};

/* val * y^n */
static __always_inline u64 sis_pelt_decay(u64 val, u64 n)
{
	/* After 32 half-lives any value below 2^32 has reached zero. */
	if (n >= SIS_PELT_HALFLIFE * 32)
		return 0;
	val >>= n / SIS_PELT_HALFLIFE;
	return (val * sis_pelt_y_inv[n & (SIS_PELT_HALFLIFE - 1)]) >> 32;
}

/* Advance @s to @now; @busy says whether it was busy since the last update. */
static __always_inline void sis_pelt_advance(struct sis_pelt *s, u64 now, bool busy)
{
	u64 last = s->last_ns, p_last, p_now, full, avg, frac;

	if (!last || now <= last) {
		s->last_ns = now;
		return;
	}

	p_last = last >> SIS_PELT_PERIOD_SHIFT;
	p_now = now >> SIS_PELT_PERIOD_SHIFT;
	if (p_last == p_now) {
		if (busy)
			s->cur_busy += now - last;
		s->last_ns = now;
		return;
	}

	/* Close the period @last was in and fold its busy fraction in. */
	if (busy)
		s->cur_busy += ((p_last + 1) << SIS_PELT_PERIOD_SHIFT) - last;
	frac = s->cur_busy >> (SIS_PELT_PERIOD_SHIFT - 10);
	if (frac > SIS_CAPACITY)
		frac = SIS_CAPACITY;
	avg = ((u64)s->avg * sis_pelt_y_inv[1] + frac * (0x100000000ULL - sis_pelt_y_inv[1])) >> 32;

	/* Whole periods in between were all busy or all idle. */
	full = p_now - p_last - 1;
	avg = sis_pelt_decay(avg, full);
	if (busy)
		avg += SIS_CAPACITY - sis_pelt_decay(SIS_CAPACITY, full);

	s->avg = avg > SIS_CAPACITY ? SIS_CAPACITY : avg;
	s->cur_busy = busy ? now - (p_now << SIS_PELT_PERIOD_SHIFT) : 0;
	s->last_ns = now;
}

/*
 * The value @s would have at @now, without writing to it (safe from any CPU).
 * Global, so verified once: select_cpu reads two signals, and inlined there
 * the decay arithmetic would be walked on every path through each read.
 */
__noinline u32 sis_pelt_peek(const struct sis_pelt *s, u64 now, u32 busy)
{
	struct sis_pelt copy;

	if (!s)
		return 0;
	copy = *s;
	sis_pelt_advance(&copy, now, busy);
	return copy.avg;
}

#endif /* __SIS_PELT_BPF_H */
