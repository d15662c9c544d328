//! Configuration switching: bring the machine into one configuration (EEVDF, scx_sis with its
//! tunables and maybe a trace reader, or a peer scheduler), let it settle, and check that it is
//! still in force.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use scx_stats::prelude::*;

use super::env::Env;
use super::supervise::{log_tail, trace_on, wait_for, Sched, Tracer, STOP_TIMEOUT};
use crate::bench::plan::config::{self, ConfigSpec, Target};
use scx_sis::load::preflight::{self, scx_ops, scx_state};
use scx_sis::policy::tunables;
use scx_sis::process::pins;
use scx_sis::stats::Metrics;

/// After switching a configuration: let SIS_UTIL and the utilization averages follow.
const SETTLE: Duration = Duration::from_secs(1);
/// Then, before the configuration's first run, the machine this idle over one window: what a
/// switch left behind (a daemon's exit, the kernel freeing a scheduler) is done, so the first
/// configuration of a round does not pay for the last one of the round before. Bounded: a host
/// with background load runs anyway.
const QUIET_IDLE_SHARE: f64 = 0.9;
const QUIET_WINDOW: Duration = Duration::from_millis(250);
const QUIET_TIMEOUT: Duration = Duration::from_secs(5);

/// What this runner started for the configuration in force.
pub enum Active {
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
    let map = pins::open_live()?;
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

/// Stop what this runner started and require sched_ext disabled: EEVDF in force.
fn unload(active: &mut Active) -> Result<()> {
    *active = Active::Nothing; // drop stops what ran
    if !wait_for(STOP_TIMEOUT, || scx_state() == "disabled") {
        bail!(
            "sched_ext is {} (ops {}), not disabled",
            scx_state(),
            scx_ops()
        );
    }
    Ok(())
}

/// Bring the machine into configuration `c`. Every scx_sis configuration starts its own
/// scheduler, as EEVDF and the peers start from a switch: the runs after a load pay for what
/// the load reset, so one that reused the scheduler before it would skip a cost its A/A copy
/// paid, a difference between identical configurations.
pub fn switch_to(active: &mut Active, c: &ConfigSpec, env: &Env) -> Result<()> {
    match &c.target {
        Target::Eevdf => unload(active)?,
        Target::Sis { flags, trace } => {
            unload(active)?;
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
pub fn check_active(active: &mut Active, c: &ConfigSpec) -> Result<()> {
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
