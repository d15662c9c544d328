//! The processes the runner supervises: a scheduler (scx_sis or a peer) and the `scx_sis trace`
//! reader. Each starts with its output in a log, is waited for until it is up, and stops through
//! the one routine `interrupt_then_kill`.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use scx_stats::prelude::*;

use super::env::Env;
use crate::bench::plan::config;
use scx_sis::load::preflight::{scx_ops, scx_state};
use scx_sis::policy::tunables;
use scx_sis::process::pins;

/// The verifier runs ~100x slower under TCG.
const ENABLE_TIMEOUT: Duration = Duration::from_secs(120);
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// From starting `scx_sis trace` to its trace being on (a process start, the topology read,
/// the ring buffer mapped: seconds under TCG).
const TRACE_START_TIMEOUT: Duration = Duration::from_secs(60);
/// From SIGINT to the reader's exit: it switches the trace off at once, then drains what is
/// left, sorts every record and writes the JSON (to /dev/null) and the summary, which for the
/// few hundred thousand records of a VM configuration takes a while under TCG. The time is
/// after the measurement and before the next configuration's.
const TRACE_STOP_TIMEOUT: Duration = Duration::from_secs(180);

/// Poll `cond` every 100 ms until it holds (true) or `timeout` has passed (false).
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last `n` non-empty lines of the file at `path`, joined by " | " (for one-line errors).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Start `exe args` with stdin empty and stdout and stderr both in the file `log`; `what`
/// names it in the error.
fn spawn_logged(exe: &Path, args: &[&str], log: &Path, what: &str) -> Result<Child> {
    let out = File::create(log).with_context(|| format!("failed to create {}", log.display()))?;
    let err = out.try_clone()?;
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("failed to start {what}"))
}

/// Not yet exited (an error asking counts as exited).
fn running(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

/// Wait up to `timeout` for `ready`, or for `child` to exit first: its status then.
fn wait_ready(
    child: &mut Child,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> (bool, Option<ExitStatus>) {
    let mut exited = None;
    let up = wait_for(timeout, || {
        if let Ok(Some(st)) = child.try_wait() {
            exited = Some(st);
            return true;
        }
        ready()
    });
    (up, exited)
}

/// The one way a supervised process stops: SIGINT (its clean exit: a scheduler detaches, the
/// trace reader switches the trace off and writes what it read); if it is still running after
/// `timeout`, `on_kill` says so and it gets SIGKILL. Then it is reaped. A process that already
/// exited is only reaped, so calling this again is harmless.
fn interrupt_then_kill(
    child: &mut Child,
    timeout: Duration,
    on_kill: impl FnOnce(),
) -> io::Result<ExitStatus> {
    if running(child) {
        // SAFETY: signalling a child we spawned and have not reaped yet.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        if !wait_for(timeout, || !running(child)) {
            on_kill();
            let _ = child.kill();
        }
    }
    child.wait()
}

/// A scheduler process this runner started (scx_sis or a peer).
pub struct Sched {
    child: Child,
    pub name: String,
    pub log: PathBuf,
    /// scx_sis's stats socket.
    pub stats: Option<StatsClient>,
    /// Progress prefix for what it says on stderr.
    say: &'static str,
}

impl Sched {
    pub fn spawn(
        exe: &Path,
        args: &[&str],
        name: &str,
        log: PathBuf,
        say: &'static str,
    ) -> Result<Sched> {
        let child = spawn_logged(exe, args, &log, &exe.display().to_string())?;
        let mut s = Sched {
            child,
            name: name.to_string(),
            log,
            stats: None,
            say,
        };
        let t0 = Instant::now();
        let (up, exited) = wait_ready(&mut s.child, ENABLE_TIMEOUT, || scx_state() == "enabled");
        if let Some(st) = exited {
            bail!(
                "{name} exited ({st}) before sched_ext was enabled: {}",
                log_tail(&s.log, 3)
            );
        }
        if !up {
            s.stop();
            bail!(
                "{name}: sched_ext not enabled {} s after start (state {})",
                ENABLE_TIMEOUT.as_secs(),
                scx_state()
            );
        }
        eprintln!(
            "{say} {name} enabled in {:.1} s (ops {})",
            t0.elapsed().as_secs_f64(),
            scx_ops()
        );
        Ok(s)
    }

    pub fn alive(&mut self) -> bool {
        running(&mut self.child)
    }

    /// SIGINT (the clean detach), SIGKILL after STOP_TIMEOUT; then wait for `disabled`.
    fn stop(&mut self) {
        let _ = interrupt_then_kill(&mut self.child, STOP_TIMEOUT, || {
            eprintln!("{} {} ignored SIGINT, killing it", self.say, self.name)
        });
        if !wait_for(STOP_TIMEOUT, || scx_state() == "disabled") {
            eprintln!(
                "{} sched_ext still {} after {} stopped",
                self.say,
                scx_state(),
                self.name
            );
        }
    }
}

impl Drop for Sched {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A `scx_sis trace` reader this runner started, for a configuration with `trace`.
pub struct Tracer {
    child: Child,
    pub log: PathBuf,
    /// The reader's utime + stime, clock ticks, from /proc/PID/stat.
    ticks_per_s: f64,
    say: &'static str,
    stopped: bool,
}

/// Is the live trace switch on?
pub fn trace_on() -> Result<bool> {
    Ok(tunables::read(&pins::open_live()?)?.trace != 0)
}

impl Tracer {
    pub fn spawn(env: &Env) -> Result<Tracer> {
        let log = env.dir.join("trace.log");
        let what = format!("{} trace", env.sched_exe.display());
        let child = spawn_logged(&env.sched_exe, config::TRACE_READER_ARGS, &log, &what)?;
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let mut t = Tracer {
            child,
            log,
            ticks_per_s: ticks,
            say: env.progress,
            stopped: false,
        };
        let t0 = Instant::now();
        let (on, exited) = wait_ready(&mut t.child, TRACE_START_TIMEOUT, || {
            trace_on().unwrap_or(false)
        });
        if let Some(st) = exited {
            bail!(
                "scx_sis trace exited ({st}) before the trace was on: {}",
                log_tail(&t.log, 3)
            );
        }
        if !on {
            t.stop();
            bail!(
                "scx_sis trace: the trace not on {} s after start",
                TRACE_START_TIMEOUT.as_secs()
            );
        }
        eprintln!(
            "{} scx_sis trace on in {:.1} s (pid {})",
            t.say,
            t0.elapsed().as_secs_f64(),
            t.child.id()
        );
        Ok(t)
    }

    pub fn alive(&mut self) -> bool {
        running(&mut self.child)
    }

    /// The reader's CPU time so far, in seconds (None once it is gone).
    pub fn cpu_s(&self) -> Option<f64> {
        let stat = fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // After the comm's closing parenthesis: state is field 3, utime and stime 14 and 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        Some(ticks as f64 / self.ticks_per_s)
    }

    /// SIGINT (it switches the trace off, then writes its file and summary), SIGKILL after
    /// TRACE_STOP_TIMEOUT; then say what it recorded and dropped.
    fn stop(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        let t0 = Instant::now();
        let st = interrupt_then_kill(&mut self.child, TRACE_STOP_TIMEOUT, || {
            // The next configuration's tune() switches a trace left on off.
            eprintln!(
                "{} scx_sis trace still running {} s after SIGINT, killing it",
                self.say,
                TRACE_STOP_TIMEOUT.as_secs()
            );
        });
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let counts = text
            .lines()
            .find(|l| l.contains(" records in ") && l.contains(" dropped)"))
            .unwrap_or("no count in its log");
        eprintln!(
            "{} scx_sis trace stopped in {:.1} s ({}): {}",
            self.say,
            t0.elapsed().as_secs_f64(),
            st.map_or_else(|e| e.to_string(), |s| s.to_string()),
            counts.trim()
        );
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop();
    }
}
