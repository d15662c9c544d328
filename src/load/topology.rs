//! The CPU layout the BPF side needs, taken from scx_utils::Topology.

use anyhow::{bail, Result};
use scx_utils::Topology;

use crate::bpf_intf;

const MAX_CPUS: usize = bpf_intf::sis_limits_SIS_MAX_CPUS as usize;
const MAX_LLCS: usize = bpf_intf::sis_limits_SIS_MAX_LLCS as usize;
const MAX_LLC_CPUS: usize = bpf_intf::sis_limits_SIS_MAX_LLC_CPUS as usize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// nr_cpu_ids: every CPU id is below it.
    pub nr_cpu_ids: usize,
    pub smt: bool,
    /// The CPUs of each LLC, by dense LLC index (0..nr_llcs).
    pub llcs: Vec<Vec<usize>>,
}

impl Layout {
    pub fn detect() -> Result<Self> {
        let topo = Topology::new()?;
        let llcs = topo
            .all_llcs
            .values()
            .map(|llc| llc.all_cpus.keys().copied().collect::<Vec<_>>())
            .filter(|cpus| !cpus.is_empty())
            .collect();
        Self::new(*scx_utils::NR_CPU_IDS, topo.smt_enabled, llcs)
    }

    pub fn new(nr_cpu_ids: usize, smt: bool, llcs: Vec<Vec<usize>>) -> Result<Self> {
        if nr_cpu_ids > MAX_CPUS {
            bail!("{nr_cpu_ids} CPU ids, but scx_sis supports at most {MAX_CPUS}");
        }
        if llcs.is_empty() || llcs.len() > MAX_LLCS {
            bail!("{} LLCs, but scx_sis supports 1 to {MAX_LLCS}", llcs.len());
        }
        if let Some(big) = llcs.iter().find(|c| c.len() > MAX_LLC_CPUS) {
            bail!(
                "an LLC of {} CPUs, but scx_sis supports at most {MAX_LLC_CPUS}",
                big.len()
            );
        }
        Ok(Self {
            nr_cpu_ids,
            smt,
            llcs,
        })
    }

    /// LLC index of every CPU id (CPUs in no LLC, e.g. offline, map to 0).
    pub fn cpu_llc(&self) -> Vec<usize> {
        let mut map = vec![0; self.nr_cpu_ids];
        for (llc, cpus) in self.llcs.iter().enumerate() {
            for &cpu in cpus {
                map[cpu] = llc;
            }
        }
        map
    }

    /// Position of every CPU in its LLC's list.
    pub fn cpu_pos(&self) -> Vec<usize> {
        let mut pos = vec![0; self.nr_cpu_ids];
        for cpus in &self.llcs {
            for (i, &cpu) in cpus.iter().enumerate() {
                pos[cpu] = i;
            }
        }
        pos
    }
}

/// Wakequeue shards for an LLC of `cpus` CPUs: one per 4 CPUs. Four CPUs
/// sharing a DSQ lock contend little (contention grows with the CPUs on one
/// lock), and the other shards of the LLC are still served when a CPU's own
/// is empty.
pub fn default_shards(cpus: usize) -> u32 {
    let max = bpf_intf::sis_limits_SIS_MAX_SHARDS as usize;
    cpus.div_ceil(4).clamp(1, max) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_cpus_to_llcs_and_positions() {
        let l = Layout::new(8, true, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]).unwrap();
        assert_eq!(l.cpu_llc(), vec![0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(l.cpu_pos(), vec![0, 1, 2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn one_shard_per_four_cpus_within_limits() {
        assert_eq!(default_shards(1), 1);
        assert_eq!(default_shards(4), 1);
        assert_eq!(default_shards(8), 2);
        assert_eq!(default_shards(26), 7);
        assert_eq!(default_shards(256), 16);
    }

    #[test]
    fn rejects_layouts_beyond_the_bpf_limits() {
        assert!(Layout::new(MAX_CPUS + 1, false, vec![vec![0]]).is_err());
        assert!(Layout::new(4, false, vec![]).is_err());
    }
}
