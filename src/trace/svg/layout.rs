//! Where the trace picture puts things: the window's time scale (x) and the CPUs' lanes (y).

use std::collections::{BTreeSet, HashMap};

use super::{LANE_GAP, LANE_H, LEFT, LLC_GAP, TOP};
use crate::trace::chrome_trace::Run;
use crate::trace::event::Event;

/// Above this many CPUs, only the lanes of CPUs that ran something in the window are drawn.
const MAX_ALL_LANES: usize = 32;

/// Where things go: the window, its time scale and each CPU's LLC.
pub(super) struct Frame<'a> {
    pub(super) w0: u64,
    pub(super) w1: u64,
    /// The trace's first event: times are shown in ms since it.
    pub(super) t0: u64,
    /// Pixels per ns.
    pub(super) scale: f64,
    pub(super) cpu_llc: &'a [u32],
}

impl Frame<'_> {
    pub(super) fn ms(&self, ts: u64) -> f64 {
        ts.saturating_sub(self.t0) as f64 / 1e6
    }

    pub(super) fn x(&self, ts: u64) -> f64 {
        LEFT + (ts.clamp(self.w0, self.w1) - self.w0) as f64 * self.scale
    }

    pub(super) fn llc_of(&self, cpu: i32) -> Option<u32> {
        usize::try_from(cpu)
            .ok()
            .and_then(|c| self.cpu_llc.get(c).copied())
    }

    /// A migration from one LLC to another.
    pub(super) fn crosses(&self, e: &Event) -> bool {
        self.llc_of(e.from_cpu)
            .zip(self.llc_of(e.cpu))
            .is_some_and(|(a, b)| a != b)
    }
}

/// A CPU's lane: its CPU, LLC and top edge.
pub(super) struct Lane {
    pub(super) cpu: i32,
    pub(super) llc: Option<u32>,
    pub(super) y: f64,
}

/// The lanes top to bottom, grouped by LLC.
pub(super) struct Lanes {
    pub(super) lanes: Vec<Lane>,
    pub(super) by_cpu: HashMap<i32, usize>,
    /// CPUs left out: idle in the window on a machine of more than MAX_ALL_LANES.
    pub(super) hidden: usize,
    /// Below the last lane.
    pub(super) bottom: f64,
}

impl Lanes {
    /// Every CPU, or on a large machine only those with something in the window.
    pub(super) fn new(
        events: &[Event],
        frame: &Frame,
        shown: &[&Run],
        migrations: &[&Event],
    ) -> Lanes {
        let mut cpus: BTreeSet<i32> = (0..frame.cpu_llc.len() as i32).collect();
        cpus.extend(events.iter().map(|e| e.cpu).filter(|&c| c >= 0));
        let busy: BTreeSet<i32> = shown
            .iter()
            .map(|r| r.cpu)
            .chain(migrations.iter().flat_map(|e| [e.cpu, e.from_cpu]))
            .filter(|&c| c >= 0)
            .collect();
        let hidden = if cpus.len() > MAX_ALL_LANES {
            let n = cpus.len() - busy.len();
            cpus = busy;
            n
        } else {
            0
        };
        let mut order: Vec<i32> = cpus.into_iter().collect();
        order.sort_by_key(|&c| (frame.llc_of(c).unwrap_or(u32::MAX), c));
        let mut lanes: Vec<Lane> = Vec::new();
        let mut y = TOP;
        for &cpu in &order {
            let llc = frame.llc_of(cpu);
            if lanes.last().is_some_and(|l| l.llc != llc) {
                y += LLC_GAP;
            }
            lanes.push(Lane { cpu, llc, y });
            y += LANE_H + LANE_GAP;
        }
        let by_cpu = lanes.iter().enumerate().map(|(i, l)| (l.cpu, i)).collect();
        Lanes {
            lanes,
            by_cpu,
            hidden,
            bottom: y,
        }
    }

    pub(super) fn of(&self, cpu: i32) -> Option<&Lane> {
        self.by_cpu.get(&cpu).map(|&i| &self.lanes[i])
    }
}

/// What the window holds, counted for the title.
pub(super) struct Tally {
    pub(super) runs: usize,
    pub(super) migrations: usize,
    pub(super) cross: usize,
    pub(super) unexplained: usize,
}
