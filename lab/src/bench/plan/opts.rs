//! The bench's command line: `scx_sis_lab bench` and its flags.

use std::path::PathBuf;

use clap::Args;

use super::config::{BASELINE, BUILTIN, ON_REQUEST, SCALING_DEFAULT, TRACE_FLAG};
use crate::bench::model::workload::Workload;
use crate::bench::workloads::{self, custom};

// The flags of `scx_sis_lab bench`; its about is the Bench variant's doc in main.rs.
#[derive(Debug, Clone, Args)]
pub struct BenchOpts {
    /// Run in the project's QEMU VM (scripts/vm/run.sh) instead of on this machine.
    #[arg(long)]
    pub vm: bool,

    /// --vm: kernel series to boot (scripts/kernels.sh fetch SERIES), e.g. 7 or 6.12.
    #[arg(long, default_value = "7")]
    pub kernel: String,

    /// --vm: topology (scripts/vm/run.sh --topo): 2llc-smt, 2llc, 1llc, 1llc-smt, 2numa, smp4,
    /// 2cpu.
    #[arg(long, default_value = "2llc-smt")]
    pub topo: String,

    /// --vm: QEMU's TCG threads (scripts/vm/run.sh --accel): single runs every vCPU on one host
    /// thread in turn, multi gives each vCPU its own (with --topo 2cpu on a 2-core host, a
    /// guest's times then hold no other vCPU's turn).
    #[arg(long, default_value = "single", value_parser = ["single", "multi"])]
    pub accel: String,

    /// --vm scaling run: one VM per CPU count, each a single LLC of that size; reports
    /// select_cpu cost and scan depth at low and high load.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: Vec<u32>,

    /// Runs of every (configuration, workload), interleaved.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: u32,

    #[arg(long, value_delimiter = ',', help = configs_help())]
    pub configs: Option<Vec<String>>,

    #[arg(long = "config", value_name = "NAME=FLAGS", help = config_help())]
    pub config: Vec<String>,

    /// Add another sched_ext scheduler binary with its arguments, e.g. 'bpfland-perf=/usr/bin/scx_bpfland -m performance' (NAME= optional: the file name by default).
    #[arg(long, value_name = "[NAME=]PATH [ARGS]")]
    pub peer: Vec<String>,

    /// Add schedulers of the scx project as peers by name, e.g. cosmos,bpfland: each is
    /// installed once from crates.io (cargo install --locked scx_NAME) into
    /// ${SCX_SIS_CACHE:-~/.cache/scx_sis}/peers and run as-is like --peer.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub peers: Vec<String>,

    #[arg(long, value_delimiter = ',', help = workloads_help())]
    pub workloads: Option<Vec<Workload>>,

    /// Add a custom workload: NAME='COMMAND ...' (run by sh -c under perf stat, like the
    /// others); scored by its wall time unless --metric names numbers in its output.
    #[arg(long = "workload", value_name = "NAME=COMMAND")]
    pub workload: Vec<String>,

    /// A custom workload's score from its output: NAME[:LABEL][:higher|:lower]='REGEX' (the last
    /// match; its first group if it has one). Lower is better unless :higher.
    #[arg(long, value_name = "NAME[:LABEL][:higher]=REGEX")]
    pub metric: Vec<String>,

    /// The configuration every verdict, ratio and bar is judged against, e.g. all-on to ask
    /// whether a change beats scx_sis's defaults; one of those run.
    #[arg(long, value_name = "NAME", default_value = BASELINE)]
    pub baseline: String,

    /// Also run a configuration (the baseline unless named) a second time, as if it were
    /// another (NAME-aa): the A/A comparison shows this machine's noise floor.
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    pub aa: Option<String>,

    /// Keep adding interleaved rounds (beyond --repeats) until every verdict's interval is
    /// narrower than PCT percent of its ratio, or --max-repeats is reached.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub until_ci: Option<f64>,

    /// --until-ci: the most rounds to run [default: 20].
    #[arg(long, value_name = "N", requires = "until_ci", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_repeats: Option<u32>,

    /// Directory for results.md, results.svg and runs.jsonl.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,

    /// Also write the plot (results.svg) to PATH, e.g. docs/bench-7.3.svg, the README's figure.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,

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

    /// The scx_sis binary to run (and, with --vm, to put in the guest) [default: $SCX_SIS_BIN,
    /// else scx_sis beside this binary].
    #[arg(long, value_name = "PATH")]
    pub bin: Option<PathBuf>,

    /// --vm: the scx_sis source tree, for scripts/vm/run.sh and the guest scripts [default:
    /// $SCX_SIS_REPO, else the tree holding this binary (in its target/release), else the
    /// current directory].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

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

fn parse_pct(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if v > 0.0 && v <= 1000.0 {
        Ok(v)
    } else {
        Err(format!("{v} is outside (0, 1000]"))
    }
}

fn names<T: ToString>(list: impl IntoIterator<Item = T>) -> String {
    list.into_iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// --configs' help, from the lists config.rs keeps.
fn configs_help() -> String {
    format!(
        "Configurations to run, by name [default: {BASELINE} and every built-in: {}; with \
         --cpus: {}]; built-in, run only when named: {} (scx_sis defaults while a `scx_sis \
         trace` session records). EEVDF is always added (the baseline)",
        names(BUILTIN.iter().map(|(n, _)| n)),
        names(SCALING_DEFAULT),
        names(ON_REQUEST.iter().map(|(n, _)| n)),
    )
}

/// --config's help, naming the trace pseudo-flag.
fn config_help() -> String {
    format!(
        "Add a scx_sis configuration: NAME=\"--flag value ...\" (scx_sis policy flags; \
         {TRACE_FLAG} also runs a `scx_sis trace` session while it is measured)"
    )
}

/// --workloads' help, from the registry of workloads/ and the presets custom.rs keeps.
fn workloads_help() -> String {
    format!(
        "Workloads: {}, the presets {} (when on the PATH) and any --workload NAME [default: {}; \
         with --cpus: {}; every --workload is added]",
        workloads::described(),
        names(custom::PRESETS),
        names(workloads::DEFAULT),
        names(workloads::SCALING_DEFAULT),
    )
}

/// BenchOpts from `bench`'s flags (for tests).
#[cfg(test)]
pub fn parse(args: &[&str]) -> Result<BenchOpts, clap::Error> {
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct TestCli {
        #[command(flatten)]
        opts: BenchOpts,
    }
    TestCli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accel_is_single_unless_multi_is_asked_for() {
        assert_eq!(parse(&["--vm"]).unwrap().accel, "single");
        assert_eq!(parse(&["--vm", "--accel", "multi"]).unwrap().accel, "multi");
        assert!(parse(&["--vm", "--accel", "kvm"]).is_err());
    }

    #[test]
    fn list_helps_name_every_builtin_and_workload() {
        let c = configs_help();
        assert!(
            c.contains("[default: eevdf and every built-in: all-on, prev-bias-off,"),
            "{c}"
        );
        assert!(
            c.contains("plain; with --cpus: all-on, sis-util-off]; built-in, run only when named: trace-on"),
            "{c}"
        );
        assert!(config_help().contains("--trace also runs"));
        assert_eq!(
            workloads_help(),
            "Workloads: hackbench, messaging, pipe, wakelat, wakelat-low, latency, latency-T, \
             latency-loop, shell, shell-T, shell-loop, spawn, spawn-loop, sleeps, sleeps-loop, \
             fifo, stats (latency, latency-T, latency-loop, shell, shell-T, shell-loop, spawn, \
             spawn-loop, sleeps, sleeps-loop, fifo, stats run under hackbench: cyclictest's \
             wait, a forking shell's wait, a start of scx_sis, ten 50 ms sleeps, a SCHED_FIFO \
             cyclictest, a stats request; -T under hackbench -T, -loop under a restarting \
             hackbench), the presets schbench, tbench (when on the PATH) and any --workload NAME \
             [default: hackbench, messaging, pipe, wakelat; with --cpus: wakelat-low, hackbench; \
             every --workload is added]"
        );
    }
}
