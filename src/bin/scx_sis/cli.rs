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
    /// A/B test two policies live on the running scheduler, under this machine's own load: A
    /// (the live tunables, or --a's) and B (--b's) take turns in ABBA order, window by window,
    /// and a table gives B/A on each measure with its interval and a verdict. The tunables from
    /// before come back at the end, on Ctrl-C or SIGTERM, and when the scheduler reloads.
    #[command(args_override_self = true, after_help = scx_sis::process::exit::help())]
    Ab(AbOpts),
}

#[derive(Debug, Clone, Args)]
pub struct RunOpts {
    /// Seconds between two stats lines on stdout, every LLC summed (scx's --stats); 0: none.
    /// `scx_sis monitor` shows the per-LLC table. [range: 0.1..=3600, or 0]
    #[arg(long, alias = "stats", value_name = "SECS", default_value_t = 1.0, value_parser = parse_stats_interval)]
    pub stats_interval: f64,

    /// Load nothing: show the running instance's stats every SECS (scx's --monitor).
    /// [range: 0.1..=3600]
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

    /// Size of the ring buffer `scx_sis trace` reads, in KiB. Kernel memory for as long as the
    /// scheduler runs; records that find it full are counted as dropped. Fixed at load.
    /// [range: 4..=1048576, a power of two]
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
    /// Seconds between two reports. [range: 0.1..=3600]
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

/// The command line as parsed, --help'd and packaged (man pages, completions): the derived
/// definitions, with each policy flag's range shown, and `tune`'s flags without the default a
/// start would take (tune changes only the flags given).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command()
        .mut_args(with_range)
        .mut_subcommand("tune", |tune| {
            tune.mut_args(with_range).mut_args(without_default)
        })
}

/// The policy flag `arg` with its range before its default: "... [range: LO..=HI] [default: D]".
fn with_range(arg: clap::Arg) -> clap::Arg {
    let range = scx_sis::policy::rows()
        .into_iter()
        .find(|r| Some(r.flag) == arg.get_long())
        .and_then(|r| r.range);
    let (Some((lo, hi)), Some(help)) = (range, arg.get_help().map(|h| h.to_string())) else {
        return arg;
    };
    let range = format!("[range: {lo}..={hi}]");
    let help = match help.rsplit_once(" [default: ") {
        Some((what, default)) => format!("{what} {range} [default: {default}"),
        None => format!("{help} {range}"),
    };
    arg.help(help)
}

/// `arg` without the " [default: D]" its help ends with.
fn without_default(arg: clap::Arg) -> clap::Arg {
    match arg.get_help().map(|h| h.to_string()) {
        Some(help) => match help.rsplit_once(" [default: ") {
            Some((what, _)) => {
                let what = what.to_string();
                arg.help(what)
            }
            None => arg,
        },
        None => arg,
    }
}

/// The parsed command line (usage errors exit 2 with clap's message, as program::parse_args).
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
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
    /// Seconds to record. [range: 0.1..=3600]
    #[arg(long, default_value_t = 5.0, value_parser = parse_interval)]
    pub duration: f64,

    /// Record only this process (its tgid), filtered in BPF. [range: 1..]
    #[arg(long, conflicts_with = "comm", value_parser = clap::value_parser!(u32).range(1..))]
    pub pid: Option<u32>,

    /// Record only tasks of this name (as in /proc/PID/comm, 1 to 15 bytes), filtered in BPF.
    #[arg(long, value_parser = parse_comm)]
    pub comm: Option<String>,

    /// The trace file: Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open.
    /// A regular file is replaced once written; a FIFO, a character device or - (stdout) is
    /// written in place, the summary then going to stderr.
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
    /// saying so, when it has them. [range: 1..=100000000]
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_records: u64,
}

#[derive(Debug, Clone, Args)]
pub struct AbOpts {
    /// B's policy flags, in one argument, applied to the live tunables: --b '--prev-bias off'.
    /// '' makes B the live tunables: an A/A, the noise floor.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub b: String,

    /// A's policy flags, in one argument, applied to the live tunables (default: none, the live
    /// tunables as they are).
    #[arg(
        long,
        value_name = "FLAGS",
        allow_hyphen_values = true,
        default_value = ""
    )]
    pub a: String,

    /// Seconds each window measures. [range: 0.1..=3600]
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_interval)]
    pub window: f64,

    /// Windows each side runs (a round is one window of A and one of B); below 5 a side the
    /// intervals are too narrow to trust. [range: 2..=1000]
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub rounds: u32,

    /// Seconds after each switch that no window measures, while the load adapts to the new
    /// policy. [range: 0..=3600]
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = parse_settle)]
    pub settle: f64,

    /// A shell command run at the end of each window; --metric's regex scores its output (its
    /// last match). Stopped after the window's length (at least 5 s).
    #[arg(long, value_name = "CMD", requires = "metric")]
    pub metric_cmd: Option<String>,

    /// The number --metric-cmd prints, as LABEL[:higher|:lower]=REGEX: the last match's first
    /// group (or the whole match) scores the window; lower is better unless :higher.
    #[arg(long, value_name = "LABEL[:higher]=REGEX", requires = "metric_cmd")]
    pub metric: Option<String>,

    /// Print the report as one JSON object (every window's values, the verdicts, the outcome).
    #[arg(long)]
    pub json: bool,

    /// Leave B in place at the end if it is better on METRIC with its interval clear of 1
    /// (METRIC: --metric's label, the default, or a measure's key such as migrations or
    /// wait_p99_us); otherwise the tunables from before come back.
    #[arg(long, value_name = "METRIC", num_args = 0..=1, default_missing_value = "")]
    pub adopt: Option<String>,
}

fn parse_settle(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} is outside 0..=3600 seconds")),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// A task name as the kernel stores it: 1 to TASK_COMM_LEN - 1 bytes (a longer one matches no
/// task, and an empty one would be no filter).
fn parse_comm(s: &str) -> Result<String, String> {
    let max = scx_sis::bpf_intf::sis_limits_SIS_COMM_LEN as usize - 1;
    if (1..=max).contains(&s.len()) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "a task name is 1 to {max} bytes, as the kernel stores it ('{s}' has {})",
            s.len()
        ))
    }
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
        use clap::FromArgMatches;
        let m = command()
            .try_get_matches_from(std::iter::once("scx_sis").chain(args.iter().copied()))?;
        Cli::from_arg_matches(&m)
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
        let help = command().render_long_help().to_string();
        let tail = &help[help
            .find("Exit status:")
            .expect("--help has the exit status")..];
        for r in &scx_sis::process::exit::TABLE {
            assert!(tail.contains(r.meaning), "--help lacks: {}", r.meaning);
        }
    }

    /// The help of `--flag` in `cmd` (its subcommand `sub`, if given), as `cli::command` builds it.
    fn flag_help(sub: Option<&str>, flag: &str) -> String {
        let root = command();
        let cmd = match sub {
            Some(name) => root.find_subcommand(name).unwrap().clone(),
            None => root,
        };
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(flag))
            .unwrap_or_else(|| panic!("no --{flag} in {sub:?}"));
        arg.get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn help_shows_every_numeric_flag_range() {
        for row in scx_sis::policy::rows().iter().filter(|r| !r.hidden) {
            let Some((lo, hi)) = row.range else { continue };
            let want = format!("[range: {lo}..={hi}]");
            let help = flag_help(None, row.flag);
            assert!(help.contains(&want), "--{}: {help}", row.flag);
            let help = flag_help(Some("tune"), row.flag);
            assert!(help.contains(&want), "tune --{}: {help}", row.flag);
        }
        for (sub, flag, want) in [
            (None, "stats-interval", "[range: 0.1..=3600, or 0]"),
            (None, "monitor", "[range: 0.1..=3600]"),
            (
                None,
                "trace-buffer-kib",
                "[range: 4..=1048576, a power of two]",
            ),
            (Some("monitor"), "interval", "[range: 0.1..=3600]"),
            (Some("trace"), "duration", "[range: 0.1..=3600]"),
            (Some("trace"), "max-records", "[range: 1..=100000000]"),
            (Some("trace"), "pid", "[range: 1..]"),
            (Some("trace"), "comm", "1 to 15 bytes"),
        ] {
            let help = flag_help(sub, flag);
            assert!(help.contains(want), "{sub:?} --{flag}: {help}");
        }
    }

    #[test]
    fn tune_help_shows_no_default_it_would_not_apply() {
        let mut root = command();
        let tune = root.find_subcommand_mut("tune").unwrap();
        let help = tune.render_long_help().to_string();
        assert!(!help.contains("[default:"), "{help}");
        assert!(help.contains("--prev-bias"), "{help}");
    }

    #[test]
    fn fault_injection_is_no_flag() {
        assert!(parse(&["tune", "--test-inject-error", "true"]).is_err());
        assert!(parse(&["--test-inject-error", "true"]).is_err());
        let help = command().render_long_help().to_string();
        assert!(!help.contains("inject"), "{help}");
    }

    #[test]
    fn trace_filters_out_of_range_are_usage_errors() {
        use clap::error::ErrorKind;
        for args in [
            &["trace", "--comm", ""][..],
            &["trace", "--comm", "nineteen-bytes-long"],
            &["trace", "--pid", "0"],
        ] {
            let e = parse(args).expect_err(&format!("{args:?} accepted"));
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert_ne!(e.kind(), ErrorKind::DisplayHelp);
        }
        assert!(parse(&["trace", "--comm", "fifteen-bytes-x"]).is_ok());
    }

    #[test]
    fn ab_takes_each_side_in_one_argument_and_a_metric_with_its_command() {
        let cli = parse(&[
            "ab",
            "--b",
            "--prev-bias off",
            "--window",
            "2",
            "--rounds",
            "8",
        ])
        .unwrap();
        let Some(Command::Ab(o)) = cli.command else {
            panic!("not an ab command")
        };
        assert_eq!((o.b.as_str(), o.a.as_str()), ("--prev-bias off", ""));
        assert_eq!((o.window, o.rounds, o.settle, o.adopt), (2.0, 8, 2.0, None));
        assert!(parse(&["ab"]).is_err(), "--b is required");
        assert!(parse(&["ab", "--b", "", "--rounds", "1"]).is_err());
        assert!(parse(&["ab", "--b", "", "--window", "0"]).is_err());
        assert!(
            parse(&["ab", "--b", "", "--metric", "x=1"]).is_err(),
            "no command"
        );
        assert!(
            parse(&["ab", "--b", "", "--metric-cmd", "true"]).is_err(),
            "no regex"
        );
        let cli = parse(&[
            "ab",
            "--b",
            "",
            "--metric-cmd",
            "c",
            "--metric",
            "x=1",
            "--adopt",
        ]);
        let Some(Command::Ab(o)) = cli.unwrap().command else {
            panic!("not an ab command")
        };
        assert_eq!(
            o.adopt.as_deref(),
            Some(""),
            "--adopt alone: the user's metric"
        );
        let cli = parse(&["ab", "--b", "", "--adopt", "migrations"]).unwrap();
        let Some(Command::Ab(o)) = cli.command else {
            panic!("not an ab command")
        };
        assert_eq!(o.adopt.as_deref(), Some("migrations"));
    }

    #[test]
    fn monitor_json_and_histogram_conflict() {
        assert!(parse(&["monitor", "--json", "--histogram"]).is_err());
        assert!(parse(&["monitor", "--json", "--interval", "0.5"]).is_ok());
    }
}
