//! `scx_sis bench`: the A/B benchmark runner. EEVDF, scx_sis under named configurations
//! (switched live through the tunables map) and other sched_ext schedulers, each under the
//! same workloads, repeated and interleaved; a markdown table, raw JSON lines and an SVG plot.
//!
//! Natively it needs root and a sched_ext kernel. `--vm` boots the project's VM instead: the
//! guest runs `scx_sis bench --native-guest` (tests/vm/guest/bench.sh) and prints one
//! `SIS-BENCH {json}` line per run; the host renders them.

mod config;
mod plot;
mod record;
mod report;
mod runner;
mod stats;
mod vm;
mod workload;

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use config::{ConfigSpec, Target};
use record::RunRecord;
use workload::Workload;

#[derive(Debug, Clone, Args)]
pub struct BenchOpts {
    /// Run in the project's QEMU VM (scripts/vm/run.sh) instead of on this machine.
    #[arg(long)]
    pub vm: bool,

    /// --vm: kernel series to boot (scripts/kernels.sh fetch SERIES), e.g. 7 or 6.12.
    #[arg(long, default_value = "7")]
    pub kernel: String,

    /// --vm: topology (scripts/vm/run.sh --topo): 2llc-smt, 2llc, 1llc, 1llc-smt, 2numa, smp4.
    #[arg(long, default_value = "2llc-smt")]
    pub topo: String,

    /// --vm scaling run: one VM per CPU count, each a single LLC of that size; reports
    /// select_cpu cost and scan depth at low and high load.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: Vec<u32>,

    /// Runs of every (configuration, workload), interleaved.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: u32,

    /// Configurations to run, by name [default: eevdf and every built-in: all-on,
    /// prev-bias-off, sis-util-off, sis-util-linear, sis-util-quadratic, wakeq-1, wakeq-n,
    /// plain; with --cpus: all-on, sis-util-off]. EEVDF is always added (the baseline).
    #[arg(long, value_delimiter = ',')]
    pub configs: Option<Vec<String>>,

    /// Add a scx_sis configuration: NAME="--flag value ..." (scx_sis policy flags).
    #[arg(long = "config", value_name = "NAME=FLAGS")]
    pub config: Vec<String>,

    /// Add another sched_ext scheduler binary, run without arguments (e.g. scx_bpfland).
    #[arg(long, value_name = "PATH")]
    pub peer: Vec<PathBuf>,

    /// Workloads: hackbench, messaging, pipe, wakelat, wakelat-low [default: hackbench,
    /// messaging, pipe, wakelat; with --cpus: wakelat-low, hackbench].
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<Workload>>,

    /// Directory for results.md, results.svg and runs.jsonl.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,

    /// Short runs (about a fifth of the loops, 2 s of wakelat).
    #[arg(long)]
    pub quick: bool,

    /// Multiply the workloads' loop counts [default: 1 in the VM (sized for QEMU TCG: 5-15 s
    /// a run), 30 natively (~100x faster)].
    #[arg(long, value_parser = parse_work)]
    pub work: Option<f64>,

    /// --vm: seconds before the VM is killed [default: estimated from the matrix].
    #[arg(long)]
    pub timeout: Option<u64>,

    /// Run nothing: render DIR/runs.jsonl (with DIR/plan.json) into DIR/results.md and .svg again.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["vm", "cpus"])]
    pub render: Option<PathBuf>,

    /// Internal: the guest side of --vm; prints SIS-BENCH lines (plan from $SIS_BENCH_PLAN).
    #[arg(long, hide = true)]
    pub native_guest: bool,
}

fn parse_work(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v > 0.0 && v <= 1000.0 {
        Ok(v)
    } else {
        Err(format!("{v} is outside (0, 1000]"))
    }
}

/// Everything the guest needs to run the matrix; passed as JSON through the VM's environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub repeats: u32,
    pub configs: Vec<ConfigSpec>,
    pub workloads: Vec<Workload>,
    pub quick: bool,
    pub work: f64,
}

impl Plan {
    fn from_opts(opts: &BenchOpts) -> Result<Plan> {
        let scaling = !opts.cpus.is_empty();
        let peers: Vec<String> = opts
            .peer
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let configs = config::resolve(opts.configs.as_deref(), &opts.config, &peers, scaling)?;
        let mut workloads = opts.workloads.clone().unwrap_or_else(|| {
            if scaling {
                workload::SCALING_DEFAULT.to_vec()
            } else {
                workload::DEFAULT.to_vec()
            }
        });
        let mut seen = Vec::new();
        workloads.retain(|w| {
            let first = !seen.contains(w);
            seen.push(*w);
            first
        });
        if workloads.is_empty() {
            bail!("no workload to run");
        }
        let in_vm = opts.vm || opts.native_guest;
        Ok(Plan {
            repeats: opts.repeats,
            configs,
            workloads,
            quick: opts.quick,
            work: opts.work.unwrap_or(if in_vm { 1.0 } else { 30.0 }),
        })
    }

    fn meta(&self, notes: Vec<String>) -> report::Meta {
        report::Meta {
            configs: self
                .configs
                .iter()
                .map(|c| (c.name.clone(), c.describe()))
                .collect(),
            workloads: self.workloads.clone(),
            repeats: self.repeats,
            notes,
        }
    }
}

pub fn run(opts: &BenchOpts) -> Result<()> {
    if opts.native_guest {
        return guest(opts);
    }
    if let Some(dir) = &opts.render {
        return rerender(dir);
    }
    if !opts.cpus.is_empty() && !opts.vm {
        bail!("--cpus boots one VM per CPU count: add --vm");
    }
    let plan = Plan::from_opts(opts)?;
    if opts.vm {
        vm::run(opts, &plan)
    } else {
        native(opts, &plan)
    }
}

/// SIGINT/SIGTERM: finish (or kill) the current run, stop the scheduler, render what ran.
fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        eprintln!("bench: interrupted, stopping after cleanup (again to quit now)");
    })
    .context("failed to install the SIGINT/SIGTERM handler")?;
    Ok(stop)
}

fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as u32
}

fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            let f = d.join(tool);
            f.is_file()
                && fs::metadata(&f).is_ok_and(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                })
        })
    })
}

/// Can this machine run the plan natively? One clear line when not.
fn preflight(plan: &Plan) -> Result<()> {
    if !Path::new("/sys/kernel/sched_ext").exists() {
        bail!(
            "kernel {} has no sched_ext (/sys/kernel/sched_ext is missing): run the bench in the \
             project's VM with: scx_sis bench --vm",
            crate::preflight::kernel_release()
        );
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "must run as root to load schedulers (try: sudo scx_sis bench, or scx_sis bench --vm)"
        );
    }
    if let Some(name) = crate::preflight::loaded_scheduler() {
        bail!("a sched_ext scheduler is already loaded ({name}): stop it first, EEVDF is the baseline");
    }
    let mut tools = vec!["perf"];
    tools.extend(plan.workloads.iter().filter_map(|w| w.tool()));
    for t in tools {
        if !in_path(t) {
            bail!("{t} not found in PATH (the bench runs its workloads under perf stat)");
        }
    }
    for c in &plan.configs {
        if let Target::Peer { path } = &c.target {
            if !Path::new(path).is_file() {
                bail!("--peer {path}: no such file");
            }
        }
    }
    Ok(())
}

fn self_exe() -> Result<String> {
    Ok(std::env::current_exe()
        .context("cannot find the scx_sis binary")?
        .to_string_lossy()
        .into_owned())
}

/// Write results.md and results.svg from the records; returns the markdown.
fn render(out: &Path, records: &[RunRecord], meta: &report::Meta) -> Result<String> {
    let md = report::markdown(records, meta);
    fs::write(out.join("results.md"), &md)
        .with_context(|| format!("failed to write {}", out.join("results.md").display()))?;
    let scaling = records
        .iter()
        .map(|r| r.cpus)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let panels = if scaling {
        plot::scaling_panels(records, meta)
    } else {
        plot::ratio_panels(records, meta)
    };
    let caption = format!(
        "scx_sis bench: {}\nbars: median, whiskers: min-max over {} repeat(s)",
        meta.notes.first().map_or("", String::as_str),
        meta.repeats
    );
    fs::write(out.join("results.svg"), plot::svg(&panels, &caption))
        .with_context(|| format!("failed to write {}", out.join("results.svg").display()))?;
    Ok(md)
}

/// OUT/plan.json: the plan and the report's notes, for --render.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    plan: Plan,
    notes: Vec<String>,
}

fn save_plan(out: &Path, plan: &Plan, notes: &[String]) -> Result<()> {
    let saved = Saved {
        plan: plan.clone(),
        notes: notes.to_vec(),
    };
    let p = out.join("plan.json");
    fs::write(&p, serde_json::to_string_pretty(&saved)?)
        .with_context(|| format!("failed to write {}", p.display()))
}

fn rerender(dir: &Path) -> Result<()> {
    let p = dir.join("plan.json");
    let saved: Saved = serde_json::from_str(
        &fs::read_to_string(&p).with_context(|| format!("failed to read {}", p.display()))?,
    )
    .with_context(|| format!("{} is not a bench plan", p.display()))?;
    let p = dir.join("runs.jsonl");
    let text = fs::read_to_string(&p).with_context(|| format!("failed to read {}", p.display()))?;
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str::<RunRecord>(l)
                .with_context(|| format!("{}:{}: not a run record", p.display(), i + 1))
        })
        .collect::<Result<Vec<_>>>()?;
    println!("{}", render(dir, &records, &saved.plan.meta(saved.notes))?);
    Ok(())
}

/// runs.jsonl, one line per run as it arrives.
struct Jsonl(File);

impl Jsonl {
    fn create(out: &Path) -> Result<Jsonl> {
        fs::create_dir_all(out).with_context(|| format!("failed to create {}", out.display()))?;
        let p = out.join("runs.jsonl");
        Ok(Jsonl(File::create(&p).with_context(|| {
            format!("failed to create {}", p.display())
        })?))
    }

    fn push(&mut self, r: &RunRecord) -> Result<()> {
        writeln!(self.0, "{}", serde_json::to_string(r)?)?;
        self.0.flush()?;
        Ok(())
    }
}

fn where_it_ran(records: &[RunRecord], how: &str) -> String {
    let cpus: std::collections::BTreeSet<u32> = records.iter().map(|r| r.cpus).collect();
    match records.first() {
        Some(r) if cpus.len() > 1 => {
            let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
            format!(
                "kernel {} ({how}, one LLC of N = {} CPUs)",
                r.kernel,
                list.join(", ")
            )
        }
        Some(r) => format!(
            "kernel {} ({how}, topology {}, {} CPUs)",
            r.kernel, r.topo, r.cpus
        ),
        None => format!("nothing ran ({how})"),
    }
}

fn hms(secs: u64) -> String {
    format!("{}m{:02}s", secs / 60, secs % 60)
}

fn native(opts: &BenchOpts, plan: &Plan) -> Result<()> {
    preflight(plan)?;
    let stop = stop_flag()?;
    let mut jsonl = Jsonl::create(&opts.out)?;
    save_plan(&opts.out, plan, &[])?;
    let env = runner::Env {
        self_exe: self_exe()?,
        cpus: online_cpus(),
        topo: "native".into(),
        kernel: crate::preflight::kernel_release(),
        dir: opts.out.join("logs"),
        progress: "bench:",
    };
    let t0 = Instant::now();
    let mut records = Vec::new();
    let result = runner::run_plan(plan, &env, &stop, &mut |r| {
        records.push(r.clone());
        jsonl.push(r)
    });
    write_results(&opts.out, plan, &records, "native", t0)?;
    result
}

/// Save the plan, render results.md / results.svg and print the table: the
/// last step of a native run and of a `--vm` run alike.
fn write_results(
    out: &Path,
    plan: &Plan,
    records: &[RunRecord],
    how: &str,
    t0: Instant,
) -> Result<()> {
    let notes = vec![
        where_it_ran(records, how),
        format!("wall time {}", hms(t0.elapsed().as_secs())),
    ];
    save_plan(out, plan, &notes)?;
    let md = render(out, records, &plan.meta(notes))?;
    println!("{md}");
    eprintln!(
        "bench: wrote {0}/results.md, {0}/results.svg, {0}/runs.jsonl",
        out.display()
    );
    Ok(())
}

/// The guest side of --vm: run the plan, print each record as a SIS-BENCH line.
fn guest(opts: &BenchOpts) -> Result<()> {
    let plan = match std::env::var("SIS_BENCH_PLAN") {
        Ok(json) if !json.trim().is_empty() => {
            serde_json::from_str(&json).context("SIS_BENCH_PLAN is not a bench plan")?
        }
        _ => Plan::from_opts(opts)?,
    };
    preflight(&plan)?;
    let stop = stop_flag()?;
    let env = runner::Env {
        self_exe: self_exe()?,
        cpus: online_cpus(),
        topo: std::env::var("SIS_TOPO").unwrap_or_else(|_| "vm".into()),
        kernel: crate::preflight::kernel_release(),
        dir: PathBuf::from("/tmp/bench"),
        progress: vm::PROGRESS,
    };
    runner::run_plan(&plan, &env, &stop, &mut |r| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{} {}", vm::RECORD, serde_json::to_string(r)?)?;
        out.flush()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct TestCli {
        #[command(flatten)]
        opts: BenchOpts,
    }

    fn parse(args: &[&str]) -> Result<BenchOpts, clap::Error> {
        TestCli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .map(|c| c.opts)
    }

    #[test]
    fn defaults_make_the_full_matrix() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.repeats, o.kernel.as_str(), o.topo.as_str()),
            (3, "7", "2llc-smt")
        );
        let p = Plan::from_opts(&o).unwrap();
        assert_eq!(p.configs.len(), 9);
        assert_eq!(p.workloads, workload::DEFAULT);
        assert_eq!(p.work, 30.0, "native default");
        let p = Plan::from_opts(&parse(&["--vm"]).unwrap()).unwrap();
        assert_eq!(p.work, 1.0);
    }

    #[test]
    fn lists_and_extras_parse() {
        let o = parse(&[
            "--vm",
            "--configs",
            "eevdf,all-on",
            "--workloads",
            "hackbench,wakelat-low",
            "--config",
            "wq2=--wakeq on --wakeq-shards 2",
            "--peer",
            "/x/scx_bpfland",
            "--cpus",
            "4,8",
            "--quick",
        ])
        .unwrap();
        assert_eq!(o.cpus, vec![4, 8]);
        let p = Plan::from_opts(&o).unwrap();
        let names: Vec<&str> = p.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["eevdf", "all-on", "wq2", "scx_bpfland"]);
        assert_eq!(p.workloads, [Workload::Hackbench, Workload::WakelatLow]);
        // The plan survives the trip through the VM's environment.
        let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn bad_values_are_rejected() {
        assert!(parse(&["--workloads", "fio"]).is_err());
        assert!(parse(&["--repeats", "0"]).is_err());
        assert!(parse(&["--cpus", "0"]).is_err());
        assert!(parse(&["--work", "-1"]).is_err());
        let o = parse(&["--cpus", "4"]).unwrap();
        let e = run(&o).unwrap_err();
        assert!(e.to_string().contains("add --vm"), "{e}");
    }
}
