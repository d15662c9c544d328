/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_sis: select_idle_sibling() as switchable, measurable placement stages.
 *
 * Wakeups go through the stages of placement.bpf.h. A task that found an idle
 * CPU goes straight to that CPU's local DSQ; any other task waits in the
 * per-CPU DSQ of the CPU it was placed on, in vtime order. A CPU that runs out
 * of work takes from its own DSQ, then steals inside its LLC, then from other
 * LLCs, so no task waits while a CPU it may use sits idle.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

#include "pelt.bpf.h"
#include "tunables.bpf.h"
#include "stats.bpf.h"
#include "topo.bpf.h"
#include "task.bpf.h"
#include "wakeq.bpf.h"
#include "sis_util.bpf.h"
#include "placement.bpf.h"

enum {
	/* Most slices of vtime a task may lead its CPU's clock by (see task_vtime()). */
	SIS_MAX_LEAD_SLICES = 16,
	/* Waiting tasks a CPU of another LLC needs before a busy CPU pulls from it. */
	SIS_REMOTE_PULL_QUEUED = 4,
};

static __always_inline u64 cpu_dsq(s32 cpu)
{
	return (u64)cpu;
}

static __always_inline u64 cpu_vtime_now(s32 cpu)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	return cctx ? cctx->vtime_now : 0;
}

/*
 * A task's place in @cpu's vtime-ordered DSQ, kept near the CPU's clock.
 *
 * Floor: a task that slept long, or comes from a CPU whose clock lags, gets
 * at most one slice of credit.
 *
 * Ceiling: a few slices of the task's own weighted charge ahead, more than a
 * task can earn between two looks at the clock (keep_prev() moves it along;
 * a slice can overrun to the next tick, hence the slack).
 * Without it a vtime earned on a faster CPU, or at a lower weight before a
 * nice change, made the task wait until this CPU caught up: the watchdog saw
 * 32-40 s stalls under stress-ng's sched and affinity races.
 *
 * The lead is also capped in absolute slices: a task waits about lead x the
 * tasks queued ahead of it, and a SCHED_IDLE task (weight 1) would otherwise
 * lead by 400 slices, 37 s behind 30 runnable tasks. The cap lowers the
 * ceiling below weight 100 * 4 / SIS_MAX_LEAD_SLICES (about nice 7), but it
 * cuts a task's share only where one slice charges more than 16 slices of
 * vtime (weight below 6, about nice 13): nice 0 vs 10 still runs 9:1.
 */
static __always_inline u64 task_vtime(struct task_struct *p, s32 cpu)
{
	u64 now = cpu_vtime_now(cpu), slice = slice_ns();
	u64 vtime = p->scx.dsq_vtime, floor = now - slice;
	u64 lead = 4 * slice * 100 / (p->scx.weight ? p->scx.weight : 100);
	u64 ceil = now + (lead < SIS_MAX_LEAD_SLICES * slice ? lead : SIS_MAX_LEAD_SLICES * slice);

	if (time_before(vtime, floor))
		return floor;
	return time_before(ceil, vtime) ? ceil : vtime;
}

s32 BPF_STRUCT_OPS(sis_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	const struct sis_tunables *t = tun();
	/* Filed under prev's LLC: where the wakeup came from, not where the waker runs. */
	struct sis_llc_stats *s = stats_of_llc(llc_of(prev_cpu));
	struct placement pl = {.cpu = prev_cpu, .path = SIS_PATH_FALLBACK};
	u64 start = bpf_ktime_get_ns();

	if (t->plain) {
		pl.cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &pl.idle);
		pl.path = SIS_PATH_KERNEL_DFL;
	} else {
		pick_cpu(p, prev_cpu, wake_flags, t, s, &pl);
	}
	stat_cost(s, bpf_ktime_get_ns() - start);
	stat_add(s, SIS_CNT_WAKEUPS, 1);
	stat_path(s, pl.path);

	if (pl.idle) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns(), 0);
		stat_add(s, SIS_CNT_DIRECT_DISPATCH, 1);
	}
	return pl.cpu;
}

/*
 * @p was waiting on a CPU that a higher sched class (RT, deadline) took: run it
 * on an idle CPU it may use instead, as the kernel's RT push would for CFS.
 */
static __always_inline bool rescue_to_idle(struct task_struct *p, u64 enq_flags)
{
	s32 idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

	if (idle < 0)
		return false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | idle, slice_ns(), enq_flags);
	scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
	stat_inc(SIS_CNT_RESCUES);
	return true;
}

void BPF_STRUCT_OPS(sis_enqueue, struct task_struct *p, u64 enq_flags)
{
	const struct sis_tunables *t = tun();
	struct sis_task_ctx *tctx = task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u64 vtime = task_vtime(p, cpu);

	stat_inc(SIS_CNT_ENQUEUE);
	if (t->plain) {
		scx_bpf_dsq_insert(p, SIS_DSQ_PLAIN, slice_ns(), enq_flags);
		return;
	}
	/* Taken out of a shard without running (affinity or priority change). */
	if (tctx)
		wakeq_forget(tctx, shard_left);
	if ((enq_flags & SCX_ENQ_REENQ) && rescue_to_idle(p, enq_flags))
		return;
	if (wakeq_enqueue(p, cpu, vtime, enq_flags, t))
		return;

	scx_bpf_dsq_insert_vtime(p, cpu_dsq(cpu), slice_ns(), vtime, enq_flags);
	/* Placed on an idle CPU without claiming it (no wakeup, or a race): wake it. */
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * Move the first task this CPU may run of @cpu's DSQ here, if it holds at
 * least @min tasks, or any task while a higher sched class holds @cpu: what
 * waits there would wait until the RT or deadline task lets go.
 */
static __always_inline bool take_from(s32 cpu, u64 min)
{
	struct sis_cpu_ctx *cctx = cpu >= 0 ? cpu_ctx(cpu) : NULL;

	if (!cctx)
		return false;
	return scx_bpf_dsq_nr_queued(cpu_dsq(cpu)) >= (cctx->released ? 1 : min) &&
	       scx_bpf_dsq_move_to_local(cpu_dsq(cpu), 0);
}

enum steal_result { STOLE_NONE, STOLE_LLC, STOLE_REMOTE };

/*
 * Take a task from another CPU's DSQ: one with at least @llc_min queued in
 * @cpu's LLC (starting after @cpu so stealers spread out), else one with at
 * least @remote_min queued in another LLC.
 */
static __always_inline enum steal_result steal(s32 cpu, u32 llc, u64 llc_min, u64 remote_min)
{
	u32 n = llc_size(llc), pos = llc_pos_of(cpu), i;
	s32 victim;

	bpf_for (i, 1, n) {
		u32 idx = pos + i;

		if (idx >= n)
			idx -= n;
		if (take_from(llc_cpu_at(llc, idx), llc_min))
			return STOLE_LLC;
	}
	bpf_for (i, 1, nr_cpus) {
		victim = cpu + i;
		if (victim >= nr_cpus)
			victim -= nr_cpus;
		if (llc_of(victim) != llc && take_from(victim, remote_min))
			return STOLE_REMOTE;
	}
	return STOLE_NONE;
}

/* @p's vtime including the run it is in the middle of (charged only at stopping). */
static __always_inline u64 vtime_charged(struct task_struct *p)
{
	struct sis_task_ctx *tctx = task_ctx(p);
	u64 now = bpf_ktime_get_ns();

	if (!tctx || now <= tctx->running_at || !p->scx.weight)
		return p->scx.dsq_vtime;
	return p->scx.dsq_vtime + (now - tctx->running_at) * 100 / p->scx.weight;
}

/*
 * ops.dispatch runs before a still-runnable @prev is put back in the queue,
 * so the DSQ's head only competes with the others, not with @prev. Keep
 * @prev running while it is still ahead in vtime (or alone), or nice would
 * mean nothing between two tasks sharing a CPU.
 */
static __always_inline bool ahead_of(u64 dsq, u64 vtime)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(dsq);

	return head && time_before(head->scx.dsq_vtime, vtime);
}

/* ops.dispatch's @prev used up its slice (or yielded) and is still runnable. */
static __always_inline bool prev_runnable(struct task_struct *prev)
{
	return prev && (prev->scx.flags & SCX_TASK_QUEUED);
}

static __always_inline bool keep_prev(struct task_struct *prev, s32 cpu,
				      const struct sis_tunables *t)
{
	struct sis_cpu_ctx *cctx;
	u64 vtime;

	if (!prev_runnable(prev))
		return false;
	vtime = vtime_charged(prev);
	if (ahead_of(cpu_dsq(cpu), vtime) || ahead_of(shard_dsq(own_slot(cpu, t)), vtime))
		return false;
	/* prev is still the queue's minimum: the CPU's clock moves with it. */
	cctx = cpu_ctx(cpu);
	if (cctx && time_before(cctx->vtime_now, vtime))
		cctx->vtime_now = vtime;
	scx_bpf_task_set_slice(prev, slice_ns());
	return true;
}

/*
 * Load balance for busy CPUs. Idle CPUs steal and the tick wakes them, but a
 * CPU busy with one task never looked at its neighbours: 33 yield loops piled
 * on one CPU while three others ran one task each. When @cpu's running task
 * used up its slice and nothing waits here, take from a CPU with at least two
 * waiting (after the move both CPUs have two tasks, so no ping-pong); the
 * running task goes back to this CPU's queue. Other LLCs only from a deeper
 * queue, as moving away from a warm cache has to pay for itself.
 */
static __always_inline bool pull_from_overloaded(struct task_struct *prev, s32 cpu, u32 llc,
						 const struct sis_tunables *t)
{
	if (!prev_runnable(prev) || scx_bpf_dsq_nr_queued(cpu_dsq(cpu)) ||
	    scx_bpf_dsq_nr_queued(shard_dsq(own_slot(cpu, t))))
		return false;
	return steal(cpu, llc, 2, SIS_REMOTE_PULL_QUEUED) != STOLE_NONE;
}

/* vtime of @dsq's first task, or ~0 when it is empty. */
static __always_inline u64 head_vtime(u64 dsq)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(dsq);

	return head ? head->scx.dsq_vtime : ~0ULL;
}

void BPF_STRUCT_OPS(sis_dispatch, s32 cpu, struct task_struct *prev)
{
	const struct sis_tunables *t = tun();
	u32 llc = llc_of(cpu), i;

	if (t->test_inject_error) {
		scx_bpf_error("test-only error injected through the tunables");
		return;
	}
	/* Plain preset, and after switching away from it: drain the FIFO. */
	if ((t->plain || scx_bpf_dsq_nr_queued(SIS_DSQ_PLAIN)) &&
	    scx_bpf_dsq_move_to_local(SIS_DSQ_PLAIN, 0)) {
		stat_inc(SIS_CNT_DISPATCH_LOCAL);
		return;
	}
	if (pull_from_overloaded(prev, cpu, llc, t)) {
		stat_inc(SIS_CNT_PULLS);
		return;
	}
	if (keep_prev(prev, cpu, t)) {
		stat_inc(SIS_CNT_DISPATCH_KEEP);
		return;
	}
	/*
	 * Own DSQ and own shard in vtime order: serving the DSQ first starved the
	 * shard for 20 s while pinned tasks kept the DSQ non-empty.
	 */
	if (time_before(head_vtime(shard_dsq(own_slot(cpu, t))), head_vtime(cpu_dsq(cpu))) &&
	    wakeq_dispatch(cpu, t))
		return;
	if (scx_bpf_dsq_move_to_local(cpu_dsq(cpu), 0)) {
		stat_inc(SIS_CNT_DISPATCH_LOCAL);
		return;
	}
	if (wakeq_dispatch(cpu, t))
		return;

	switch (steal(cpu, llc, 1, 1)) {
	case STOLE_LLC:
		stat_inc(SIS_CNT_DISPATCH_LLC);
		return;
	case STOLE_REMOTE:
		stat_inc(SIS_CNT_DISPATCH_REMOTE);
		return;
	default:
		break;
	}

	/* Other LLCs' wakequeues last: their own CPUs serve them first. */
	bpf_for (i, 0, nr_llcs * SIS_MAX_SHARDS) {
		if (i / SIS_MAX_SHARDS != llc && take_from_slot(i)) {
			stat_inc(SIS_CNT_DISPATCH_REMOTE);
			return;
		}
	}
}

/*
 * Wake an idle CPU to steal @cpu's waiting tasks, counted in @counter: in
 * @cpu's LLC if one is idle, else anywhere (idle CPUs steal from other LLCs
 * too). Not the running task's mask: a pinned task running here says nothing
 * about who waits. False when no CPU is idle.
 */
static __always_inline bool wake_stealer(s32 cpu, enum sis_counter counter)
{
	const struct cpumask *mask = llc_mask(llc_of(cpu));
	s32 idle = mask ? scx_bpf_pick_idle_cpu(mask, 0) : -1;

	if (idle < 0) {
		mask = scx_bpf_get_idle_cpumask();
		idle = scx_bpf_pick_idle_cpu(mask, 0);
		scx_bpf_put_idle_cpumask(mask);
	}
	if (idle < 0)
		return false;
	scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
	stat_inc(counter);
	return true;
}

/*
 * Work conservation, the way the kernel's nohz balancer kick does it: a busy
 * CPU with tasks waiting behind it wakes an idle CPU, which then steals. A
 * tick bounds the wait without undoing the prev-CPU bias on every wakeup.
 */
void BPF_STRUCT_OPS(sis_tick, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);

	if (tun()->plain)
		return;
	if (!scx_bpf_dsq_nr_queued(cpu_dsq(cpu)) &&
	    !scx_bpf_dsq_nr_queued(shard_dsq(own_slot(cpu, tun()))))
		return;
	wake_stealer(cpu, SIS_CNT_TICK_KICKS);
}

/*
 * A higher sched class took @cpu. What waits here would wait until it comes
 * back: on 6.12 a busy loop got 9 of 1000 ticks behind a SCHED_FIFO hog while
 * seven CPUs idled. The local DSQ goes back through ops.enqueue (which sends
 * it to idle CPUs); for this CPU's own queue, wake one idle CPU per waiting
 * task to steal it. Until ops.cpu_acquire, busy CPUs may pull from it too.
 */
void BPF_STRUCT_OPS(sis_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	u64 waiting;
	u32 i;

	/*
	 * The migration stopper holds a CPU for microseconds, and stress-ng's
	 * affinity changes run it hundreds of times a second: sending work away
	 * each time only churned tasks between CPUs.
	 */
	if (args && args->reason == SCX_CPU_PREEMPT_STOP)
		return;
	if (cctx)
		cctx->released = 1;
	scx_bpf_reenqueue_local();
	waiting = scx_bpf_dsq_nr_queued(cpu_dsq(cpu)) +
		  scx_bpf_dsq_nr_queued(shard_dsq(own_slot(cpu, tun())));
	bpf_for (i, 0, waiting < nr_cpus ? waiting : nr_cpus) {
		if (!wake_stealer(cpu, SIS_CNT_RESCUES))
			break;
	}
}

void BPF_STRUCT_OPS(sis_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);

	if (cctx)
		cctx->released = 0;
}

void BPF_STRUCT_OPS(sis_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_task_ctx *tctx = task_ctx(p);
	u64 now = bpf_ktime_get_ns();

	if (cctx) {
		/*
		 * A task stolen from another CPU's queue kept that CPU's vtime scale:
		 * bring it into this CPU's window, or a far lower vtime would let
		 * keep_prev() run it until it caught up (a 40 s stall under
		 * stress-ng's sched races).
		 */
		u64 vtime = task_vtime(p, cpu);

		if (vtime != p->scx.dsq_vtime)
			scx_bpf_task_set_dsq_vtime(p, vtime);
		sis_pelt_advance(&cctx->util, now, false);
		cctx->running = 1;
		/* Monotonic, like CFS's min_vruntime: the picked task is the queue's minimum. */
		if (time_before(cctx->vtime_now, vtime))
			cctx->vtime_now = vtime;
	}
	if (tctx) {
		sis_pelt_advance(&tctx->util, now, false);
		tctx->running_at = now;
		if (tctx->last_cpu >= 0 && tctx->last_cpu != cpu)
			stat_inc(SIS_CNT_MIGRATIONS);
		tctx->last_cpu = cpu;
		wakeq_running(tctx, now);
	}
}

void BPF_STRUCT_OPS(sis_stopping, struct task_struct *p, bool runnable)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(scx_bpf_task_cpu(p));
	struct sis_task_ctx *tctx = task_ctx(p);
	u64 now = bpf_ktime_get_ns();

	if (cctx) {
		sis_pelt_advance(&cctx->util, now, true);
		cctx->running = 0;
	}
	if (!tctx)
		return;
	sis_pelt_advance(&tctx->util, now, true);
	/* Weighted fairness: vtime advances inversely to the task's weight (100 = nice 0). */
	if (now > tctx->running_at && p->scx.weight)
		scx_bpf_task_set_dsq_vtime(p, p->scx.dsq_vtime + (now - tctx->running_at) * 100 /
									 p->scx.weight);
}

void BPF_STRUCT_OPS(sis_enable, struct task_struct *p)
{
	scx_bpf_task_set_dsq_vtime(p, cpu_vtime_now(scx_bpf_task_cpu(p)));
}

s32 BPF_STRUCT_OPS(sis_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct sis_task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->last_cpu = -1;
	tctx->wakeq_slot = -1;
	return 0;
}

void BPF_STRUCT_OPS(sis_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct sis_task_ctx *tctx = task_ctx(p);

	if (tctx)
		wakeq_forget(tctx, shard_left);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(sis_init)
{
	s32 cpu, err;

	bpf_for (cpu, 0, nr_cpus) {
		err = scx_bpf_create_dsq(cpu_dsq(cpu), -1);
		if (err) {
			scx_bpf_error("failed to create DSQ for CPU %d: %d", cpu, err);
			return err;
		}
	}
	err = scx_bpf_create_dsq(SIS_DSQ_PLAIN, -1);
	if (err) {
		scx_bpf_error("failed to create the plain FIFO: %d", err);
		return err;
	}
	err = wakeq_init();
	if (err) {
		scx_bpf_error("failed to create the wakequeue DSQs: %d", err);
		return err;
	}
	err = topo_init();
	if (err) {
		scx_bpf_error("failed to build topology masks: %d", err);
		return err;
	}
	err = sis_util_init();
	if (err) {
		scx_bpf_error("failed to start the SIS_UTIL timer: %d", err);
		return err;
	}
	return 0;
}

void BPF_STRUCT_OPS(sis_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(sis_ops, .select_cpu = (void *)sis_select_cpu, .enqueue = (void *)sis_enqueue,
	       .dispatch = (void *)sis_dispatch, .tick = (void *)sis_tick,
	       .cpu_acquire = (void *)sis_cpu_acquire, .cpu_release = (void *)sis_cpu_release,
	       .running = (void *)sis_running, .stopping = (void *)sis_stopping,
	       .enable = (void *)sis_enable, .init_task = (void *)sis_init_task,
	       .exit_task = (void *)sis_exit_task, .init = (void *)sis_init,
	       .exit = (void *)sis_exit, .name = "scx_sis");
