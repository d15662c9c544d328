//! Per-LLC statistics: the BPF side counts per CPU, this module sums the
//! counts per LLC, takes deltas between two reads and renders them.

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

/// Counters of one LLC (or of one CPU), summed.
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

/// Read every CPU's counters from the per-CPU map.
pub fn read_per_cpu(map: &impl MapCore) -> Result<Vec<sis_llc_stats>> {
    let per_cpu = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context("failed to read the per-CPU stats")?
        .context("the per-CPU stats map is empty")?;
    per_cpu
        .iter()
        .map(|bytes| {
            // SAFETY: all-zero is a valid sis_llc_stats.
            let mut s: sis_llc_stats = unsafe { std::mem::zeroed() };
            plain::copy_from_bytes(&mut s, bytes)
                .map_err(|e| anyhow::anyhow!("malformed stats: {e:?}"))?;
            Ok(s)
        })
        .collect()
}

/// Sum per-CPU counters into per-LLC ones.
pub fn per_llc(per_cpu: &[sis_llc_stats], cpu_llc: &[usize], nr_llcs: usize) -> Vec<Counters> {
    let mut llcs = vec![Counters::default(); nr_llcs];
    for (cpu, s) in per_cpu.iter().enumerate() {
        if let Some(&llc) = cpu_llc.get(cpu) {
            llcs[llc].add(s);
        }
    }
    llcs
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpf_intf::*;

    fn cpu_stats(wakeups: u64, path: usize) -> sis_llc_stats {
        // SAFETY: all-zero is valid.
        let mut s: sis_llc_stats = unsafe { std::mem::zeroed() };
        s.counters[sis_counter_SIS_CNT_WAKEUPS as usize] = wakeups;
        s.paths[path] = wakeups;
        s
    }

    #[test]
    fn sums_cpus_into_their_llcs() {
        let per_cpu = [cpu_stats(1, 0), cpu_stats(2, 1), cpu_stats(4, 1)];
        let llcs = per_llc(&per_cpu, &[0, 1, 1], 2);
        assert_eq!(llcs[0].get(sis_counter_SIS_CNT_WAKEUPS), 1);
        assert_eq!(llcs[1].get(sis_counter_SIS_CNT_WAKEUPS), 6);
        assert_eq!(llcs[1].paths[1], 6);
    }
}
