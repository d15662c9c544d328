//! scx_sis: the scheduler and its controls. Without a subcommand it loads the BPF scheduler and
//! runs it; `tune` changes the running instance's tunables, `monitor` shows its stats, `trace`
//! records its placement decisions.
//! The policy core is the library (src/lib.rs); the lab is the scx_sis_lab binary.

mod assets;
mod cli;
mod monitor;
mod trace_cmd;
mod tune;

use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Result;

use cli::{Cli, Command, MonitorOpts, RunOpts};
use scx_sis::load::scheduler::{Outcome, Scheduler, OPS_NAME};
use scx_sis::process::exit::Cause;
use scx_sis::{
    load::features, load::preflight, policy::tunables, process::program, process::shutdown, stats,
};

fn run(opts: &RunOpts) -> Result<()> {
    let _instance = preflight::check_can_load()?;
    // Before the verifier's seconds: a pin directory that is not root's alone fails the start.
    tunables::check_pin_dir(std::path::Path::new(tunables::PIN_DIR), 0)?;
    let shutdown = shutdown::flag()?;
    eprintln!("{}", features::report());

    let sched_opts = opts.scheduler_options();
    let mut restore = None;
    let mut reloading = false;
    loop {
        let initial =
            restore.unwrap_or_else(|| tunables::apply(&tunables::defaults(), &opts.policy));
        let mut open_object = MaybeUninit::uninit();
        let mut sched = match Scheduler::init(&sched_opts, &mut open_object, &initial, &shutdown) {
            Ok(Some(sched)) => sched,
            Ok(None) => {
                eprintln!("{OPS_NAME}: stopped before attaching; the kernel's scheduler was never replaced");
                return Ok(());
            }
            Err(e) if reloading => {
                return Err(Cause::RestartFailed
                    .tag(e.context("the reload the kernel asked for (CPU hotplug?) failed")))
            }
            Err(e) => return Err(e),
        };
        eprintln!("{}", sched.describe());
        service::ready(reloading);
        let outcome = sched
            .run(shutdown.clone())
            .inspect_err(|_| service::stopping())?;
        if let Some(done) = finished(outcome, shutdown.load(Ordering::Relaxed)) {
            service::stopping();
            eprintln!("{done}");
            return Ok(());
        }
        // Not STOPPING=1: systemd would hold the unit deactivating, and stop it, while the next
        // instance runs.
        service::status("reloading after the kernel's restart request");
        // The live tunables, so that changes made with `tune` survive the reload; not the
        // trace nor an injected error (tunables::for_reload).
        restore = sched.tunables().ok().map(|t| tunables::for_reload(&t));
        reloading = true;
        eprintln!(
            "the kernel asked for a restart (CPU hotplug?): reloading with the live tunables"
        );
    }
}

/// After an instance ended without error: the line to exit with, or None to reload. A stop and
/// a restart request can meet (SIGTERM while a CPU goes offline): the stop wins, as it was asked
/// for, and a reload then would attach a scheduler only to detach it.
fn finished(outcome: Outcome, stop_requested: bool) -> Option<String> {
    match outcome {
        Outcome::Stopped => Some(format!("{OPS_NAME} unloaded")),
        Outcome::Restart if stop_requested => Some(format!(
            "{OPS_NAME} unloaded (the kernel's restart request came with a stop: not reloading)"
        )),
        Outcome::Restart => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_request_reloads_unless_a_stop_was_asked_for() {
        assert_eq!(finished(Outcome::Restart, false), None);
        let line = finished(Outcome::Restart, true).expect("a stop is not overridden");
        assert!(line.contains("not reloading"), "{line}");
        assert!(finished(Outcome::Stopped, false).is_some());
    }
}

/// What systemd learns of the daemon (Type=notify), when it runs under systemd: ready once the
/// scheduler is attached, so a load that fails fails `systemctl start` too.
mod service {
    use sd_notify::NotifyState;

    pub fn ready(reloaded: bool) {
        let status = if reloaded {
            "scheduling (reloaded after the kernel's restart request)"
        } else {
            "scheduling"
        };
        notify(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    pub fn stopping() {
        notify(&[NotifyState::Stopping]);
    }

    pub fn status(status: &str) {
        notify(&[NotifyState::Status(status)]);
    }

    fn notify(states: &[NotifyState]) {
        // Outside systemd (no NOTIFY_SOCKET) this does nothing; a failure to reach systemd
        // leaves the scheduler running, and systemd's start timeout reports it.
        if let Err(e) = sd_notify::notify(states) {
            eprintln!("scx_sis: warning: could not notify systemd: {e}");
        }
    }
}

fn main() -> ExitCode {
    let cli: Cli = program::parse_args();
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
        Some(Command::GenerateAssets { dir }) => assets::generate(dir),
    };
    program::exit_code("scx_sis", result)
}
