//! The native runner: sets up each configuration (EEVDF, scx_sis switched live, a peer
//! scheduler, scx_sis with a `scx_sis trace` reader running), runs every workload under
//! `perf stat`, and reads the scheduler's own numbers (scx_stats deltas, bpf_stats of its
//! select_cpu program) around each run.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use libbpf_rs::query::ProgInfoIter;
use libbpf_rs::ProgramType;
use scx_stats::prelude::*;

use super::config::{self, ConfigSpec, Target};
use scx_sis::elapsed::hms;
use scx_sis::preflight::{self, scx_ops, scx_state};
use scx_sis::stats::{LlcMetrics, Metrics};
use scx_sis::{tunables, verifier};

use super::plan::Plan;
use super::record::RunRecord;
use super::report;
use super::workload::{self, Custom, Sizing, Workload};

/// The verifier runs ~100x slower under TCG.
const ENABLE_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// After switching a configuration: let SIS_UTIL and the utilization averages follow.
const SETTLE: Duration = Duration::from_secs(1);
/// Then, before the configuration's first run, the machine this idle over one window: what a
/// switch left behind (a daemon's exit, the kernel freeing a scheduler) is done, so the first
/// configuration of a round does not pay for the last one of the round before. Bounded: a host
/// with background load runs anyway.
const QUIET_IDLE_SHARE: f64 = 0.9;
const QUIET_WINDOW: Duration = Duration::from_millis(250);
const QUIET_TIMEOUT: Duration = Duration::from_secs(5);
/// From starting `scx_sis trace` to its trace being on (a process start, the topology read,
/// the ring buffer mapped: seconds under TCG).
const TRACE_START_TIMEOUT: Duration = Duration::from_secs(60);
/// From SIGINT to the reader's exit: it switches the trace off at once, then drains what is
/// left, sorts every record and writes the JSON (to /dev/null) and the summary, which for the
/// few hundred thousand records of a VM configuration takes a while under TCG. The time is
/// after the measurement and before the next configuration's.
const TRACE_STOP_TIMEOUT: Duration = Duration::from_secs(180);

/// Where and how the runner runs.
pub struct Env {
    /// The scx_sis binary, run as the daemon.
    pub sched_exe: PathBuf,
    /// The scx_sis_lab binary, run as the wakelat workload.
    pub lab_exe: PathBuf,
    pub cpus: u32,
    pub topo: String,
    pub kernel: String,
    /// Scratch files (workload output, perf stat output) and scheduler logs.
    pub dir: PathBuf,
    /// Prefix of the progress lines on stderr.
    pub progress: &'static str,
}

fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn log_tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// bpf_stats on for as long as this lives (BPF_ENABLE_STATS), unless the sysctl already is.
pub struct BpfStats(#[allow(dead_code)] Option<OwnedFd>);

pub fn enable_bpf_stats() -> BpfStats {
    let on = fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled")
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    if on {
        return BpfStats(None);
    }
    // SAFETY: a plain syscall wrapper; a non-negative result is a new fd we own.
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
    };
    // SAFETY: fd was just returned to us and nobody else owns it.
    BpfStats((fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// run_time_ns and run_cnt of every loaded struct_ops program (every scheduler callback), by
/// program id, each marked whether it is a select_cpu. Program names are cut at 15 characters
/// ("bpfland_select_"), hence "contains".
fn struct_ops_progs() -> BTreeMap<u32, (bool, u64, u64)> {
    ProgInfoIter::default()
        .filter(|p| p.ty == ProgramType::StructOps)
        .map(|p| {
            let select = p.name.to_string_lossy().contains("select");
            (p.id, (select, p.run_time_ns, p.run_cnt))
        })
        .collect()
}

/// The select_cpu programs of a struct_ops_progs() snapshot: (run_time_ns, run_cnt) by id.
fn select_only(progs: &BTreeMap<u32, (bool, u64, u64)>) -> BTreeMap<u32, (u64, u64)> {
    progs
        .iter()
        .filter(|(_, (select, _, _))| *select)
        .map(|(id, (_, ns, cnt))| (*id, (*ns, *cnt)))
        .collect()
}

/// run_time_ns between two snapshots, summed over the programs present in both (None: none).
fn bpf_total_ns(
    a: &BTreeMap<u32, (bool, u64, u64)>,
    b: &BTreeMap<u32, (bool, u64, u64)>,
) -> Option<u64> {
    let both: Vec<u64> = b
        .iter()
        .filter_map(|(id, (_, t1, _))| a.get(id).map(|(_, t0, _)| t1.saturating_sub(*t0)))
        .collect();
    (!both.is_empty()).then(|| both.iter().sum())
}

/// (ns per call, calls) between two snapshots, over the programs present in both.
fn bpf_delta(a: &BTreeMap<u32, (u64, u64)>, b: &BTreeMap<u32, (u64, u64)>) -> Option<(f64, u64)> {
    let (mut ns, mut cnt) = (0u64, 0u64);
    let mut any = false;
    for (id, (t1, c1)) in b {
        if let Some((t0, c0)) = a.get(id) {
            any = true;
            ns += t1.saturating_sub(*t0);
            cnt += c1.saturating_sub(*c0);
        }
    }
    if !any || cnt == 0 {
        return None;
    }
    Some((ns as f64 / cnt as f64, cnt))
}

/// A scheduler process this runner started (scx_sis or a peer).
struct Sched {
    child: Child,
    name: String,
    log: PathBuf,
    /// scx_sis's stats socket.
    stats: Option<StatsClient>,
    /// Progress prefix for what it says on stderr.
    say: &'static str,
}

impl Sched {
    fn spawn(
        exe: &Path,
        args: &[&str],
        name: &str,
        log: PathBuf,
        say: &'static str,
    ) -> Result<Sched> {
        let out =
            File::create(&log).with_context(|| format!("failed to create {}", log.display()))?;
        let err = out.try_clone()?;
        let child = Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("failed to start {}", exe.display()))?;
        let mut s = Sched {
            child,
            name: name.to_string(),
            log,
            stats: None,
            say,
        };
        let t0 = Instant::now();
        let mut exited = None;
        let up = wait_for(ENABLE_TIMEOUT, || {
            if let Ok(Some(st)) = s.child.try_wait() {
                exited = Some(st);
                return true;
            }
            scx_state() == "enabled"
        });
        if let Some(st) = exited {
            bail!(
                "{name} exited ({st}) before sched_ext was enabled: {}",
                log_tail(&s.log, 3)
            );
        }
        if !up {
            s.stop();
            bail!(
                "{name}: sched_ext not enabled {} s after start (state {})",
                ENABLE_TIMEOUT.as_secs(),
                scx_state()
            );
        }
        eprintln!(
            "{say} {name} enabled in {:.1} s (ops {})",
            t0.elapsed().as_secs_f64(),
            scx_ops()
        );
        Ok(s)
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGINT (the clean detach), SIGKILL after STOP_TIMEOUT; then wait for `disabled`.
    fn stop(&mut self) {
        if self.alive() {
            // SAFETY: signalling a child we spawned and have not reaped yet.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
            if !wait_for(STOP_TIMEOUT, || !matches!(self.child.try_wait(), Ok(None))) {
                eprintln!("{} {} ignored SIGINT, killing it", self.say, self.name);
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
        if !wait_for(STOP_TIMEOUT, || scx_state() == "disabled") {
            eprintln!(
                "{} sched_ext still {} after {} stopped",
                self.say,
                scx_state(),
                self.name
            );
        }
    }
}

impl Drop for Sched {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A `scx_sis trace` reader this runner started, for a configuration with `trace`.
struct Tracer {
    child: Child,
    log: PathBuf,
    /// The reader's utime + stime, clock ticks, from /proc/PID/stat.
    ticks_per_s: f64,
    say: &'static str,
    stopped: bool,
}

/// Is the live trace switch on?
fn trace_on() -> Result<bool> {
    Ok(tunables::read(&tunables::open_live()?)?.trace != 0)
}

impl Tracer {
    fn spawn(env: &Env) -> Result<Tracer> {
        let log = env.dir.join("trace.log");
        let out =
            File::create(&log).with_context(|| format!("failed to create {}", log.display()))?;
        let err = out.try_clone()?;
        let child = Command::new(&env.sched_exe)
            .args(config::TRACE_READER_ARGS)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("failed to start {} trace", env.sched_exe.display()))?;
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let mut t = Tracer {
            child,
            log,
            ticks_per_s: ticks,
            say: env.progress,
            stopped: false,
        };
        let t0 = Instant::now();
        let mut exited = None;
        let on = wait_for(TRACE_START_TIMEOUT, || {
            if let Ok(Some(st)) = t.child.try_wait() {
                exited = Some(st);
                return true;
            }
            trace_on().unwrap_or(false)
        });
        if let Some(st) = exited {
            bail!(
                "scx_sis trace exited ({st}) before the trace was on: {}",
                log_tail(&t.log, 3)
            );
        }
        if !on {
            t.stop();
            bail!(
                "scx_sis trace: the trace not on {} s after start",
                TRACE_START_TIMEOUT.as_secs()
            );
        }
        eprintln!(
            "{} scx_sis trace on in {:.1} s (pid {})",
            t.say,
            t0.elapsed().as_secs_f64(),
            t.child.id()
        );
        Ok(t)
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The reader's CPU time so far, in seconds (None once it is gone).
    fn cpu_s(&self) -> Option<f64> {
        let stat = fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // After the comm's closing parenthesis: state is field 3, utime and stime 14 and 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        Some(ticks as f64 / self.ticks_per_s)
    }

    /// SIGINT (it switches the trace off, then writes its file and summary), SIGKILL after
    /// TRACE_STOP_TIMEOUT; then say what it recorded and dropped.
    fn stop(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        let t0 = Instant::now();
        if self.alive() {
            // SAFETY: signalling a child we spawned and have not reaped yet.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
            if !wait_for(TRACE_STOP_TIMEOUT, || {
                !matches!(self.child.try_wait(), Ok(None))
            }) {
                // The next configuration's tune() switches a trace left on off.
                eprintln!(
                    "{} scx_sis trace still running {} s after SIGINT, killing it",
                    self.say,
                    TRACE_STOP_TIMEOUT.as_secs()
                );
                let _ = self.child.kill();
            }
        }
        let st = self.child.wait();
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let counts = text
            .lines()
            .find(|l| l.contains(" records in ") && l.contains(" dropped)"))
            .unwrap_or("no count in its log");
        eprintln!(
            "{} scx_sis trace stopped in {:.1} s ({}): {}",
            self.say,
            t0.elapsed().as_secs_f64(),
            st.map_or_else(|e| e.to_string(), |s| s.to_string()),
            counts.trim()
        );
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop();
    }
}

enum Active {
    Nothing,
    // Fields drop in order: the reader stops before its scheduler does.
    Sis { trace: Option<Tracer>, sched: Sched },
    Peer(Sched),
}

/// Start scx_sis for configuration `name`, its log in `scx_sis-<name>.log`.
fn start_sis(env: &Env, name: &str) -> Result<Sched> {
    if let Some(other) = preflight::loaded_scheduler() {
        bail!("cannot start scx_sis: {other} is loaded");
    }
    let log = env.dir.join(format!("scx_sis-{name}.log"));
    let mut s = Sched::spawn(
        &env.sched_exe,
        &["--stats-interval", "3600"],
        "scx_sis",
        log,
        env.progress,
    )?;
    let ops = scx_ops();
    if !ops.starts_with("scx_sis") {
        bail!("sched_ext enabled but ops is '{ops}', not scx_sis");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match StatsClient::new().connect(None) {
            Ok(mut c) => {
                c.request::<Metrics>("stats", vec![])
                    .context("scx_sis stats: first read failed")?;
                s.stats = Some(c);
                return Ok(s);
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => bail!("scx_sis stats socket does not answer: {e}"),
        }
    }
}

/// Write the configuration's complete tunables (defaults + its flags) into the live map.
fn tune(flags: &[String]) -> Result<()> {
    let map = tunables::open_live()?;
    let old = tunables::read(&map)?;
    let mut new = config::tunables_for(flags)?;
    new.generation = old.generation + 1;
    tunables::write(&map, &new)?;
    let back = tunables::read(&map)?;
    if tunables::describe(&back) != tunables::describe(&new) {
        bail!(
            "tunables did not take: wrote {}, read {}",
            tunables::describe(&new),
            tunables::describe(&back)
        );
    }
    Ok(())
}

/// Bring the machine into configuration `c`. Every scx_sis configuration starts its own
/// scheduler, as EEVDF and the peers start from a switch: the runs after a load pay for what
/// the load reset, so one that reused the scheduler before it would skip a cost its A/A copy
/// paid, a difference between identical configurations.
fn switch_to(active: &mut Active, c: &ConfigSpec, env: &Env) -> Result<()> {
    match &c.target {
        Target::Eevdf => {
            *active = Active::Nothing; // drop stops what ran
            if !wait_for(STOP_TIMEOUT, || scx_state() == "disabled") {
                bail!(
                    "sched_ext is {} (ops {}), not disabled",
                    scx_state(),
                    scx_ops()
                );
            }
        }
        Target::Sis { flags, trace } => {
            *active = Active::Nothing;
            if !wait_for(STOP_TIMEOUT, || scx_state() == "disabled") {
                bail!("the scheduler before {} did not unload", c.name);
            }
            *active = Active::Sis {
                trace: None,
                sched: start_sis(env, &c.name)?,
            };
            // Also switches off a trace a killed reader left on: no --force needed below.
            tune(flags)?;
            if *trace {
                if let Active::Sis { trace, .. } = active {
                    *trace = Some(Tracer::spawn(env)?);
                }
            }
        }
        Target::Peer { path, args } => {
            *active = Active::Nothing;
            if let Some(other) = preflight::loaded_scheduler() {
                bail!("cannot start {path}: {other} is loaded");
            }
            let log = env.dir.join(format!("{}.log", c.name));
            let exe = Path::new(path);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            *active = Active::Peer(Sched::spawn(exe, &args, &c.name, log, env.progress)?);
        }
    }
    // Every configuration alike, EEVDF and an A/A copy included: a settle that only some
    // configurations got would show up as a difference between identical ones.
    std::thread::sleep(SETTLE);
    wait_quiet();
    Ok(())
}

/// CPU time since boot from /proc/stat, in ticks: (idle and iowait, all).
fn cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    Some((v.get(3)? + v.get(4)?, v.iter().sum()))
}

/// Wait until one QUIET_WINDOW was at least QUIET_IDLE_SHARE idle, up to QUIET_TIMEOUT; each
/// window starts where the one before ended.
fn wait_quiet() {
    let deadline = Instant::now() + QUIET_TIMEOUT;
    let Some(mut before) = cpu_times() else {
        return;
    };
    while Instant::now() < deadline {
        std::thread::sleep(QUIET_WINDOW);
        let Some(now) = cpu_times() else {
            return;
        };
        let (idle, total) = (
            now.0.saturating_sub(before.0),
            now.1.saturating_sub(before.1),
        );
        if total > 0 && idle as f64 / total as f64 >= QUIET_IDLE_SHARE {
            return;
        }
        before = now;
    }
}

/// Is the configuration still in force (nothing ejected or exited, the reader of a traced
/// configuration still reading)?
fn check_active(active: &mut Active, c: &ConfigSpec) -> Result<()> {
    let state = scx_state();
    let (s, trace) = match (active, &c.target) {
        (Active::Nothing, Target::Eevdf) if state == "disabled" => return Ok(()),
        (Active::Nothing, _) => bail!("{}: no scheduler running (state {state})", c.name),
        (Active::Sis { sched, trace }, _) => (sched, trace.as_mut()),
        (Active::Peer(s), _) => (s, None),
    };
    if !s.alive() {
        bail!("{} exited: {}", s.name, log_tail(&s.log, 3));
    }
    if state != "enabled" {
        bail!("{}: sched_ext is {state}: {}", s.name, log_tail(&s.log, 3));
    }
    // A run of a traced configuration without its reader would measure no tracing at all.
    if let Target::Sis { trace: true, .. } = c.target {
        let Some(t) = trace else {
            bail!("{}: no scx_sis trace running", c.name);
        };
        if !t.alive() {
            bail!("scx_sis trace exited: {}", log_tail(&t.log, 3));
        }
        if !trace_on()? {
            bail!("the trace was switched off under its reader");
        }
    }
    Ok(())
}

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

fn measure(
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
    let customs = sized_customs(plan, &sizing);
    let cmd = workload::command(w, &sizing, &env.lab_exe.to_string_lossy(), &customs);
    r.command = match w {
        // What the user wrote, not the `sh -c` around it.
        Workload::Custom(_) => cmd.last().cloned().unwrap_or_default(),
        _ => cmd.join(" "),
    };
    let custom = customs.iter().find(|k| k.name == w.name());
    if let Err(e) = measure_into(&mut r, active, c, w, custom, &cmd, &sizing, env, stop) {
        r.ok = false;
        r.error = Some(format!("{e:#}"));
    }
    r
}

/// The plan's custom workloads, the presets among them sized for this machine.
fn sized_customs(plan: &Plan, sizing: &Sizing) -> Vec<Custom> {
    plan.custom
        .iter()
        .map(|c| {
            workload::preset(&c.name, sizing)
                .filter(|_| !c.tools.is_empty())
                .unwrap_or_else(|| c.clone())
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn measure_into(
    r: &mut RunRecord,
    active: &mut Active,
    c: &ConfigSpec,
    w: Workload,
    custom: Option<&Custom>,
    cmd: &[String],
    sizing: &Sizing,
    env: &Env,
    stop: &AtomicBool,
) -> Result<()> {
    check_active(active, c)?;
    let perf_out = env.dir.join("perf-stat.csv");
    let _ = fs::remove_file(&perf_out);
    let full = workload::perf_stat_command(&perf_out.to_string_lossy(), cmd);
    let timeout = Duration::from_secs_f64(120.0 + 10.0 * workload::expected_secs(w, sizing));

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
    let counts = workload::parse_perf_stat(&fs::read_to_string(&perf_out).unwrap_or_default());
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
    match w {
        Workload::Hackbench => {
            r.time_s = workload::parse_hackbench(&out.stdout);
            r.time_s.with_context(|| {
                format!("no 'Time:' in hackbench's output: {}", out.stdout.trim())
            })?;
        }
        Workload::Messaging | Workload::Pipe => {
            r.time_s = workload::parse_perf_bench(&out.stdout);
            r.time_s.with_context(|| {
                format!(
                    "no 'Total time:' in perf bench's output: {}",
                    out.stdout.trim()
                )
            })?;
        }
        Workload::Wakelat | Workload::WakelatLow => {
            let wl = workload::parse_wakelat(&out.stdout)
                .with_context(|| format!("no JSON in wakelat's output: {}", out.stdout.trim()))?;
            r.p50_us = wl.p50_us;
            r.p99_us = wl.p99_us;
            r.rps = Some(wl.rps);
        }
        Workload::Custom(name) => {
            // Its score is its wall time unless it names metrics (then both are kept).
            r.time_s = Some(r.wall_s);
            let text = format!("{}\n{}", out.stdout, out.stderr);
            for m in custom.map_or(&[][..], |c| &c.metrics[..]) {
                let v = workload::extract(m, &text).with_context(|| {
                    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                    format!(
                        "{name}: no number for --metric {}={} in its output: {}",
                        m.label,
                        m.regex,
                        lines[lines.len().saturating_sub(3)..].join(" | ")
                    )
                })?;
                r.metrics.insert(m.label.clone(), v);
            }
        }
    }
    if counts.migrations.is_none() {
        bail!(
            "perf stat gave no counts: {}",
            out.stderr.lines().last().unwrap_or("")
        );
    }
    r.ok = true;
    Ok(())
}

/// After `done` rounds with these records, is another round due? The first `plan.repeats`
/// always run; with `until_ci`, more follow until every verdict's interval is narrower than
/// the target or `max_repeats` rounds ran.
pub fn another_round(plan: &Plan, records: &[RunRecord], done: u32) -> bool {
    if done < plan.repeats {
        return true;
    }
    if done >= plan.max_rounds() {
        return false;
    }
    report::ci_status(records, &plan.meta(vec![])).is_some_and(|s| !s.narrow)
}

/// The configurations' order in round `round` (from 1) of `n`: the given order, rotated by
/// one more place each round. Over `n` rounds each configuration runs once in each place, so
/// what a place costs (the first run after EEVDF, a machine warmed by the one before) falls on
/// all of them alike.
fn round_order(n: usize, round: u32) -> impl Iterator<Item = usize> {
    let shift = (round.saturating_sub(1) as usize) % n.max(1);
    (0..n).map(move |i| (i + shift) % n)
}

/// Every round runs every configuration (round 1 first, then 2, ...), so drift spreads over
/// all of them. `sink` gets each record as soon as it is measured.
pub fn run_plan(
    plan: &Plan,
    env: &Env,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(&RunRecord) -> Result<()>,
) -> Result<()> {
    fs::create_dir_all(&env.dir)
        .with_context(|| format!("failed to create {}", env.dir.display()))?;
    let _stats = enable_bpf_stats();
    let per_round = plan.configs.len() * plan.workloads.len();
    let rounds = plan.max_rounds();
    let t0 = Instant::now();
    let mut done = 0usize;
    let mut records: Vec<RunRecord> = Vec::new();
    let mut active = Active::Nothing;
    let mut repeat = 0;
    while !stop.load(Ordering::Relaxed) && another_round(plan, &records, repeat) {
        repeat += 1;
        // The ETA counts the rounds promised: --repeats, or with --until-ci its budget.
        let total = rounds as usize * per_round;
        for c in round_order(plan.configs.len(), repeat).map(|i| &plan.configs[i]) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let switched = switch_to(&mut active, c, env);
            for &w in &plan.workloads {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let elapsed = t0.elapsed();
                let eta = if done == 0 {
                    "-".to_string()
                } else {
                    hms(elapsed.mul_f64((total - done) as f64 / done as f64))
                };
                eprintln!(
                    "{} [{}/{total}] repeat {repeat}/{rounds} config {} workload {w}: elapsed {}, ETA {eta}",
                    env.progress,
                    done + 1,
                    c.name,
                    hms(elapsed)
                );
                let r = match &switched {
                    Ok(()) => measure(&mut active, c, w, repeat, plan, env, stop),
                    Err(e) => {
                        let mut r = RunRecord::new(&c.name, c.kind(), w, repeat);
                        (r.cpus, r.topo, r.kernel) =
                            (env.cpus, env.topo.clone(), env.kernel.clone());
                        r.error = Some(format!("setting up {}: {e:#}", c.name));
                        r
                    }
                };
                if let Some(e) = &r.error {
                    eprintln!("{} run failed: {} {w}: {e}", env.progress, c.name);
                }
                sink(&r)?;
                records.push(r);
                done += 1;
            }
        }
        if let Some(s) = report::ci_status(&records, &plan.meta(vec![])) {
            eprintln!(
                "{} after round {repeat}: widest interval {:.1}% ({}), target {}%",
                env.progress, s.widest_pct, s.widest, s.target_pct
            );
        }
    }
    drop(active);
    eprintln!(
        "{} done: {done} runs in {repeat} rounds in {}",
        env.progress,
        hms(t0.elapsed())
    );
    if stop.load(Ordering::Relaxed) {
        bail!("interrupted after {done} runs");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::config::resolve;
    use crate::bench::verdict::tests::runs;

    #[test]
    fn each_configuration_runs_once_in_each_place_over_n_rounds() {
        let n = 4;
        assert_eq!(round_order(n, 1).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(round_order(n, 2).collect::<Vec<_>>(), [1, 2, 3, 0]);
        for place in 0..n {
            let mut at: Vec<usize> = (1..=n as u32)
                .map(|r| round_order(n, r).nth(place).unwrap())
                .collect();
            at.sort();
            assert_eq!(at, [0, 1, 2, 3], "place {place}");
        }
        assert_eq!(round_order(n, 5).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(round_order(0, 3).count(), 0);
    }

    /// How many rounds `another_round` lets a plan of eevdf and all-on under hackbench run,
    /// when every run's numbers scatter by `sigma` (log-normal) around the same medians.
    /// all-on under hackbench, --until-ci 10 with @max rounds at most.
    fn until_ci_plan(repeats: u32, max: u32) -> Plan {
        Plan {
            repeats,
            configs: resolve(Some(&["all-on".into()]), &[], &[], false).unwrap(),
            workloads: vec![Workload::Hackbench],
            quick: true,
            work: 1.0,
            custom: vec![],
            until_ci: Some(10.0),
            max_repeats: Some(max),
            baseline: "eevdf".into(),
        }
    }

    fn rounds_until_narrow(sigma: f64, repeats: u32, max: u32) -> (u32, Vec<RunRecord>) {
        let plan = until_ci_plan(repeats, max);
        let mut rng = fastrand::Rng::with_seed(11);
        let (mut records, mut done) = (Vec::new(), 0);
        while another_round(&plan, &records, done) {
            done += 1;
            for c in &plan.configs {
                let mut r = RunRecord::new(&c.name, c.kind(), Workload::Hackbench, done);
                r.ok = true;
                r.time_s = Some(runs(&mut rng, 1, 10.0, sigma)[0]);
                r.migrations = Some(runs(&mut rng, 1, 1000.0, sigma)[0] as u64);
                r.context_switches = Some(runs(&mut rng, 1, 5000.0, sigma)[0] as u64);
                records.push(r);
            }
        }
        (done, records)
    }

    #[test]
    fn until_ci_stops_once_every_interval_is_narrow_or_the_budget_is_spent() {
        // Quiet runs: the intervals are narrow after the --repeats rounds; no round is added.
        let (done, _) = rounds_until_narrow(0.005, 5, 30);
        assert_eq!(done, 5);
        // Noise no interval of 30 rounds can narrow to 10%: the budget ends it.
        let (done, records) = rounds_until_narrow(0.5, 3, 12);
        assert_eq!(done, 12);
        assert_eq!(records.len(), 24, "every round ran every configuration");
        // In between: more than --repeats, fewer than the budget, and narrow when it stopped.
        let (done, records) = rounds_until_narrow(0.05, 3, 40);
        assert!(done > 3 && done < 40, "{done} rounds");
        let plan_meta = |n| crate::bench::report::Meta {
            until_ci: Some(10.0),
            ..until_ci_plan(n, 40).meta(vec![])
        };
        let s = report::ci_status(&records, &plan_meta(3)).unwrap();
        assert!(
            s.narrow && s.widest_pct < 10.0,
            "{} {}",
            s.widest_pct,
            s.widest
        );
        let fewer: Vec<RunRecord> = records
            .iter()
            .filter(|r| r.repeat < done)
            .cloned()
            .collect();
        let s = report::ci_status(&fewer, &plan_meta(3)).unwrap();
        assert!(
            !s.narrow,
            "one round earlier it was still {}% wide",
            s.widest_pct
        );
    }

    #[test]
    fn bpf_delta_uses_programs_present_in_both_snapshots() {
        let a = BTreeMap::from([(1, (1000, 10)), (2, (50, 1))]);
        let b = BTreeMap::from([(1, (3000, 20)), (3, (999, 9))]);
        assert_eq!(bpf_delta(&a, &b), Some((200.0, 10)));
        assert_eq!(bpf_delta(&a, &a), None, "no calls");
        assert_eq!(bpf_delta(&BTreeMap::new(), &b), None);
    }

    #[test]
    fn bpf_total_sums_every_program_present_in_both_and_select_only_keeps_select_cpu() {
        let a = BTreeMap::from([
            (1, (true, 1000, 10)),
            (2, (false, 50, 1)),
            (4, (false, 7, 1)),
        ]);
        let b = BTreeMap::from([
            (1, (true, 3000, 20)),
            (2, (false, 450, 5)),
            (3, (false, 9, 9)),
        ]);
        assert_eq!(bpf_total_ns(&a, &b), Some(2000 + 400));
        assert_eq!(bpf_total_ns(&BTreeMap::new(), &b), None);
        assert_eq!(select_only(&b), BTreeMap::from([(1, (3000, 20))]));
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
        let mut r = RunRecord::new("x", "sis", Workload::Hackbench, 1);
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
