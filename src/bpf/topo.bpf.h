/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU topology, filled in by the daemon from scx_utils::Topology before load.
 * We do not read kernel symbols such as sd_llc_id: they need KALLSYMS_ALL and
 * vary between kernels, while userspace sees the same sysfs everywhere.
 */
#ifndef __SIS_TOPO_BPF_H
#define __SIS_TOPO_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "types.bpf.h"

const volatile u32 nr_cpus = 1; /* nr_cpu_ids: CPU ids are below this */
const volatile u32 nr_llcs = 1;
const volatile bool smt_enabled;
const volatile u32 cpu_llc[SIS_MAX_CPUS];
/* Position of a CPU in its LLC's row of llc_cpus, where a scan starts. */
const volatile u32 cpu_llc_pos[SIS_MAX_CPUS];
const volatile u32 llc_nr_cpus[SIS_MAX_LLCS];
const volatile u16 llc_cpus[SIS_MAX_LLCS][SIS_MAX_LLC_CPUS];

/* Per-CPU state (struct sis_cpu_ctx), indexed by CPU id. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SIS_MAX_CPUS);
	__type(key, u32);
	__type(value, struct sis_cpu_ctx);
} cpu_ctxs SEC(".maps");

/* Per-LLC cpumasks, built by topo_init(). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SIS_MAX_LLCS);
	__type(key, u32);
	__type(value, struct sis_llc_ctx);
} llc_ctxs SEC(".maps");

/* @cpu's context; NULL only for an id beyond SIS_MAX_CPUS. */
static __always_inline struct sis_cpu_ctx *cpu_ctx(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&cpu_ctxs, &key);
}

/*
 * Table lookups mask their index instead of testing it: clang may test one
 * copy of a value and index with another, which the verifier cannot follow.
 * The limits are powers of two and valid ids are always below them.
 */
static __always_inline u32 llc_of(s32 cpu)
{
	return cpu_llc[(u32)cpu & (SIS_MAX_CPUS - 1)];
}

/* CPUs in @llc: the length of its row in llc_cpus. */
static __always_inline u32 llc_size(u32 llc)
{
	return llc_nr_cpus[llc & (SIS_MAX_LLCS - 1)];
}

/* The CPU at @idx of @llc's row. */
static __always_inline s32 llc_cpu_at(u32 llc, u32 idx)
{
	return llc_cpus[llc & (SIS_MAX_LLCS - 1)][idx & (SIS_MAX_LLC_CPUS - 1)];
}

/* @cpu's index in its LLC's row: scans and steals start after it, so CPUs spread out. */
static __always_inline u32 llc_pos_of(s32 cpu)
{
	return cpu_llc_pos[(u32)cpu & (SIS_MAX_CPUS - 1)];
}

/* @llc's CPUs as a cpumask, for the idle-pick kfuncs; NULL if topo_init() built none. */
static __always_inline const struct cpumask *llc_mask(u32 llc)
{
	struct sis_llc_ctx *lctx = bpf_map_lookup_elem(&llc_ctxs, &llc);

	if (!lctx)
		return NULL;
	return cast_mask(lctx->cpus);
}

/*
 * The CPUs of @llc that @p may use. Tasks allowed everywhere (the common
 * case) skip the cpumask AND.
 */
static __always_inline const struct cpumask *llc_mask_for(struct task_struct *p, u32 llc)
{
	const struct cpumask *mask = llc_mask(llc);
	struct bpf_cpumask *scratch;
	struct sis_cpu_ctx *cctx;

	if (!mask || p->nr_cpus_allowed >= nr_cpus)
		return mask;
	cctx = cpu_ctx(bpf_get_smp_processor_id());
	scratch = cctx ? cctx->scratch : NULL;
	if (!scratch)
		return NULL;
	calls_add(1);
	bpf_cpumask_and(scratch, mask, p->cpus_ptr);
	return cast_mask(scratch);
}

/* Build the LLC cpumasks and the per-CPU scratch masks (from ops.init). */
static __always_inline s32 topo_init(void)
{
	struct bpf_cpumask *mask;
	s32 cpu;
	u32 llc;

	bpf_for (llc, 0, nr_llcs) {
		struct sis_llc_ctx *lctx = bpf_map_lookup_elem(&llc_ctxs, &llc);

		if (!lctx)
			return -ENOENT;
		mask = bpf_cpumask_create();
		if (!mask)
			return -ENOMEM;
		mask = bpf_kptr_xchg(&lctx->cpus, mask);
		if (mask)
			bpf_cpumask_release(mask);
	}

	bpf_for (cpu, 0, nr_cpus) {
		struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
		struct sis_llc_ctx *lctx;

		if (!cctx)
			return -ENOENT;
		mask = bpf_cpumask_create();
		if (!mask)
			return -ENOMEM;
		mask = bpf_kptr_xchg(&cctx->scratch, mask);
		if (mask)
			bpf_cpumask_release(mask);

		llc = llc_of(cpu);
		lctx = bpf_map_lookup_elem(&llc_ctxs, &llc);
		if (!lctx)
			return -ENOENT;
		bpf_rcu_read_lock();
		if (lctx->cpus)
			bpf_cpumask_set_cpu(cpu, lctx->cpus);
		bpf_rcu_read_unlock();
	}
	return 0;
}

#endif /* __SIS_TOPO_BPF_H */
