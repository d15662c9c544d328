//! ab.sh's verdicts, read from `scx_sis ab --json` as the library's `Report`: an A/A of the live
//! tunables under hackbench names no measure better, worse, higher or lower, though every
//! counter-based measure has an interval; the wakequeue with one shard against the defaults
//! makes migrations worse with an interval clear of 1, the user's metric (hackbench's time)
//! gets a row with a verdict from a value in every window, and --adopt migrations keeps A. The
//! daemon's stats line names the side of the windows.

use scx_sis::ab::order::Side;
use scx_sis::ab::report::{End, Report};

use crate::harness::GuestRun;
use crate::records::Verdicts;

/// The measures every window of a hackbench load has a value of (the idle time beside waiting
/// work and select_cpu's sampled cost may have none in a short window).
const ALWAYS: [&str; 5] = [
    "wait_p50_us",
    "wait_p99_us",
    "migrations",
    "ctx_switches",
    "wakeups",
];

fn report(run: &GuestRun, v: &mut Verdicts, name: &str) -> Option<Report> {
    let Some(json) = run.records.json(name) else {
        v.fail(name, format!("no ab --json record {name}"));
        return None;
    };
    match serde_json::from_value::<Report>(json) {
        Ok(r) => Some(r),
        Err(e) => {
            v.fail(name, format!("ab --json is no Report: {e}"));
            None
        }
    }
}

fn ratios(r: &Report) -> String {
    r.rows
        .iter()
        .map(|row| match row.interval {
            Some(i) => format!(
                "{} {:.2}x [{:.2}-{:.2}] {}",
                row.key, i.ratio, i.lo, i.hi, row.verdict
            ),
            None => format!("{} - {}", row.key, row.verdict),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Every window ran, as many of each side as asked.
fn complete(r: &Report) -> bool {
    r.end == End::Done
        && r.windows_of(Side::A) == r.rounds
        && r.windows_of(Side::B) == r.rounds
}

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    if let Some(aa) = report(run, v, "aa") {
        let judged: Vec<&str> = ALWAYS
            .iter()
            .copied()
            .filter(|k| aa.row(k).is_some_and(|r| r.interval.is_some()))
            .collect();
        let named: Vec<String> = aa
            .rows
            .iter()
            .filter(|r| matches!(r.verdict.as_str(), "better" | "worse" | "higher" | "lower"))
            .map(|r| format!("{} {}", r.key, r.verdict))
            .collect();
        v.check(
            "ab_aa_no_difference",
            complete(&aa) && judged.len() == ALWAYS.len() && named.is_empty(),
            format!(
                "{} + {} windows, {} measures with an interval (want {}), named: {named:?}; \
                 each interval {:.1}%: {}",
                aa.windows_of(Side::A),
                aa.windows_of(Side::B),
                judged.len(),
                ALWAYS.len(),
                aa.confidence_each * 100.0,
                ratios(&aa)
            ),
        );
    }

    if let Some(wq) = report(run, v, "wakeq") {
        let m = wq.row("migrations");
        let worse = m.is_some_and(|m| m.verdict == "worse" && m.interval.is_some_and(|i| i.lo > 1.0));
        v.check(
            "ab_wakeq_migrations_worse",
            complete(&wq) && worse,
            format!("end {:?}: {}", wq.end, ratios(&wq)),
        );
        let user = wq.row("hackbench_s");
        let scored = wq
            .windows
            .iter()
            .filter(|w| w.values.contains_key("hackbench_s"))
            .count();
        let verdict = user.is_some_and(|u| {
            u.interval.is_some() && matches!(u.verdict.as_str(), "better" | "worse" | "none")
        });
        v.check(
            "ab_user_metric",
            verdict && scored == wq.windows.len(),
            format!(
                "hackbench_s in {scored} of {} windows; row: {:?}",
                wq.windows.len(),
                user.map(|u| (u.a_median, u.b_median, u.interval, &u.words))
            ),
        );
        v.check(
            "ab_adopt_keeps_a",
            !wq.adopted && wq.outcome.contains("kept A"),
            &wq.outcome,
        );
    }

    match run.records.kv("wq_tags") {
        Some(k) => {
            let (a, b) = (k.n::<u32>("a"), k.n::<u32>("b"));
            v.check("ab_stats_line_names_the_side", a > 0 && b > 0, k.raw());
        }
        None => v.fail("ab_stats_line_names_the_side", "no record wq_tags"),
    }
}
