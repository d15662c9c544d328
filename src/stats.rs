//! Per-LLC statistics. BPF counts in `llc_stats`, a per-CPU array whose key is
//! an LLC index: every CPU keeps its own copy of every LLC's counters, so the
//! hot path needs no atomics, and the daemon sums the CPUs' copies of each key.
//!
//! An event is filed under the LLC it is about, not under the LLC of the CPU
//! that ran the callback: a wakeup's select_cpu counters (wakeups, paths, the
//! scan, its cost, direct dispatches, held_wakeups, held_avoided) go under the
//! LLC of the task's prev CPU, so a waker in LLC 0 waking a task that last ran
//! in LLC 1 counts under LLC 1; everything else (enqueues, dispatches, steals,
//! pulls, wakeup preemptions and kicks, rescues, migrations) goes under the LLC
//! of the CPU where it happens.
//! The daemon sizes the map to the LLCs present before load (see
//! Scheduler::init), reads keys 0..nr_llcs here, and metrics.rs takes deltas
//! between two reads and renders them.

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use crate::bpf_intf::{self, sis_llc_stats};

pub const NR_COUNTERS: usize = bpf_intf::sis_counter_SIS_NR_COUNTERS as usize;
pub const NR_PATHS: usize = bpf_intf::sis_path_SIS_NR_PATHS as usize;
pub const COST_BUCKETS: usize = bpf_intf::sis_limits_SIS_COST_BUCKETS as usize;

/// Path names as users see them (order of enum sis_path).
pub const PATH_NAMES: [&str; NR_PATHS] = [
    "sync",
    "prev_idle",
    "prev_almost_idle",
    "idle_core",
    "llc_scan",
    "cross_llc",
    "fallback",
    "kernel_dfl",
];

// SAFETY: a repr(C) struct of u64 arrays, valid for any bit pattern.
unsafe impl plain::Plain for sis_llc_stats {}

/// Counters of one LLC, summed over the CPUs' copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    pub counters: [u64; NR_COUNTERS],
    pub paths: [u64; NR_PATHS],
    pub cost_hist: [u64; COST_BUCKETS],
    pub wakeq_wait_hist: [u64; COST_BUCKETS],
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            counters: [0; NR_COUNTERS],
            paths: [0; NR_PATHS],
            cost_hist: [0; COST_BUCKETS],
            wakeq_wait_hist: [0; COST_BUCKETS],
        }
    }
}

impl Counters {
    pub fn get(&self, c: bpf_intf::sis_counter) -> u64 {
        self.counters[c as usize]
    }

    fn add(&mut self, s: &sis_llc_stats) {
        add_into(&mut self.counters, &s.counters);
        add_into(&mut self.paths, &s.paths);
        add_into(&mut self.cost_hist, &s.cost_hist);
        add_into(&mut self.wakeq_wait_hist, &s.wakeq_wait_hist);
    }
}

fn add_into<const N: usize>(acc: &mut [u64; N], v: &[u64; N]) {
    acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
}

/// Every LLC's counters, by LLC index: keys 0..nr_llcs of the per-CPU
/// `llc_stats` map, each the sum of the CPUs' copies.
pub fn read_llcs(map: &impl MapCore, nr_llcs: usize) -> Result<Vec<Counters>> {
    (0..nr_llcs as u32)
        .map(|llc| {
            let copies = map
                .lookup_percpu(&llc.to_ne_bytes(), MapFlags::ANY)
                .with_context(|| format!("failed to read the stats of LLC {llc}"))?
                .with_context(|| format!("the stats map has no entry for LLC {llc}"))?;
            sum_cpu_copies(&copies).with_context(|| format!("the stats of LLC {llc}"))
        })
        .collect()
}

/// One LLC's counters: the sum of every CPU's copy (the raw per-CPU values of one key).
pub fn sum_cpu_copies(copies: &[Vec<u8>]) -> Result<Counters> {
    let mut sum = Counters::default();
    for bytes in copies {
        // SAFETY: all-zero is a valid sis_llc_stats.
        let mut s: sis_llc_stats = unsafe { std::mem::zeroed() };
        plain::copy_from_bytes(&mut s, bytes)
            .map_err(|e| anyhow::anyhow!("malformed stats: {e:?}"))?;
        sum.add(&s);
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpf_intf::*;

    /// One CPU's copy of an LLC's counters, as the map returns it.
    fn cpu_copy(wakeups: u64, path: usize, bucket: usize) -> Vec<u8> {
        // SAFETY: all-zero is valid.
        let mut s: sis_llc_stats = unsafe { std::mem::zeroed() };
        s.counters[sis_counter_SIS_CNT_WAKEUPS as usize] = wakeups;
        s.counters[sis_counter_SIS_CNT_PULLS_REMOTE as usize] = 1;
        s.paths[path] = wakeups;
        s.cost_hist[bucket] = wakeups;
        s.wakeq_wait_hist[bucket] = 2 * wakeups;
        // SAFETY: sis_llc_stats is plain old data.
        unsafe { plain::as_bytes(&s) }.to_vec()
    }

    #[test]
    fn sums_every_cpus_copy_of_a_key() {
        let llc =
            sum_cpu_copies(&[cpu_copy(1, 0, 3), cpu_copy(2, 1, 3), cpu_copy(4, 1, 5)]).unwrap();
        assert_eq!(llc.get(sis_counter_SIS_CNT_WAKEUPS), 7);
        assert_eq!(llc.get(sis_counter_SIS_CNT_PULLS_REMOTE), 3);
        assert_eq!(llc.get(sis_counter_SIS_CNT_PULLS), 0);
        assert_eq!((llc.paths[0], llc.paths[1]), (1, 6));
        assert_eq!((llc.cost_hist[3], llc.cost_hist[5]), (3, 4));
        assert_eq!((llc.wakeq_wait_hist[3], llc.wakeq_wait_hist[5]), (6, 8));
    }

    #[test]
    fn no_cpus_sum_to_zero_and_short_values_are_errors() {
        assert_eq!(sum_cpu_copies(&[]).unwrap(), Counters::default());
        let mut short = cpu_copy(1, 0, 0);
        short.pop();
        assert!(sum_cpu_copies(&[cpu_copy(1, 0, 0), short]).is_err());
    }
}
