/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Moving a waiting task from another CPU's queue to this CPU, for steals
 * (steal.bpf.h) and pulls (pull.bpf.h): the task judged is the task
 * moved. A queue's head may be a task this CPU may not run (pinned
 * elsewhere, or migration-disabled), and scx_bpf_dsq_move_to_local() would
 * pass over it and take whatever comes next, a task nobody judged. So the
 * judge looks at the first task this CPU may take (first_movable()) and the
 * move takes that task only, by pid, through the DSQ iterator
 * (move_judged()); if another CPU took it meanwhile, nothing moves.
 */
#ifndef __SIS_MOVE_BPF_H
#define __SIS_MOVE_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"
#include "calls.bpf.h"
#include "frame.bpf.h"
#include "task.bpf.h"
#include "topo.bpf.h"
#include "trace.bpf.h"

/* @p may move to @cpu now: allowed there and free to migrate. */
static __always_inline bool movable_to(struct task_struct *p, s32 cpu)
{
	if (is_migration_disabled(p))
		return false;
	if (p->nr_cpus_allowed >= nr_cpus)
		return true;
	calls_add(1);
	return bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

/* The first task of @dsq that @cpu may take (NULL: none), in the queue's order. */
static __always_inline struct task_struct *first_movable(u64 dsq, s32 cpu)
{
	struct task_struct *p, *found = NULL;

	calls_loop();
	bpf_for_each (scx_dsq, p, dsq, 0) {
		calls_pass();
		if (movable_to(p, cpu)) {
			found = p;
			break;
		}
	}
	return found;
}

/*
 * Move @dsq's first task that @cpu may take to @cpu's local DSQ, if it is
 * still the task judged (@pid). How long it had waited queued goes to
 * @cpu's frame (judged_wait), its vtime to judged_vtime. Traced as @why. The task's moved_at is
 * stamped (pull.bpf.h's churn rule). Global, so that the verifier checks the DSQ iterator once, not
 * at every pull and steal that moves.
 */
__noinline int move_judged(u64 dsq, s32 cpu, s32 pid, u64 now, u32 why)
{
	struct sis_cpu_frame *f = cpu_frame(cpu);
	const struct sis_tunables *t;
	struct sis_task_ctx *tctx;
	struct task_struct *p;
	int moved = 0;
	s32 from;

	f->judged_wait = 0;
	calls_loop();
	bpf_for_each (scx_dsq, p, dsq, 0) {
		calls_pass();
		if (!movable_to(p, cpu))
			continue;
		if (p->pid != pid)
			break;
		/*
		 * A pull's task must still trail by the lag: it may have run and
		 * been queued again, later in vtime, since it was judged.
		 */
		if ((why == SIS_MOVE_PULL || why == SIS_MOVE_PULL_REMOTE) &&
		    !time_before(p->scx.dsq_vtime, f->pull_limit))
			break;
		/* Before the move, which makes this CPU the task's. */
		from = task_cpu(p);
		calls_add(1);
		moved = scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0);
		if (!moved)
			break;
		f->judged_vtime = p->scx.dsq_vtime;
		tctx = task_ctx(p);
		if (tctx) {
			f->judged_wait = now > tctx->queued_at ? now - tctx->queued_at : 0;
			tctx->moved_at = now;
		}
		t = trace_live();
		if (t && from != cpu && trace_wants(p, t))
			trace_move(p, why, from, cpu);
		break;
	}
	return moved;
}

#endif /* __SIS_MOVE_BPF_H */
