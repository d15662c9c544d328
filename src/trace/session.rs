//! One trace session on a running scheduler: switch the trace on (with its filter) through the
//! pinned tunables, drain the pinned ring buffer for the duration, switch it off, and return
//! the records with what the scheduler's own counters saw over the same window.
//!
//! The trace is switched off whatever ends the session (its end, Ctrl-C, an error): a trace
//! left on would keep costing every decision a record nobody reads. A session also ends, within
//! a poll, when the scheduler it traces goes away (it exited, or reloaded after a CPU hotplug:
//! the new instance starts with the trace off) or when it holds `max_records`; it returns what
//! it caught either way, with the reason it ended.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapHandle, MapType, RingBufferBuilder};
use serde::Serialize;

use super::event::Event;
use crate::ab::marker;
use crate::bpf_intf::sis_limits_SIS_COMM_LEN;
use crate::policy::tunables;
use crate::process::pins::{self, TRACE_RING_PIN};
use crate::stats::Metrics;

/// Which tasks to record: all, one process (tgid) or one comm.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Filter {
    pub tgid: Option<u32>,
    pub comm: Option<String>,
}

impl Filter {
    /// A filter the kernel side can apply: the process exists, the comm fits TASK_COMM_LEN.
    pub fn validate(&self) -> Result<()> {
        if let Some(pid) = self.tgid {
            if pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
                bail!("no process has pid {pid}");
            }
        }
        if let Some(comm) = &self.comm {
            let max = sis_limits_SIS_COMM_LEN as usize - 1;
            if comm.is_empty() || comm.len() > max {
                bail!("--comm takes a task name of 1 to {max} bytes, as the kernel stores it");
            }
        }
        Ok(())
    }
}

pub struct Options {
    pub duration: Duration,
    pub filter: Filter,
    /// Take over a trace left on (by a trace that was killed).
    pub force: bool,
    /// Records kept at most: memory is bounded whatever the duration and the load.
    pub max_records: usize,
}

/// Why a session stopped recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The duration passed.
    Duration,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// The scheduler exited or reloaded: its pin is gone or another instance's.
    SchedulerGone,
    /// `max_records` records were kept; later ones were left in the ring buffer.
    RecordLimit,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            End::Duration => "the duration passed",
            End::Interrupted => "interrupted",
            End::SchedulerGone => {
                "the scheduler went away (it exited, or reloaded with the trace off)"
            }
            End::RecordLimit => "the record limit was reached (--max-records)",
        })
    }
}

/// What a session collected.
pub struct Capture {
    /// In time order.
    pub events: Vec<Event>,
    /// From switching on to the end.
    pub duration_s: f64,
    /// The scheduler's counters over the session (a delta), drops and records written included;
    /// None when the scheduler went away before the session could read them.
    pub counters: Option<Metrics>,
    pub end: End,
    /// The balance lag when recording began, ns: a pull or steal within it of the task's last
    /// one is churn (summary.rs).
    pub balance_lag_ns: u64,
}

/// How often the session looks whether its scheduler is still the one pinned (10 drains).
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// How often the reader drains the buffer. The scheduler never wakes it (trace.bpf.h), so
/// this bounds how full the buffer gets: at 10 ms a 8 MiB buffer holds a second's records of
/// a busy 8-CPU machine many times over.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// Record until the duration, a stop, the record limit or the scheduler's end. `started` runs
/// once the trace is on, every check passed: the first moment it is true that recording began.
pub fn capture(
    opts: &Options,
    shutdown: Arc<AtomicBool>,
    started_recording: impl FnOnce(),
) -> Result<Capture> {
    opts.filter.validate()?;
    let pinned = pins::pin_identity(pins::TUNABLES_PIN);
    let tun = pins::open_live()?;
    // The pin opened is the one first seen (an instance that reloaded in between is refused).
    if pinned.is_none() || pins::pin_identity(pins::TUNABLES_PIN) != pinned {
        bail!("the scheduler reloaded while the trace started; run it again");
    }
    let ring = MapHandle::from_pinned_path(TRACE_RING_PIN).with_context(|| {
        format!("failed to open {TRACE_RING_PIN} (a scheduler older than scx_sis trace?)")
    })?;
    if ring.map_type() != MapType::RingBuf {
        bail!("{TRACE_RING_PIN} is not a ring buffer");
    }
    let mut stats = crate::process::instance::connect_stats()?;

    let events = RefCell::new(Vec::<Event>::new());
    let bad = RefCell::new(None);
    let full = std::cell::Cell::new(false);
    let mut builder = RingBufferBuilder::new();
    builder.add(&ring, |data: &[u8]| match Event::decode(data) {
        Ok(_) if events.borrow().len() >= opts.max_records => {
            full.set(true);
            // Non-zero stops this consume: nothing more is kept.
            -1
        }
        Ok(e) => {
            events.borrow_mut().push(e);
            0
        }
        Err(e) => {
            *bad.borrow_mut() = Some(e);
            // Non-zero stops this consume: the rest would not decode either.
            -1
        }
    })?;
    let rb = builder
        .build()
        .context("failed to map the trace ring buffer")?;

    // Left by an earlier session that was killed before it drained: not this window's.
    let _ = rb.consume();
    events.borrow_mut().clear();
    // The counters' window is the trace's, give or take the two stats requests at its ends,
    // so that what the trace recorded can be checked against what BPF counted. The client's
    // first read starts its delta window.
    stats.read::<Metrics>()?;
    // 0 in the map means the default, as in BPF.
    let balance_lag_ns = match tunables::read(&tun)?.balance_lag_us {
        0 => crate::policy::defaults::BALANCE_LAG_US,
        us => us,
    } as u64
        * 1000;
    let guard = TraceOn::switch_on(&tun, &opts.filter, opts.force)?;
    started_recording();
    let started = Instant::now();
    let mut progress = Progress::new(opts.duration);
    let mut watched = Instant::now();
    let end = loop {
        if started.elapsed() >= opts.duration {
            break End::Duration;
        }
        if shutdown.load(Ordering::Relaxed) {
            break End::Interrupted;
        }
        if full.get() {
            break End::RecordLimit;
        }
        if watched.elapsed() >= WATCH_EVERY {
            watched = Instant::now();
            if pins::pin_identity(pins::TUNABLES_PIN) != pinned {
                break End::SchedulerGone;
            }
        }
        std::thread::sleep(DRAIN_EVERY);
        drain(&rb, &bad, &full, false)?;
        progress.show(started.elapsed(), events.borrow().len());
    };
    if end == End::SchedulerGone {
        // Its map lives on through our descriptor only; nothing reads the switch any more.
        guard.forget();
    } else if let Err(e) = guard.switch_off() {
        eprintln!("trace: could not switch the trace off: {e:#}");
    }
    let duration_s = started.elapsed().as_secs_f64();
    // The scheduler gone, its stats server is too: what was caught is kept all the same.
    let counters = match end {
        End::SchedulerGone => None,
        _ => match stats.read::<Metrics>() {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("trace: the scheduler's counters over the window are unavailable: {e:#}");
                None
            }
        },
    };
    // What was written before the switch took effect, to the end (or to the limit).
    drain(&rb, &bad, &full, true)?;
    progress.done();
    drop(rb);

    let mut events = events.into_inner();
    // Per CPU the buffer is in order; across CPUs records interleave by reservation, and a
    // decision carries the time its select_cpu began, before its record was reserved.
    events.sort_by_key(|e| e.ts);
    let end = if full.get() && end != End::SchedulerGone {
        End::RecordLimit
    } else {
        end
    };
    Ok(Capture {
        events,
        duration_s,
        counters,
        end,
        balance_lag_ns,
    })
}

/// Records taken per drain while recording. A reader starved of CPU by the workload it traces
/// would otherwise stay in one drain for as long as records keep coming, past the duration;
/// bounded, it leaves the rest for the next drain, or to be dropped (and counted) if the buffer
/// fills, which is the trade a trace must make on a saturated machine.
const DRAIN_MAX: usize = 16384;

/// Take records off the ring buffer: at most DRAIN_MAX, or all of them (`all`, at the end).
fn drain(
    rb: &libbpf_rs::RingBuffer<'_>,
    bad: &RefCell<Option<anyhow::Error>>,
    full: &std::cell::Cell<bool>,
    all: bool,
) -> Result<()> {
    let rc = if all {
        rb.consume_raw()
    } else {
        rb.consume_raw_n(DRAIN_MAX)
    };
    if let Some(e) = bad.borrow_mut().take() {
        return Err(e);
    }
    if rc < 0 && !full.get() {
        bail!(
            "failed to read the trace ring buffer: {}",
            std::io::Error::from_raw_os_error(-rc)
        );
    }
    Ok(())
}

/// The trace switched on; switched off on drop, whatever ended the session.
struct TraceOn<'a> {
    map: &'a MapHandle,
    on: bool,
}

impl<'a> TraceOn<'a> {
    fn switch_on(map: &'a MapHandle, filter: &Filter, force: bool) -> Result<Self> {
        let _lock =
            pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
        let old = tunables::read(map)?;
        if old.trace != 0 && !force {
            bail!(
                "a trace is already on for this scheduler (another scx_sis trace?); \
                 if none runs, one was killed: --force takes it over"
            );
        }
        let mut new = old;
        new.trace = 1;
        new.trace_tgid = filter.tgid.unwrap_or(0);
        new.trace_comm = [0; sis_limits_SIS_COMM_LEN as usize];
        for (d, s) in new
            .trace_comm
            .iter_mut()
            .zip(filter.comm.as_deref().unwrap_or("").bytes())
        {
            *d = s as _;
        }
        new.generation = old.generation + 1;
        tunables::write(map, &new)?;
        Ok(Self { map, on: true })
    }

    fn switch_off(mut self) -> Result<()> {
        self.on = false;
        Self::off(self.map)
    }

    /// Leave the switch as it is: the scheduler it belonged to is gone.
    fn forget(mut self) {
        self.on = false;
    }

    fn off(map: &MapHandle) -> Result<()> {
        let _lock =
            pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
        let old = tunables::read(map)?;
        let mut new = old;
        new.trace = 0;
        new.trace_tgid = 0;
        new.trace_comm = [0; sis_limits_SIS_COMM_LEN as usize];
        new.generation = old.generation + 1;
        tunables::write(map, &new)
    }
}

impl Drop for TraceOn<'_> {
    fn drop(&mut self) {
        if self.on {
            if let Err(e) = Self::off(self.map) {
                eprintln!("trace: could not switch the trace off: {e:#}");
            }
        }
    }
}

/// Seconds and records so far: a line rewritten in place on a terminal, a line every 5 s
/// otherwise (a log would fill up with carriage returns).
struct Progress {
    total: Duration,
    tty: bool,
    last: Option<Duration>,
}

impl Progress {
    fn new(total: Duration) -> Self {
        Self {
            total,
            tty: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn show(&mut self, at: Duration, records: usize) {
        let every = if self.tty { 1 } else { 5 };
        let tick = Duration::from_secs(at.as_secs() / every * every);
        if tick.is_zero() || self.last == Some(tick) {
            return;
        }
        self.last = Some(tick);
        let line = format!(
            "trace: {:.0} of {:.0} s, {records} records",
            tick.as_secs_f64(),
            self.total.as_secs_f64()
        );
        if self.tty {
            eprint!("\r{line}");
        } else {
            eprintln!("{line}");
        }
    }

    fn done(&self) {
        if self.tty && self.last.is_some() {
            eprintln!();
        }
    }
}
