//! Command line: the scheduler's flags and their validation.

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Wakeup-latency workload (message and worker threads, schbench-style).
    Wakelat(LatencyOpts),
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

#[derive(Debug, Clone, Args)]
pub struct RunOpts {
    /// Time slice in microseconds.
    #[arg(short = 's', long, default_value_t = 3000,
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub slice_us: u64,

    /// Seconds between two per-LLC stats lines.
    #[arg(long, default_value_t = 1.0, value_parser = parse_interval)]
    pub stats_interval: f64,

    /// Bytes of the kernel's debug dump to print when the scheduler exits on an error.
    #[arg(long, default_value_t = 0)]
    pub exit_dump_len: u32,

    /// Print libbpf's debug output, the verifier log included.
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub policy: PolicyOpts,
}

/// The placement stages; each can be switched on or off.
#[derive(Debug, Clone, Args)]
pub struct PolicyOpts {
    /// Keep a wakee on its previous CPU when that CPU is almost idle.
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub prev_bias: Switch,

    /// "Almost idle": prev's utilization without the task, in per-mille of capacity.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub prev_bias_threshold: u32,

    /// Curve bounding the idle-CPU scan by LLC utilization.
    #[arg(long, value_enum, default_value_t = Curve::Quadratic)]
    pub sis_util: Curve,

    /// Period of the LLC utilization update, in microseconds.
    #[arg(long, default_value_t = 4000,
          value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub sis_util_period_us: u32,

    /// Prefer a fully idle SMT core in prev's LLC.
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub idle_core: Switch,

    /// On a synchronous wakeup, run the wakee on the waker's CPU (same LLC only).
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub wake_sync: Switch,

    /// Look for an idle CPU in other LLCs when prev's LLC has none.
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub cross_llc: Switch,
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
    fn defaults_turn_every_stage_on() {
        let cli = parse(&[]).unwrap();
        let p = cli.run.policy;
        assert!(p.prev_bias.is_on() && p.idle_core.is_on() && p.wake_sync.is_on());
        assert_eq!(p.sis_util, Curve::Quadratic);
        assert_eq!(cli.run.slice_us, 3000);
    }

    #[test]
    fn rejects_out_of_range_and_unknown_values() {
        assert!(parse(&["--prev-bias-threshold", "1001"]).is_err());
        assert!(parse(&["--sis-util", "cubic"]).is_err());
        assert!(parse(&["--slice-us", "5"]).is_err());
        assert!(parse(&["--stats-interval", "0"]).is_err());
        assert!(parse(&["--no-such-flag"]).is_err());
    }

    #[test]
    fn accepts_switches() {
        let cli = parse(&["--prev-bias", "off", "--sis-util", "linear"]).unwrap();
        assert!(!cli.run.policy.prev_bias.is_on());
        assert_eq!(cli.run.policy.sis_util, Curve::Linear);
    }
}
