//! What one window records: the scheduler's own counters over the window, as rates per second
//! (the wait quantiles and select_cpu's cost per call as they are), and the user's metric.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::order::Side;
use crate::stats::{LlcMetrics, Metrics};
use crate::verdict::Better;

/// One number a window is judged on.
pub struct Measure {
    /// Its key in the JSON and for --adopt.
    pub key: &'static str,
    /// Its name in the table, with its unit.
    pub label: &'static str,
    /// Which way it improves; None for a rate that tells how much work ran (more wakeups a
    /// second is more work done, or more waking for the same work), judged only as higher or
    /// lower.
    pub better: Option<Better>,
    of: fn(&Metrics) -> Option<f64>,
}

impl Measure {
    pub fn value(&self, m: &Metrics) -> Option<f64> {
        (self.of)(m).filter(|v| v.is_finite())
    }
}

fn per_sec(m: &Metrics, f: fn(&LlcMetrics) -> u64) -> Option<f64> {
    (m.secs > 0.0).then(|| m.llc_sum(f) as f64 / m.secs)
}

/// The scheduler's measures, in the table's order.
pub const MEASURES: [Measure; 7] = [
    Measure {
        key: "wait_p50_us",
        label: "wait p50 us",
        better: Some(Better::Lower),
        of: |m| (m.llc_sum(|l| l.wake_waits) > 0).then(|| m.wait_quantile_us(0.5)),
    },
    Measure {
        key: "wait_p99_us",
        label: "wait p99 us",
        better: Some(Better::Lower),
        of: |m| (m.llc_sum(|l| l.wake_waits) > 0).then(|| m.wait_quantile_us(0.99)),
    },
    Measure {
        key: "migrations",
        label: "migrations/s",
        better: Some(Better::Lower),
        of: |m| per_sec(m, |l| l.migrations),
    },
    Measure {
        key: "ctx_switches",
        label: "ctx switches/s",
        better: Some(Better::Lower),
        of: |m| per_sec(m, |l| l.runs),
    },
    Measure {
        key: "wakeups",
        label: "wakeups/s",
        better: None,
        of: |m| per_sec(m, |l| l.wakeups),
    },
    Measure {
        key: "idle_waiting",
        label: "idle beside waiting ms/s",
        better: Some(Better::Lower),
        of: |m| per_sec(m, |l| l.idle_waiting_ns).map(|ns| ns / 1e6),
    },
    Measure {
        key: "select_ns",
        label: "select_cpu ns/call",
        better: Some(Better::Lower),
        of: |m| {
            let timed = m.llc_sum(|l| l.select_timed);
            (timed > 0).then(|| m.llc_sum(|l| l.select_ns) as f64 / timed as f64)
        },
    },
];

/// One window as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Its place in the run, from 0.
    pub index: usize,
    pub side: Side,
    /// Seconds its counters cover.
    pub secs: f64,
    /// The tunables' generation at its end.
    pub generation: u64,
    /// Each measure's value by key (the user's metric by its label); a measure without a value
    /// (no event to time, no match in the command's output) is absent.
    pub values: BTreeMap<String, f64>,
}

impl Window {
    /// Window `index` of `side` from the counters' delta over it, and the user's metric.
    pub fn record(index: usize, side: Side, m: &Metrics, user: Option<(&str, f64)>) -> Self {
        let mut values: BTreeMap<String, f64> = MEASURES
            .iter()
            .filter_map(|x| Some((x.key.to_string(), x.value(m)?)))
            .collect();
        if let Some((label, v)) = user.filter(|(_, v)| v.is_finite()) {
            values.insert(label.to_string(), v);
        }
        Window {
            index,
            side,
            secs: m.secs,
            generation: m.generation,
            values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_become_rates_over_the_window_and_costs_stay_per_call() {
        let llc = LlcMetrics {
            wakeups: 600,
            migrations: 300,
            runs: 900,
            idle_waiting_ns: 30_000_000,
            select_ns: 5_000,
            select_timed: 10,
            wake_waits: 4,
            // Two waits in [1.024, 2.048) us and two in [4.096, 8.192) us: p50 in the first,
            // p99 in the second.
            wake_wait_hist: vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2],
            ..Default::default()
        };
        let m = Metrics {
            secs: 3.0,
            generation: 7,
            llcs: [(0, llc.clone()), (1, llc)].into(),
            ..Default::default()
        };
        let w = Window::record(4, Side::B, &m, Some(("p99", 12.5)));
        let v = |k: &str| w.values[k];
        assert_eq!(v("wakeups"), 400.0);
        assert_eq!(v("migrations"), 200.0);
        assert_eq!(v("ctx_switches"), 600.0);
        assert_eq!(v("idle_waiting"), 20.0);
        assert_eq!(v("select_ns"), 500.0);
        assert!(v("wait_p50_us") < v("wait_p99_us"), "{w:?}");
        // Within the bucket (quantile.rs places it at the bucket's edge, or inside).
        assert!((1.0..=2.048).contains(&v("wait_p50_us")), "{w:?}");
        assert!((4.0..=8.192).contains(&v("wait_p99_us")), "{w:?}");
        assert_eq!(v("p99"), 12.5);
        assert_eq!(
            (w.index, w.side, w.generation, w.secs),
            (4, Side::B, 7, 3.0)
        );
    }

    #[test]
    fn a_measure_without_events_has_no_value() {
        let m = Metrics {
            secs: 1.0,
            llcs: [(0, LlcMetrics::default())].into(),
            ..Default::default()
        };
        let w = Window::record(0, Side::A, &m, Some(("score", f64::NAN)));
        for absent in ["wait_p50_us", "wait_p99_us", "select_ns", "score"] {
            assert!(!w.values.contains_key(absent), "{absent}: {w:?}");
        }
        assert_eq!(w.values["migrations"], 0.0, "a rate of 0 is a value");
    }
}
