//! scx_sis: the scheduler and its controls. Without a subcommand it loads the BPF scheduler and
//! runs it; `tune` changes the running instance's tunables, `monitor` shows its stats, `trace`
//! records its placement decisions.
//! The policy core is the library (src/lib.rs); the lab is the scx_sis_lab binary.

mod cli;
mod monitor;
mod trace_cmd;
mod tune;

use std::mem::MaybeUninit;
use std::process::ExitCode;

use anyhow::Result;

use cli::{Cli, Command, MonitorOpts, RunOpts};
use scx_sis::scheduler::{Scheduler, OPS_NAME};
use scx_sis::{features, preflight, program, shutdown, stats, tunables};

fn run(opts: &RunOpts) -> Result<()> {
    let _instance = preflight::check_can_load()?;
    let shutdown = shutdown::flag()?;
    eprintln!("{}", features::report());

    let sched_opts = opts.scheduler_options();
    let mut restore = None;
    loop {
        let initial =
            restore.unwrap_or_else(|| tunables::apply(&tunables::defaults(), &opts.policy));
        let mut open_object = MaybeUninit::uninit();
        let mut sched = Scheduler::init(&sched_opts, &mut open_object, &initial)?;
        eprintln!("{}", sched.describe());
        let exit = sched.run(shutdown.clone())?;
        if !exit.should_restart() {
            eprintln!("{OPS_NAME} unloaded");
            return Ok(());
        }
        // The live tunables, so that changes made with `tune` survive the reload.
        restore = sched.tunables().ok();
        eprintln!(
            "the kernel asked for a restart (CPU hotplug?): reloading with the live tunables"
        );
    }
}

fn main() -> ExitCode {
    let cli: Cli = program::parse_args("scx_sis");
    let result = match &cli.command {
        None if cli.run.help_stats => stats::describe(&mut std::io::stdout()),
        None => match cli.run.monitor {
            Some(interval) => shutdown::flag().and_then(|s| {
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
        Some(Command::Tune(t)) => tune::run(t.show, &t.policy),
        Some(Command::Monitor(m)) => shutdown::flag().and_then(|s| monitor::run(m, s)),
        Some(Command::Trace(t)) => {
            // Not flag_then_exit: exiting at a second Ctrl-C would leave the trace switched on.
            shutdown::flag().and_then(|s| trace_cmd::run(t, s))
        }
    };
    program::exit_code("scx_sis", result)
}
