//! `scx_sis monitor`: read the running daemon's stats over scx_stats and
//! print them as a table, JSON lines or a cost histogram.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::MonitorOpts;
use scx_sis::process::exit::Cause;
use scx_sis::process::instance::{self, Stats};
use scx_sis::stats::Metrics;

/// How often a monitor whose scheduler went away tries to reach the next one.
const RECONNECT_EVERY: Duration = Duration::from_millis(500);

pub fn run(opts: &MonitorOpts, shutdown: Arc<AtomicBool>) -> Result<()> {
    // Only the first connection must succeed: after it, the scheduler may reload (CPU hotplug,
    // suspend, systemctl restart) and the monitor follows it, as scx_utils' monitor_stats does.
    // A daemon that does not answer this first request (stopped, or another scheduler's) ends
    // the monitor with its name: a stopped one at once, a running one that does not answer at
    // instance::STATS_PATIENCE, or at Ctrl-C.
    let mut client = start(instance::connect_stats()?.stop_on(shutdown.clone()))?;

    let interval = Duration::from_secs_f64(opts.interval);
    let mut printed = 0;
    while !shutdown.load(Ordering::Relaxed) && opts.count.is_none_or(|n| printed < n) {
        let until = Instant::now() + interval;
        while Instant::now() < until && !shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(interval));
        }
        let m: Metrics = match client.read() {
            Ok(m) => m,
            Err(e) => {
                eprintln!(
                    "monitor: the scheduler stopped answering ({e:#}); waiting for it to come back"
                );
                match reconnect(&shutdown)? {
                    Some(c) => {
                        client = c;
                        eprintln!("monitor: reconnected; counting from the new instance's start");
                        continue;
                    }
                    None => break,
                }
            }
        };
        if opts.json {
            println!("{}", m.json()?);
        } else if opts.histogram {
            print!("{}", m.histogram());
        } else {
            print!("{}", m.table());
        }
        printed += 1;
    }
    Ok(())
}

/// A connected client whose delta window has begun (the first read only starts it).
fn start(mut client: Stats) -> Result<Stats> {
    client.read::<Metrics>()?;
    Ok(client)
}

/// A client of the next instance, or None when a stop was asked for first. A user who may not
/// reach it (root's socket) will not be let in by waiting: that fails at once.
fn reconnect(shutdown: &Arc<AtomicBool>) -> Result<Option<Stats>> {
    while !shutdown.load(Ordering::Relaxed) {
        match instance::connect_stats().and_then(|c| start(c.stop_on(shutdown.clone()))) {
            Ok(c) => return Ok(Some(c)),
            Err(e) if matches!(Cause::of(&e), Cause::Unsupported | Cause::Busy) => return Err(e),
            Err(_) => std::thread::sleep(RECONNECT_EVERY),
        }
    }
    Ok(None)
}
