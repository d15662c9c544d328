/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each callback asks of the kernel: the kfunc, helper and iterator
 * calls it makes, counted per CPU. Every call site on the scheduling paths
 * goes through a wrapper below, so a callback's count is the difference of
 * this CPU's running total between its entry and its exit (calls_now()).
 * The counter's own lookups are inlined by the verifier (an array map, a
 * per-CPU array from 6.10), so counting adds no call of its own.
 *
 * An idle CPU's dispatch that finds nothing is the path this guards most:
 * it runs on every idle CPU at every wakeup of it, and the scx schedulers it
 * is compared with make one call there.
 */
#ifndef __SIS_CALLS_BPF_H
#define __SIS_CALLS_BPF_H

#include <scx/common.bpf.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} call_count SEC(".maps");

/* This CPU's running total of calls. */
static __always_inline u64 calls_now(void)
{
	u32 zero = 0;
	u64 *c = bpf_map_lookup_elem(&call_count, &zero);

	return c ? *c : 0;
}

static __always_inline void calls_add(u64 n)
{
	u32 zero = 0;
	u64 *c = bpf_map_lookup_elem(&call_count, &zero);

	if (c)
		*c += n;
}

/*
 * A bpf_for loop: bpf_iter_num_new and _destroy at its ends (calls_loop()),
 * bpf_iter_num_next once per pass (calls_pass() first in the body).
 */
static __always_inline void calls_loop(void)
{
	calls_add(2);
}

static __always_inline void calls_pass(void)
{
	calls_add(1);
}

static __always_inline u64 now_ns(void)
{
	calls_add(1);
	return bpf_ktime_get_ns();
}

/*
 * @now - @then, or 0 when @then is later. A callback reads its clock once,
 * and another CPU may stamp a task (queued, stopped, started) after that
 * read: unclamped, such a task would count as having waited about 2^64 ns.
 */
static __always_inline u64 time_since(u64 now, u64 then)
{
	return now > then ? now - then : 0;
}

static __always_inline u64 dsq_nr_queued(u64 dsq)
{
	calls_add(1);
	return scx_bpf_dsq_nr_queued(dsq);
}

static __always_inline bool dsq_move_to_local(u64 dsq)
{
	calls_add(1);
	return scx_bpf_dsq_move_to_local(dsq, 0);
}

/*
 * @dsq's first task, NULL when empty. Before 7.1 the kernel has no reliable
 * peek and the compat layer walks a DSQ iterator: three calls.
 */
static __always_inline struct task_struct *dsq_head(u64 dsq)
{
	calls_add(bpf_ksym_exists(scx_bpf_dsq_peek) &&
				  LINUX_KERNEL_VERSION >= KERNEL_VERSION(7, 1, 0)
			  ? 1
			  : 3);
	return __COMPAT_scx_bpf_dsq_peek(dsq);
}

static __always_inline s32 pick_idle_cpu(const struct cpumask *mask, u64 flags)
{
	calls_add(1);
	return scx_bpf_pick_idle_cpu(mask, flags);
}

static __always_inline bool test_and_clear_idle(s32 cpu)
{
	calls_add(1);
	return scx_bpf_test_and_clear_cpu_idle(cpu);
}

static __always_inline void kick_cpu(s32 cpu, u64 flags)
{
	calls_add(1);
	scx_bpf_kick_cpu(cpu, flags);
}

static __always_inline void dsq_insert(struct task_struct *p, u64 dsq, u64 slice, u64 enq_flags)
{
	calls_add(1);
	scx_bpf_dsq_insert(p, dsq, slice, enq_flags);
}

static __always_inline void dsq_insert_vtime(struct task_struct *p, u64 dsq, u64 slice, u64 vtime,
					     u64 enq_flags)
{
	calls_add(1);
	scx_bpf_dsq_insert_vtime(p, dsq, slice, vtime, enq_flags);
}

/* Before 6.19 the compat layer writes the field itself: no call. */
static __always_inline void task_set_dsq_vtime(struct task_struct *p, u64 vtime)
{
	if (bpf_ksym_exists(scx_bpf_task_set_dsq_vtime___new))
		calls_add(1);
	scx_bpf_task_set_dsq_vtime(p, vtime);
}

static __always_inline void task_set_slice(struct task_struct *p, u64 slice)
{
	if (bpf_ksym_exists(scx_bpf_task_set_slice___new))
		calls_add(1);
	scx_bpf_task_set_slice(p, slice);
}

static __always_inline s32 task_cpu(const struct task_struct *p)
{
	calls_add(1);
	return scx_bpf_task_cpu(p);
}

#endif /* __SIS_CALLS_BPF_H */
