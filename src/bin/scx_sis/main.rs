//! scx_sis: the scheduler and its controls. Without a subcommand it loads the BPF scheduler and
//! runs it; `tune` changes the running instance's tunables, `monitor` shows its stats, `trace`
//! records its placement decisions, `ab` A/B tests two policies on it.
//! The policy core is the library (src/lib.rs); the lab is the scx_sis_lab binary.

mod ab_cmd;
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
use scx_sis::load::scheduler::{Outcome, Scheduler};
use scx_sis::process::exit::Cause;
use scx_sis::process::instance;
use scx_sis::process::kernel::OPS_NAME;
use scx_sis::{
    ab, load::features, load::preflight, policy::tunables, process::pins, process::program,
    process::shutdown, stats,
};

fn run(opts: &RunOpts) -> Result<()> {
    let inject_after = fault::from_env()?;
    let _instance = preflight::check_can_load()?;
    // Before the verifier's seconds: a pin directory that is not root's alone fails the start.
    pins::check_pin_dir(std::path::Path::new(pins::PIN_DIR), 0)?;
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
        if !reloading {
            if let Some(after) = inject_after {
                fault::inject_after(after);
            }
        }
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
        restore = reload_tunables(&sched).map(|t| tunables::for_reload(&t));
        reloading = true;
        eprintln!(
            "the kernel asked for a restart (CPU hotplug?): reloading with the live tunables"
        );
    }
}

/// The tunables the reloaded instance starts with: the live ones, or, while an `scx_sis ab`
/// runs (or was killed), those from before it, which it would restore: the reload ends the ab,
/// and a B left live would outlast it.
fn reload_tunables(sched: &Scheduler) -> Option<scx_sis::bpf_intf::sis_tunables> {
    let dir = std::path::Path::new(ab::marker::DIR);
    match ab::marker::read(dir, 0).and_then(|m| m.map(|m| m.before()).transpose()) {
        Ok(Some(before)) => {
            eprintln!("an scx_sis ab was running: reloading with the tunables from before it");
            Some(before)
        }
        Ok(None) => sched.tunables().ok(),
        Err(e) => {
            eprintln!("scx_sis: warning: ignoring the ab marker: {e:#}");
            sched.tunables().ok()
        }
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

/// Fault injection for the tests: with SCX_SIS_TEST_INJECT_ERROR=SECS in its environment, the
/// daemon sets its tunables' test_inject_error SECS seconds after it first attaches, and BPF
/// fails the scheduler with scx_bpf_error() at its next dispatch. No flag, no `tune` value and
/// no help text offers it: it is the tests' switch, not the user's. A reload clears it
/// (tunables::for_reload) and does not arm it again.
mod fault {
    use std::time::Duration;

    use anyhow::Result;

    use scx_sis::ab::marker;
    use scx_sis::policy::tunables;
    use scx_sis::process::exit::Cause;
    use scx_sis::process::pins;

    pub const VAR: &str = "SCX_SIS_TEST_INJECT_ERROR";

    /// The delay the environment asks for, if any; a value that is no number of seconds fails
    /// the start (status 2) rather than running without the fault a test expects.
    pub fn from_env() -> Result<Option<Duration>> {
        std::env::var(VAR).ok().map(|v| parse(&v)).transpose()
    }

    fn parse(v: &str) -> Result<Duration> {
        v.parse::<f64>()
            .ok()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| Cause::Usage.error(format!("{VAR}={v}: not a number of seconds")))
    }

    pub fn inject_after(after: Duration) {
        std::thread::spawn(move || {
            std::thread::sleep(after);
            if let Err(e) = inject() {
                eprintln!("scx_sis: {VAR}: could not inject the error: {e:#}");
            }
        });
    }

    fn inject() -> Result<()> {
        let map = pins::open_live()?;
        let _lock =
            pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
        let old = tunables::read(&map)?;
        let mut new = old;
        new.test_inject_error = 1;
        new.generation = old.generation + 1;
        eprintln!("scx_sis: {VAR}: injecting a BPF error");
        tunables::write(&map, &new)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_delay_is_seconds_or_a_usage_error() {
            assert_eq!(parse("2.5").unwrap(), Duration::from_millis(2500));
            assert_eq!(parse("0").unwrap(), Duration::ZERO);
            for bad in ["", "soon", "-1"] {
                assert_eq!(Cause::of(&parse(bad).unwrap_err()), Cause::Usage, "{bad}");
            }
        }
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
            let warn = scx_sis::process::program::WARNING.prefix();
            eprintln!("{warn}scx_sis: warning: could not notify systemd: {e}");
        }
    }
}

fn main() -> ExitCode {
    if let Some(request) = assets::requested() {
        return program::exit_code("scx_sis", request.and_then(assets::run));
    }
    let cli: Cli = cli::parse();
    let result = match &cli.command {
        None if cli.run.help_stats => {
            program::die_on_broken_pipe();
            stats::describe(&mut std::io::stdout())
        }
        None => match cli.run.monitor {
            Some(interval) => {
                let opts = MonitorOpts {
                    interval,
                    json: false,
                    histogram: false,
                    count: None,
                };
                monitor(&opts)
            }
            None => run(&cli.run),
        },
        Some(Command::Tune(t)) => instance::require_root().and_then(|()| {
            program::die_on_broken_pipe();
            tune::run(t.show, &t.policy)
        }),
        Some(Command::Monitor(m)) => monitor(m),
        // Not die_on_broken_pipe: a closed stdout must not end ab before it restores the tunables.
        Some(Command::Ab(o)) => ab_cmd::run(o),
        Some(Command::Trace(t)) => {
            // Not flag_or_exit: exiting at a second Ctrl-C would leave the trace switched on.
            instance::require_root()
                .and_then(|()| shutdown::flag())
                .and_then(|s| trace_cmd::run(t, s))
        }
    };
    program::exit_code("scx_sis", result)
}

/// `monitor` and `--monitor`: root's, ended quietly by a reader that stops (`| head`), and by
/// a second Ctrl-C even while a request waits on a daemon that does not answer.
fn monitor(opts: &MonitorOpts) -> Result<()> {
    instance::require_root()?;
    program::die_on_broken_pipe();
    let shutdown = shutdown::flag_or_exit()?;
    monitor::run(opts, shutdown)
}
