//! The trace in numbers, as text for a terminal and as JSON: how many tasks migrated and why
//! (the placement path or move behind each migration, within an LLC or across), the tasks that
//! migrated most, per placement path the wakeup-to-run latency and what finding the CPU cost,
//! and per move reason how long the moved tasks had waited.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use serde::Serialize;

use super::event::{Cause, Event, Kind, MOVE_NAMES};
use crate::stats::counters::PATH_NAMES;

/// How many tasks the "migrated most" table lists.
const TOP_TASKS: usize = 10;

/// What a migration whose RUN names no cause (Cause::None) is listed as.
pub const UNEXPLAINED: &str = "unexplained";

/// What a migration whose RUN names no cause is listed as when it is the task's first event in
/// the trace: whatever moved it happened before the trace began, so it could not be recorded.
pub const BEFORE_TRACE: &str = "before_trace";

/// The latency of runs whose decision's path could not be found (the decision was lost).
pub const UNKNOWN_PATH: &str = "unknown";

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// From the first event to the last, ns.
    pub span_ns: u64,
    pub events: u64,
    pub decisions: u64,
    pub queued: u64,
    pub moves: u64,
    pub runs: u64,
    pub stops: u64,
    /// Runs on another CPU than the task's last.
    pub migrations: u64,
    /// Migrations with neither a decision nor a move since the task last ran.
    pub unexplained: u64,
    /// Migrations without a cause that were their task's first event: caused before the trace.
    pub before_trace: u64,
    /// Migrations by the path or move reason behind them (the unexplained ones apart), most
    /// first.
    pub migrations_by_cause: Vec<CauseCount>,
    /// The tasks that migrated most, most first.
    pub top_tasks: Vec<TaskMigrations>,
    /// Per placement path, in the order of PATH_NAMES (then UNKNOWN_PATH): only those seen.
    pub paths: Vec<PathStats>,
    /// Per move reason, in the order of MOVE_NAMES: only those seen.
    pub moves_by_reason: Vec<MoveStats>,
}

/// Migrations of one cause.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CauseCount {
    pub cause: String,
    pub count: u64,
    /// Of `count`, between two CPUs of one LLC and across LLCs; the rest involve a CPU whose
    /// LLC is not known.
    pub same_llc: u64,
    pub cross_llc: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TaskMigrations {
    pub pid: u32,
    pub comm: String,
    pub migrations: u64,
    pub runs: u64,
    /// Its migrations by cause (UNEXPLAINED included), most first.
    pub causes: Vec<CauseCount>,
}

/// Percentiles of a set of ns values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Spread {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl Spread {
    fn of(mut v: Vec<u64>) -> Spread {
        v.sort_unstable();
        Spread {
            count: v.len() as u64,
            p50_ns: nearest_rank(&v, 50),
            p99_ns: nearest_rank(&v, 99),
            max_ns: v.last().copied().unwrap_or(0),
        }
    }
}

/// One placement path: its decisions, their cost, and the latency of the runs they led to.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PathStats {
    pub path: String,
    pub decisions: u64,
    /// Decisions whose CPU was idle and claimed, % of `decisions`.
    pub idle_pct: f64,
    pub cost_mean_ns: f64,
    /// select_cpu's cost.
    pub cost: Spread,
    /// CPUs the LLC scan tested, per decision.
    pub tested_mean: f64,
    /// SIS_UTIL's scan limit, per decision.
    pub nr_scan_mean: f64,
    /// Wakeup (decision) to run, of the runs that followed a decision of this path.
    pub latency: Spread,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MoveStats {
    pub reason: String,
    /// A kick of an idle CPU rather than a move of a task.
    pub kick: bool,
    /// How long the moved task had waited in its queue.
    pub wait: Spread,
    /// Moves of a task that a pull or steal had moved less than the balance lag before and
    /// that waited less than the lag: churn, which a pull must never make.
    pub again_within_lag: u64,
}

/// The nearest-rank percentile `pct` (1..=100) of sorted values; 0 for none.
pub fn nearest_rank(sorted: &[u64], pct: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (pct * sorted.len() as u64).div_ceil(100).max(1);
    sorted[(rank as usize).min(sorted.len()) - 1]
}

fn mean(sum: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        sum as f64 / n as f64
    }
}

/// Counts of one cause, as they are added up.
#[derive(Default)]
struct Tally {
    count: u64,
    same: u64,
    cross: u64,
}

impl Tally {
    fn add(&mut self, same_llc: Option<bool>) {
        self.count += 1;
        match same_llc {
            Some(true) => self.same += 1,
            Some(false) => self.cross += 1,
            None => {}
        }
    }
}

/// Most first, then by name.
fn counts(m: BTreeMap<&str, Tally>) -> Vec<CauseCount> {
    let mut v: Vec<CauseCount> = m
        .into_iter()
        .map(|(cause, t)| CauseCount {
            cause: cause.to_string(),
            count: t.count,
            same_llc: t.same,
            cross_llc: t.cross,
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.cause.cmp(&b.cause)));
    v
}

#[derive(Default)]
struct Task<'a> {
    comm: &'a str,
    runs: u64,
    migrations: u64,
    causes: BTreeMap<&'static str, Tally>,
}

#[derive(Default)]
struct PathAcc {
    decisions: u64,
    idle: u64,
    cost: Vec<u64>,
    tested: u64,
    nr_scan: u64,
    latency: Vec<u64>,
}

impl PathAcc {
    fn stats(self, name: &str) -> PathStats {
        let cost_sum: u64 = self.cost.iter().sum();
        PathStats {
            path: name.to_string(),
            decisions: self.decisions,
            idle_pct: mean(self.idle * 100, self.decisions),
            cost_mean_ns: mean(cost_sum, self.decisions),
            cost: Spread::of(self.cost),
            tested_mean: mean(self.tested, self.decisions),
            nr_scan_mean: mean(self.nr_scan, self.decisions),
            latency: Spread::of(self.latency),
        }
    }
}

/// A pull or a steal: the moves that stamp a task's last move in BPF (move.bpf.h).
fn judged_move(c: Cause) -> bool {
    matches!(
        c.name(),
        "steal_llc" | "steal_remote" | "pull" | "pull_remote"
    )
}

/// Add up a trace; `cpu_llc` is each CPU's LLC index, for the same/cross-LLC split;
/// `balance_lag_ns` is the lag that a move within it counts as churn (`again_within_lag`).
pub fn summarize(events: &[Event], cpu_llc: &[u32], balance_lag_ns: u64) -> Summary {
    let llc = |cpu: i32| -> Option<u32> {
        usize::try_from(cpu)
            .ok()
            .and_then(|c| cpu_llc.get(c).copied())
    };
    let mut s = Summary {
        events: events.len() as u64,
        span_ns: match (
            events.iter().map(|e| e.ts).min(),
            events.iter().map(|e| e.ts).max(),
        ) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        },
        ..Summary::default()
    };
    // The path of each decision, to find the path of a run that a move brought.
    let decision_path: HashMap<(u32, u64), &'static str> = events
        .iter()
        .filter(|e| e.kind == Kind::Decision)
        .map(|e| ((e.pid, e.ts), e.cause.name()))
        .collect();

    let mut by_cause: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut tasks: HashMap<u32, Task> = HashMap::new();
    let mut paths: BTreeMap<&'static str, PathAcc> = BTreeMap::new();
    let mut moves: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
    let mut again: BTreeMap<&'static str, u64> = BTreeMap::new();
    // Each task's last pull or steal.
    let mut last_move: HashMap<u32, u64> = HashMap::new();
    let mut seen: HashSet<u32> = HashSet::new();

    for e in events {
        let seen_before = !seen.insert(e.pid);
        match e.kind {
            Kind::Decision => {
                s.decisions += 1;
                let p = paths.entry(e.cause.name()).or_default();
                p.decisions += 1;
                p.idle += e.idle as u64;
                p.cost.push(e.ns);
                p.tested += e.tested as u64;
                p.nr_scan += e.nr_scan as u64;
            }
            Kind::Queued => s.queued += 1,
            Kind::Move => {
                s.moves += 1;
                moves.entry(e.cause.name()).or_default().push(e.ns);
                if judged_move(e.cause) {
                    if let Some(&at) = last_move.get(&e.pid) {
                        if e.ts.saturating_sub(at) < balance_lag_ns && e.ns < balance_lag_ns {
                            *again.entry(e.cause.name()).or_default() += 1;
                        }
                    }
                    last_move.insert(e.pid, e.ts);
                }
            }
            Kind::Stop => s.stops += 1,
            Kind::Run => {
                s.runs += 1;
                let t = tasks.entry(e.pid).or_default();
                t.comm = &e.comm;
                t.runs += 1;
                if e.decision_ts != 0 {
                    let path = match e.cause {
                        Cause::Path(_) => e.cause.name(),
                        _ => decision_path
                            .get(&(e.pid, e.decision_ts))
                            .copied()
                            .unwrap_or(UNKNOWN_PATH),
                    };
                    paths.entry(path).or_default().latency.push(e.ns);
                }
                if e.migrated {
                    s.migrations += 1;
                    t.migrations += 1;
                    let same = llc(e.from_cpu).zip(llc(e.cpu)).map(|(a, b)| a == b);
                    let name = match e.cause {
                        Cause::None if !seen_before => {
                            s.before_trace += 1;
                            BEFORE_TRACE
                        }
                        Cause::None => {
                            s.unexplained += 1;
                            UNEXPLAINED
                        }
                        c => {
                            by_cause.entry(c.name()).or_default().add(same);
                            c.name()
                        }
                    };
                    t.causes.entry(name).or_default().add(same);
                }
            }
        }
    }

    s.migrations_by_cause = counts(by_cause);

    let mut top: Vec<(u32, Task)> = tasks
        .into_iter()
        .filter(|(_, t)| t.migrations > 0)
        .collect();
    top.sort_by(|a, b| b.1.migrations.cmp(&a.1.migrations).then(a.0.cmp(&b.0)));
    s.top_tasks = top
        .into_iter()
        .take(TOP_TASKS)
        .map(|(pid, t)| TaskMigrations {
            pid,
            comm: t.comm.to_string(),
            migrations: t.migrations,
            runs: t.runs,
            causes: counts(t.causes),
        })
        .collect();

    let order = PATH_NAMES.iter().chain(std::iter::once(&UNKNOWN_PATH));
    for &name in order {
        if let Some(p) = paths.remove(name) {
            s.paths.push(p.stats(name));
        }
    }
    // Paths outside PATH_NAMES ("?path": a daemon older than its BPF) are listed last.
    s.paths
        .extend(paths.into_iter().map(|(name, p)| p.stats(name)));

    for (i, &name) in MOVE_NAMES.iter().enumerate() {
        if let Some(waits) = moves.remove(name) {
            s.moves_by_reason.push(MoveStats {
                reason: name.to_string(),
                kick: Cause::Move(i).is_kick(),
                wait: Spread::of(waits),
                again_within_lag: again.get(name).copied().unwrap_or(0),
            });
        }
    }
    s
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// "llc_scan 8 (1 cross-LLC)".
fn cause_list(causes: &[CauseCount]) -> String {
    causes
        .iter()
        .map(|c| match c.cross_llc {
            0 => format!("{} {}", c.cause, c.count),
            x => format!("{} {} ({x} cross-LLC)", c.cause, c.count),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} events over {:.3} s: {} decisions, {} queued, {} moves, {} runs, {} stops",
            self.events,
            self.span_ns as f64 / 1e9,
            self.decisions,
            self.queued,
            self.moves,
            self.runs,
            self.stops
        )?;
        writeln!(
            f,
            "migrations: {} of {} runs; {} {UNEXPLAINED} (no decision or move since the task last ran), \
             {} {BEFORE_TRACE} (moved before the trace began)",
            self.migrations, self.runs, self.unexplained, self.before_trace
        )?;

        if !self.migrations_by_cause.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "{:<18} {:>8} {:>8} {:>9}",
                "migrated by", "count", "same_llc", "cross_llc"
            )?;
            for c in &self.migrations_by_cause {
                writeln!(
                    f,
                    "{:<18} {:>8} {:>8} {:>9}",
                    c.cause, c.count, c.same_llc, c.cross_llc
                )?;
            }
        }

        if !self.top_tasks.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "{:>8} {:<16} {:>6} {:>6}  causes",
                "pid", "comm", "migr", "runs"
            )?;
            for t in &self.top_tasks {
                writeln!(
                    f,
                    "{:>8} {:<16} {:>6} {:>6}  {}",
                    t.pid,
                    t.comm,
                    t.migrations,
                    t.runs,
                    cause_list(&t.causes)
                )?;
            }
        }

        if !self.paths.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "{:<18} {:>9} {:>5} {:>7} {:>6} {:>6} {:>6} {:>7} | {:>7} {:>8} {:>8} {:>8}",
                "path",
                "decisions",
                "idle%",
                "cost_ns",
                "p50",
                "p99",
                "tested",
                "nr_scan",
                "runs",
                "lat_us",
                "p99",
                "max"
            )?;
            for p in &self.paths {
                writeln!(
                    f,
                    "{:<18} {:>9} {:>5.1} {:>7.0} {:>6} {:>6} {:>6.1} {:>7.1} | {:>7} {:>8.1} {:>8.1} {:>8.1}",
                    p.path,
                    p.decisions,
                    p.idle_pct,
                    p.cost_mean_ns,
                    p.cost.p50_ns,
                    p.cost.p99_ns,
                    p.tested_mean,
                    p.nr_scan_mean,
                    p.latency.count,
                    us(p.latency.p50_ns),
                    us(p.latency.p99_ns),
                    us(p.latency.max_ns)
                )?;
            }
            writeln!(
                f,
                "(cost: select_cpu ns, p50 p99; tested, nr_scan: means; lat: decision to run, p50 p99 max)"
            )?;
        }

        if !self.moves_by_reason.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "{:<18} {:>8} {:>10} {:>8} {:>10}",
                "move", "count", "wait_us", "p99", "again<lag"
            )?;
            for m in &self.moves_by_reason {
                writeln!(
                    f,
                    "{:<18} {:>8} {:>10.1} {:>8.1} {:>10}",
                    m.reason,
                    m.wait.count,
                    us(m.wait.p50_ns),
                    us(m.wait.p99_ns),
                    m.again_within_lag
                )?;
            }
            writeln!(
                f,
                "(again<lag: the task had been pulled or stolen less than a balance lag before, and waited less)"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::chrome_trace::synth::*;
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 50), 50);
        assert_eq!(nearest_rank(&v, 99), 99);
        assert_eq!(nearest_rank(&v, 100), 100);
        assert_eq!(nearest_rank(&[7], 1), 7);
        assert_eq!(nearest_rank(&[1, 2, 3], 50), 2);
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 50), 2);
        assert_eq!(nearest_rank(&[], 50), 0);
    }

    /// CPUs 0, 1 in LLC 0, CPUs 2, 3 in LLC 1.
    const LLC: [u32; 4] = [0, 0, 1, 1];
    /// The balance lag, ns.
    const LAG: u64 = 1_000;

    #[test]
    fn a_move_within_the_lag_of_a_pull_or_steal_is_churn() {
        let events = vec![
            // pid 30: stolen, then pulled 500 ns later having waited 100 ns: churn.
            moved(1_000, 30, 0, 1, "steal_llc", 50),
            moved(1_500, 30, 1, 2, "pull_remote", 100),
            // Pulled again 2,000 ns later: past the lag.
            moved(3_500, 30, 2, 3, "pull", 100),
            // Pulled 200 ns after that, but it waited a whole lag: owed, not churn.
            moved(3_700, 30, 3, 2, "pull", 1_000),
            // pid 31: a rescue and a wakequeue move stamp nothing, so the pull is its first.
            moved(5_000, 31, 0, 1, "rescue_held", 10),
            moved(5_100, 31, 1, 0, "wakeq", 10),
            moved(5_200, 31, 0, 1, "pull", 10),
        ];
        let s = summarize(&events, &LLC, LAG);
        let again: Vec<(&str, u64)> = s
            .moves_by_reason
            .iter()
            .map(|m| (m.reason.as_str(), m.again_within_lag))
            .collect();
        assert_eq!(
            again,
            [
                ("steal_llc", 0),
                ("pull", 0),
                ("pull_remote", 1),
                ("rescue_held", 0),
                ("wakeq", 0)
            ]
        );
        assert!(s.to_string().contains("again<lag"));
    }

    #[test]
    fn counts_migrations_by_cause_and_llc() {
        let events = vec![
            // pid 10: llc_scan 1 -> 0 (same LLC), then cross_llc 0 -> 2 (across).
            decision(100, 10, 1, 1, 0, "llc_scan", 200),
            run(150, 10, 0, 1, path("llc_scan"), 100),
            stop(160, 10, 0),
            decision(200, 10, 0, 0, 2, "cross_llc", 400),
            run(300, 10, 2, 0, path("cross_llc"), 200),
            stop(310, 10, 2),
            // pid 11: stolen 2 -> 3 (same LLC); then a migration with no cause.
            queued(400, 11, 2, 0),
            moved(450, 11, 2, 3, "steal_llc", 50),
            run(460, 11, 3, 2, reason("steal_llc"), 0),
            stop(470, 11, 3),
            run(500, 11, 1, 3, Cause::None, 0),
            // pid 12: ran where it was (no migration).
            run(600, 12, 1, 1, Cause::None, 0),
        ];
        let s = summarize(&events, &LLC, LAG);
        assert_eq!(s.events, 12);
        assert_eq!(s.span_ns, 500);
        assert_eq!(
            (s.decisions, s.queued, s.moves, s.runs, s.stops),
            (2, 1, 1, 5, 3)
        );
        assert_eq!(s.migrations, 4);
        assert_eq!(s.unexplained, 1);
        let by: Vec<(&str, u64, u64, u64)> = s
            .migrations_by_cause
            .iter()
            .map(|c| (c.cause.as_str(), c.count, c.same_llc, c.cross_llc))
            .collect();
        assert_eq!(
            by,
            [
                ("cross_llc", 1, 0, 1),
                ("llc_scan", 1, 1, 0),
                ("steal_llc", 1, 1, 0)
            ]
        );

        assert_eq!(s.top_tasks.len(), 2);
        let t11 = &s.top_tasks[1];
        assert_eq!((t11.pid, t11.migrations, t11.runs), (11, 2, 2));
        assert!(t11
            .causes
            .iter()
            .any(|c| c.cause == UNEXPLAINED && c.count == 1));
        assert_eq!(s.top_tasks[0].pid, 10);

        let text = s.to_string();
        assert!(text.contains("1 unexplained"), "{text}");
        assert!(text.contains("cross_llc 1 (1 cross-LLC)"), "{text}");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["unexplained"], 1);
    }

    #[test]
    fn a_causeless_first_run_was_moved_before_the_trace() {
        let events = vec![
            run(100, 20, 2, 1, Cause::None, 0),
            stop(110, 20, 2),
            run(200, 20, 3, 2, Cause::None, 0),
        ];
        let s = summarize(&events, &LLC, LAG);
        assert_eq!((s.migrations, s.before_trace, s.unexplained), (2, 1, 1));
    }

    #[test]
    fn latency_and_cost_per_path() {
        let mut events = Vec::new();
        // 100 prev_idle wakeups, cost i ns, run i us after, every other one claimed idle.
        for i in 1..=100u64 {
            let ts = i * 1_000_000;
            let mut d = decision(ts, 10, 0, 1, 1, "prev_idle", i);
            d.idle = i % 2 == 0;
            d.tested = 3;
            events.push(d);
            events.push(run(ts + i * 1000, 10, 1, 1, path("prev_idle"), ts));
            events.push(stop(ts + i * 1000 + 10, 10, 1));
        }
        // A sync decision whose task was then stolen: its latency counts under sync.
        let ts = 200_000_000;
        events.push(decision(ts, 20, 0, 2, 2, "sync", 50));
        events.push(moved(ts + 10, 20, 2, 3, "steal_llc", 10));
        events.push(run(ts + 70, 20, 3, 2, reason("steal_llc"), ts));
        // A run whose decision was lost, brought by a move: its path is unknown.
        events.push(run(ts + 900, 21, 0, 3, reason("pull"), ts + 800));

        let s = summarize(&events, &LLC, LAG);
        let p = s.paths.iter().find(|p| p.path == "prev_idle").unwrap();
        assert_eq!(p.decisions, 100);
        assert_eq!(p.idle_pct, 50.0);
        assert_eq!(p.cost_mean_ns, 50.5);
        assert_eq!((p.cost.p50_ns, p.cost.p99_ns, p.cost.max_ns), (50, 99, 100));
        assert_eq!(p.tested_mean, 3.0);
        assert_eq!(p.nr_scan_mean, 4.0);
        assert_eq!(p.latency.count, 100);
        assert_eq!(
            (p.latency.p50_ns, p.latency.p99_ns, p.latency.max_ns),
            (50_000, 99_000, 100_000)
        );

        let sync = s.paths.iter().find(|p| p.path == "sync").unwrap();
        assert_eq!(
            (sync.decisions, sync.latency.count, sync.latency.p50_ns),
            (1, 1, 70)
        );
        let unknown = s.paths.last().unwrap();
        assert_eq!(
            (unknown.path.as_str(), unknown.decisions),
            (UNKNOWN_PATH, 0)
        );
        assert_eq!(unknown.latency.count, 1);
        // PATH_NAMES order: sync before prev_idle.
        assert_eq!(s.paths[0].path, "sync");

        let m = &s.moves_by_reason[0];
        assert_eq!(
            (m.reason.as_str(), m.wait.count, m.wait.p99_ns),
            ("steal_llc", 1, 10)
        );
        assert!(!m.kick);
    }

    #[test]
    fn an_empty_trace_prints_its_totals() {
        let s = summarize(&[], &LLC, LAG);
        assert_eq!(s, Summary::default());
        assert!(s.to_string().starts_with("0 events"));
    }
}
