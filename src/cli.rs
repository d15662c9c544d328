//! Command line: the scheduler's flags, the subcommands and their validation.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::bench::BenchOpts;
use crate::latency::LatencyOpts;

#[derive(Debug, Parser)]
#[command(
    name = "scx_sis",
    version,
    about = "sched_ext scheduler: select_idle_sibling() as switchable, measurable placement stages",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Without a subcommand, scx_sis loads the scheduler and runs it.
    #[command(flatten)]
    pub run: RunOpts,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Change the tunables of the running scheduler (from another shell).
    Tune(TuneOpts),
    /// Show the running scheduler's per-LLC stats, without loading anything.
    Monitor(MonitorOpts),
    /// Wakeup-latency workload (message and worker threads, schbench-style).
    Wakelat(LatencyOpts),
    /// A/B benchmark: EEVDF vs scx_sis configurations (and peers) under hackbench, perf bench
    /// and wakelat; a markdown table and an SVG plot (--vm: in the project's VM).
    Bench(BenchOpts),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    pub fn is_on(self) -> bool {
        self == Switch::On
    }
}

/// How the SIS_UTIL scan depth follows the LLC's utilization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Curve {
    /// Unbounded: scan the whole LLC.
    Off,
    /// The RFC's v2: nr = llc - (llc-4)*2*util, never below 4.
    Linear,
    /// As merged in v6.0: nr = llc*(1-(util/0.85)^2), nothing above 85%.
    Quadratic,
}

/// A whole policy at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// The placement stages (and their own flags).
    Sis,
    /// What the kernel's scx_simple does: the kernel's default idle pick, one global FIFO.
    Plain,
}

#[derive(Debug, Clone, Args)]
pub struct RunOpts {
    /// Seconds between two per-LLC stats tables (scx's --stats).
    #[arg(long, alias = "stats", default_value_t = 1.0, value_parser = parse_interval)]
    pub stats_interval: f64,

    /// Load nothing: show the running instance's stats every SECS (scx's --monitor).
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub monitor: Option<f64>,

    /// Bytes of the kernel's debug dump to print when the scheduler exits on an error.
    #[arg(long, default_value_t = 0)]
    pub exit_dump_len: u32,

    /// Print libbpf's debug output, the verifier log included.
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub policy: PolicyOpts,
}

/// The tunables. At start an unset flag takes its default; `tune` changes only the flags given.
#[derive(Debug, Clone, Default, Args)]
pub struct PolicyOpts {
    /// Policy preset; `plain` is the baseline to compare against [default: sis].
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,

    /// Time slice in microseconds [default: 3000].
    #[arg(short = 's', long, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub slice_us: Option<u64>,

    /// Keep a wakee on its previous CPU when that CPU is almost idle [default: on].
    #[arg(long, value_enum)]
    pub prev_bias: Option<Switch>,

    /// "Almost idle": prev's utilization without the task, per-mille of capacity [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub prev_bias_threshold: Option<u32>,

    /// Curve bounding the idle-CPU scan by LLC utilization [default: quadratic].
    #[arg(long, value_enum)]
    pub sis_util: Option<Curve>,

    /// Period of the LLC utilization update, in microseconds [default: 4000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub sis_util_period_us: Option<u32>,

    /// Prefer a fully idle SMT core in prev's LLC [default: on].
    #[arg(long, value_enum)]
    pub idle_core: Option<Switch>,

    /// On a synchronous wakeup, run the wakee on the waker's CPU (same LLC) [default: on].
    #[arg(long, value_enum)]
    pub wake_sync: Option<Switch>,

    /// Look for an idle CPU in other LLCs when prev's LLC has none [default: on].
    #[arg(long, value_enum)]
    pub cross_llc: Option<Switch>,

    /// Queue wakeups that found no idle CPU in a queue shared by the LLC [default: off].
    #[arg(long, value_enum)]
    pub wakeq: Option<Switch>,

    /// Wakequeue shards per LLC, 0 = one per 4 CPUs of the LLC [default: 0].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub wakeq_shards: Option<u32>,

    /// vtime lag, in microseconds of nice-0 run time, by which a CPU's next task must lead another
    /// CPU's waiting task before the busy CPU pulls that task over; larger = fewer migrations,
    /// slower fairness [default: 12000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(500..=1_000_000))]
    pub balance_lag_us: Option<u32>,

    /// Test only: make the BPF scheduler fail with scx_bpf_error().
    #[arg(long, hide = true)]
    pub test_inject_error: Option<bool>,
}

#[derive(Debug, Clone, Args)]
pub struct TuneOpts {
    /// Print the current values and change nothing.
    #[arg(long)]
    pub show: bool,

    #[command(flatten)]
    pub policy: PolicyOpts,
}

#[derive(Debug, Clone, Args)]
pub struct MonitorOpts {
    /// Seconds between two reports.
    #[arg(long, default_value_t = 1.0, value_parser = parse_interval)]
    pub interval: f64,

    /// One JSON object per interval, for scripts.
    #[arg(long, conflicts_with = "histogram")]
    pub json: bool,

    /// The select_cpu cost histogram, bpftrace style.
    #[arg(long)]
    pub histogram: bool,

    /// Stop after this many reports (default: until Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if (0.1..=3600.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is outside 0.1..=3600 seconds"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("scx_sis").chain(args.iter().copied()))
    }

    #[test]
    fn run_flags_parse_without_subcommand() {
        let cli = parse(&["--prev-bias", "off", "--sis-util", "linear"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.policy.prev_bias, Some(Switch::Off));
        assert_eq!(cli.run.policy.sis_util, Some(Curve::Linear));
        assert_eq!(cli.run.policy.idle_core, None);
    }

    #[test]
    fn rejects_out_of_range_and_unknown_values() {
        assert!(parse(&["--prev-bias-threshold", "1001"]).is_err());
        assert!(parse(&["--sis-util", "cubic"]).is_err());
        assert!(parse(&["--slice-us", "5"]).is_err());
        assert!(parse(&["--stats-interval", "0"]).is_err());
        assert!(parse(&["--no-such-flag"]).is_err());
        assert!(parse(&["tune", "--prev-bias", "maybe"]).is_err());
        assert!(parse(&["tune", "--sis-util-period-us", "0"]).is_err());
        assert!(parse(&["--balance-lag-us", "499"]).is_err());
        assert!(parse(&["tune", "--balance-lag-us", "1000001"]).is_err());
        assert!(parse(&["--balance-lag-us", "500"]).is_ok());
        assert!(parse(&["tune", "--balance-lag-us", "1000000"]).is_ok());
    }

    #[test]
    fn tune_takes_only_the_given_flags() {
        let cli = parse(&["tune", "--prev-bias", "off"]).unwrap();
        let Some(Command::Tune(t)) = cli.command else {
            panic!("not a tune command")
        };
        assert_eq!(t.policy.prev_bias, Some(Switch::Off));
        assert_eq!(t.policy.sis_util, None);
        assert!(!t.show);
    }

    #[test]
    fn monitor_json_and_histogram_conflict() {
        assert!(parse(&["monitor", "--json", "--histogram"]).is_err());
        assert!(parse(&["monitor", "--json", "--interval", "0.5"]).is_ok());
    }
}
