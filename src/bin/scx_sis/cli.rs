//! scx_sis's command line: the scheduler's flags, its control subcommands and their validation.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use scx_sis::load::scheduler;
use scx_sis::policy::{PolicyOpts, Switch};

#[derive(Debug, Parser)]
#[command(
    name = "scx_sis",
    version = scheduler::version(),
    about = "sched_ext scheduler: select_idle_sibling() as switchable, measurable placement stages",
    after_help = scx_sis::process::exit::help(),
    args_conflicts_with_subcommands = true,
    // A flag given twice takes its last value, so that per-host flags can follow the defaults.
    args_override_self = true
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
    #[command(args_override_self = true, after_help = scx_sis::process::exit::help())]
    Tune(TuneOpts),
    /// Show the running scheduler's per-LLC stats, without loading anything.
    #[command(args_override_self = true, after_help = scx_sis::process::exit::help())]
    Monitor(MonitorOpts),
    /// Record every placement decision, move and run of the running scheduler for a while:
    /// a Perfetto trace, a summary of who moved and why, and optionally a picture.
    #[command(args_override_self = true, after_help = scx_sis::process::exit::help())]
    Trace(TraceOpts),
    /// Write the man pages and shell completions into DIR (for packaging).
    #[command(hide = true)]
    GenerateAssets {
        #[arg(value_name = "DIR")]
        dir: std::path::PathBuf,
    },
}

#[derive(Debug, Clone, Args)]
pub struct RunOpts {
    /// Seconds between two stats lines on stdout, every LLC summed (scx's --stats); 0: none.
    /// `scx_sis monitor` shows the per-LLC table.
    #[arg(long, alias = "stats", value_name = "SECS", default_value_t = 1.0, value_parser = parse_stats_interval)]
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

    /// Set SCX_OPS_ALLOW_QUEUED_WAKEUP (where the kernel knows it): remote wakeups may be
    /// queued on the wakee's CPU. Fixed at load.
    #[arg(long, value_name = "on|off", default_value = "off")]
    pub queued_wakeup: Switch,

    /// Size of the ring buffer `scx_sis trace` reads, in KiB (a power of two, 4 to 1048576).
    /// Kernel memory for as long as the scheduler runs; records that find it full are counted
    /// as dropped. Fixed at load.
    #[arg(long, value_name = "KIB", default_value_t = scx_sis::bpf_intf::sis_limits_SIS_TRACE_RING_KIB, value_parser = parse_ring_kib)]
    pub trace_buffer_kib: u32,

    /// Print every statistic the scheduler publishes, with its description, and exit.
    #[arg(long)]
    pub help_stats: bool,

    #[command(flatten)]
    pub policy: PolicyOpts,
}

impl RunOpts {
    pub fn scheduler_options(&self) -> scheduler::Options {
        scheduler::Options {
            stats_interval: (self.stats_interval > 0.0)
                .then(|| Duration::from_secs_f64(self.stats_interval)),
            exit_dump_len: self.exit_dump_len,
            verbose: self.verbose,
            queued_wakeup: self.queued_wakeup.is_on(),
            trace_buffer_kib: self.trace_buffer_kib,
        }
    }
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

/// A BPF ring buffer is a power-of-two number of pages (4 KiB here).
fn parse_ring_kib(s: &str) -> Result<u32, String> {
    let v: u32 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if (4..=1 << 20).contains(&v) && v.is_power_of_two() {
        Ok(v)
    } else {
        Err(format!("{v} is not a power of two in 4..=1048576 KiB"))
    }
}

#[derive(Debug, Clone, Args)]
pub struct TraceOpts {
    /// Seconds to record.
    #[arg(long, default_value_t = 5.0, value_parser = parse_interval)]
    pub duration: f64,

    /// Record only this process (its tgid), filtered in BPF.
    #[arg(long, conflicts_with = "comm")]
    pub pid: Option<u32>,

    /// Record only tasks of this name (as in /proc/PID/comm), filtered in BPF.
    #[arg(long)]
    pub comm: Option<String>,

    /// The trace file: Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open.
    #[arg(short, long, value_name = "FILE", default_value = "scx_sis-trace.json")]
    pub output: std::path::PathBuf,

    /// Also draw a window of the trace as per-CPU lanes, migrations as arrows, in this SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<std::path::PathBuf>,

    /// Print the summary as one JSON object (with the scheduler's counters over the window).
    #[arg(long)]
    pub json: bool,

    /// Take over a trace left switched on by a trace that was killed.
    #[arg(long)]
    pub force: bool,

    /// Keep at most this many records (about 150 bytes each in memory); the trace ends,
    /// saying so, when it has them.
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_records: u64,
}

/// As parse_interval, and 0 for no periodic output.
fn parse_stats_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => parse_interval(s).map_err(|e| format!("{e} (or 0 for none)")),
    }
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
    use scx_sis::policy::{Curve, Switch};

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
        assert!(parse(&["--stats-interval", "0.05"]).is_err());
        assert!(parse(&["--stats-interval", "-1"]).is_err());
        assert!(parse(&["monitor", "--interval", "0"]).is_err());
        assert!(parse(&["--no-such-flag"]).is_err());
        assert!(parse(&["tune", "--prev-bias", "maybe"]).is_err());
        assert!(parse(&["tune", "--sis-util-period-us", "0"]).is_err());
        assert!(parse(&["--balance-lag-us", "499"]).is_err());
        assert!(parse(&["tune", "--balance-lag-us", "1000001"]).is_err());
        assert!(parse(&["--balance-lag-us", "500"]).is_ok());
        assert!(parse(&["tune", "--balance-lag-us", "1000000"]).is_ok());
    }

    #[test]
    fn stats_interval_zero_switches_the_periodic_line_off() {
        let off = parse(&["--stats-interval", "0"]).unwrap().run;
        assert_eq!(off.scheduler_options().stats_interval, None);
        let every = parse(&["--stats", "60"]).unwrap().run;
        assert_eq!(
            every.scheduler_options().stats_interval,
            Some(Duration::from_secs(60))
        );
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
    fn help_stats_is_a_run_flag_and_the_lab_commands_are_gone() {
        assert!(parse(&["--help-stats"]).unwrap().run.help_stats);
        assert!(parse(&["bench", "--quick"]).is_err());
        assert!(parse(&["wakelat"]).is_err());
    }

    #[test]
    fn trace_takes_one_filter_and_a_sane_ring_size() {
        assert!(parse(&["trace", "--pid", "1", "--comm", "x"]).is_err());
        assert!(parse(&["trace", "--duration", "0"]).is_err());
        assert!(parse(&["trace", "--comm", "hackbench", "-o", "/tmp/t.json"]).is_ok());
        assert!(parse(&["--trace-buffer-kib", "64"]).is_ok());
        assert!(parse(&["--trace-buffer-kib", "100"]).is_err());
        assert!(parse(&["--trace-buffer-kib", "2"]).is_err());
    }

    #[test]
    fn a_repeated_flag_takes_its_last_value() {
        let cli = parse(&["--sis-util", "off", "--sis-util", "linear"]).unwrap();
        assert_eq!(cli.run.policy.sis_util, Some(Curve::Linear));
        let cli = parse(&["--stats-interval", "60", "--stats-interval", "5"]).unwrap();
        assert_eq!(cli.run.stats_interval, 5.0);
        let cli = parse(&["tune", "--prev-bias", "on", "--prev-bias", "off"]).unwrap();
        let Some(Command::Tune(t)) = cli.command else {
            panic!("not a tune command")
        };
        assert_eq!(t.policy.prev_bias, Some(Switch::Off));
        let cli = parse(&["trace", "--duration", "1", "--duration", "2"]).unwrap();
        let Some(Command::Trace(t)) = cli.command else {
            panic!("not a trace command")
        };
        assert_eq!(t.duration, 2.0);
    }

    #[test]
    fn help_ends_with_the_exit_status_table() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        let tail = &help[help
            .find("Exit status:")
            .expect("--help has the exit status")..];
        for r in &scx_sis::process::exit::TABLE {
            assert!(tail.contains(r.meaning), "--help lacks: {}", r.meaning);
        }
    }

    #[test]
    fn monitor_json_and_histogram_conflict() {
        assert!(parse(&["monitor", "--json", "--histogram"]).is_err());
        assert!(parse(&["monitor", "--json", "--interval", "0.5"]).is_ok());
    }
}
