//! What BPF counted, read from its maps. Per-LLC event counters live in
//! `llc_stats`, a per-CPU array whose key is an LLC index: every CPU keeps its
//! own copy of every LLC's counters, so the hot path needs no atomics, and the
//! daemon sums the CPUs' copies of each key. The gauges the SIS_UTIL timer
//! samples (each LLC's utilization and scan depth, the wakequeue shards) are
//! arrays in `.bss`, read here by name.
//!
//! An event is filed under the LLC it is about, not under the LLC of the CPU
//! that ran the callback: a wakeup's select_cpu counters (wakeups, paths, the
//! scan, its cost, direct dispatches, held_wakeups, held_avoided) go under the
//! LLC of the task's prev CPU, so a waker in LLC 0 waking a task that last ran
//! in LLC 1 counts under LLC 1; everything else (enqueues, dispatches, steals,
//! pulls, wakeup preemptions and kicks, rescues, migrations) goes under the LLC
//! of the CPU where it happens.
//! The daemon sizes the map to the LLCs present before load (see
//! Scheduler::init), reads keys 0..nr_llcs here, and stats.rs turns what is
//! read into the published stats, their deltas and their renderings.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use crate::bpf_intf::{self, sis_llc_stats};
use crate::bpf_skel::{types, BpfSkel};

pub const NR_COUNTERS: usize = bpf_intf::sis_counter_SIS_NR_COUNTERS as usize;
pub const NR_PATHS: usize = bpf_intf::sis_path_SIS_NR_PATHS as usize;
pub const COST_BUCKETS: usize = bpf_intf::sis_limits_SIS_COST_BUCKETS as usize;

/// A placement path as users see it. Each path is declared once, in PATHS; everything else on
/// the Rust side (the JSON's names, the trace's causes and colours, the monitor's columns) is
/// read from there.
pub struct PlacementPath {
    /// Its name in the JSON, the trace and the docs.
    pub name: &'static str,
    /// Its column in the monitor's table and log line: at most 4 characters.
    pub column: &'static str,
    /// Its arrows' colour in the trace picture (trace/svg.rs).
    pub color: &'static str,
}

const fn path(name: &'static str, column: &'static str, color: &'static str) -> PlacementPath {
    PlacementPath {
        name,
        column,
        color,
    }
}

/// The placement paths, in the order of enum sis_path (src/bpf/intf.h): a path added there is
/// added here and nowhere else in Rust (the array's length is the enum's count, so a missing
/// entry does not compile).
pub const PATHS: [PlacementPath; NR_PATHS] = [
    path("sync", "sync", "#1f77b4"),
    path("prev_idle", "prev", "#2ca02c"),
    path("prev_almost_idle", "almo", "#17becf"),
    path("idle_core", "core", "#9467bd"),
    path("llc_scan", "scan", "#08306b"),
    path("cross_llc", "xllc", "#d62728"),
    path("fallback", "fall", "#8c564b"),
    path("kernel_dfl", "dfl", "#7f7f7f"),
];

/// The paths' names, in the order of PATHS.
pub const PATH_NAMES: [&str; NR_PATHS] = {
    let mut names = [""; NR_PATHS];
    let mut i = 0;
    while i < NR_PATHS {
        names[i] = PATHS[i].name;
        i += 1;
    }
    names
};

// SAFETY: a repr(C) struct of u64 arrays, valid for any bit pattern.
unsafe impl plain::Plain for sis_llc_stats {}

/// Counters of one LLC, summed over the CPUs' copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    pub counters: [u64; NR_COUNTERS],
    pub paths: [u64; NR_PATHS],
    pub cost_hist: [u64; COST_BUCKETS],
    pub wakeq_wait_hist: [u64; COST_BUCKETS],
    pub steal_wait_hist: [u64; COST_BUCKETS],
    pub wake_wait_hist: [u64; COST_BUCKETS],
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            counters: [0; NR_COUNTERS],
            paths: [0; NR_PATHS],
            cost_hist: [0; COST_BUCKETS],
            wakeq_wait_hist: [0; COST_BUCKETS],
            steal_wait_hist: [0; COST_BUCKETS],
            wake_wait_hist: [0; COST_BUCKETS],
        }
    }
}

impl Counters {
    pub fn get(&self, c: bpf_intf::sis_counter) -> u64 {
        self.counters[c as usize]
    }

    /// Wakeups by placement path, under the names of PATH_NAMES.
    pub fn paths_by_name(&self) -> BTreeMap<String, u64> {
        PATH_NAMES
            .iter()
            .zip(self.paths)
            .map(|(n, v)| (n.to_string(), v))
            .collect()
    }

    fn add(&mut self, s: &sis_llc_stats) {
        add_into(&mut self.counters, &s.counters);
        add_into(&mut self.paths, &s.paths);
        add_into(&mut self.cost_hist, &s.cost_hist);
        add_into(&mut self.wakeq_wait_hist, &s.wakeq_wait_hist);
        add_into(&mut self.steal_wait_hist, &s.steal_wait_hist);
        add_into(&mut self.wake_wait_hist, &s.wake_wait_hist);
    }
}

fn add_into<const N: usize>(acc: &mut [u64; N], v: &[u64; N]) {
    acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
}

/// Every LLC's counters, by LLC index: keys 0..nr_llcs of the per-CPU
/// `llc_stats` map, each the sum of the CPUs' copies.
fn read_llcs(map: &impl MapCore, nr_llcs: usize) -> Result<Vec<Counters>> {
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

/// One wakequeue shard's books, from the `shard_*` arrays of `.bss`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardCounts {
    pub enqueued: u64,
    pub ran: u64,
    pub left: u64,
    /// Tasks queued now (sampled every SIS_UTIL period).
    pub depth: u64,
    pub max_depth: u64,
}

/// Everything read about one LLC at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlcCounts {
    /// CPUs in the LLC (from the layout the scheduler was loaded with).
    pub cpus: usize,
    pub counters: Counters,
    /// Summed utilization, in units of SIS_CAPACITY per CPU.
    pub util: u32,
    /// CPUs a wakeup may scan for an idle one now.
    pub nr_scan: u32,
    /// By shard index: the shards in use now, plus any that still hold or once held tasks.
    pub shards: BTreeMap<u32, ShardCounts>,
}

/// Every LLC of the running scheduler, by LLC index. `llcs` gives the CPUs of each LLC, by the
/// same index, as the scheduler was loaded with them: plain data, so that the stats depend on no
/// type of the layer that loads the scheduler. Without a mapped `.bss` the gauges read 0 and no
/// shard is listed.
pub fn read(skel: &BpfSkel<'_>, llcs: &[Vec<usize>]) -> Result<Vec<LlcCounts>> {
    let counters = read_llcs(&skel.maps.llc_stats, llcs.len())?;
    let bss = skel.maps.bss_data.as_deref();
    Ok(counters
        .into_iter()
        .enumerate()
        .map(|(llc, counters)| LlcCounts {
            cpus: llcs[llc].len(),
            counters,
            util: bss.map_or(0, |b| b.llc_util[llc]),
            nr_scan: bss.map_or(0, |b| b.llc_nr_scan[llc]),
            shards: bss.map(|b| shards(b, llc)).unwrap_or_default(),
        })
        .collect())
}

/// The shards of `llc` in use now, plus any that still hold or once held tasks.
fn shards(bss: &types::bss, llc: usize) -> BTreeMap<u32, ShardCounts> {
    let max = bpf_intf::sis_limits_SIS_MAX_SHARDS as usize;
    (0..max)
        .filter_map(|i| {
            let slot = llc * max + i;
            let s = ShardCounts {
                enqueued: bss.shard_enqueued[slot],
                ran: bss.shard_ran[slot],
                left: bss.shard_left[slot],
                depth: bss.shard_depth[slot] as u64,
                max_depth: bss.shard_max_depth[slot] as u64,
            };
            let in_use = (i as u32) < bss.llc_shards[llc];
            (in_use || s.enqueued > 0).then_some((i as u32, s))
        })
        .collect()
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
    fn shards_in_use_or_ever_used_are_listed() {
        // SAFETY: .bss holds integers and arrays of them; all-zero is valid.
        let mut bss: Box<types::bss> = Box::new(unsafe { std::mem::zeroed() });
        let max = sis_limits_SIS_MAX_SHARDS as usize;
        bss.llc_shards[1] = 2;
        bss.shard_enqueued[max + 5] = 3;
        bss.shard_ran[max + 5] = 2;
        bss.shard_depth[max + 5] = 1;
        let listed = shards(&bss, 1);
        assert_eq!(listed.keys().copied().collect::<Vec<_>>(), [0, 1, 5]);
        assert_eq!(
            (listed[&5].enqueued, listed[&5].ran, listed[&5].depth),
            (3, 2, 1)
        );
        assert!(shards(&bss, 0).is_empty());
    }

    #[test]
    fn a_path_per_bpf_path_each_named_once() {
        assert_eq!(PATHS.len(), sis_path_SIS_NR_PATHS as usize);
        // The order is the BPF enum's: counters and trace records carry the enum's value.
        for (i, name) in [
            (sis_path_SIS_PATH_SYNC, "sync"),
            (sis_path_SIS_PATH_PREV_IDLE, "prev_idle"),
            (sis_path_SIS_PATH_PREV_ALMOST_IDLE, "prev_almost_idle"),
            (sis_path_SIS_PATH_IDLE_CORE, "idle_core"),
            (sis_path_SIS_PATH_LLC_SCAN, "llc_scan"),
            (sis_path_SIS_PATH_CROSS_LLC, "cross_llc"),
            (sis_path_SIS_PATH_FALLBACK, "fallback"),
            (sis_path_SIS_PATH_KERNEL_DFL, "kernel_dfl"),
        ] {
            assert_eq!(PATHS[i as usize].name, name);
        }
        let names: std::collections::BTreeSet<_> = PATH_NAMES.iter().collect();
        let columns: std::collections::BTreeSet<_> = PATHS.iter().map(|p| p.column).collect();
        assert_eq!((names.len(), columns.len()), (NR_PATHS, NR_PATHS));
        assert!(PATHS
            .iter()
            .all(|p| !p.column.is_empty() && p.column.len() <= 4));
    }

    #[test]
    fn no_cpus_sum_to_zero_and_short_values_are_errors() {
        assert_eq!(sum_cpu_copies(&[]).unwrap(), Counters::default());
        let mut short = cpu_copy(1, 0, 0);
        short.pop();
        assert!(sum_cpu_copies(&[cpu_copy(1, 0, 0), short]).is_err());
    }
}
