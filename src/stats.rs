//! Per-LLC statistics: the BPF side counts per CPU, this module sums the
//! counts per LLC, takes deltas between two reads and renders them.

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use crate::bpf_intf::{self, sis_cpu_stats};

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
];

// SAFETY: a repr(C) struct of u64 arrays, valid for any bit pattern.
unsafe impl plain::Plain for sis_cpu_stats {}

/// Counters of one LLC (or of one CPU), summed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    pub counters: [u64; NR_COUNTERS],
    pub paths: [u64; NR_PATHS],
    pub cost_hist: [u64; COST_BUCKETS],
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            counters: [0; NR_COUNTERS],
            paths: [0; NR_PATHS],
            cost_hist: [0; COST_BUCKETS],
        }
    }
}

impl Counters {
    pub fn get(&self, c: bpf_intf::sis_counter) -> u64 {
        self.counters[c as usize]
    }

    fn add(&mut self, s: &sis_cpu_stats) {
        add_into(&mut self.counters, &s.counters);
        add_into(&mut self.paths, &s.paths);
        add_into(&mut self.cost_hist, &s.cost_hist);
    }

    /// What happened between `earlier` and `self` (counters only grow; a
    /// restart that reset them yields zeros rather than wrapping).
    pub fn delta(&self, earlier: &Counters) -> Counters {
        let mut d = Counters::default();
        sub_into(&mut d.counters, &self.counters, &earlier.counters);
        sub_into(&mut d.paths, &self.paths, &earlier.paths);
        sub_into(&mut d.cost_hist, &self.cost_hist, &earlier.cost_hist);
        d
    }
}

fn add_into<const N: usize>(acc: &mut [u64; N], v: &[u64; N]) {
    acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
}

fn sub_into<const N: usize>(out: &mut [u64; N], now: &[u64; N], then: &[u64; N]) {
    for i in 0..N {
        out[i] = now[i].saturating_sub(then[i]);
    }
}

/// Read every CPU's counters from the per-CPU map.
pub fn read_per_cpu(map: &impl MapCore) -> Result<Vec<sis_cpu_stats>> {
    let per_cpu = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context("failed to read the per-CPU stats")?
        .context("the per-CPU stats map is empty")?;
    per_cpu
        .iter()
        .map(|bytes| {
            // SAFETY: all-zero is a valid sis_cpu_stats.
            let mut s: sis_cpu_stats = unsafe { std::mem::zeroed() };
            plain::copy_from_bytes(&mut s, bytes)
                .map_err(|e| anyhow::anyhow!("malformed stats: {e:?}"))?;
            Ok(s)
        })
        .collect()
}

/// Sum per-CPU counters into per-LLC ones.
pub fn per_llc(per_cpu: &[sis_cpu_stats], cpu_llc: &[usize], nr_llcs: usize) -> Vec<Counters> {
    let mut llcs = vec![Counters::default(); nr_llcs];
    for (cpu, s) in per_cpu.iter().enumerate() {
        if let Some(&llc) = cpu_llc.get(cpu) {
            llcs[llc].add(s);
        }
    }
    llcs
}

/// One interval of one LLC, ready to print.
#[derive(Debug, Clone)]
pub struct LlcReport {
    pub llc: usize,
    pub cpus: usize,
    pub util_pct: f64,
    pub nr_scan: u32,
    pub delta: Counters,
    pub secs: f64,
}

impl LlcReport {
    fn rate(&self, c: bpf_intf::sis_counter) -> f64 {
        self.delta.get(c) as f64 / self.secs
    }

    /// One line: wakeups, migrations, where dispatches came from, placement paths.
    pub fn line(&self) -> String {
        use bpf_intf::*;
        let wakeups = self.delta.get(sis_counter_SIS_CNT_WAKEUPS);
        let paths = PATH_NAMES
            .iter()
            .zip(self.delta.paths)
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name}={:.0}%", pct(n, wakeups)))
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "llc{} cpus={} util={:.0}% nr_scan={} wakeups/s={:.0} migrations/s={:.0} \
             dispatch/s local={:.0} llc_steal={:.0} remote_steal={:.0} | {}",
            self.llc,
            self.cpus,
            self.util_pct,
            self.nr_scan,
            self.rate(sis_counter_SIS_CNT_WAKEUPS),
            self.rate(sis_counter_SIS_CNT_MIGRATIONS),
            self.rate(sis_counter_SIS_CNT_DISPATCH_LOCAL),
            self.rate(sis_counter_SIS_CNT_DISPATCH_LLC),
            self.rate(sis_counter_SIS_CNT_DISPATCH_REMOTE),
            if paths.is_empty() {
                "no wakeups".into()
            } else {
                paths
            },
        )
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpf_intf::*;

    fn cpu_stats(wakeups: u64, path: usize) -> sis_cpu_stats {
        // SAFETY: all-zero is valid.
        let mut s: sis_cpu_stats = unsafe { std::mem::zeroed() };
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

    #[test]
    fn delta_subtracts_and_never_wraps() {
        let mut a = Counters::default();
        let mut b = Counters::default();
        a.counters[0] = 10;
        b.counters[0] = 25;
        assert_eq!(b.delta(&a).counters[0], 15);
        assert_eq!(a.delta(&b).counters[0], 0);
    }

    #[test]
    fn line_shows_rates_and_path_shares() {
        let mut delta = Counters::default();
        delta.counters[sis_counter_SIS_CNT_WAKEUPS as usize] = 200;
        delta.counters[sis_counter_SIS_CNT_MIGRATIONS as usize] = 20;
        delta.paths[sis_path_SIS_PATH_PREV_IDLE as usize] = 150;
        delta.paths[sis_path_SIS_PATH_LLC_SCAN as usize] = 50;
        let r = LlcReport {
            llc: 1,
            cpus: 4,
            util_pct: 12.0,
            nr_scan: 4,
            delta,
            secs: 2.0,
        };
        let line = r.line();
        assert!(line.starts_with("llc1 cpus=4 util=12% nr_scan=4 wakeups/s=100 migrations/s=10"));
        assert!(line.contains("prev_idle=75% llc_scan=25%"), "{line}");
    }
}
