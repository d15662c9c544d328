//! One trace session on a running scheduler: switch the trace on (with its filter) through the
//! pinned tunables, drain the pinned ring buffer for the duration, switch it off, and return
//! the records with what the scheduler's own counters saw over the same window.
//!
//! The trace is switched off whatever ends the session (its end, Ctrl-C, an error): a trace
//! left on would keep costing every decision a record nobody reads.

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
use crate::bpf_intf::sis_limits_SIS_COMM_LEN;
use crate::stats::Metrics;
use crate::tunables::{self, TRACE_RING_PIN};

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
}

/// What a session collected.
pub struct Capture {
    /// In time order.
    pub events: Vec<Event>,
    /// From switching on to switching off.
    pub duration_s: f64,
    /// The scheduler's counters over the session (a delta), drops and records written included.
    pub counters: Metrics,
}

/// How often the reader drains the buffer. The scheduler never wakes it (trace.bpf.h), so
/// this bounds how full the buffer gets: at 10 ms a 8 MiB buffer holds a second's records of
/// a busy 8-CPU machine many times over.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

pub fn capture(opts: &Options, shutdown: Arc<AtomicBool>) -> Result<Capture> {
    opts.filter.validate()?;
    let tun = tunables::open_live()?;
    let ring = MapHandle::from_pinned_path(TRACE_RING_PIN).with_context(|| {
        format!("failed to open {TRACE_RING_PIN} (a scheduler older than scx_sis trace?)")
    })?;
    if ring.map_type() != MapType::RingBuf {
        bail!("{TRACE_RING_PIN} is not a ring buffer");
    }
    let mut stats = crate::instance::connect_stats()?;

    let events = RefCell::new(Vec::<Event>::new());
    let bad = RefCell::new(None);
    let mut builder = RingBufferBuilder::new();
    builder.add(&ring, |data: &[u8]| match Event::decode(data) {
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
    stats
        .request::<Metrics>("stats", vec![])
        .context("failed to read stats")?;
    let guard = TraceOn::switch_on(&tun, &opts.filter, opts.force)?;
    let started = Instant::now();
    let mut progress = Progress::new(opts.duration);
    while started.elapsed() < opts.duration && !shutdown.load(Ordering::Relaxed) {
        std::thread::sleep(DRAIN_EVERY);
        drain(&rb, &bad, false)?;
        progress.show(started.elapsed(), events.borrow().len());
    }
    guard.switch_off()?;
    let duration_s = started.elapsed().as_secs_f64();
    let counters: Metrics = stats
        .request("stats", vec![])
        .context("the scx_sis instance stopped answering")?;
    // What was written before the switch took effect, to the end.
    drain(&rb, &bad, true)?;
    progress.done();
    drop(rb);

    let mut events = events.into_inner();
    // Per CPU the buffer is in order; across CPUs records interleave by reservation, and a
    // decision carries the time its select_cpu began, before its record was reserved.
    events.sort_by_key(|e| e.ts);
    Ok(Capture {
        events,
        duration_s,
        counters,
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
    if rc < 0 {
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
        let _lock = tunables::lock_exclusive(tunables::PIN_DIR, tunables::LOCK_WAIT)?;
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

    fn off(map: &MapHandle) -> Result<()> {
        let _lock = tunables::lock_exclusive(tunables::PIN_DIR, tunables::LOCK_WAIT)?;
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
