//! Message and worker threads.
//!
//! Each message thread owns a group of workers. A round: the message thread
//! rings every worker's doorbell (one request each), then sleeps until the
//! last worker has finished. A worker wakes, records how long its wakeup
//! took, burns its CPU time and reports completion. The message thread keeps
//! the group's histograms, so no lock or shared histogram is ever touched.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::futex;
use super::histogram::Histogram;

/// Small stacks: with 256 x 256 workers, 2 MiB defaults would reserve 128 GiB.
pub const STACK_SIZE: usize = 256 * 1024;

/// What every thread needs to know about the run.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub workers: usize,
    pub cputime: Duration,
    pub sleep: Duration,
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Shared by all threads: the clock origin and the phase of the run.
pub struct Shared {
    epoch: Instant,
    phase: AtomicU8,
}

impl Shared {
    pub fn new(measure_now: bool) -> Self {
        Self {
            epoch: Instant::now(),
            phase: AtomicU8::new(if measure_now { MEASURE } else { WARMUP }),
        }
    }

    /// Nanoseconds since the epoch; Instant is CLOCK_MONOTONIC, through the vDSO.
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub fn start_measuring(&self) {
        // Never turn a stop (a thread failed) back into a measurement.
        let _ = self
            .phase
            .compare_exchange(WARMUP, MEASURE, Ordering::Relaxed, Ordering::Relaxed);
    }

    pub fn stop(&self) {
        self.phase.store(STOP, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.phase.load(Ordering::Relaxed) == STOP
    }
}

/// One worker's mailbox. Aligned to 128 bytes so that two workers never share
/// a cache line (or an adjacent-line prefetch pair).
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    /// Bumped by the message thread for each request (and once for exit).
    doorbell: AtomicU32,
    /// When the message thread rang, in ns since the epoch.
    rung_at: AtomicU64,
    /// Filled in by the worker: its wakeup latency and when it finished.
    latency_ns: AtomicU64,
    finished_at: AtomicU64,
}

struct Group {
    slots: Vec<Slot>,
    /// Workers still busy with the current round; the message thread sleeps on it.
    pending: AtomicU32,
    exit: AtomicBool,
}

/// What one message thread measured.
pub struct GroupStats {
    /// Worker wakeups: message thread's wake call to worker running.
    pub worker_wakeups: Histogram,
    /// Message thread wakeups: last worker done to message thread running,
    /// counted only for rounds in which the message thread had to sleep.
    pub message_wakeups: Histogram,
}

/// Runs one message thread and its workers until `shared` says stop; spawns
/// the workers and joins them before returning.
pub fn run_message_thread(id: usize, shared: &Shared, cfg: &Config) -> Result<GroupStats> {
    let group = Group {
        slots: (0..cfg.workers).map(|_| Slot::default()).collect(),
        pending: AtomicU32::new(0),
        exit: AtomicBool::new(false),
    };
    thread::scope(|scope| {
        let mut spawned = Ok(());
        for (w, slot) in group.slots.iter().enumerate() {
            let group = &group;
            let handle = thread::Builder::new()
                .name(format!("wakelat-{id}.{w}"))
                .stack_size(STACK_SIZE)
                .spawn_scoped(scope, move || worker(group, slot, shared, cfg.cputime));
            if let Err(e) = handle {
                spawned = Err(e).with_context(|| format!("cannot start worker thread {id}.{w}"));
                break;
            }
        }
        let result = match spawned {
            Ok(()) => Ok(drive(&group, shared, cfg)),
            Err(e) => {
                shared.stop();
                Err(e)
            }
        };
        // Let the workers go; the scope joins them.
        group.exit.store(true, Ordering::Relaxed);
        for slot in &group.slots {
            slot.doorbell.fetch_add(1, Ordering::Release);
            futex::wake_one(&slot.doorbell);
        }
        result
    })
}

/// The message thread's rounds.
fn drive(group: &Group, shared: &Shared, cfg: &Config) -> GroupStats {
    let mut stats = GroupStats {
        worker_wakeups: Histogram::new(),
        message_wakeups: Histogram::new(),
    };
    loop {
        // A round counts if it starts during the measurement.
        let measured = match shared.phase.load(Ordering::Relaxed) {
            STOP => break,
            phase => phase == MEASURE,
        };
        // Published to the workers by the doorbells' Release.
        group.pending.store(cfg.workers as u32, Ordering::Relaxed);
        for slot in &group.slots {
            slot.rung_at.store(shared.now_ns(), Ordering::Relaxed);
            slot.doorbell.fetch_add(1, Ordering::Release);
            futex::wake_one(&slot.doorbell);
        }

        let mut slept = false;
        loop {
            let pending = group.pending.load(Ordering::Acquire);
            if pending == 0 {
                break;
            }
            slept = futex::wait(&group.pending, pending);
        }
        let now = shared.now_ns();

        if measured {
            // The Acquire on `pending` == 0 makes every slot's results visible.
            let mut last_finish = 0;
            for slot in &group.slots {
                stats
                    .worker_wakeups
                    .record(slot.latency_ns.load(Ordering::Relaxed));
                last_finish = last_finish.max(slot.finished_at.load(Ordering::Relaxed));
            }
            if slept {
                stats
                    .message_wakeups
                    .record(now.saturating_sub(last_finish));
            }
        }
        if !cfg.sleep.is_zero() {
            thread::sleep(cfg.sleep);
        }
    }
    stats
}

fn worker(group: &Group, slot: &Slot, shared: &Shared, cputime: Duration) {
    let mut seen = 0;
    loop {
        loop {
            let bell = slot.doorbell.load(Ordering::Acquire);
            if bell != seen {
                seen = bell;
                break;
            }
            futex::wait(&slot.doorbell, seen);
        }
        let woke_at = shared.now_ns();
        if group.exit.load(Ordering::Relaxed) {
            return;
        }
        let rung_at = slot.rung_at.load(Ordering::Relaxed);
        slot.latency_ns
            .store(woke_at.saturating_sub(rung_at), Ordering::Relaxed);

        burn_cpu(cputime);

        slot.finished_at.store(shared.now_ns(), Ordering::Relaxed);
        // Release: the slot's results are visible to whoever sees the count drop.
        if group.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            futex::wake_one(&group.pending);
        }
    }
}

/// CPU time this thread has consumed.
pub fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let ret = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (ret == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Spins until this thread has had `amount` of CPU time. Thread CPU time,
/// not wall time, so that a worker preempted mid-request still does its full
/// share of work, and a contended CPU shows up as fewer requests per second.
fn burn_cpu(amount: Duration) {
    if amount.is_zero() {
        return;
    }
    // The run checked the clock works; if it ever fails, stop at once.
    let Some(start) = thread_cpu_time() else {
        return;
    };
    let mut x: u64 = 1;
    loop {
        // A little arithmetic between clock reads: the thread CPU clock is a
        // real syscall (it has no vDSO path), so read it only every ~1 us.
        for _ in 0..256 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        match thread_cpu_time() {
            Some(now) if now.saturating_sub(start) < amount => continue,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burn_cpu_consumes_about_the_requested_cpu_time() {
        let before = thread_cpu_time().unwrap();
        burn_cpu(Duration::from_millis(5));
        let used = thread_cpu_time().unwrap() - before;
        assert!(used >= Duration::from_millis(5), "{used:?}");
        assert!(used < Duration::from_millis(50), "{used:?}");
    }

    #[test]
    fn a_short_run_measures_every_worker_and_joins_cleanly() {
        let shared = Shared::new(true);
        let cfg = Config {
            workers: 3,
            cputime: Duration::from_micros(10),
            sleep: Duration::ZERO,
        };
        let stats = thread::scope(|s| {
            let handle = s.spawn(|| run_message_thread(0, &shared, &cfg));
            thread::sleep(Duration::from_millis(100));
            shared.stop();
            handle.join().unwrap()
        })
        .unwrap();
        let n = stats.worker_wakeups.count();
        assert!(n > 0 && n.is_multiple_of(3), "{n} samples");
        assert!(stats.message_wakeups.count() <= n / 3);
    }

    #[test]
    fn warmup_rounds_are_not_recorded() {
        let shared = Shared::new(false);
        let cfg = Config {
            workers: 1,
            cputime: Duration::ZERO,
            sleep: Duration::ZERO,
        };
        let stats = thread::scope(|s| {
            let handle = s.spawn(|| run_message_thread(0, &shared, &cfg));
            thread::sleep(Duration::from_millis(20));
            shared.stop();
            handle.join().unwrap()
        })
        .unwrap();
        assert_eq!(stats.worker_wakeups.count(), 0);
    }
}
