//! `scx_sis_lab tune-storm`: what `scx_sis tune` does, as fast as it can, from several threads:
//! open the live tunables, take the pin directory's lock, read, change, write, let go. A test
//! of the snapshot's contract (no BPF decision reads a copy half written) needs thousands of
//! writes racing the callbacks; a `tune` process per write, started under an emulator, manages a
//! few a second.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;

use scx_sis::ab::marker;
use scx_sis::policy::tunables;
use scx_sis::process::pins;

#[derive(Debug, Clone, Args)]
pub struct TuneStormOpts {
    /// Seconds to keep writing.
    #[arg(long, default_value_t = 10.0)]
    pub secs: f64,

    /// Threads writing at once (they take turns through the lock, as `tune` runs do).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub writers: u32,

    /// Pause after each write, so that a `tune` waiting for the lock gets its turn.
    #[arg(long, default_value_t = 2)]
    pub pause_ms: u64,
}

pub fn run(opts: &TuneStormOpts) -> Result<()> {
    let until = Instant::now() + Duration::from_secs_f64(opts.secs);
    let writers: Vec<_> = (0..opts.writers)
        .map(|w| {
            let pause = Duration::from_millis(opts.pause_ms);
            std::thread::spawn(move || write_until(w, until, pause))
        })
        .collect();
    let mut writes = 0;
    for w in writers {
        writes += w
            .join()
            .map_err(|_| anyhow::anyhow!("a writer panicked"))??;
    }
    println!(
        "tune-storm: {writes} writes by {} writers in {:.1} s",
        opts.writers, opts.secs
    );
    Ok(())
}

/// Flip steal-min, the balance lag and prev-bias between two settings of this writer's own
/// until `until`; every write changes every one of them, so a copy half written mixes values.
fn write_until(writer: u32, until: Instant, pause: Duration) -> Result<u64> {
    let map = pins::open_live()?;
    let mut writes = 0;
    while Instant::now() < until {
        let _lock =
            pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
        let old = tunables::read(&map)?;
        let mut new = old;
        let odd = writes % 2 == 1;
        new.steal_min_us = 400 + writer * 2 + odd as u32;
        new.balance_lag_us = 6000 + writer * 2 + odd as u32;
        new.prev_bias = odd as u32;
        new.generation = old.generation + 1;
        tunables::write(&map, &new)?;
        drop(_lock);
        writes += 1;
        std::thread::sleep(pause);
    }
    Ok(writes)
}
