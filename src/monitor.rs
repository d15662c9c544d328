//! `scx_sis monitor`: read the running daemon's stats over scx_stats and
//! print them as a table, JSON lines or a cost histogram.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use scx_stats::prelude::*;

use crate::cli::MonitorOpts;
use scx_sis::stats::Metrics;

pub fn run(opts: &MonitorOpts, shutdown: Arc<AtomicBool>) -> Result<()> {
    let mut client = StatsClient::new().connect(None).map_err(|_| {
        anyhow::anyhow!("no scx_sis instance is running (its stats socket does not answer)")
    })?;
    // The first read only starts this client's delta window.
    client
        .request::<Metrics>("stats", vec![])
        .context("failed to read stats")?;

    let interval = Duration::from_secs_f64(opts.interval);
    let mut printed = 0;
    while !shutdown.load(Ordering::Relaxed) && opts.count.is_none_or(|n| printed < n) {
        let until = Instant::now() + interval;
        while Instant::now() < until && !shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(interval));
        }
        let m: Metrics = client
            .request("stats", vec![])
            .context("the scx_sis instance stopped answering")?;
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
