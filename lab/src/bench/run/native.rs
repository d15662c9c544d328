//! A bench on this machine: the checks that it can run the plan (root, sched_ext, nothing
//! loaded, the tools), then the run, either saving the records here for the report or, as the
//! guest of `--vm`, printing each record on the console for the host. Also what a finished
//! bench hands the driver, here or in the VM (`Ran`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use scx_sis::{load::preflight, process::shutdown};

use super::env::Env;
use super::runner::{self, Judge};
use crate::bench::model::run_record::{self, RunRecord};
use crate::bench::plan::config::Target;
use crate::bench::plan::locate;
use crate::bench::plan::BenchOpts;
use crate::bench::plan::Plan;
use crate::bench::record::saved::{save_plan, Jsonl};
use crate::bench::workloads;

/// A finished bench, for the driver to report: its records, how it ran (the report's header
/// says it) and when it started.
pub struct Ran {
    pub records: Vec<RunRecord>,
    pub how: String,
    pub t0: Instant,
    pub end: End,
}

/// How a bench ended, given its records; the driver asks once the report is written, so that
/// the report comes first and a signal while it is written still counts.
pub type End = Box<dyn FnOnce(&[RunRecord]) -> Result<()>>;

/// What the first SIGINT/SIGTERM says; a second one quits at once.
pub const INTERRUPTED: &str = "bench: interrupted, stopping after cleanup (again to quit now)";

fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as u32
}

/// Can this machine run the plan natively? One clear line when not.
fn check(plan: &Plan) -> Result<()> {
    preflight::require_sched_ext("run the bench in the project's VM with: scx_sis_lab bench --vm")?;
    preflight::require_root(
        "load schedulers (try: sudo scx_sis_lab bench, or scx_sis_lab bench --vm)",
    )?;
    if let Some(name) = preflight::loaded_scheduler() {
        bail!("a sched_ext scheduler is already loaded ({name}): stop it first, EEVDF is the baseline");
    }
    let mut tools = vec!["perf"];
    tools.extend(plan.workloads.iter().flat_map(|&w| workloads::tools(w)));
    for t in tools {
        if !locate::in_path(t) {
            bail!("{t} not found in PATH (the bench runs its workloads under perf stat)");
        }
    }
    for c in plan
        .custom
        .iter()
        .filter(|c| plan.workloads.iter().any(|w| w.name() == c.name))
    {
        for t in &c.tools {
            if !locate::in_path(t) {
                bail!(
                    "workload {}: {t} not found in PATH (the bench runs it where it is \
                     installed; it ships none)",
                    c.name
                );
            }
        }
    }
    for c in &plan.configs {
        if let Target::Peer { path, .. } = &c.target {
            if !Path::new(path).is_file() {
                bail!("--peer {path}: no such file");
            }
        }
    }
    Ok(())
}

/// Where and how the runner runs on this machine.
fn env(opts: &BenchOpts, topo: String, dir: PathBuf, progress: &'static str) -> Result<Env> {
    Ok(Env {
        sched_exe: locate::scheduler_binary(opts.bin.as_deref())?,
        lab_exe: locate::this_binary()?,
        cpus: online_cpus(),
        topo,
        kernel: preflight::kernel_release(),
        dir,
        progress,
    })
}

/// Run the plan here: records go to OUT/runs.jsonl as they come.
pub fn run(opts: &BenchOpts, plan: &Plan, judge: Judge) -> Result<Ran> {
    check(plan)?;
    let stop = shutdown::flag_then_exit(INTERRUPTED)?;
    let mut jsonl = Jsonl::create(&opts.out)?;
    save_plan(&opts.out, plan, &[])?;
    let env = env(opts, "native".into(), opts.out.join("logs"), "bench:")?;
    let t0 = Instant::now();
    let mut records = Vec::new();
    let result = runner::run_plan(plan, &env, &stop, judge, &mut |r| {
        records.push(r.clone());
        jsonl.push(r)
    });
    Ok(Ran {
        records,
        how: "native".into(),
        t0,
        end: Box::new(move |_| result),
    })
}

/// The guest side of --vm: run the plan, print each record as a SIS-BENCH line.
pub fn guest(opts: &BenchOpts, judge: Judge) -> Result<()> {
    let plan = match std::env::var("SIS_BENCH_PLAN") {
        Ok(json) if !json.trim().is_empty() => {
            serde_json::from_str(&json).context("SIS_BENCH_PLAN is not a bench plan")?
        }
        _ => Plan::from_opts(opts)?,
    };
    check(&plan)?;
    let stop = shutdown::flag_then_exit(INTERRUPTED)?;
    let topo = std::env::var("SIS_TOPO").unwrap_or_else(|_| "vm".into());
    let env = env(
        opts,
        topo,
        PathBuf::from("/tmp/bench"),
        run_record::PROGRESS,
    )?;
    runner::run_plan(&plan, &env, &stop, judge, &mut |r| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{} {}", run_record::RECORD, serde_json::to_string(r)?)?;
        out.flush()?;
        Ok(())
    })
}
