//! bpf_stats: the kernel's run time and call count of every scheduler callback, switched on for
//! the bench and read around each run.

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};

use libbpf_rs::query::ProgInfoIter;
use libbpf_rs::ProgramType;

/// bpf_stats on for as long as this lives (BPF_ENABLE_STATS), unless the sysctl already is.
pub struct BpfStats(#[allow(dead_code)] Option<OwnedFd>);

pub fn enable_bpf_stats() -> BpfStats {
    let on = fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled")
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    if on {
        return BpfStats(None);
    }
    // SAFETY: a plain syscall wrapper; a non-negative result is a new fd we own.
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
    };
    // SAFETY: fd was just returned to us and nobody else owns it.
    BpfStats((fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// run_time_ns and run_cnt of every loaded struct_ops program (every scheduler callback), by
/// program id, each marked whether it is a select_cpu. Program names are cut at 15 characters
/// ("bpfland_select_"), hence "contains".
pub fn struct_ops_progs() -> BTreeMap<u32, (bool, u64, u64)> {
    ProgInfoIter::default()
        .filter(|p| p.ty == ProgramType::StructOps)
        .map(|p| {
            let select = p.name.to_string_lossy().contains("select");
            (p.id, (select, p.run_time_ns, p.run_cnt))
        })
        .collect()
}

/// The select_cpu programs of a struct_ops_progs() snapshot: (run_time_ns, run_cnt) by id.
pub fn select_only(progs: &BTreeMap<u32, (bool, u64, u64)>) -> BTreeMap<u32, (u64, u64)> {
    progs
        .iter()
        .filter(|(_, (select, _, _))| *select)
        .map(|(id, (_, ns, cnt))| (*id, (*ns, *cnt)))
        .collect()
}

/// run_time_ns between two snapshots, summed over the programs present in both (None: none).
pub fn bpf_total_ns(
    a: &BTreeMap<u32, (bool, u64, u64)>,
    b: &BTreeMap<u32, (bool, u64, u64)>,
) -> Option<u64> {
    let both: Vec<u64> = b
        .iter()
        .filter_map(|(id, (_, t1, _))| a.get(id).map(|(_, t0, _)| t1.saturating_sub(*t0)))
        .collect();
    (!both.is_empty()).then(|| both.iter().sum())
}

/// (ns per call, calls) between two snapshots, over the programs present in both.
pub fn bpf_delta(
    a: &BTreeMap<u32, (u64, u64)>,
    b: &BTreeMap<u32, (u64, u64)>,
) -> Option<(f64, u64)> {
    let (mut ns, mut cnt) = (0u64, 0u64);
    let mut any = false;
    for (id, (t1, c1)) in b {
        if let Some((t0, c0)) = a.get(id) {
            any = true;
            ns += t1.saturating_sub(*t0);
            cnt += c1.saturating_sub(*c0);
        }
    }
    if !any || cnt == 0 {
        return None;
    }
    Some((ns as f64 / cnt as f64, cnt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpf_delta_uses_programs_present_in_both_snapshots() {
        let a = BTreeMap::from([(1, (1000, 10)), (2, (50, 1))]);
        let b = BTreeMap::from([(1, (3000, 20)), (3, (999, 9))]);
        assert_eq!(bpf_delta(&a, &b), Some((200.0, 10)));
        assert_eq!(bpf_delta(&a, &a), None, "no calls");
        assert_eq!(bpf_delta(&BTreeMap::new(), &b), None);
    }

    #[test]
    fn bpf_total_sums_every_program_present_in_both_and_select_only_keeps_select_cpu() {
        let a = BTreeMap::from([
            (1, (true, 1000, 10)),
            (2, (false, 50, 1)),
            (4, (false, 7, 1)),
        ]);
        let b = BTreeMap::from([
            (1, (true, 3000, 20)),
            (2, (false, 450, 5)),
            (3, (false, 9, 9)),
        ]);
        assert_eq!(bpf_total_ns(&a, &b), Some(2000 + 400));
        assert_eq!(bpf_total_ns(&BTreeMap::new(), &b), None);
        assert_eq!(select_only(&b), BTreeMap::from([(1, (3000, 20))]));
    }
}
