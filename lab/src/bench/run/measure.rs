//! Measuring one run: the workload under `perf stat` in its own process group, with the
//! scheduler's own numbers read around it (scx_stats deltas, bpf_stats of its callbacks, the
//! trace reader's CPU time), and the workload's output parsed into the record.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use scx_sis::load::verifier;
use scx_sis::stats::{LlcMetrics, Metrics};

use super::bpf_stats::{bpf_delta, bpf_total_ns, select_only, struct_ops_progs};
use super::env::Env;
use super::perf_stat;
use super::switch::{check_active, Active};
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};
use crate::bench::plan::config::ConfigSpec;
use crate::bench::plan::Plan;
use crate::bench::workloads::{self, custom, custom::Custom};

struct Output {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    wall: Duration,
}

/// Run `cmd` in its own process group (so a timeout kills the workload, not only perf) with
/// its output in files; SIGKILL the group after `timeout` or when `stop` is set.
fn run_command(cmd: &[String], env: &Env, timeout: Duration, stop: &AtomicBool) -> Result<Output> {
    let (out_path, err_path) = (env.dir.join("run.out"), env.dir.join("run.err"));
    let t0 = Instant::now();
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(File::create(&out_path)?)
        .stderr(File::create(&err_path)?)
        .process_group(0)
        .spawn()
        .with_context(|| format!("failed to start {}", cmd[0]))?;
    let pgid = child.id() as i32;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if t0.elapsed() > timeout || stop.load(Ordering::Relaxed) {
            // SAFETY: the process group we created for this child.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = child.wait();
            if stop.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            bail!("timed out after {} s", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // perf stat has exited; anything left in the group (a stray worker) goes too.
    // SAFETY: as above; ESRCH when the group is empty.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    Ok(Output {
        status,
        stdout: fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: fs::read_to_string(&err_path).unwrap_or_default(),
        wall: t0.elapsed(),
    })
}

/// Fill `r` with the scheduler's stats delta over the run (scx_sis only).
fn fill_sis_stats(r: &mut RunRecord, m: &Metrics) {
    let sum = |f: fn(&LlcMetrics) -> u64| m.llcs.values().map(f).sum::<u64>();
    let wakeups = sum(|l| l.wakeups);
    let runs = sum(|l| l.scan_runs);
    let avg = |total: u64, n: u64| (n > 0).then(|| total as f64 / n as f64);
    r.wakeups = Some(wakeups);
    r.select_ns_sis = avg(sum(|l| l.select_ns), sum(|l| l.select_timed));
    r.scan_depth = avg(sum(|l| l.scan_depth), runs);
    r.scan_visited = avg(sum(|l| l.scan_visited), runs);
    r.scan_hit_pct = avg(sum(|l| l.scan_found) * 100, runs);
    r.sched_migrations = Some(sum(|l| l.migrations));
    r.steals = Some(sum(|l| l.dispatch_llc_steal + l.dispatch_remote_steal));
    r.pulls = Some(sum(|l| l.pulls + l.pulls_remote));
    r.idle_waiting_ms = Some(sum(|l| l.idle_waiting_ns) as f64 / 1e6);
    r.trace_records = Some(sum(|l| l.trace_events));
    r.trace_drops = Some(sum(|l| l.trace_drops));
    let mut paths = BTreeMap::new();
    for l in m.llcs.values() {
        for (k, v) in &l.paths {
            *paths.entry(k.clone()).or_insert(0) += v;
        }
    }
    r.paths = paths;
}

/// Measure workload `w` under configuration `c` (already switched to) in round `repeat`. A
/// failure does not end the bench: it is the record's `error`, with `ok` false.
pub fn measure(
    active: &mut Active,
    c: &ConfigSpec,
    w: Workload,
    repeat: u32,
    plan: &Plan,
    env: &Env,
    stop: &AtomicBool,
) -> RunRecord {
    let mut r = RunRecord::new(&c.name, c.kind(), w, repeat);
    r.cpus = env.cpus;
    r.topo = env.topo.clone();
    r.kernel = env.kernel.clone();
    let sizing = Sizing {
        cpus: env.cpus,
        quick: plan.quick,
        work: plan.work,
    };
    let customs = custom::sized(&plan.custom, &sizing);
    let (lab, sched) = (
        env.lab_exe.to_string_lossy(),
        env.sched_exe.to_string_lossy(),
    );
    let exes = Exes {
        lab: &lab,
        sched: &sched,
    };
    let cmd = workloads::command(w, &sizing, &exes, &customs);
    r.command = if workloads::family(w).is_some() {
        shell_words(&cmd)
    } else {
        // What the user wrote, not the `sh -c` around it.
        cmd.last().cloned().unwrap_or_default()
    };
    if let Err(e) = measure_into(&mut r, active, c, w, &customs, &cmd, &sizing, env, stop) {
        r.ok = false;
        r.error = Some(format!("{e:#}"));
    }
    r
}

/// `cmd` as a shell would take it back: an argument with a space (a probe's background
/// command) in single quotes.
fn shell_words(cmd: &[String]) -> String {
    cmd.iter()
        .map(|a| {
            if a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[allow(clippy::too_many_arguments)]
fn measure_into(
    r: &mut RunRecord,
    active: &mut Active,
    c: &ConfigSpec,
    w: Workload,
    customs: &[Custom],
    cmd: &[String],
    sizing: &Sizing,
    env: &Env,
    stop: &AtomicBool,
) -> Result<()> {
    check_active(active, c)?;
    let perf_out = env.dir.join("perf-stat.csv");
    let _ = fs::remove_file(&perf_out);
    let full = perf_stat::command(&perf_out.to_string_lossy(), cmd);
    let timeout = Duration::from_secs_f64(120.0 + 10.0 * workloads::expected_secs(w, sizing));

    let reader_cpu = |active: &Active| match active {
        Active::Sis { trace: Some(t), .. } => t.cpu_s(),
        _ => None,
    };
    if let Active::Sis { sched: s, .. } = active {
        // Starts this client's window: the next read is the delta over the run.
        if let Some(client) = s.stats.as_mut() {
            client
                .request::<Metrics>("stats", vec![])
                .context("scx_sis stats read failed")?;
        }
    }
    let cpu0 = reader_cpu(active);
    let bpf0 = struct_ops_progs();
    let out = run_command(&full, env, timeout, stop)?;
    let bpf1 = struct_ops_progs();
    if let (Some(a), Some(b)) = (cpu0, reader_cpu(active)) {
        r.trace_reader_cpu_s = Some(b - a);
    }
    let delta = match active {
        Active::Sis { sched: s, .. } => match s.stats.as_mut() {
            Some(client) => Some(
                client
                    .request::<Metrics>("stats", vec![])
                    .context("scx_sis stats read failed")?,
            ),
            None => None,
        },
        _ => None,
    };
    r.wall_s = out.wall.as_secs_f64();
    if let Some((ns, calls)) = bpf_delta(&select_only(&bpf0), &select_only(&bpf1)) {
        r.select_ns_bpf = Some(ns);
        r.select_calls = Some(calls);
    }
    r.bpf_ns = bpf_total_ns(&bpf0, &bpf1);
    if let Some(m) = &delta {
        fill_sis_stats(r, m);
    }
    if !matches!(active, Active::Nothing) {
        r.verified_insns = verifier::struct_ops_insns("");
    }
    let counts = perf_stat::parse(&fs::read_to_string(&perf_out).unwrap_or_default());
    r.migrations = counts.migrations;
    r.context_switches = counts.context_switches;
    r.cycles = counts.cycles;
    r.instructions = counts.instructions;
    r.llc_loads = counts.llc_loads;
    r.llc_misses = counts.llc_misses;
    r.hw_unsupported = counts.unsupported.clone();
    // A scheduler that left during the run makes the run meaningless.
    check_active(active, c).context("during the run")?;
    if !out.status.success() {
        let lines: Vec<&str> = out.stderr.lines().collect();
        let tail = &lines[lines.len().saturating_sub(3)..];
        bail!(
            "{} exited with {}: {}",
            cmd[0],
            out.status,
            tail.join(" | ")
        );
    }
    workloads::parse(r, customs, &out.stdout, &out.stderr)?;
    if counts.migrations.is_none() {
        bail!(
            "perf stat gave no counts: {}",
            out.stderr.lines().last().unwrap_or("")
        );
    }
    r.ok = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_back_as_shell_words() {
        let cmd: Vec<String> = ["probe", "sleeps", "--background", "hackbench -l 5"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            shell_words(&cmd),
            "probe sleeps --background 'hackbench -l 5'"
        );
    }

    #[test]
    fn sis_stats_are_summed_over_llcs() {
        let mut m = Metrics::default();
        for (i, (wk, ns, runs, depth)) in [(100u64, 10_000u64, 10u64, 40u64), (300, 30_000, 30, 80)]
            .into_iter()
            .enumerate()
        {
            let l = LlcMetrics {
                wakeups: wk,
                select_ns: ns,
                select_timed: wk / 50,
                scan_runs: runs,
                scan_depth: depth,
                scan_visited: runs * 2,
                scan_found: runs / 2,
                paths: BTreeMap::from([("llc_scan".to_string(), runs)]),
                ..Default::default()
            };
            m.llcs.insert(i as u32, l);
        }
        let mut r = RunRecord::new("x", "sis", workloads::timed::HACKBENCH, 1);
        fill_sis_stats(&mut r, &m);
        assert_eq!(r.wakeups, Some(400));
        // 40,000 ns over the 2 + 6 timed calls, not over the 400 wakeups.
        assert_eq!(r.select_ns_sis, Some(5000.0));
        assert_eq!(r.scan_depth, Some(3.0));
        assert_eq!(r.scan_visited, Some(2.0));
        assert_eq!(r.scan_hit_pct, Some(50.0));
        assert_eq!(r.paths["llc_scan"], 40);
    }
}
