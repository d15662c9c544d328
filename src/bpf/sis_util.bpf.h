/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIS_UTIL: how many CPUs of an LLC a wakeup may scan for an idle one.
 *
 * Every period the scheduler's timer (main.bpf.c) sums each LLC's CPU
 * utilization, as the kernel does at periodic load balance, and turns it into
 * nr_scan through a table the daemon computed before load (one row per curve
 * and LLC). Keeping the curve arithmetic in Rust gives it one home, and unit
 * tests.
 */
#ifndef __SIS_UTIL_BPF_H
#define __SIS_UTIL_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "pelt.bpf.h"
#include "topo.bpf.h"
#include "types.bpf.h"

const volatile u16 nr_scan_table[SIS_NR_CURVES][SIS_MAX_LLCS][SIS_UTIL_STEPS + 1];

/* Written by the timer, read by wakeups and by the daemon. */
u32 llc_util[SIS_MAX_LLCS];    /* summed utilization, SIS_CAPACITY per busy CPU */
u32 llc_nr_scan[SIS_MAX_LLCS]; /* CPUs a wakeup may scan */

/*
 * Global functions (not hidden: libbpf turns hidden ones static) are verified
 * once on their own, which keeps the loops below within the verifier's limits.
 */
__noinline u32 cpu_util_now(s32 cpu, u64 now)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (!cctx)
		return 0;
	return sis_pelt_peek(&cctx->util, now, cctx->running);
}

/* Global too: @sum_util indexes the table, and inline that would make the summing loop's state
 * precise. */
__noinline u32 nr_scan_for(u32 curve, u32 llc, u64 sum_util)
{
	u64 cap = (u64)llc_size(llc) * SIS_CAPACITY;
	u64 step;

	if (!cap || curve >= SIS_NR_CURVES || llc >= SIS_MAX_LLCS)
		return 0;
	step = sum_util * SIS_UTIL_STEPS / cap;
	if (step > SIS_UTIL_STEPS)
		step = SIS_UTIL_STEPS;
	return nr_scan_table[curve][llc][step];
}

/* Timer (and once at init): each LLC's summed utilization and its nr_scan under @curve. */
__noinline int sis_util_update(u64 now, u32 curve)
{
	u32 llc, i;

	bpf_for (llc, 0, nr_llcs) {
		u32 n = llc_size(llc);
		u64 sum = 0;

		bpf_for (i, 0, n) {
			s32 cpu = llc_cpu_at(llc, i);

			if (cpu >= 0)
				sum += cpu_util_now(cpu, now);
		}
		if (llc < SIS_MAX_LLCS) {
			llc_util[llc] = sum;
			llc_nr_scan[llc] = nr_scan_for(curve, llc, sum);
		}
	}
	return 0;
}

#endif /* __SIS_UTIL_BPF_H */
