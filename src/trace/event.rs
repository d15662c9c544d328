//! One trace record as BPF wrote it (struct sis_trace_event, src/bpf/intf.h), decoded into
//! names a reader can print: the kind of event and its cause (placement path, move reason or
//! queue), each as the enum it is in BPF.

use anyhow::{bail, Result};

use crate::bpf_intf::{self, sis_trace_event};
use crate::policy::tunables::comm_of;
use crate::stats::counters::PATH_NAMES;

// SAFETY: a repr(C) struct of integers and a char array, valid for any bit pattern.
unsafe impl plain::Plain for sis_trace_event {}

/// Move reasons as users see them (order of enum sis_move).
pub const MOVE_NAMES: [&str; bpf_intf::sis_move_SIS_NR_MOVES as usize] = [
    "steal_llc",
    "steal_remote",
    "pull",
    "pull_remote",
    "rescue_held",
    "rescue_reenq",
    "wakeq",
    "plain_fifo",
    "tick_kick",
    "wakeup_kick",
    "held_kick",
];

/// Queue kinds as users see them (order of enum sis_queue).
pub const QUEUE_NAMES: [&str; bpf_intf::sis_queue_SIS_NR_QUEUES as usize] =
    ["cpu", "shard", "plain"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// select_cpu placed a wakeup.
    Decision,
    /// ops.enqueue queued a task to wait (no idle CPU was claimed for it).
    Queued,
    /// A steal, pull or rescue moved a task, or a CPU was kicked to take one.
    Move,
    /// A task started running.
    Run,
    /// A task stopped running.
    Stop,
}

/// Why something happened: the index into PATH_NAMES, MOVE_NAMES or QUEUE_NAMES.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// A RUN that neither a decision nor a move preceded: it stayed where it was queued.
    None,
    Path(usize),
    Move(usize),
    Queue(usize),
}

impl Cause {
    pub fn name(&self) -> &'static str {
        match *self {
            Cause::None => "none",
            Cause::Path(i) => PATH_NAMES.get(i).copied().unwrap_or("?path"),
            Cause::Move(i) => MOVE_NAMES.get(i).copied().unwrap_or("?move"),
            Cause::Queue(i) => QUEUE_NAMES.get(i).copied().unwrap_or("?queue"),
        }
    }

    /// A move that only woke a CPU (a kick), rather than one that moved a task.
    pub fn is_kick(&self) -> bool {
        matches!(self.name(), "tick_kick" | "wakeup_kick" | "held_kick")
    }
}

/// One event, with every field BPF wrote; which fields mean something depends on `kind`
/// (see struct sis_trace_event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC, ns.
    pub ts: u64,
    /// Decision: select_cpu's cost; Move: the task's wait in its queue; Run: decision to run.
    pub ns: u64,
    /// Run: the ts of the decision it follows (0: none).
    pub decision_ts: u64,
    pub pid: u32,
    pub tgid: u32,
    pub comm: String,
    pub kind: Kind,
    pub cause: Cause,
    /// Decision: chosen; Queued: the queue's CPU; Move: to; Run, Stop: this CPU.
    pub cpu: i32,
    /// Decision: prev; Move: from; Run: where it last ran (-1: never).
    pub from_cpu: i32,
    /// Decision: the CPU select_cpu ran on.
    pub waker_cpu: i32,
    pub wake_flags: u32,
    pub nr_scan: u32,
    pub tested: u32,
    /// Queued: tasks already waiting there.
    pub depth: u32,
    /// Decision: the CPU was idle and claimed.
    pub idle: bool,
    /// Run: on another CPU than last time.
    pub migrated: bool,
}

/// An all-zero record (bindgen derives no Default for it).
pub fn zeroed() -> sis_trace_event {
    // SAFETY: Plain (above): every bit pattern, all zeros included, is a valid value.
    unsafe { std::mem::zeroed() }
}

impl Event {
    /// Decode one ring buffer record.
    pub fn decode(bytes: &[u8]) -> Result<Event> {
        let mut raw = zeroed();
        if plain::copy_from_bytes(&mut raw, bytes).is_err() {
            bail!(
                "a trace record of {} bytes, not {}: daemon and trace built from different sources?",
                bytes.len(),
                std::mem::size_of::<sis_trace_event>()
            );
        }
        Ok(Event::from_raw(&raw))
    }

    pub fn from_raw(r: &sis_trace_event) -> Event {
        let kind = match r.kind as u32 {
            bpf_intf::sis_trace_kind_SIS_TRACE_DECISION => Kind::Decision,
            bpf_intf::sis_trace_kind_SIS_TRACE_QUEUED => Kind::Queued,
            bpf_intf::sis_trace_kind_SIS_TRACE_MOVE => Kind::Move,
            bpf_intf::sis_trace_kind_SIS_TRACE_RUN => Kind::Run,
            _ => Kind::Stop,
        };
        let i = r.cause as usize;
        let cause = match kind {
            Kind::Decision => Cause::Path(i),
            Kind::Move => Cause::Move(i),
            Kind::Queued => Cause::Queue(i),
            Kind::Stop => Cause::None,
            Kind::Run => match r.cause_kind as u32 {
                bpf_intf::sis_cause_kind_SIS_CAUSE_PATH => Cause::Path(i),
                bpf_intf::sis_cause_kind_SIS_CAUSE_MOVE => Cause::Move(i),
                _ => Cause::None,
            },
        };
        Event {
            ts: r.ts,
            ns: r.ns,
            decision_ts: r.decision_ts,
            pid: r.pid,
            tgid: r.tgid,
            comm: comm_of(&r.comm),
            kind,
            cause,
            cpu: r.cpu,
            from_cpu: r.from_cpu,
            waker_cpu: r.waker_cpu,
            wake_flags: r.wake_flags,
            nr_scan: r.nr_scan,
            tested: r.tested,
            depth: r.depth,
            idle: r.idle != 0,
            migrated: r.migrated != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_run_with_its_move_cause_and_comm() {
        let mut r = zeroed();
        r.ts = 5;
        r.kind = bpf_intf::sis_trace_kind_SIS_TRACE_RUN as u16;
        r.cause_kind = bpf_intf::sis_cause_kind_SIS_CAUSE_MOVE as u8;
        r.cause = bpf_intf::sis_move_SIS_MOVE_PULL as u16;
        r.migrated = 1;
        r.cpu = 3;
        r.from_cpu = 1;
        for (d, s) in r.comm.iter_mut().zip(b"hackbench") {
            *d = *s as _;
        }
        let bytes = unsafe { plain::as_bytes(&r) }.to_vec();
        let e = Event::decode(&bytes).unwrap();
        assert_eq!(e.kind, Kind::Run);
        assert_eq!(e.cause.name(), "pull");
        assert_eq!(e.comm, "hackbench");
        assert!(e.migrated);
        assert!(Event::decode(&bytes[1..]).is_err());
    }

    #[test]
    fn every_move_reason_and_queue_has_a_distinct_name() {
        let mut names: Vec<_> = MOVE_NAMES.iter().chain(QUEUE_NAMES.iter()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), MOVE_NAMES.len() + QUEUE_NAMES.len());
    }
}
