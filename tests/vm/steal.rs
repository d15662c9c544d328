//! steal.sh's verdicts (stealing on expected wait): each phase's monitor window, summed over the
//! LLCs.
//! - idle: an idle CPU with nothing to steal looks at the CPUs that may have work, not at every
//!   CPU (below one CPU per idle dispatch; asking every other CPU would be 7), and a dispatch
//!   that finds nothing makes at most 5 kfunc, helper and iterator calls (calls.bpf.h counts
//!   them).
//! - steal-min 0 leaves no head in place; 100 ms leaves young heads (or does not look: idle
//!   periods shorter than steal-min) and steals less than 0.
//! - a stealer that a busy CPU kicked takes that CPU's work (steal_from_kicker).
//! - every steal is in the wait histogram, in every phase.
//! - beside tasks bound to one CPU, pulls and steals still move tasks, and every pulled task
//!   trailed by the lag its judge saw (the task judged is the task moved).

use scx_sis::stats::{LlcMetrics, Metrics};

use crate::harness::GuestRun;
use crate::records::{llc_sum, Verdicts};

/// The counters this judge reads, summed over the LLCs.
struct Sums {
    steals: u64,
    from_kicker: u64,
    skipped: u64,
    looked: u64,
    kicks: u64,
    pulls: u64,
    in_hist: u64,
    empty: u64,
    empty_calls: u64,
    short_idle: u64,
    unlagged: u64,
}

impl Sums {
    fn of(m: &Metrics) -> Sums {
        let s = |f: fn(&LlcMetrics) -> u64| llc_sum(m, f);
        Sums {
            steals: s(|l| l.dispatch_llc_steal + l.dispatch_remote_steal),
            from_kicker: s(|l| l.steal_from_kicker),
            skipped: s(|l| l.steal_skip_young + l.steal_skip_hot),
            looked: s(|l| l.steal_looked),
            kicks: s(|l| l.tick_kicks + l.wakeup_kicks),
            pulls: s(|l| l.pulls + l.pulls_remote),
            in_hist: s(|l| l.steal_wait_hist.iter().sum()),
            empty: s(|l| l.dispatch_empty),
            empty_calls: s(|l| l.dispatch_empty_calls),
            short_idle: s(|l| l.steal_skip_short_idle),
            unlagged: s(|l| l.pulls_unlagged),
        }
    }
}

/// An idle CPU's dispatch that finds nothing: the scx peers make one call there (scx_cosmos).
const MAX_EMPTY_DISPATCH_CALLS: f64 = 5.0;

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let mut get = |phase: &str| -> Option<Sums> {
        r.mon_or_fail(phase, v, "steal_windows")
            .as_ref()
            .map(Sums::of)
    };
    let (Some(idle), Some(dfl), Some(pinned), Some(eager), Some(lazy)) = (
        get("idle"),
        get("hb_default"),
        get("hb_pinned"),
        get("hb_eager"),
        get("hb_lazy"),
    ) else {
        return;
    };

    let per_idle = idle.looked as f64 / idle.empty.max(1) as f64;
    v.check(
        "steal_idle_scan",
        idle.empty > 0 && per_idle < 1.0,
        format!(
            "{per_idle:.2} CPUs looked at per dispatch that found nothing (looked={} over {} such \
             dispatches; want < 1, > 0 such dispatches)",
            idle.looked, idle.empty
        ),
    );
    let calls = idle.empty_calls as f64 / idle.empty.max(1) as f64;
    v.check(
        "steal_idle_calls",
        idle.empty > 0 && calls <= MAX_EMPTY_DISPATCH_CALLS,
        format!(
            "{calls:.2} calls per dispatch that found nothing ({} over {} such dispatches; want \
             <= {MAX_EMPTY_DISPATCH_CALLS}, > 0 such dispatches)",
            idle.empty_calls, idle.empty
        ),
    );
    // Under TCG most heads have already waited the default's 0.5 ms, so the default's skips are
    // not judged.
    v.check(
        "steal_min_zero",
        eager.skipped == 0,
        format!(
            "steal-min 0 leaves no head in place: skipped={} (want 0)",
            eager.skipped
        ),
    );
    v.check(
        "steal_min_lazy",
        lazy.skipped + lazy.short_idle > 0 && lazy.steals < eager.steals,
        format!(
            "steal-min 100 ms leaves young heads (or does not look) and steals less than 0: \
             skipped={} short_idle={} (want a sum > 0), steals={} (want < {}, steal-min 0's)",
            lazy.skipped, lazy.short_idle, lazy.steals, eager.steals
        ),
    );
    v.check(
        "steal_from_kicker",
        eager.kicks > 0 && eager.from_kicker > 0,
        format!(
            "steal-min 0: kicked stealers take the kicker's work: kicks={} steals from a kicker={} \
             (want both > 0)",
            eager.kicks, eager.from_kicker
        ),
    );
    v.check(
        "pinned_moves_judged",
        pinned.steals + pinned.pulls > 0 && pinned.unlagged == 0 && dfl.unlagged == 0,
        format!(
            "beside tasks bound to CPU 1, tasks still move and every pull took a task that \
             trailed by the lag: steals={} pulls={} (want a sum > 0) pulls_unlagged={} (want 0) \
             | default pulls_unlagged={} (want 0)",
            pinned.steals, pinned.pulls, pinned.unlagged, dfl.unlagged
        ),
    );
    // The wakequeue is off in every phase, so every steal is one of steal_from()'s, which puts
    // its wait in the histogram.
    for (p, s) in [
        ("idle", &idle),
        ("hb_default", &dfl),
        ("hb_pinned", &pinned),
        ("hb_eager", &eager),
        ("hb_lazy", &lazy),
    ] {
        v.check(
            &format!("steal_wait_hist_{p}"),
            s.in_hist == s.steals,
            format!(
                "every steal in the wait histogram: steals={} in the histogram={} (want equal)",
                s.steals, s.in_hist
            ),
        );
    }
}
