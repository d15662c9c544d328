//! The verdicts of a run: for each measure, B's median over A's with its bootstrap interval and
//! what it lets one say, as a table for a terminal and as JSON.
//!
//! Every measure is judged at once, and each interval at 95% would call one of seven or eight
//! identical measures better or worse in about a third of A/A runs. So the intervals are
//! Bonferroni-corrected: each at 1 - 5%/k for k measures, which keeps the chance that the table
//! names any difference between two identical policies at 5% or less.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::order::Side;
use super::window::{Window, MEASURES};
use crate::verdict::{Better, Bootstrap, Interval, Verdict, CONFIDENCE, SEED};

/// One measure's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub key: String,
    pub label: String,
    /// None: judged only as higher or lower.
    pub better: Option<Better>,
    pub a_median: Option<f64>,
    pub b_median: Option<f64>,
    /// B / A with its interval; None without values on both sides or with A's median 0.
    pub interval: Option<Interval>,
    /// "better", "worse", "higher", "lower", "none" (no difference detectable), or "-" (no
    /// interval).
    pub verdict: String,
    /// The verdict in words.
    pub words: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Every window ran.
    Done,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// The scheduler reloaded (CPU hotplug, suspend): a new instance with its own counters.
    Reloaded,
    /// The scheduler stopped.
    Stopped,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Each side's flags as given, and the tunables they came to.
    pub a_flags: String,
    pub b_flags: String,
    pub a: String,
    pub b: String,
    pub window_s: f64,
    pub settle_s: f64,
    pub rounds: usize,
    /// The confidence of the table as a whole, and of each interval in it.
    pub confidence: f64,
    pub confidence_each: f64,
    pub end: End,
    pub windows: Vec<Window>,
    pub rows: Vec<Row>,
    /// What ab did with the tunables at its end, in one line.
    pub outcome: String,
    /// Whether B was adopted (--adopt).
    pub adopted: bool,
}

/// A measure to judge: its key, label and direction.
pub struct Judged<'a> {
    pub key: &'a str,
    pub label: &'a str,
    pub better: Option<Better>,
}

/// The scheduler's measures, then the user's metric if there is one.
pub fn judged<'a>(user: Option<(&'a str, Better)>) -> Vec<Judged<'a>> {
    let mut v: Vec<Judged> = MEASURES
        .iter()
        .map(|m| Judged {
            key: m.key,
            label: m.label,
            better: m.better,
        })
        .collect();
    v.extend(user.map(|(label, better)| Judged {
        key: label,
        label,
        better: Some(better),
    }));
    v
}

/// The confidence of each of `k` intervals for the table as a whole to hold CONFIDENCE.
pub fn confidence_each(k: usize) -> f64 {
    1.0 - (1.0 - CONFIDENCE) / k.max(1) as f64
}

fn values(windows: &[Window], side: Side, key: &str) -> Vec<f64> {
    windows
        .iter()
        .filter(|w| w.side == side)
        .filter_map(|w| w.values.get(key).copied())
        .collect()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| crate::verdict::median_of(&mut v))
}

/// The verdict of every measure in `judged` over `windows`, each interval at `confidence_each`
/// of their number.
pub fn rows(windows: &[Window], judged: &[Judged]) -> Vec<Row> {
    let mut boot = Bootstrap::new(confidence_each(judged.len()), SEED);
    judged
        .iter()
        .map(|j| {
            let (a, b) = (
                values(windows, Side::A, j.key),
                values(windows, Side::B, j.key),
            );
            let interval = boot.ratio(&a, &b);
            let (verdict, words) = match (interval, j.better) {
                (None, _) => ("-".to_string(), "no verdict: too few values".to_string()),
                (Some(i), Some(better)) => {
                    let v = i.verdict(better);
                    let key = match v {
                        Verdict::Better => "better",
                        Verdict::Worse => "worse",
                        Verdict::NoDifference { .. } => "none",
                    };
                    (key.to_string(), v.words())
                }
                // A rate without a direction: the same test, named by the side of 1.
                (Some(i), None) => match i.verdict(Better::Lower) {
                    Verdict::Better => ("lower".into(), "lower".into()),
                    Verdict::Worse => ("higher".into(), "higher".into()),
                    v => ("none".into(), v.words()),
                },
            };
            Row {
                key: j.key.to_string(),
                label: j.label.to_string(),
                better: j.better,
                a_median: median(a),
                b_median: median(b),
                interval,
                verdict,
                words,
            }
        })
        .collect()
}

/// A number for the table: about four significant digits, no exponent.
fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

fn times(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}x")
    } else {
        "inf".into()
    }
}

/// The verdict as the table shows it: "no difference (±6.4%)" for the long words.
fn short(r: &Row) -> String {
    match (r.verdict.as_str(), r.interval) {
        ("none", Some(i)) if i.detectable_pct().is_finite() => {
            format!("no difference (±{:.1}%)", i.detectable_pct())
        }
        ("none", _) => "no difference (too few events)".into(),
        _ => r.words.clone(),
    }
}

impl Report {
    pub fn windows_of(&self, side: Side) -> usize {
        self.windows.iter().filter(|w| w.side == side).count()
    }

    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }

    /// The verdict table, with a header that says what was compared and how.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let side = |flags: &str, none: &str| {
            if flags.trim().is_empty() {
                none.to_string()
            } else {
                flags.trim().to_string()
            }
        };
        let _ = writeln!(
            out,
            "A: {}; B: {}",
            side(&self.a_flags, "the live tunables"),
            side(&self.b_flags, "the live tunables (an A/A: the noise floor)")
        );
        // A daemon starved by the load answers the window's last read late: say how long the
        // windows really were (the rates are per second of that).
        let measured = median(self.windows.iter().map(|w| w.secs).collect())
            .filter(|s| (s - self.window_s).abs() > 0.2 * self.window_s)
            .map_or(String::new(), |s| format!(" ({s:.1} s measured)"));
        let _ = writeln!(
            out,
            "{}+{} windows of {} s{measured} in ABBA order, {} s settle; intervals {:.1}% each, \
             {:.0}% as a whole",
            self.windows_of(Side::A),
            self.windows_of(Side::B),
            self.window_s,
            self.settle_s,
            self.confidence_each * 100.0,
            self.confidence * 100.0
        );
        let width = self.rows.iter().map(|r| r.label.len()).max().unwrap_or(6);
        let _ = writeln!(
            out,
            "{:<width$}  {:>10}  {:>10}  {:>6}  {:<15}  verdict",
            "metric", "A median", "B median", "B/A", "interval"
        );
        for r in &self.rows {
            let label = match r.better {
                Some(Better::Higher) => format!("{} (higher)", r.label),
                _ => r.label.clone(),
            };
            let (ratio, iv) = match r.interval {
                Some(i) => (times(i.ratio), format!("{}-{}", times(i.lo), times(i.hi))),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{label:<width$}  {:>10}  {:>10}  {ratio:>6}  {iv:<15}  {}",
                num(r.a_median),
                num(r.b_median),
                short(r)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// ABBA windows where `key` is `a` on A and `b` on B, times a little noise.
    fn windows(rounds: usize, key: &str, a: f64, b: f64) -> Vec<Window> {
        let mut rng = fastrand::Rng::with_seed(9);
        super::super::order::windows(rounds)
            .enumerate()
            .map(|(index, side)| {
                let base = if side == Side::A { a } else { b };
                let v = base * (1.0 + (rng.f64() - 0.5) * 0.04);
                Window {
                    index,
                    side,
                    secs: 1.0,
                    generation: 1,
                    values: BTreeMap::from([(key.to_string(), v)]),
                }
            })
            .collect()
    }

    #[test]
    fn the_table_corrects_for_the_number_of_measures() {
        assert_eq!(confidence_each(1), CONFIDENCE);
        assert!((confidence_each(8) - (1.0 - 0.05 / 8.0)).abs() < 1e-12);
        assert!(judged(None).len() == MEASURES.len());
        assert_eq!(
            judged(Some(("p99", Better::Lower))).len(),
            MEASURES.len() + 1
        );
    }

    #[test]
    fn a_real_difference_is_named_by_direction_and_none_without_one() {
        let w = windows(8, "migrations", 100.0, 200.0);
        let rows = rows(&w, &judged(None));
        let m = rows.iter().find(|r| r.key == "migrations").unwrap();
        assert_eq!(m.verdict, "worse", "{m:?}");
        let i = m.interval.unwrap();
        assert!(i.lo > 1.0 && (i.ratio - 2.0).abs() < 0.1, "{i:?}");
        let wake = rows.iter().find(|r| r.key == "wakeups").unwrap();
        assert_eq!(wake.verdict, "-", "no values: no verdict");

        let w = windows(8, "wakeups", 100.0, 200.0);
        let r = &rows_of(&w)[4];
        assert_eq!((r.key.as_str(), r.verdict.as_str()), ("wakeups", "higher"));

        let w = windows(8, "migrations", 100.0, 100.0);
        let r = &rows_of(&w)[2];
        assert_eq!(r.verdict, "none", "{r:?}");
    }

    /// Of `tables` synthetic A/As of every measure (`rounds` windows a side, log-normal noise of
    /// `sigma`, each measure's own level), how many name any measure better, worse, higher or
    /// lower.
    fn aa_tables_naming_a_difference(tables: usize, rounds: usize, sigma: f64) -> usize {
        let mut rng = fastrand::Rng::with_seed(21);
        let judged = judged(Some(("score", Better::Higher)));
        (0..tables)
            .filter(|_| {
                let windows: Vec<Window> = super::super::order::windows(rounds)
                    .enumerate()
                    .map(|(index, side)| Window {
                        index,
                        side,
                        secs: 1.0,
                        generation: 1,
                        values: judged
                            .iter()
                            .enumerate()
                            .map(|(k, j)| {
                                let (u, v) = (1.0 - rng.f64(), rng.f64());
                                let normal =
                                    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                                (
                                    j.key.to_string(),
                                    (k + 1) as f64 * 100.0 * (sigma * normal).exp(),
                                )
                            })
                            .collect(),
                    })
                    .collect();
                rows(&windows, &judged).iter().any(|r| r.verdict != "none")
            })
            .count()
    }

    #[test]
    fn an_aa_of_every_measure_names_a_difference_in_few_tables() {
        // 300 A/As of 8 measures, 10 windows a side at 10% noise: with each interval at 95%,
        // about a third of the tables would name one; corrected, at most about 5% may.
        let named = aa_tables_naming_a_difference(300, 10, 0.10);
        assert!(named <= 24, "{named} of 300 tables named a difference");
    }

    fn rows_of(w: &[Window]) -> Vec<Row> {
        rows(w, &judged(None))
    }

    #[test]
    fn the_report_reads_back_from_its_json_and_its_table_names_each_measure() {
        let w = windows(4, "migrations", 100.0, 150.0);
        let report = Report {
            a_flags: String::new(),
            b_flags: "--wakeq on".into(),
            a: "a".into(),
            b: "b".into(),
            window_s: 2.0,
            settle_s: 1.0,
            rounds: 4,
            confidence: CONFIDENCE,
            confidence_each: confidence_each(MEASURES.len()),
            end: End::Done,
            rows: rows_of(&w),
            windows: w,
            outcome: "restored".into(),
            adopted: false,
        };
        // Compared as JSON: a float's last bit may change on the way (serde_json's parser).
        let json = serde_json::to_string(&report).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back.rows.len(), report.rows.len());
        assert_eq!(back.row("migrations").unwrap().verdict, "worse");
        assert_eq!(back.windows_of(Side::B), 4);
        let table = report.table();
        for m in &MEASURES {
            assert!(table.contains(m.label), "{}: {table}", m.label);
        }
        assert!(
            table.contains("4+4 windows of 2 s (1.0 s measured)"),
            "the windows' counters covered 1 s of the 2 asked for: {table}"
        );
        assert!(
            table.contains("A: the live tunables; B: --wakeq on"),
            "{table}"
        );
    }
}
