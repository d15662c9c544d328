//! scx_sis: a sched_ext scheduler that rebuilds select_idle_sibling() as
//! switchable placement stages and shows, per LLC, where wakeups went.

mod bpf_intf;
mod bpf_skel;
mod cli;
mod curves;
mod latency;
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

use cli::{Cli, Command, RunOpts};
use scheduler::Scheduler;

fn run(opts: &RunOpts) -> Result<()> {
    preflight::check_can_load()?;
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("failed to install the SIGINT/SIGTERM handler")?;

    loop {
        let mut open_object = MaybeUninit::uninit();
        let mut sched = Scheduler::init(opts, &mut open_object)?;
        eprintln!("{} loaded", sched.describe());
        let exit = sched.run(shutdown.clone())?;
        if !exit.should_restart() {
            eprintln!("{} unloaded", Scheduler::ops_name());
            return Ok(());
        }
        eprintln!("the kernel asked for a restart (CPU hotplug?): reloading");
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        None => run(&cli.run),
        Some(Command::Wakelat(opts)) => latency::run(opts),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scx_sis: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
