//! `scx_sis_lab wakelat` as a workload: message threads wake workers through futexes, and each
//! wake-to-run latency counts. `wakelat` keeps about half the CPUs busy, `wakelat-low` one
//! message thread and two workers.

use anyhow::{Context, Result};
use scx_sis::verdict::Better;

use super::family::Family;
use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};

pub const WAKELAT: Workload = Workload::named("wakelat");
pub const WAKELAT_LOW: Workload = Workload::named("wakelat-low");

pub const P50: Metric = Metric::field("p50 us", 1, |r| r.p50_us, Better::Lower);
pub const P99: Metric = Metric::field("p99 us", 1, |r| r.p99_us, Better::Lower);
pub const RPS: Metric = Metric::field("requests/s", 0, |r| r.rps, Better::Higher);

pub struct Wakelat;

impl Family for Wakelat {
    fn workloads(&self) -> &'static [Workload] {
        &[WAKELAT, WAKELAT_LOW]
    }

    fn tools(&self, _: Workload) -> &'static [&'static str] {
        &[]
    }

    fn command(&self, w: Workload, s: &Sizing, exes: &Exes) -> Vec<String> {
        let (m, wk, rt, wu) = s.wakelat(w == WAKELAT_LOW);
        [
            exes.lab,
            "wakelat",
            "--json",
            "--message-threads",
            &m.to_string(),
            "--workers",
            &wk.to_string(),
            "--runtime",
            &rt.to_string(),
            "--warmup",
            &wu.to_string(),
        ]
        .map(String::from)
        .to_vec()
    }

    fn expected_secs(&self, _: Workload, s: &Sizing) -> f64 {
        let (_, _, rt, wu) = s.wakelat(false);
        rt + wu + 1.5
    }

    fn parse(&self, r: &mut RunRecord, stdout: &str) -> Result<()> {
        let wl = parse_wakelat(stdout)
            .with_context(|| format!("no JSON in wakelat's output: {}", stdout.trim()))?;
        r.p50_us = wl.p50_us;
        r.p99_us = wl.p99_us;
        r.rps = Some(wl.rps);
        Ok(())
    }

    fn scores(&self, _: Workload) -> Vec<Metric> {
        vec![P99, RPS]
    }

    fn columns(&self, _: Workload) -> Vec<Metric> {
        vec![P50, P99, RPS]
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct WakelatResult {
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    rps: f64,
    samples: u64,
}

/// `scx_sis_lab wakelat --json`: the last line that parses as its JSON object.
fn parse_wakelat(out: &str) -> Option<WakelatResult> {
    out.lines().rev().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l.trim()).ok()?;
        Some(WakelatResult {
            p50_us: v.get("p50_us")?.as_f64(),
            p99_us: v.get("p99_us")?.as_f64(),
            rps: v.get("requests_per_sec")?.as_f64()?,
            samples: v.get("samples")?.as_u64()?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakelat_json() {
        let out = "wakelat: warmup done\n{\"p50_us\":12.5,\"p90_us\":30.0,\"p99_us\":88.1,\
                   \"p999_us\":120.0,\"max_us\":400.0,\"samples\":1000,\"requests_per_sec\":\
                   2000.5,\"message_threads\":2,\"workers\":2}\n";
        let r = parse_wakelat(out).unwrap();
        assert_eq!(
            (r.p50_us, r.p99_us, r.rps, r.samples),
            (Some(12.5), Some(88.1), 2000.5, 1000)
        );
        let empty = "{\"p50_us\":null,\"p99_us\":null,\"samples\":0,\"requests_per_sec\":0.0}";
        let r = parse_wakelat(empty).unwrap();
        assert_eq!((r.p50_us, r.p99_us, r.samples), (None, None, 0));
        assert_eq!(parse_wakelat("not json"), None);
    }

    #[test]
    fn the_command_names_the_lab_binary() {
        let s = Sizing {
            cpus: 8,
            quick: true,
            work: 1.0,
        };
        let exes = Exes {
            lab: "/bin/scx_sis_lab",
            sched: "/bin/scx_sis",
        };
        assert_eq!(
            Wakelat.command(WAKELAT_LOW, &s, &exes).join(" "),
            "/bin/scx_sis_lab wakelat --json --message-threads 1 --workers 2 --runtime 2 --warmup 0.5"
        );
    }
}
