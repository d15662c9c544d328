//! One ab run on the running scheduler: take the tunables' lock for the whole run, leave the
//! marker, switch between A and B window by window in ABBA order, let each switch settle, read
//! the scheduler's counters over each window (and score it with the user's metric), and at the
//! end put back the tunables from before the run, or B's when `--adopt` is asked for and B won.
//!
//! The tunables come back whatever ends the run: its end, SIGINT or SIGTERM, an error (a guard
//! restores them on drop). A scheduler that goes away mid-run ends it: one that reloaded (CPU
//! hotplug, suspend) starts from the marker's tunables (the daemon reads it), and ab checks them
//! on the new instance; one that stopped leaves nothing to restore. A kill -9 leaves the marker
//! for the next `ab` or `tune` to repair.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use libbpf_rs::MapHandle;

use super::marker::{self, Marker};
use super::order::{self, Side};
use super::report::{self, End, Report};
use super::user_metric::UserMetric;
use super::window::Window;
use crate::bpf_intf::sis_tunables;
use crate::policy::{tunables, PolicyOpts};
use crate::process::{instance, kernel, pins};
use crate::stats::Metrics;

pub struct Options {
    /// A's and B's flags, applied to the tunables from before the run (none: those).
    pub a: PolicyOpts,
    pub a_flags: String,
    pub b: PolicyOpts,
    pub b_flags: String,
    pub window: Duration,
    pub settle: Duration,
    pub rounds: usize,
    pub user: Option<UserMetric>,
    /// Leave B in place if it is better on this measure.
    pub adopt: Option<String>,
}

/// How often a wait looks for a stop or for its scheduler going away.
const WATCH_EVERY: Duration = Duration::from_millis(100);
/// How long ab waits for a scheduler that went away to come back: a reload runs the verifier
/// again, seconds on hardware and far more under an emulator.
const RELOAD_WAIT: Duration = Duration::from_secs(120);
/// The least time a --metric-cmd is given before it is stopped.
const METRIC_CMD_MIN: Duration = Duration::from_secs(5);

/// Why a wait ended early.
enum Cut {
    Interrupted,
    Gone,
}

/// The scheduler ab acts on, with its lock held and its marker written. Dropped before its
/// end (an error), it puts the tunables from before back and removes the marker.
struct Held {
    map: MapHandle,
    pinned: Option<(u64, u64)>,
    _lock: File,
    before: sis_tunables,
    marker: Marker,
    finished: bool,
}

impl Held {
    /// Make `t` live, unless it already is (an A/A then writes nothing); the generation goes up
    /// by one, as for every writer, so that the daemon logs the change.
    fn set(&self, t: &sis_tunables) -> Result<Vec<String>> {
        let live = tunables::read(&self.map)?;
        let changes = tunables::changes(&live, t);
        if !changes.is_empty() {
            tunables::write(
                &self.map,
                &sis_tunables {
                    generation: live.generation + 1,
                    ..*t
                },
            )?;
        }
        Ok(changes)
    }

    fn mark(&mut self, side: Side, settling: bool) -> Result<()> {
        self.marker.side = side;
        self.marker.settling = settling;
        marker::write(Path::new(marker::DIR), 0, &self.marker)
    }

    /// Whether the scheduler went away: its pin is gone or another instance's, or no scx_sis is
    /// loaded (the kernel disabled it, and the daemon has not yet unpinned).
    fn gone(&self) -> bool {
        pins::pin_identity(pins::TUNABLES_PIN) != self.pinned || !kernel::sis_loaded()
    }

    /// Wait `d`, or less if a stop is asked for or the scheduler goes away.
    fn wait(&self, d: Duration, stop: &AtomicBool) -> Option<Cut> {
        let until = Instant::now() + d;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Some(Cut::Interrupted);
            }
            if self.gone() {
                return Some(Cut::Gone);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::sleep(left.min(WATCH_EVERY));
        }
    }

    /// End on this scheduler with `t` live and the marker removed.
    fn finish(mut self, t: &sis_tunables) -> Result<Vec<String>> {
        self.finished = true;
        let changes = self.set(t)?;
        marker::remove(Path::new(marker::DIR), 0)?;
        Ok(changes)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let restored = self.set(&self.before);
        let removed = restored
            .as_ref()
            .map_err(|_| ())
            .and_then(|_| marker::remove(Path::new(marker::DIR), 0).map_err(|_| ()));
        if let Err(e) = restored {
            eprintln!(
                "ab: could not restore the tunables from before it ({e:#}); its marker {} \
                 stays for the next ab or tune to restore them",
                marker::path(Path::new(marker::DIR))
            );
        } else if removed.is_err() {
            eprintln!("ab: could not remove its marker; the next ab or tune will");
        }
    }
}

/// What the run did with the tunables at its end.
struct Ending {
    end: End,
    outcome: String,
    adopted: bool,
}

/// Run `opts` on the running scheduler until every window ran, a stop, or the scheduler goes.
pub fn run(opts: &Options, stop: Arc<AtomicBool>) -> Result<Report> {
    let map = pins::open_live()?;
    let pinned = pins::pin_identity(pins::TUNABLES_PIN);
    // Held for the whole run: a `tune` or `trace` meanwhile would change what is measured.
    let lock = pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
    if pinned.is_none() || pins::pin_identity(pins::TUNABLES_PIN) != pinned {
        bail!("the scheduler reloaded as ab started; run it again");
    }
    if let Some(line) = marker::repair(&map, Path::new(marker::DIR), 0)? {
        eprintln!("{line}");
    }
    let before = tunables::read(&map)?;
    let a = tunables::apply(&before, &opts.a);
    let b = tunables::apply(&before, &opts.b);
    let marker = Marker::new(&before, &opts.b_flags)?;
    marker::write(Path::new(marker::DIR), 0, &marker)?;
    let mut held = Held {
        map,
        pinned,
        _lock: lock,
        before,
        marker,
        finished: false,
    };
    if tunables::changes(&a, &b).is_empty() {
        eprintln!("ab: A and B are the same tunables: an A/A, which shows the noise floor");
    }
    let mut stats = instance::connect_stats()?;
    let judged = report::judged(opts.user.as_ref().map(|u| (u.label.as_str(), u.better)));

    let total = 2 * opts.rounds;
    let mut windows = Vec::with_capacity(total);
    let mut cut = None;
    'windows: for (i, side) in order::windows(opts.rounds).enumerate() {
        if order::switches_before(i) {
            held.set(if side == Side::A { &a } else { &b })?;
            held.mark(side, true)?;
            cut = held.wait(opts.settle, &stop);
            if cut.is_some() {
                break;
            }
            held.mark(side, false)?;
        }
        let mut failed = 0;
        let m = loop {
            match measure(&held, &mut stats, opts.window, &stop) {
                Ok(Ok(m)) => break m,
                Ok(Err(c)) => {
                    cut = Some(c);
                    break 'windows;
                }
                // The stats server ends with its instance, so a failed read may be a reload;
                // else a daemon starved by the load it schedules: the window is measured again.
                Err(e) => {
                    if let Some(c) = held.wait(Duration::from_secs(2), &stop) {
                        cut = Some(c);
                        break 'windows;
                    }
                    failed += 1;
                    if failed >= READ_TRIES {
                        return Err(e.context("ab: reading the scheduler's counters failed"));
                    }
                    eprintln!("ab: window {} of {total}: {e:#}; measuring it again", i + 1);
                    stats = instance::connect_stats()?;
                }
            }
        };
        let user = match &opts.user {
            Some(u) => u
                .score(opts.window.max(METRIC_CMD_MIN), &stop)?
                .map(|v| (u.label.as_str(), v)),
            None => None,
        };
        let w = Window::record(i, side, &m, user);
        eprintln!("ab: window {} of {total} ({side}): {}", i + 1, brief(&w));
        windows.push(w);
    }

    let done = windows.len();
    let rows = report::rows(&windows, &judged);
    let ending = match cut {
        Some(Cut::Gone) => {
            held.finished = true;
            let before = held.before;
            drop(held);
            after_gone(&before, done, total, &stop)
        }
        Some(Cut::Interrupted) => {
            let before = held.before;
            let changes = held.finish(&before)?;
            Ending {
                end: End::Interrupted,
                outcome: format!(
                    "ab: interrupted after {done} of {total} windows; {}",
                    restored(&changes)
                ),
                adopted: false,
            }
        }
        None => finish_done(held, opts, &rows, &b)?,
    };
    Ok(Report {
        a_flags: opts.a_flags.clone(),
        b_flags: opts.b_flags.clone(),
        a: tunables::describe(&a),
        b: tunables::describe(&b),
        window_s: opts.window.as_secs_f64(),
        settle_s: opts.settle.as_secs_f64(),
        rounds: opts.rounds,
        confidence: crate::verdict::CONFIDENCE,
        confidence_each: report::confidence_each(judged.len()),
        end: ending.end,
        windows,
        rows,
        outcome: ending.outcome,
        adopted: ending.adopted,
    })
}

/// Every window ran: B stays if --adopt asked for it and B is better on that measure, else the
/// tunables from before come back.
fn finish_done(
    held: Held,
    opts: &Options,
    rows: &[report::Row],
    b: &sis_tunables,
) -> Result<Ending> {
    let Some(key) = &opts.adopt else {
        let before = held.before;
        let changes = held.finish(&before)?;
        return Ok(Ending {
            end: End::Done,
            outcome: format!("ab: done; {}", restored(&changes)),
            adopted: false,
        });
    };
    let row = rows.iter().find(|r| r.key == *key);
    let interval = row
        .and_then(|r| r.interval)
        .map(|i| format!("B/A {:.2}x, interval {:.2}x-{:.2}x", i.ratio, i.lo, i.hi))
        .unwrap_or_else(|| "no interval".into());
    if row.is_some_and(|r| r.verdict == "better") {
        held.finish(b)?;
        Ok(Ending {
            end: End::Done,
            outcome: format!(
                "ab: adopted B ({}): better on {key} ({interval}, clear of 1); the tunables stay \
                 B's",
                opts.b_flags.trim()
            ),
            adopted: true,
        })
    } else {
        let words = row.map_or("no verdict".into(), |r| r.words.clone());
        let before = held.before;
        let changes = held.finish(&before)?;
        Ok(Ending {
            end: End::Done,
            outcome: format!(
                "ab: kept A: B is not better on {key} ({words}; {interval}); {}",
                restored(&changes)
            ),
            adopted: false,
        })
    }
}

fn restored(changes: &[String]) -> String {
    if changes.is_empty() {
        "the tunables are those from before ab".into()
    } else {
        format!(
            "restored the tunables from before ab ({})",
            changes.join(", ")
        )
    }
}

/// The scheduler went away mid-run. A daemon that still holds its instance lock is reloading:
/// wait for the new instance, and make sure it runs the tunables from before ab (the daemon
/// starts it with the marker's, so normally nothing is written). One that let go stopped:
/// nothing is left to restore.
fn after_gone(before: &sis_tunables, done: usize, total: usize, stop: &AtomicBool) -> Ending {
    let dir = Path::new(marker::DIR);
    let when = format!("after {done} of {total} windows");
    let started = Instant::now();
    loop {
        if !instance::running() {
            let _ = marker::remove(dir, 0);
            return Ending {
                end: End::Stopped,
                outcome: format!(
                    "ab: the scheduler stopped {when}; ab ended (nothing to restore: a new start \
                     takes its own flags)"
                ),
                adopted: false,
            };
        }
        let back = pins::pin_identity(pins::TUNABLES_PIN).is_some() && kernel::sis_loaded();
        if back {
            return match restore_on(before) {
                Ok(changes) => {
                    let _ = marker::remove(dir, 0);
                    Ending {
                        end: End::Reloaded,
                        outcome: format!(
                            "ab: the scheduler reloaded (CPU hotplug or suspend) {when}; ab \
                             ended, and {}",
                            restored(&changes)
                        ),
                        adopted: false,
                    }
                }
                Err(e) => Ending {
                    end: End::Reloaded,
                    outcome: format!(
                        "ab: the scheduler reloaded {when}; ab ended but could not check its \
                         tunables ({e:#}); the marker {} stays for the next ab or tune",
                        marker::path(dir)
                    ),
                    adopted: false,
                },
            };
        }
        if stop.load(Ordering::Relaxed) || started.elapsed() >= RELOAD_WAIT {
            return Ending {
                end: End::Reloaded,
                outcome: format!(
                    "ab: the scheduler went away {when} and has not come back; its marker {} \
                     stays: the daemon reloads with the tunables from before ab, and the next \
                     ab or tune restores them",
                    marker::path(dir)
                ),
                adopted: false,
            };
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `before` on the scheduler now running, under its lock.
fn restore_on(before: &sis_tunables) -> Result<Vec<String>> {
    let map = pins::open_live()?;
    let _lock = pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
    let live = tunables::read(&map).context("reading the new instance's tunables")?;
    let changes = tunables::changes(&live, before);
    if !changes.is_empty() {
        tunables::write(
            &map,
            &sis_tunables {
                generation: live.generation + 1,
                ..*before
            },
        )?;
    }
    Ok(changes)
}

/// How many times in a row a window's counters may fail to come before ab gives up.
const READ_TRIES: u32 = 3;

/// One window's counters: the first read starts the client's delta window, the second, `window`
/// later, ends it. Err(cut) when a stop or the scheduler's end came first.
fn measure(
    held: &Held,
    stats: &mut instance::Stats,
    window: Duration,
    stop: &AtomicBool,
) -> Result<Result<Metrics, Cut>> {
    stats.read::<Metrics>()?;
    match held.wait(window, stop) {
        Some(c) => Ok(Err(c)),
        None => Ok(Ok(stats.read::<Metrics>()?)),
    }
}

/// A window's main numbers for the progress line.
fn brief(w: &Window) -> String {
    let v = |k: &str| w.values.get(k).map_or("-".into(), |v| format!("{v:.0}"));
    format!(
        "{:.1} s, migrations/s {}, wakeups/s {}, wait p99 us {}",
        w.secs,
        v("migrations"),
        v("wakeups"),
        v("wait_p99_us")
    )
}
