//! trace.sh's verdicts (the placement trace): each trace against the scheduler's own counters
//! over the same window, and each trace file as Perfetto will read it.
//! - pipe, hackbench: a decision per wakeup, a traced migration per counted one, and the steals,
//!   pulls and kicks the counters saw, each within the drops the trace reports plus the slack
//!   of its edges; every migration has a cause but for a 1% race; no pull takes a task that a
//!   pull or steal moved less than a balance lag before (unless it waited that long); the file is
//!   whole (every flow arrow has both ends), with a named track per CPU and a slice per run.
//! - pid, comm: only that process, only that task name.
//! - off: a window with the trace off writes no record.
//! - drops: a trace larger than its ring buffer reports its drops, in its report and its file,
//!   and the file is still whole.

use serde_json::Value;

use scx_sis::stats::Metrics;

use crate::harness::GuestRun;
use crate::records::{llc_sum, Records, Verdicts};

/// One trace's `--json` report and its file's trace-check.
struct Trace {
    report: Value,
    check: Value,
    counters: Metrics,
}

impl Trace {
    fn of(r: &Records, name: &str, v: &mut Verdicts) -> Option<Trace> {
        let (Some(report), Some(check)) = (
            r.json(&format!("trace_{name}")),
            r.json(&format!("check_{name}")),
        ) else {
            v.fail(
                &format!("{name}_records"),
                format!("no report or trace-check record for {name}"),
            );
            return None;
        };
        let counters = serde_json::from_value(report["counters"].clone()).ok()?;
        Some(Trace {
            report,
            check,
            counters,
        })
    }

    fn summary(&self, key: &str) -> u64 {
        self.report["summary"][key].as_u64().unwrap_or(0)
    }

    fn dropped(&self) -> u64 {
        self.report["dropped"].as_u64().unwrap_or(0)
    }

    /// Migrations the summary attributes to a path or a move.
    fn caused(&self) -> u64 {
        self.report["summary"]["migrations_by_cause"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["count"].as_u64().unwrap_or(0))
            .sum()
    }

    /// `field` of the summary's moves under these reasons, summed.
    fn by_reason(&self, reasons: &[&str], field: impl Fn(&Value) -> &Value) -> u64 {
        self.report["summary"]["moves_by_reason"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| reasons.contains(&m["reason"].as_str().unwrap_or("")))
            .map(|m| field(m).as_u64().unwrap_or(0))
            .sum()
    }

    /// Moves the summary lists under these reasons.
    fn moves(&self, reasons: &[&str]) -> u64 {
        self.by_reason(reasons, |m| &m["wait"]["count"])
    }

    /// Moves under these reasons of a task pulled or stolen less than a balance lag before,
    /// having waited less than that (the summary's `again_within_lag`).
    fn again(&self, reasons: &[&str]) -> u64 {
        self.by_reason(reasons, |m| &m["again_within_lag"])
    }

    /// How far a trace count may be from its counter: the drops, plus what the idle machine
    /// does between each counter read and the switch beside it (a stats round trip each; a
    /// few kworker and daemon wakeups), taken as 1% of the count and at least 10.
    fn slack(&self, counted: u64) -> u64 {
        self.dropped() + (counted / 100).max(10)
    }
}

/// `trace` within the slack of `counted`.
fn matches(v: &mut Verdicts, name: &str, t: &Trace, traced: u64, counted: u64) {
    let slack = t.slack(counted);
    v.check(
        name,
        traced.abs_diff(counted) <= slack,
        format!(
            "traced {traced}, counted {counted} (allowed difference {slack}, dropped {})",
            t.dropped()
        ),
    );
}

fn judge_workload(v: &mut Verdicts, name: &str, t: &Trace, nr_cpus: u64) {
    let c = &t.counters;
    let sum = |f: fn(&scx_sis::stats::LlcMetrics) -> u64| llc_sum(c, f);
    let wakeups = sum(|l| l.wakeups);
    v.check(
        &format!("{name}_has_work"),
        wakeups > 0 && t.summary("runs") > 0,
        format!("{wakeups} wakeups, {} runs traced", t.summary("runs")),
    );
    matches(
        v,
        &format!("{name}_decisions"),
        t,
        t.summary("decisions"),
        wakeups,
    );
    matches(
        v,
        &format!("{name}_migrations"),
        t,
        t.summary("migrations"),
        sum(|l| l.migrations),
    );
    let steals = sum(|l| l.dispatch_llc_steal + l.dispatch_remote_steal);
    matches(
        v,
        &format!("{name}_steals"),
        t,
        t.moves(&["steal_llc", "steal_remote"]),
        steals,
    );
    matches(
        v,
        &format!("{name}_pulls"),
        t,
        t.moves(&["pull", "pull_remote"]),
        sum(|l| l.pulls + l.pulls_remote),
    );
    matches(
        v,
        &format!("{name}_tick_kicks"),
        t,
        t.moves(&["tick_kick"]),
        sum(|l| l.tick_kicks),
    );
    matches(
        v,
        &format!("{name}_wakeup_kicks"),
        t,
        t.moves(&["wakeup_kick"]),
        sum(|l| l.wakeup_kicks),
    );

    // A pull moves only a task owed service: not one that a pull or steal moved less than a
    // balance lag before, unless it has since waited a whole lag.
    let pulls = t.moves(&["pull", "pull_remote"]);
    let churn = t.again(&["pull", "pull_remote"]);
    v.check(
        &format!("{name}_pull_churn"),
        churn == 0,
        format!(
            "{churn} of {pulls} pulls took a task moved less than a balance lag before (want 0); \
             steals of such a task: {} of {}",
            t.again(&["steal_llc", "steal_remote"]),
            t.moves(&["steal_llc", "steal_remote"])
        ),
    );

    // Every migration has a cause: a path, a move, or (for a task whose first record it is)
    // whatever happened before the trace began. A move peeks the head it expects to take, and
    // when another CPU takes that head in between, the task moved may be left without a cause;
    // the trace then says "unexplained" rather than naming a wrong stage. That race was seen in
    // 0-2 of 550-900 hackbench migrations: at most 1% (and 2) may be unexplained.
    let (migrations, unexplained) = (t.summary("migrations"), t.summary("unexplained"));
    let allowed = (migrations / 100).max(2);
    v.check(
        &format!("{name}_causes"),
        unexplained <= allowed,
        format!(
            "{migrations} migrations: {} by cause, {} before the trace, {unexplained} unexplained \
             (allowed {allowed})",
            t.caused(),
            t.summary("before_trace"),
        ),
    );

    // The file as Perfetto reads it.
    let ck = &t.check;
    let runs = ck["slices"]["run"].as_u64().unwrap_or(0);
    v.check(
        &format!("{name}_file"),
        ck["unmatched_flows"] == 0
            && ck["bad_slices"] == 0
            && ck["tracks"].as_u64().unwrap_or(0) >= nr_cpus
            && runs == t.summary("runs")
            && ck["slices"]["decision"].as_u64().unwrap_or(0) == t.summary("decisions")
            && ck["flow_starts"].as_u64().unwrap_or(0) > 0,
        format!("{ck} (runs traced {})", t.summary("runs")),
    );
}

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let nr_cpus = 8;
    for name in ["pipe", "hackbench"] {
        if let Some(t) = Trace::of(r, name, v) {
            judge_workload(v, name, &t, nr_cpus);
        }
    }

    if let (Some(t), Some(kv)) = (Trace::of(r, "pid", v), r.kv("pid_filter")) {
        let pid: u64 = kv.opt("pid").unwrap_or(0);
        let tgids = t.report["tgids"].as_array().cloned().unwrap_or_default();
        v.check(
            "pid_only",
            t.report["records"].as_u64().unwrap_or(0) > 0
                && tgids.iter().all(|g| g.as_u64() == Some(pid))
                && !tgids.is_empty(),
            format!(
                "pid {pid}: {} records, tgids {:?}",
                t.report["records"], tgids
            ),
        );
    }
    if let Some(t) = Trace::of(r, "comm", v) {
        let comms = t.report["comms"].as_array().cloned().unwrap_or_default();
        v.check(
            "comm_only",
            !comms.is_empty() && comms.iter().all(|c| c == "hackbench"),
            format!("{} records, comms {:?}", t.report["records"], comms),
        );
    }

    if let Some(m) = r.mon_or_fail("off_window", v, "off_writes_nothing") {
        let written = llc_sum(&m, |l| l.trace_events);
        let wakeups = llc_sum(&m, |l| l.wakeups);
        v.check(
            "off_writes_nothing",
            written == 0 && wakeups > 0,
            format!("{written} records written over {wakeups} wakeups with the trace off"),
        );
    }

    if let Some(t) = Trace::of(r, "drops", v) {
        let dropped = t.dropped();
        let ck = &t.check;
        v.check(
            "drops_counted",
            dropped > 0
                && ck["drops"].as_u64() == Some(dropped)
                && ck["unmatched_flows"] == 0
                && ck["bad_slices"] == 0
                && t.report["records"].as_u64().unwrap_or(0) > 0,
            format!(
                "dropped {dropped}, {} records kept; file: {ck}",
                t.report["records"]
            ),
        );
    }
}
