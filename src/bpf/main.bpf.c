/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_sis: select_idle_sibling() as switchable, measurable placement stages.
 *
 * What it does. The point is wakeup placement: where a waking task should
 * run. select_cpu walks the kernel's select_idle_sibling() rebuilt as ordered
 * stages (placement.bpf.h): sync wakeups, prev idle, prev almost idle, an idle
 * core, an LLC scan bounded by SIS_UTIL's nr_scan, other LLCs, and prev as
 * the fallback. Most stages can be switched while the scheduler runs (the
 * tunables map), and each decision, with its cost, is counted under the LLC
 * of the task's prev CPU. A task that found an idle CPU goes straight to that
 * CPU's local DSQ; any other waits in the DSQ of the CPU it was placed on (or
 * in a wakequeue shard its LLC shares), in order of virtual deadline (vtime
 * plus its expected run) so that nice holds and a short wakee goes first; a
 * wakee whose deadline is earlier than the running task's preempts it, and a
 * slice is shared with the queue (latency.bpf.h).
 * Around placement, work conservation and fairness: a CPU out of work takes
 * from its own queues, then steals inside its LLC, then from other LLCs; a
 * busy CPU's tick wakes an idle CPU when tasks wait behind it; at a slice
 * end a busy CPU pulls a task owed service from another CPU (pull.bpf.h);
 * work on a CPU an RT or deadline task takes moves on (held_rescue.bpf.h;
 * which CPUs count as held: held.bpf.h).
 * Dispatch's sources and their order: dispatch.bpf.h.
 * The plain preset replaces all of it with the kernel's default pick and
 * one FIFO, as the baseline to compare against.
 *
 * What it does not do, on purpose. No load balancing beyond those steals,
 * pulls and kicks: no periodic domain walk, no NUMA distances, no CPU
 * capacities, no cgroup weights. No kernel symbols for topology (the
 * daemon passes it in), and no curve arithmetic here: the daemon computes
 * the SIS_UTIL tables, BPF only looks them up.
 *
 * The trade-off. A task that finds no idle CPU queues on one CPU (prev,
 * unless a stage chose another) rather than in a queue its LLC shares: it
 * stays near its cache and wakeups do not serialise on one LLC-wide lock,
 * at the price that it may wait behind a busy CPU while another CPU idles.
 * The tick kick, the wakeup kick, wakeup preemption, the shared slice and
 * the lag pull bound that wait, rather than undoing the prev bias on every
 * wakeup. (The wakequeue tunable takes
 * the other side, sharded, so the two can be measured against each other.)
 *
 * Each concern lives in its own header, and each header includes what it
 * uses, so the order below does not matter. This file holds the ops and the
 * one timer that runs each concern's periodic work, each with its contract.
 *
 * The ops below are not in the kernel's call order, which is:
 *   ops.init: DSQs, topology, the timer, which then runs every period;
 *   per task, ops.init_task (at fork, or at load for each task already
 *   there), then ops.enable as it enters the ext class;
 *   at a wakeup, ops.select_cpu (not for a task bound to one CPU), then
 *   ops.enqueue unless select_cpu inserted the task itself;
 *   when a CPU needs a task, ops.dispatch; then ops.running as the task
 *   starts, ops.tick at each tick while it runs, ops.stopping as it stops
 *   (a task still runnable goes back through ops.enqueue);
 *   when a higher class takes a CPU and gives it back, ops.cpu_release and
 *   ops.cpu_acquire, or from 6.19 the sched_switch tracepoint instead;
 *   ops.exit_task as a task exits or the scheduler unloads; ops.exit last.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "conserve.bpf.h"
#include "cpu_dsq.bpf.h"
#include "dispatch.bpf.h"
#include "held.bpf.h"
#include "held_rescue.bpf.h"
#include "latency.bpf.h"
#include "pace.bpf.h"
#include "pelt.bpf.h"
#include "placement.bpf.h"
#include "sis_util.bpf.h"
#include "stats.bpf.h"
#include "steal.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"
#include "tunables.bpf.h"
#include "types.bpf.h"
#include "vtime.bpf.h"
#include "wait.bpf.h"
#include "wakeq.bpf.h"
#include "workmask.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * Declared weak under a flavor of its name: common.bpf.h's declaration is
 * strong, and a strong kfunc a kernel removed fails the whole load (as 7.3's
 * removal of scx_bpf_cpu_rq did), even where only the plain preset uses it.
 */
s32 scx_bpf_select_cpu_dfl___weak(struct task_struct *p, s32 prev_cpu, u64 wake_flags,
				  bool *is_idle) __ksym __weak;

/*
 * The plain preset's pick: the kernel's default idle selection. From 6.16
 * through scx_bpf_select_cpu_and(), which says -EBUSY where select_cpu_dfl
 * returned prev; before, select_cpu_dfl itself; with neither, prev.
 */
static __always_inline s32 kernel_pick(struct task_struct *p, s32 prev_cpu, u64 wake_flags,
				       bool *idle)
{
	s32 cpu;

	*idle = false;
	if (__COMPAT_HAS_scx_bpf_select_cpu_and) {
		cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, p->cpus_ptr, 0);
		if (cpu < 0)
			return prev_cpu;
		*idle = true;
		return cpu;
	}
	if (bpf_ksym_exists(scx_bpf_select_cpu_dfl___weak))
		return scx_bpf_select_cpu_dfl___weak(p, prev_cpu, wake_flags, idle);
	return prev_cpu;
}

/*
 * ops.select_cpu: @p wakes (or was forked), and may run on more than one
 * CPU; called on the waker's CPU, before @p is queued. Decides where @p
 * runs: pick_cpu()'s stages (placement.bpf.h), or the kernel's pick under
 * the plain preset. A CPU found idle is claimed, and @p goes straight to its
 * local DSQ (ops.enqueue is then skipped); otherwise ops.enqueue finds @p on
 * the returned CPU. Writes the wakeup's counters and sampled cost under
 * prev's LLC (stats.bpf.h), and @p's woken_at and placed_sync
 * (wake_stamp(), latency.bpf.h), read by ops.enqueue and ops.running.
 * Invariant: only a CPU claimed idle gets a task in its local DSQ from here.
 * Steals and pulls take from the CPUs' own DSQs and the shards, never from a
 * local DSQ, so a task put there behind a busy CPU would wait for it
 * whatever else idles.
 */
s32 BPF_STRUCT_OPS(sis_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	/* Filed under prev's LLC: where the wakeup came from, not where the waker runs. */
	struct sis_llc_stats *s = stats_of_llc(llc_of(prev_cpu));
	struct placed pl = {.cpu = prev_cpu, .path = SIS_PATH_FALLBACK};
	u64 calls = calls_now(), start = now_ns();
	/* Self-timing costs two clock reads; bpf_stats times every call, so sample ours. */
	bool timed = s && !(s->counters[SIS_CNT_WAKEUPS] & (SIS_COST_SAMPLE_EVERY - 1));
	struct sis_tunables t;

	tun_snapshot(&t);
	if (t.plain) {
		pl.cpu = kernel_pick(p, prev_cpu, wake_flags, &pl.idle);
		pl.path = SIS_PATH_KERNEL_DFL;
		stat_path(s, SIS_PATH_KERNEL_DFL);
	} else {
		pick_cpu(p, wake_flags, start, &t, &pl);
	}
	if (timed || t.trace) {
		u64 cost = now_ns() - start;

		if (timed) {
			stat_cost(s, cost);
			stat_add(s, SIS_CNT_COST_SAMPLES, 1);
		}
		if (t.trace && trace_wants(p, &t))
			trace_decision(p, prev_cpu, wake_flags, pl.cpu, pl.path, pl.idle,
				       pl.nr_scan, pl.tested, start, cost);
	}
	stat_add(s, SIS_CNT_WAKEUPS, 1);
	/*
	 * Only the sync stage's pick is let run after its waker: it found the
	 * waker's queues empty, so the wakee is next once the waker sleeps. A
	 * sync wakee another stage put on the waker's CPU (prev there, nothing
	 * idle) has a queue ahead of it and is judged as any wakee, or it would
	 * wait for the waker and then for that queue.
	 */
	wake_stamp(p, start, pl.path == SIS_PATH_SYNC);
	if (!t.plain && cpu_held_since(pl.cpu, start))
		stat_add(s, SIS_CNT_HELD_WAKEUPS, 1);

	if (pl.idle) {
		dsq_insert(p, SCX_DSQ_LOCAL, tun_slice_ns(&t), 0);
		stat_add(s, SIS_CNT_DIRECT_DISPATCH, 1);
	}
	stat_add(s, SIS_CNT_SELECT_CALLS, calls_now() - calls);
	return pl.cpu;
}

/*
 * @p was waiting on a CPU that a higher sched class (RT, deadline) took: run it
 * on an idle CPU it may use instead, as the kernel's RT push would for CFS.
 */
static __always_inline bool rescue_to_idle(struct task_struct *p, u64 enq_flags,
					   const struct sis_tunables *t)
{
	s32 idle = pick_idle_cpu(p->cpus_ptr, 0);

	if (idle < 0)
		return false;
	dsq_insert(p, SCX_DSQ_LOCAL_ON | idle, tun_slice_ns(t), enq_flags);
	kick_cpu(idle, SCX_KICK_IDLE);
	stat_inc(SIS_CNT_RESCUES);
	if (t->trace && trace_wants(p, t))
		trace_move(p, SIS_MOVE_RESCUE_REENQ, task_cpu(p), idle);
	return true;
}

/*
 * A wakee (or a new task) was queued behind the task running on @cpu. Not
 * when the sync stage put it on its waker's CPU (placed_sync): the waker is
 * about to sleep, and the wakee runs there next. Otherwise it preempts the
 * running task when wakeup_verdict() says so (latency.bpf.h; each verdict is
 * counted, so the waits show their cause); else, unless its wait there would be
 * below steal-min (kicks_skipped), an idle CPU is kicked to steal it now
 * rather than at the next tick: one of @cpu's LLC, else any the task may use
 * (its own LLC busy, another's CPU idle: a wait behind a busy CPU costs more
 * than a move across LLCs).
 */
static __always_inline void wakeup_behind_busy(struct task_struct *p, struct sis_task_ctx *tctx,
					       s32 cpu, u64 vtime, u64 now,
					       const struct sis_tunables *t)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu), *ictx;
	const struct cpumask *mask;
	u32 verdict;
	s32 idle;

	if (!cctx || !cctx->running) {
		kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	if (tctx && tctx->placed_sync) {
		stat_inc(SIS_CNT_NOPREEMPT_SYNC);
		return;
	}
	verdict = wakeup_verdict(p, tctx, cctx, vtime, now, t);
	if (verdict < SIS_NR_COUNTERS)
		stat_inc(verdict);
	if (verdict == SIS_CNT_WAKEUP_PREEMPTS) {
		cctx->preempting = 1;
		kick_cpu(cpu, SCX_KICK_PREEMPT);
		return;
	}
	if (bound_to_cpu(p))
		return;
	/* The wakee is not counted yet: an insert from ops.enqueue lands after it returns. */
	if (!wait_exceeds(cpu, dsq_nr_queued(cpu_dsq(cpu)) + 1, now, steal_wait_min_ns(t, cctx))) {
		stat_inc(SIS_CNT_KICKS_SKIPPED);
		return;
	}
	mask = llc_mask_for(p, llc_of(cpu));
	idle = mask ? pick_idle_cpu(mask, 0) : -1;
	if (idle < 0 && t->cross_llc && nr_llcs > 1)
		idle = pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		ictx = cpu_ctx(idle);
		if (ictx)
			ictx->kicked_by = cpu + 1;
		kick_cpu(idle, SCX_KICK_IDLE);
		stat_inc(SIS_CNT_WAKEUP_KICKS);
		if (t->trace && trace_wants(p, t))
			trace_move(p, SIS_MOVE_WAKEUP_KICK, cpu, idle);
	}
}

/*
 * @p goes ahead of @cpu's queue (served_first(), latency.bpf.h): into the
 * local DSQ of its CPU, preempting a task that has run steal-min (scaled
 * by the pace), as a wakee of an earlier deadline would; an idle CPU is
 * woken for it.
 */
static __always_inline void serve_first(struct task_struct *p, s32 cpu, u64 enq_flags,
					const struct sis_tunables *t)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	bool busy = cctx && cctx->running;

	if (busy && time_since(now_ns(), cctx->curr_at) >= steal_wait_min_ns(t, cctx))
		enq_flags |= SCX_ENQ_PREEMPT;
	dsq_insert(p, SCX_DSQ_LOCAL, tun_slice_ns(t), enq_flags);
	if (!busy)
		kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(SIS_CNT_SERVED_FIRST);
}

/* ops.enqueue's work; sis_enqueue() around it counts its calls. */
static __always_inline void enqueue_task(struct task_struct *p, u64 enq_flags)
{
	struct sis_task_ctx *tctx = task_ctx(p);
	s32 cpu = task_cpu(p);
	bool wakeup = enq_flags & SCX_ENQ_WAKEUP;
	/*
	 * SCX_OPS_ENQ_MIGRATION_DISABLED hands such a task here instead of to
	 * its CPU's local DSQ: it stays in its CPU's own DSQ, which no stealer
	 * or pull takes it from (move.bpf.h), and no rescue or shard may send
	 * it elsewhere (an insert on another CPU's local DSQ is a scheduler
	 * error).
	 */
	bool migration_disabled = is_migration_disabled(p);
	struct sis_tunables t;
	u64 vtime, key, now;

	tun_snapshot(&t);
	stat_inc(SIS_CNT_ENQUEUE);
	/* Queued again without running (a dequeue for an affinity or priority change). */
	task_key_strip(p, tctx);
	if (t.plain && !migration_disabled) {
		if (t.trace && trace_wants(p, &t))
			trace_queued(p, cpu, SIS_QUEUE_PLAIN, dsq_nr_queued(SIS_DSQ_PLAIN));
		dsq_insert(p, SIS_DSQ_PLAIN, tun_slice_ns(&t), enq_flags);
		if (!plain_fifo_maybe)
			plain_fifo_maybe = true;
		/*
		 * SCX_OPS_ENQ_LAST: @p's slice ended with nothing else for this
		 * CPU, which now goes idle; wake it to run @p again from the FIFO.
		 */
		if (enq_flags & SCX_ENQ_LAST)
			kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	/* A task bound to one CPU gets no select_cpu: its wakeup is stamped here. */
	if (wakeup && tctx && !tctx->woken_at)
		tctx->woken_at = now_ns();
	if (tctx) {
		/*
		 * Queued without a wakeup, the task did not sleep: a slice end,
		 * or a dequeue for an affinity or priority change, after which
		 * ops.stopping said "not runnable" all the same. Its vtime records
		 * service received, so a pull may move it for service owed
		 * (pull.bpf.h); a reenqueue off a held CPU is rescued instead.
		 */
		tctx->requeued = !wakeup && !(enq_flags & SCX_ENQ_REENQ);
		if (!wakeup)
			tctx->slept = 0;
	}
	if (!(enq_flags & SCX_ENQ_REENQ) && served_first(p, tctx)) {
		serve_first(p, cpu, enq_flags, &t);
		return;
	}
	vtime = task_vtime(p, tctx, cpu, wakeup, &t);
	/* Taken out of a shard without running (affinity or priority change). */
	if (tctx)
		wakeq_forget(tctx, shard_left);
	if (!migration_disabled && (enq_flags & SCX_ENQ_REENQ) && rescue_to_idle(p, enq_flags, &t))
		return;
	if (!migration_disabled && wakeq_enqueue(p, cpu, vtime, enq_flags, &t))
		return;

	now = now_ns();
	if (tctx)
		tctx->queued_at = now;
	if (t.trace && trace_wants(p, &t))
		trace_queued(p, cpu, SIS_QUEUE_CPU, dsq_nr_queued(cpu_dsq(cpu)));
	key = task_key(p, tctx, vtime, &t);
	if (tctx)
		tctx->key_gap = key - vtime;
	dsq_insert_vtime(p, cpu_dsq(cpu), tun_slice_ns(&t), key, enq_flags);
	work_mark(cpu);
	/* A new task (it never ran) is as urgent as a wakee. */
	if (wakeup || (tctx && tctx->last_cpu < 0))
		wakeup_behind_busy(p, tctx, cpu, vtime, now, &t);
	else
		/*
		 * Placed on an idle CPU without claiming it (a race), or
		 * SCX_OPS_ENQ_LAST's @p, whose CPU goes idle now: wake it.
		 */
		kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * ops.enqueue: @p is runnable and needs a queue, on the CPU it is on
 * (task_cpu(), after a wakeup select_cpu's choice): a wakeup select_cpu did
 * not insert itself, a wakeup of a task bound to one CPU, a slice end, a
 * requeue after an affinity or priority change, or a held CPU's local DSQ
 * sent back (SCX_ENQ_REENQ). Decides the queue: the plain preset's FIFO; for
 * a per-CPU kthread or a thread of scx_sis using under half a CPU, the CPU's
 * local DSQ ahead of its queue (serve_first()); for a reenqueue, an idle CPU
 * (rescue_to_idle()); the CPU's wakequeue shard
 * (wakeq.bpf.h); else the CPU's own DSQ, keyed by virtual deadline
 * (task_key(), vtime.bpf.h), the only one for a migration-disabled task.
 * Then whom to kick (wakeup_behind_busy()). Writes @p's vtime,
 * bounded to the CPU's clock (task_vtime()), key_gap, requeued, slept and
 * queued_at, and the CPU's work bit (workmask.bpf.h).
 * Invariants: @p's vtime is freed of the last key's expected run first
 * (task_key_strip()), or a requeue without a run would add it twice; and an
 * insert on a CPU with no ext task running kicks it, so no task waits on an
 * idle CPU that nothing wakes.
 */
void BPF_STRUCT_OPS(sis_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 calls = calls_now();

	enqueue_task(p, enq_flags);
	stat_inc_by(SIS_CNT_ENQUEUE_CALLS, calls_now() - calls);
}

/*
 * ops.dispatch: @cpu needs a task and its local DSQ is empty: @prev blocked
 * or its slice ended, or the CPU was idle and woke. A still-runnable @prev
 * (SCX_TASK_QUEUED) is not back in a queue yet, so it competes with the
 * queues' heads. Decides where the next task comes from: dispatch_plain()
 * or dispatch_sis(), whose sources, their order and the summaries that gate
 * them dispatch.bpf.h lists. Reads and clears @cpu's kicked_by
 * (take_kicker()): a kick to steal holds for the one dispatch it caused; and
 * its preempting flag (take_preempting()): after a preemption the own queue
 * goes first.
 * Finding nothing, with no @prev to go on, marks the CPU went_idle, for
 * ops.running's average idle period (steal.bpf.h).
 * Invariant: an idle CPU with nothing anywhere asks the kernel one thing,
 * its own DSQ, whatever the machine's size (calls.bpf.h counts it).
 * The test_inject_error tunable, which only tests set, fails the scheduler.
 */
void BPF_STRUCT_OPS(sis_dispatch, s32 cpu, struct task_struct *prev)
{
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_llc_stats *s = my_stats();
	u64 calls = calls_now();
	struct sis_tunables t;
	s32 kicker = take_kicker(cctx);
	bool preempted = take_preempting(cctx), found;

	tun_snapshot(&t);
	if (t.test_inject_error) {
		scx_bpf_error("test-only error injected through the tunables");
		return;
	}
	found = t.plain ? dispatch_plain(cpu, &t) : dispatch_sis(cpu, prev, kicker, preempted, &t);
	calls = calls_now() - calls;
	stat_add(s, SIS_CNT_DISPATCHES, 1);
	stat_add(s, SIS_CNT_DISPATCH_CALLS, calls);
	if (found || (prev && (prev->scx.flags & SCX_TASK_QUEUED)))
		return;
	/* Nothing to run: this CPU idles (steal.bpf.h's newidle rule measures how long). */
	stat_add(s, SIS_CNT_DISPATCH_EMPTY, 1);
	stat_add(s, SIS_CNT_DISPATCH_EMPTY_CALLS, calls);
	if (cctx)
		cctx->went_idle = 1;
}

/*
 * ops.tick: every scheduler tick on a CPU running an ext task (@p); nothing
 * under the plain preset. Work conservation, the way the kernel's nohz
 * balancer kick does it: a busy CPU with tasks waiting behind it wakes an
 * idle CPU, which then steals (wake_stealer(), held_rescue.bpf.h, which leaves
 * this CPU in the stealer's kicked_by, to be looked at first). A tick bounds
 * the wait without undoing the prev-CPU bias on every wakeup. Before that,
 * EEVDF's check at the tick: the queue's first task preempts @p once its
 * deadline beats @p's and @p has run steal-min (tick_preempts(),
 * latency.bpf.h), so a wakee that came too early to preempt waits a tick,
 * not the rest of a slice. It also looks
 * after the LLC's held CPUs, whose own ticks do not run (rescue_from_held()),
 * and sets this CPU's work bit again while work waits (workmask.bpf.h).
 * Invariant: a head that has waited steal-min (other than a lone task bound
 * here) gets a stealer at the next tick while any CPU idles, so a wrong wait
 * estimate cannot leave it waiting for good.
 */
void BPF_STRUCT_OPS(sis_tick, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	u32 llc = llc_of(cpu);
	u64 now = now_ns(), nr, min;
	struct sis_cpu_ctx *cctx;
	struct task_struct *head;
	struct sis_tunables t;

	tun_snapshot(&t);
	if (t.plain)
		return;
	rescue_from_held(llc, now);
	nr = dsq_nr_queued(cpu_dsq(cpu));
	/*
	 * Repair a bit that missed an insert (workmask.bpf.h), so stealers see
	 * this queue, before anything else the tick may do.
	 */
	if (nr)
		work_mark(cpu);
	if (llc_wakeq_maybe(llc) && dsq_nr_queued(shard_dsq(own_slot(cpu, &t)))) {
		wake_stealer(llc, cpu, SIS_CNT_TICK_KICKS, SIS_MOVE_TICK_KICK);
		return;
	}
	if (!nr)
		return;
	head = dsq_head(cpu_dsq(cpu));
	cctx = cpu_ctx(cpu);
	if (head && cctx && tick_preempts(head->scx.dsq_vtime, cctx, now, &t)) {
		cctx->preempting = 1;
		task_set_slice(p, 0);
		stat_inc(SIS_CNT_TICK_PREEMPTS);
		return;
	}
	/* What waits may be only a task bound to this CPU: a stealer could take none of them. */
	if (head && nr == 1 && head->nr_cpus_allowed == 1)
		return;
	/*
	 * An idle CPU looks for work only when kicked: a head that has waited
	 * steal-min gets a stealer whatever the estimate said, one tick later at
	 * the most, or an estimate that was wrong could leave it waiting for good.
	 */
	min = steal_min_ns(&t, cctx);
	if (!head_waited(head, now, min) &&
	    !wait_exceeds(cpu, nr, now, steal_wait_min_ns(&t, cctx))) {
		stat_inc(SIS_CNT_KICKS_SKIPPED);
		return;
	}
	wake_stealer(llc, cpu, SIS_CNT_TICK_KICKS, SIS_MOVE_TICK_KICK);
}

/*
 * ops.cpu_release: a higher sched class (RT, deadline, the migration
 * stopper) takes @cpu, which runs no ext task until ops.cpu_acquire. What
 * waits here would wait until it comes back, however long that is and
 * however many other CPUs idle meanwhile.
 * The local DSQ goes back through ops.enqueue (which sends it to idle CPUs),
 * and idle CPUs are woken to steal the CPU's own queue
 * (wake_stealers_for_held(), held_rescue.bpf.h). Until the CPU comes back it
 * counts as held (held.bpf.h): wakeups avoid it, and stealers, pulls and
 * other CPUs' ticks take what waits there.
 *
 * Kernels before 6.19: ops.cpu_release / ops.cpu_acquire. The kernel sends
 * one release per episode, so a hold that starts with the migration stopper
 * and passes to an RT task is seen only as the stopper's: hold_begin() marks
 * it too, and cpu_held() judges it by its length.
 * Invariant: nr_held_cpus counts the CPUs marked held (hold_begin(),
 * hold_end()), so every look for held CPUs costs one read while none is.
 */
void BPF_STRUCT_OPS(sis_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	if (!hold_begin(cpu, args && args->reason == SCX_CPU_PREEMPT_STOP))
		return;
	scx_bpf_reenqueue_local();
	wake_stealers_for_held(cpu);
}

/*
 * ops.cpu_acquire: the higher class gave @cpu back (kernels before 6.19). It
 * no longer counts as held (hold_end(), held.bpf.h): wakeups may choose it
 * again, and its own dispatch and tick serve its queue.
 */
void BPF_STRUCT_OPS(sis_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	hold_end(cpu);
}

/* Between ops.init and ops.exit: the tracepoint below fires before the ops are attached. */
static bool sis_live;

/*
 * tp_btf/sched_switch, 6.19 and later: every context switch, of any class,
 * on the switching CPU. The daemon enables this program and drops the two
 * ops above where the kernel can reenqueue from anywhere. A switch to prio
 * below MAX_RT_PRIO is one to the RT, deadline or stop class (an ext task
 * boosted by priority inheritance runs in the RT class too): a hold begins,
 * as at ops.cpu_release. A switch to anything else, an ext task or idle,
 * gives the CPU back, as ops.cpu_acquire. Unlike the ops, it also sees a
 * stopper's hold pass to an RT task. It may fire before ops.init and after
 * ops.exit, and does nothing then (sis_live).
 */
SEC("?tp_btf/sched_switch")
int BPF_PROG(sis_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	s32 cpu;

	if (!sis_live)
		return 0;
	cpu = bpf_get_smp_processor_id();
	if (next->prio >= MAX_RT_PRIO) {
		/* The common case: nothing was held anywhere. */
		if (nr_held_cpus)
			hold_end(cpu);
		return 0;
	}
	if (!hold_begin(cpu, is_stopper(next)))
		return 0;
	scx_bpf_reenqueue_local_from_anywhere();
	wake_stealers_for_held(cpu);
	return 0;
}

/*
 * ops.running: @p starts running, on this CPU (ops.running and ops.stopping
 * run on the task's CPU: no kfunc needed to learn it). For the CPU: the idle
 * period since its last task stopped goes into avg_idle (steal.bpf.h), or a
 * back-to-back switch into its pace (pace.bpf.h); its clock catches up with
 * vclock (vtime_resync(), vtime.bpf.h); its PELT signal closes an idle
 * stretch; it records the running task (curr_*, read by wakeup preemption
 * and steals). For @p: its key becomes its vtime again (task_key_strip()),
 * bounded to this CPU's clock; its slice is shared with the queue
 * (slice_share(), latency.bpf.h); its wakeup wait, PELT, last_cpu and
 * wakequeue wait (wakeq_running()) are recorded.
 * Invariant: the CPU's clock, vtime_now, only moves forward, as CFS's
 * min_vruntime: task_vtime() bounds tasks against it, and a clock that went
 * back would hand a woken task credit it did not earn.
 */
void BPF_STRUCT_OPS(sis_running, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	u64 calls = calls_now();
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	struct sis_task_ctx *tctx = task_ctx(p);
	struct sis_llc_stats *s = my_stats();
	u64 now = now_ns();
	struct sis_tunables t;

	tun_snapshot(&t);
	task_key_strip(p, tctx);
	if (cctx) {
		bool moved;
		u64 vtime;

		/* The CPU idled since its last task stopped: fold that into its average idle. */
		if (cctx->went_idle && cctx->stopped_at && now > cctx->stopped_at)
			idle_avg_update(cctx, now - cctx->stopped_at);
		pace_sample(cpu, now);
		cctx->went_idle = 0;
		vtime_resync(cctx, now, &t);
		/*
		 * A task that moved brings its vtime along; bound it to this
		 * CPU's window (task_vtime()), or a far lower vtime would let
		 * keep_prev() run it, and the CPU's other tasks wait, until it
		 * caught up with the CPU's clock.
		 */
		moved = task_moved(tctx, cpu);
		vtime = task_vtime(p, tctx, cpu, tctx && tctx->slept, &t);
		if (vtime != p->scx.dsq_vtime)
			task_set_dsq_vtime(p, vtime);
		/* A moved task's credit: how long it runs here before a wakee may preempt it. */
		if (moved && time_before(vtime, cctx->vtime_now))
			stat_add(s, SIS_CNT_MIGRANT_CREDIT_NS, cctx->vtime_now - vtime);
		sis_pelt_advance(&cctx->util, now, false);
		slice_share(p, cpu, cctx, s, &t);
		cctx->running = 1;
		cctx->curr_vtime = vtime;
		cctx->curr_weight = p->scx.weight;
		cctx->curr_avg_run = tctx ? tctx->avg_run : 0;
		cctx->curr_at = now;
		/* Monotonic, like CFS's min_vruntime: the picked task is the queue's minimum. */
		if (time_before(cctx->vtime_now, vtime))
			cctx->vtime_now = vtime;
	}
	if (t.trace && trace_wants(p, &t))
		trace_run(p, tctx, cpu, tctx ? tctx->last_cpu : -1, now);
	else if (tctx && tctx->trace_cause_kind) {
		/* Traced before the trace went off: not the cause of a later run. */
		tctx->trace_cause_kind = SIS_CAUSE_NONE;
		tctx->trace_decided_at = 0;
	}
	if (tctx) {
		if (tctx->woken_at) {
			stat_wake_wait(s, time_since(now, tctx->woken_at));
			tctx->woken_at = 0;
		}
		sis_pelt_advance(&tctx->util, now, false);
		tctx->running_at = now;
		tctx->slept = 0;
		if (tctx->last_cpu >= 0 && tctx->last_cpu != cpu)
			stat_add(s, SIS_CNT_MIGRATIONS, 1);
		tctx->last_cpu = cpu;
		wakeq_running(tctx, now);
	}
	stat_add(s, SIS_CNT_RUNS, 1);
	stat_add(s, SIS_CNT_RUN_CALLS, calls_now() - calls);
}

/*
 * ops.stopping: @p stops on this CPU: its slice ended or a task preempted it
 * (@runnable), or it blocks or is dequeued (!@runnable). Charges the run:
 * vtime_after_run() (vtime.bpf.h) is the one place run time becomes vtime,
 * at @p's weight; run_avg_update() (task.bpf.h) keeps the average run that
 * steals, pulls and kicks estimate waits from. Both PELT signals close a
 * busy stretch; the CPU no longer counts as running, and stopped_at starts
 * ops.running's idle and pace measures. slept records a block (ops.enqueue
 * clears it when @p is queued again without a wakeup: a dequeue, no sleep).
 * Invariant: a CPU's running flag is set exactly between ops.running and
 * ops.stopping, since wakeup kicks, vclock and the idle-beside-work sample
 * take a CPU without it for idle.
 */
void BPF_STRUCT_OPS(sis_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct sis_cpu_ctx *cctx = cpu_ctx(cpu);
	const struct sis_tunables *traced = trace_live();
	u64 calls = calls_now(), now = now_ns();
	struct sis_task_ctx *tctx = task_ctx(p);

	if (traced && trace_wants(p, traced))
		trace_stop(p, cpu);
	if (cctx) {
		sis_pelt_advance(&cctx->util, now, true);
		cctx->running = 0;
		cctx->stopped_at = now;
	}
	if (tctx) {
		sis_pelt_advance(&tctx->util, now, true);
		tctx->slept = !runnable;
		tctx->stopped_at = now;
		if (now > tctx->running_at) {
			run_avg_update(tctx, now - tctx->running_at);
			/* Weighted fairness: vtime advances inversely to the task's weight (100 =
			 * nice 0). */
			task_set_dsq_vtime(p, vtime_after_run(p->scx.dsq_vtime, p->scx.weight,
							      tctx->running_at, now));
		}
	}
	stat_inc_by(SIS_CNT_RUN_CALLS, calls_now() - calls);
}

/*
 * ops.enable: @p enters the ext class, after ops.init_task: at fork, at
 * load, or on a change of policy into it. It starts at its CPU's clock
 * (cpu_vtime_now(), vtime.bpf.h): no credit, no debt. A forked one starts at
 * its parent's vtime (ops.enable runs in the parent, which is forking): a
 * command started from a shell that mostly sleeps starts as early as the
 * shell would run, and a fork bomb's children start where its parent has got
 * to, so together they can take no more than a few tasks' shares from the
 * tasks already there. task_vtime() bounds it to the clock at its first
 * enqueue.
 */
void BPF_STRUCT_OPS(sis_enable, struct task_struct *p)
{
	struct task_struct *parent = bpf_get_current_task_btf();
	struct sis_task_ctx *tctx = task_ctx(p), *pctx;

	/* A key gap from a queue it left with the class would come off the new vtime. */
	if (tctx)
		tctx->key_gap = 0;
	if (tctx && tctx->forked) {
		pctx = task_ctx(parent);
		if (pctx) {
			/* Relative to the parent's CPU's clock, wherever the child is queued. */
			tctx->vt_cpu = bpf_get_smp_processor_id();
			task_set_dsq_vtime(p, vtime_charged(parent, pctx, now_ns()));
			return;
		}
	}
	if (tctx)
		tctx->vt_cpu = task_cpu(p);
	task_set_dsq_vtime(p, cpu_vtime_now(task_cpu(p)));
}

/*
 * ops.init_task: @p joins the scheduler, at fork (args->fork) or, for each
 * task already there, at load; before ops.enable, and for tasks of every
 * class. Creates its context (struct sis_task_ctx in task storage,
 * task.bpf.h): last_cpu -1 (never ran: ops.enqueue treats it as urgent as a
 * wakee, task_key() expects half a slice of it), wakeq_slot -1 (in no shard),
 * forked for ops.enable, avg_run as below. Without memory it fails with
 * -ENOMEM, and the fork, or the load, fails with it; every op still checks
 * task_ctx() for NULL.
 */
s32 BPF_STRUCT_OPS(sis_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct sis_task_ctx *tctx;
	struct sis_tunables t;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->last_cpu = -1;
	tctx->vt_cpu = -1;
	tctx->wakeq_slot = -1;
	tctx->forked = args && args->fork;
	/*
	 * Until it has run, a task is taken to run a whole slice, the one in
	 * force: no steal is refused for it, and a wakeup preempts for it only
	 * as for a task that runs its slice out.
	 */
	tun_snapshot(&t);
	tctx->avg_run = tun_slice_ns(&t);
	return 0;
}

/*
 * ops.exit_task: @p leaves the scheduler, as it exits or the scheduler
 * unloads; its task storage goes with it. A task still booked in a
 * wakequeue shard is booked as having left it (wakeq_forget(), wakeq.bpf.h),
 * or its LLC's llc_wakeq_tasks, which gates every dispatch's look at the
 * shards, would count it for good.
 */
void BPF_STRUCT_OPS(sis_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct sis_task_ctx *tctx = task_ctx(p);

	if (tctx)
		wakeq_forget(tctx, shard_left);
}

/*
 * The scheduler's one timer. A bpf_timer lives only in a map value: one array
 * entry holds it. sched_timer_init() arms it from ops.init, and each run of
 * sched_timerfn() arms it again for the next period.
 */
struct sis_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct sis_timer);
} sched_timer SEC(".maps");

/*
 * The timer's callback: every SIS_UTIL period (the sis_util_period_us
 * tunable), on whichever CPU the timer fires, in no ops' context. Each
 * concern keeps its periodic work in its own header; the timer runs them in
 * this order, from one snapshot of the tunables:
 *   sis_util_update() (sis_util.bpf.h): LLC utilization and nr_scan;
 *   conservation_sample() (conserve.bpf.h): idle CPUs beside waiting work;
 *   vtime_sample() (vtime.bpf.h): vclock, the busy CPUs' average clock;
 *   wakeq_sample() (wakeq.bpf.h): shard depths and orphaned slots;
 *   work_repair() (workmask.bpf.h) and the plain FIFO's hint (dispatch.bpf.h):
 *   the summaries that gate dispatch, set again where an insert was missed;
 *   under the sis preset, wake_plain_waiters() kicks the idle CPUs of the
 *   tasks still in the plain FIFO.
 * Invariant: a summary a clearer got wrong is right again within a period,
 * also where no tick runs (an idle CPU, the plain preset), so no task waits
 * for good behind a hint that says its queue is empty.
 */
static int sched_timerfn(void *map, int *key, struct bpf_timer *timer)
{
	struct sis_tunables t;
	u64 now = bpf_ktime_get_ns();

	tun_snapshot(&t);
	sis_util_update(now, t.sis_util_curve);
	conservation_sample(now, tun_timer_period_ns(&t),
			    steal_wait_min_ns(&t, cpu_ctx(bpf_get_smp_processor_id())));
	vtime_sample();
	wakeq_sample(&t);
	work_repair();
	if (scx_bpf_dsq_nr_queued(SIS_DSQ_PLAIN)) {
		if (!plain_fifo_maybe)
			plain_fifo_maybe = true;
		if (!t.plain)
			wake_plain_waiters();
	}
	bpf_timer_start(timer, tun_timer_period_ns(&t), 0);
	return 0;
}

/* From ops.init: the first period starts now. */
static __always_inline s32 sched_timer_init(void)
{
	u32 zero = 0;
	struct sis_timer *st = bpf_map_lookup_elem(&sched_timer, &zero);
	struct sis_tunables t;
	s32 err;

	if (!st)
		return -ENOENT;
	tun_snapshot(&t);
	/* nr_scan starts at 0 (scan nothing): compute it now, not one period late. */
	sis_util_update(now_ns(), t.sis_util_curve);
	err = bpf_timer_init(&st->timer, &sched_timer, CLOCK_MONOTONIC);
	if (err)
		return err;
	err = bpf_timer_set_callback(&st->timer, sched_timerfn);
	if (err)
		return err;
	return bpf_timer_start(&st->timer, tun_timer_period_ns(&t), 0);
}

/*
 * ops.init: once, when the scheduler loads, before any task is handed to it
 * (sleepable). Creates every DSQ the scheduler uses, as none is made later:
 * each CPU's own (its id is the CPU's, cpu_dsq()), the plain FIFO, and every
 * wakequeue shard slot of every LLC, since the shard count changes live
 * (wakeq_init()). Builds the LLC and per-CPU scratch cpumasks from the
 * topology the daemon wrote before load (topo_init(), topo.bpf.h), and starts
 * the timer with nr_scan computed at once. A failure is reported with
 * scx_bpf_error() and fails the load. Sets sis_live last, for the tracepoint.
 */
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
	err = sched_timer_init();
	if (err) {
		scx_bpf_error("failed to start the timer: %d", err);
		return err;
	}
	sis_live = true;
	return 0;
}

/*
 * ops.exit: the scheduler unloads, by request or on an error (the kernel's
 * watchdog, scx_bpf_error()). Stops the tracepoint's work (sis_live) and
 * records why in uei (UEI_RECORD), which the daemon reads to report the
 * exit, and whether the kernel asks for a restart.
 */
void BPF_STRUCT_OPS(sis_exit, struct scx_exit_info *ei)
{
	sis_live = false;
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(sis_ops, .select_cpu = (void *)sis_select_cpu, .enqueue = (void *)sis_enqueue,
	       .dispatch = (void *)sis_dispatch, .tick = (void *)sis_tick,
	       .cpu_acquire = (void *)sis_cpu_acquire, .cpu_release = (void *)sis_cpu_release,
	       .running = (void *)sis_running, .stopping = (void *)sis_stopping,
	       .enable = (void *)sis_enable, .init_task = (void *)sis_init_task,
	       .exit_task = (void *)sis_exit_task, .init = (void *)sis_init,
	       .exit = (void *)sis_exit, .name = "scx_sis");
