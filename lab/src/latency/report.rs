//! The run's summary, as a short table or as one JSON object.

use std::fmt::Write as _;

use serde::Serialize;

use super::histogram::Histogram;

/// Percentiles of one histogram, in microseconds; None (JSON null) without samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latencies {
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub max_us: Option<f64>,
    pub samples: u64,
}

impl Latencies {
    pub fn from_histogram(h: &Histogram) -> Self {
        let us = |ns: Option<u64>| ns.map(|ns| ns as f64 / 1000.0);
        Self {
            p50_us: us(h.percentile(50.0)),
            p90_us: us(h.percentile(90.0)),
            p99_us: us(h.percentile(99.0)),
            p999_us: us(h.percentile(99.9)),
            max_us: us(h.max()),
            samples: h.count(),
        }
    }

    fn render(&self) -> String {
        let us = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
        format!(
            "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (samples {})",
            us(self.p50_us),
            us(self.p90_us),
            us(self.p99_us),
            us(self.p999_us),
            us(self.max_us),
            self.samples
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Worker wakeup latency, flattened so that p50_us etc. are top-level keys.
    #[serde(flatten)]
    pub wakeup: Latencies,
    pub requests_per_sec: f64,
    pub message_threads: u32,
    pub workers: u32,
    /// The measured period (warmup excluded), as it actually lasted.
    pub runtime_s: f64,
    pub warmup_s: f64,
    pub cputime_us: u64,
    pub sleep_us: u64,
    /// Message thread wakeup latency (rounds in which it had to sleep).
    pub message_wakeup: Latencies,
}

impl Report {
    pub fn config_line(&self) -> String {
        format!(
            "wakelat: message threads {}, workers {} each, cputime {} us, sleep {} us, \
             warmup {} s, runtime {:.2} s",
            self.message_threads,
            self.workers,
            self.cputime_us,
            self.sleep_us,
            self.warmup_s,
            self.runtime_s
        )
    }

    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.config_line());
        let _ = writeln!(out, "wakeup latency (us): {}", self.wakeup.render());
        let _ = writeln!(out, "message wakeup (us): {}", self.message_wakeup.render());
        let _ = writeln!(out, "requests/s: {:.0}", self.requests_per_sec);
        out
    }

    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a report of numbers always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(wakeups: &Histogram) -> Report {
        Report {
            wakeup: Latencies::from_histogram(wakeups),
            requests_per_sec: 1234.4,
            message_threads: 2,
            workers: 4,
            runtime_s: 0.5,
            warmup_s: 0.0,
            cputime_us: 100,
            sleep_us: 0,
            message_wakeup: Latencies::from_histogram(&Histogram::new()),
        }
    }

    #[test]
    fn json_has_the_documented_top_level_keys() {
        let mut h = Histogram::new();
        (1..=100).for_each(|us| h.record(us * 1000));
        let v: serde_json::Value = serde_json::from_str(&report(&h).json()).unwrap();
        for key in [
            "p50_us",
            "p90_us",
            "p99_us",
            "p999_us",
            "max_us",
            "samples",
            "requests_per_sec",
            "message_threads",
            "workers",
            "runtime_s",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {v}");
        }
        assert_eq!(v["samples"], 100);
        assert_eq!(v["max_us"], 100.0);
        assert!(v["message_wakeup"]["p50_us"].is_null());
    }

    #[test]
    fn table_shows_dashes_without_samples() {
        let table = report(&Histogram::new()).table();
        assert!(
            table.contains("wakeup latency (us): p50 -  p90 -"),
            "{table}"
        );
        assert!(table.contains("(samples 0)"), "{table}");
        assert!(table.contains("requests/s: 1234"), "{table}");
    }
}
