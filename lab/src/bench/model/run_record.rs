//! One measured run: a line of runs.jsonl, a `SIS-BENCH` line of the guest's console. Its field
//! names are the saved records' keys, so a rename breaks reading older output directories.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::workload::Workload;

/// Guest progress lines on the console.
pub const PROGRESS: &str = "SIS-BENCH-PROGRESS";
/// Guest record lines: "SIS-BENCH {json}".
pub const RECORD: &str = "SIS-BENCH";

/// The record on a console line, if it has one.
pub fn parse_record(line: &str) -> Option<Result<RunRecord, serde_json::Error>> {
    let tag = format!("{RECORD} {{");
    let i = line.find(&tag)?;
    Some(serde_json::from_str(
        line[i + RECORD.len() + 1..].trim_end(),
    ))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub config: String,
    /// eevdf, sis or peer.
    pub kind: String,
    pub workload: Workload,
    /// 1-based.
    pub repeat: u32,
    pub cpus: u32,
    pub topo: String,
    pub kernel: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub command: String,
    /// Wall time of the whole command, perf stat included.
    pub wall_s: f64,
    /// The workload's own time (hackbench "Time:", perf bench "Total time:").
    pub time_s: Option<f64>,
    /// perf stat counts of the workload's tasks.
    pub migrations: Option<u64>,
    pub context_switches: Option<u64>,
    /// perf stat's hardware counts of the workload's tasks; None where the PMU has no such
    /// event (then it is in `hw_unsupported`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_loads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_misses: Option<u64>,
    /// The events perf stat said `<not supported>` for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hw_unsupported: Vec<String>,
    /// A custom workload's numbers pulled from its output (`--metric`), by label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// wakelat: worker wakeup latency and requests/s.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub rps: Option<f64>,
    /// bpf_stats (kernel.bpf_stats_enabled): run_time_ns / run_cnt of the scheduler's struct_ops
    /// select_cpu program over the run, as the kernel measures it around each call.
    pub select_ns_bpf: Option<f64>,
    pub select_calls: Option<u64>,
    /// bpf_stats: run_time_ns over the run, summed over every struct_ops program of the
    /// scheduler (all its callbacks): what the scheduler's BPF cost the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_ns: Option<u64>,
    /// scx_sis only, from its stats over the run: select_cpu's own cost measured inside BPF
    /// with bpf_ktime_get_ns, per wakeup.
    pub select_ns_sis: Option<f64>,
    pub wakeups: Option<u64>,
    /// llc_scan: average depth limit (nr_scan), CPUs tested per scan, scans that found one.
    pub scan_depth: Option<f64>,
    pub scan_visited: Option<f64>,
    pub scan_hit_pct: Option<f64>,
    /// Migrations as scx_sis counts them (tasks that ran on another CPU than last time).
    pub sched_migrations: Option<u64>,
    /// Wakeups per placement path.
    #[serde(default)]
    pub paths: BTreeMap<String, u64>,
    /// scx_sis only: where migrations come from besides placement. Idle CPUs' steals (in the
    /// LLC and from others) and busy CPUs' lag pulls.
    #[serde(default)]
    pub steals: Option<u64>,
    #[serde(default)]
    pub pulls: Option<u64>,
    /// scx_sis only, the work-conservation figure: ms of idle CPU time while a task its LLC
    /// could run elsewhere had waited past steal-min (`idle_waiting_ns`, sampled by the timer).
    #[serde(default)]
    pub idle_waiting_ms: Option<f64>,
    /// scx_sis only: placement trace records BPF wrote to the ring buffer over the run, and
    /// those lost because it was full (both 0 without a trace session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_records: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_drops: Option<u64>,
    /// A traced configuration: the `scx_sis trace` reader's CPU time (user + system) over the
    /// run, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_reader_cpu_s: Option<f64>,
    /// The verifier's processed instructions per struct_ops program of the scheduler in force
    /// (none for EEVDF), by program name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verified_insns: BTreeMap<String, u32>,
}

impl RunRecord {
    pub fn new(config: &str, kind: &str, workload: Workload, repeat: u32) -> Self {
        Self {
            config: config.into(),
            kind: kind.into(),
            workload,
            repeat,
            cpus: 0,
            topo: String::new(),
            kernel: String::new(),
            ok: false,
            error: None,
            command: String::new(),
            wall_s: 0.0,
            time_s: None,
            migrations: None,
            context_switches: None,
            cycles: None,
            instructions: None,
            llc_loads: None,
            llc_misses: None,
            hw_unsupported: Vec::new(),
            metrics: BTreeMap::new(),
            p50_us: None,
            p99_us: None,
            rps: None,
            select_ns_bpf: None,
            select_calls: None,
            bpf_ns: None,
            select_ns_sis: None,
            wakeups: None,
            scan_depth: None,
            scan_visited: None,
            scan_hit_pct: None,
            sched_migrations: None,
            paths: BTreeMap::new(),
            steals: None,
            pulls: None,
            idle_waiting_ms: None,
            trace_records: None,
            trace_drops: None,
            trace_reader_cpu_s: None,
            verified_insns: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_on_console_lines() {
        let mut r = RunRecord::new("all-on", "sis", Workload::named("pipe"), 2);
        r.ok = true;
        let line = format!(
            "[   12.3] {RECORD} {}\r",
            serde_json::to_string(&r).unwrap()
        );
        assert_eq!(parse_record(&line).unwrap().unwrap(), r);
        assert!(parse_record("SIS-BENCH-PROGRESS [1/2] repeat 1/1").is_none());
        assert!(parse_record("SIS-BENCH {broken").unwrap().is_err());
    }
}
