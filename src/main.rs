//! scx_sis: a sched_ext scheduler that rebuilds select_idle_sibling() as
//! switchable placement stages and shows, per LLC, where wakeups went.

mod bench;
mod bpf_intf;
mod bpf_skel;
mod cli;
mod curves;
mod features;
mod latency;
mod metrics;
mod monitor;
mod preflight;
mod scheduler;
mod stats;
mod topology;
mod tunables;

use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;

use cli::{Cli, Command, MonitorOpts, RunOpts};
use scheduler::{Scheduler, OPS_NAME};

/// Set by SIGINT/SIGTERM; every long-running mode polls it.
fn shutdown_flag() -> Result<Arc<AtomicBool>> {
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("failed to install the SIGINT/SIGTERM handler")?;
    Ok(shutdown)
}

fn run(opts: &RunOpts) -> Result<()> {
    let _instance = preflight::check_can_load()?;
    let shutdown = shutdown_flag()?;
    eprintln!("{}", features::report());

    let mut restore = None;
    loop {
        let mut open_object = MaybeUninit::uninit();
        let mut sched = Scheduler::init(opts, &mut open_object, restore)?;
        eprintln!("{}", sched.describe());
        let exit = sched.run(shutdown.clone())?;
        if !exit.should_restart() {
            eprintln!("{OPS_NAME} unloaded");
            return Ok(());
        }
        restore = sched.tunables().ok();
        eprintln!(
            "the kernel asked for a restart (CPU hotplug?): reloading with the live tunables"
        );
    }
}

/// clap's usage errors, as one line like every other error.
fn parse_cli() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("scx_sis: {first}");
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    }
}

fn main() -> ExitCode {
    let cli = parse_cli();
    let result = match &cli.command {
        None => match cli.run.monitor {
            Some(interval) => shutdown_flag().and_then(|s| {
                let opts = MonitorOpts {
                    interval,
                    json: false,
                    histogram: false,
                    count: None,
                };
                monitor::run(&opts, s)
            }),
            None => run(&cli.run),
        },
        Some(Command::Tune(t)) => tunables::tune(t.show, &t.policy),
        Some(Command::Monitor(m)) => shutdown_flag().and_then(|s| monitor::run(m, s)),
        Some(Command::Wakelat(opts)) => latency::run(opts),
        Some(Command::Bench(opts)) => bench::run(opts),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scx_sis: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
