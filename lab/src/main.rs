//! scx_sis_lab: the lab around the scheduler. `bench` compares EEVDF, scx_sis configurations
//! and other sched_ext schedulers under the same workloads; `wakelat` and `probe` (latency,
//! spawn and sleeps under a background load) are some of those workloads; `trace-check` reads
//! back a trace `scx_sis trace` wrote; `tune-storm` writes the running scheduler's tunables as
//! fast as it can, for the tests. Built on the scx_sis library; it runs the scx_sis binary,
//! never copies it.

mod bench;
mod latency;
mod probe;
mod trace_check;
mod tune_storm;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use bench::BenchOpts;
use latency::LatencyOpts;
use probe::ProbeOpts;
use scx_sis::process::program;
use trace_check::TraceCheckOpts;
use tune_storm::TuneStormOpts;

#[derive(Debug, Parser)]
#[command(
    name = "scx_sis_lab",
    version,
    about = "The scx_sis lab: an A/B bench of sched_ext schedulers and a wakeup-latency workload"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A/B benchmark: EEVDF vs scx_sis configurations (and peers) under hackbench, perf bench,
    /// wakelat or any command; verdicts with bootstrap intervals, a markdown report and an SVG
    /// plot (--vm: in the project's VM).
    Bench(Box<BenchOpts>),
    /// Wakeup-latency workload (message and worker threads, schbench-style).
    Wakelat(LatencyOpts),
    /// What a woken or a new task waits under load: cyclictest's wakeup latency, a program's
    /// start or a row of sleeps, while a background command (e.g. hackbench) runs again and
    /// again; one JSON object.
    Probe(ProbeOpts),
    /// Read a trace file of `scx_sis trace` back and print what it holds, as JSON; fail if it is
    /// not a trace or a flow arrow lost an end.
    TraceCheck(TraceCheckOpts),
    /// Write the running scheduler's tunables as fast as it can from several threads, each
    /// write as `scx_sis tune` makes it (the lock, read, change, write), for SECS.
    TuneStorm(TuneStormOpts),
}

fn main() -> ExitCode {
    let cli: Cli = program::parse_args();
    let result = match &cli.command {
        Command::Bench(opts) => bench::run(opts),
        Command::Wakelat(opts) => latency::run(opts),
        Command::Probe(opts) => probe::run(opts),
        Command::TraceCheck(opts) => trace_check::run(opts),
        Command::TuneStorm(opts) => tune_storm::run(opts),
    };
    program::exit_code("scx_sis_lab", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subcommands_parse_and_nothing_else() {
        let parse =
            |args: &[&str]| Cli::try_parse_from(std::iter::once("lab").chain(args.to_vec()));
        assert!(matches!(
            parse(&["bench", "--quick"]).map(|c| c.command),
            Ok(Command::Bench(_))
        ));
        assert!(matches!(
            parse(&["wakelat", "--runtime", "1"]).map(|c| c.command),
            Ok(Command::Wakelat(_))
        ));
        assert!(matches!(
            parse(&["trace-check", "/tmp/t.json"]).map(|c| c.command),
            Ok(Command::TraceCheck(_))
        ));
        assert!(matches!(
            parse(&["tune-storm", "--secs", "2", "--writers", "4"]).map(|c| c.command),
            Ok(Command::TuneStorm(_))
        ));
        assert!(matches!(
            parse(&[
                "probe",
                "latency",
                "--background",
                "hackbench -l 5",
                "--count",
                "9"
            ])
            .map(|c| c.command),
            Ok(Command::Probe(_))
        ));
        assert!(parse(&["probe", "naps"]).is_err());
        assert!(parse(&["probe", "sleeps", "--count", "0"]).is_err());
        assert!(parse(&["tune-storm", "--writers", "0"]).is_err());
        assert!(parse(&[]).is_err());
        assert!(parse(&["tune"]).is_err());
    }
}
