//! Wakeup-latency workload: message threads each wake a group of worker
//! threads, wait for them all, and repeat; the workers record how long it took
//! from the wake call until they were running.

mod futex;
mod histogram;
mod report;
mod threads;

use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;

use histogram::Histogram;
use report::{Latencies, Report};
use threads::{Config, Shared};

#[derive(Debug, Clone, Args)]
pub struct LatencyOpts {
    /// Message threads, each driving its own group of workers.
    #[arg(long, default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub message_threads: u32,

    /// Worker threads per message thread.
    #[arg(long, default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub workers: u32,

    /// Seconds of measurement, after the warmup (fractions allowed).
    #[arg(long, default_value_t = 10.0, value_parser = parse_runtime)]
    pub runtime: f64,

    /// Seconds run before measuring, left out of the results.
    #[arg(long, default_value_t = 1.0, value_parser = parse_warmup)]
    pub warmup: f64,

    /// CPU time each worker spins per request, in microseconds.
    #[arg(long, default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub cputime_us: u64,

    /// Microseconds a message thread sleeps between two rounds.
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub sleep_us: u64,

    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn parse_seconds(s: &str, allow_zero: bool) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    let above_min = if allow_zero { v >= 0.0 } else { v > 0.0 };
    if above_min && v <= 3600.0 {
        Ok(v)
    } else if allow_zero {
        Err(format!("{v} is outside 0..=3600 seconds"))
    } else {
        Err(format!("{v} is outside (0, 3600] seconds"))
    }
}

fn parse_runtime(s: &str) -> Result<f64, String> {
    parse_seconds(s, false)
}

fn parse_warmup(s: &str) -> Result<f64, String> {
    parse_seconds(s, true)
}

/// Above this measured period, say on stderr when the warmup ends.
const PROGRESS_AFTER: Duration = Duration::from_secs(5);
/// How often the controlling thread checks whether a group gave up early.
const POLL: Duration = Duration::from_millis(50);

pub fn run(opts: &LatencyOpts) -> Result<()> {
    let report = measure(opts)?;
    if opts.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

/// Runs the workload: warmup, then the measured period; joins every thread.
fn measure(opts: &LatencyOpts) -> Result<Report> {
    threads::thread_cpu_time().context("CLOCK_THREAD_CPUTIME_ID is not available")?;
    let cfg = Config {
        workers: opts.workers as usize,
        cputime: Duration::from_micros(opts.cputime_us),
        sleep: Duration::from_micros(opts.sleep_us),
    };
    let warmup = Duration::from_secs_f64(opts.warmup);
    let runtime = Duration::from_secs_f64(opts.runtime);
    let shared = Shared::new(warmup.is_zero());

    let (groups, measured) = thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut spawn_error = None;
        for id in 0..opts.message_threads as usize {
            let (shared, cfg) = (&shared, &cfg);
            let spawned = thread::Builder::new()
                .name(format!("wakelat-{id}"))
                .stack_size(threads::STACK_SIZE)
                .spawn_scoped(scope, move || threads::run_message_thread(id, shared, cfg));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    spawn_error = Some(
                        anyhow::Error::new(e).context(format!("cannot start message thread {id}")),
                    );
                    break;
                }
            }
        }

        let measured = if spawn_error.is_none() {
            sleep_unless_stopped(&shared, warmup);
            shared.start_measuring();
            if runtime > PROGRESS_AFTER && !warmup.is_zero() && !shared.stopped() {
                eprintln!("wakelat: warmup done, measuring for {} s", opts.runtime);
            }
            let start = Instant::now();
            sleep_unless_stopped(&shared, runtime);
            start.elapsed()
        } else {
            Duration::ZERO
        };
        shared.stop();

        let mut groups = Vec::new();
        for handle in handles {
            groups.push(handle.join().expect("a message thread panicked"));
        }
        match spawn_error {
            Some(e) => Err(e),
            None => Ok((groups.into_iter().collect::<Result<Vec<_>>>()?, measured)),
        }
    })?;

    let mut wakeups = Histogram::new();
    let mut message_wakeups = Histogram::new();
    for group in &groups {
        wakeups.merge(&group.worker_wakeups);
        message_wakeups.merge(&group.message_wakeups);
    }
    Ok(Report {
        wakeup: Latencies::from_histogram(&wakeups),
        // One worker wakeup sample per completed request.
        requests_per_sec: wakeups.count() as f64 / measured.as_secs_f64(),
        message_threads: opts.message_threads,
        workers: opts.workers,
        runtime_s: measured.as_secs_f64(),
        warmup_s: opts.warmup,
        cputime_us: opts.cputime_us,
        sleep_us: opts.sleep_us,
        message_wakeup: Latencies::from_histogram(&message_wakeups),
    })
}

/// Sleeps for `total`, or less if a message thread stopped the run.
fn sleep_unless_stopped(shared: &Shared, total: Duration) {
    let deadline = Instant::now() + total;
    while !shared.stopped() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        thread::sleep(left.min(POLL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct TestCli {
        #[command(flatten)]
        opts: LatencyOpts,
    }

    fn parse(args: &[&str]) -> Result<LatencyOpts, clap::Error> {
        TestCli::try_parse_from(std::iter::once("wakelat").chain(args.iter().copied()))
            .map(|cli| cli.opts)
    }

    #[test]
    fn latency_defaults() {
        let o = parse(&[]).unwrap();
        assert_eq!((o.message_threads, o.workers), (2, 4));
        assert_eq!((o.runtime, o.warmup), (10.0, 1.0));
        assert_eq!((o.cputime_us, o.sleep_us, o.json), (100, 0, false));
    }

    #[test]
    fn latency_accepts_fractional_seconds() {
        let o = parse(&["--runtime", "0.5", "--warmup", "0", "--json"]).unwrap();
        assert_eq!((o.runtime, o.warmup, o.json), (0.5, 0.0, true));
    }

    #[test]
    fn latency_rejects_out_of_range_values() {
        for args in [
            &["--message-threads", "0"][..],
            &["--message-threads", "257"],
            &["--workers", "0"],
            &["--workers", "257"],
            &["--runtime", "0"],
            &["--runtime", "-1"],
            &["--runtime", "3600.5"],
            &["--runtime", "NaN"],
            &["--runtime", "soon"],
            &["--warmup", "-0.1"],
            &["--cputime-us", "1000001"],
        ] {
            assert!(parse(args).is_err(), "{args:?} accepted");
        }
    }

    #[test]
    fn latency_short_run_reports_samples() {
        let opts = parse(&["--runtime", "0.2", "--warmup", "0.05", "--workers", "2"]).unwrap();
        let report = measure(&opts).unwrap();
        assert!(report.wakeup.samples > 0 && report.wakeup.samples.is_multiple_of(2));
        assert!(report.requests_per_sec > 0.0);
        assert!(report.runtime_s >= 0.2);
    }
}
