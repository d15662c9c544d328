//! What the verifier did for each loaded sched_ext program: its processed-instruction count
//! (`bpf_prog_info.verified_insns`, the figure veristat prints). It measures how complex a
//! callback is, and transfers to real hardware better than nanoseconds measured under an
//! emulator.

use std::collections::BTreeMap;

use libbpf_rs::query::ProgInfoIter;
use libbpf_rs::ProgramType;

/// Processed instructions of every loaded struct_ops program whose name starts with `prefix`
/// ("sis_" for ours, "" for any scheduler's), by name without the prefix. With a prefix, the
/// tracing programs of that name too (ours: the sched_switch tracepoint, on 6.19+); without
/// one, tracing programs are left out, as any other tool's would be counted.
pub fn struct_ops_insns(prefix: &str) -> BTreeMap<String, u32> {
    ProgInfoIter::default()
        .filter(|p| {
            p.ty == ProgramType::StructOps || (!prefix.is_empty() && p.ty == ProgramType::Tracing)
        })
        .filter_map(|p| {
            let name = p.name.to_string_lossy().into_owned();
            let short = name.strip_prefix(prefix)?.to_string();
            Some((short, p.verified_insns))
        })
        .collect()
}

/// "select_cpu 1234, enqueue 567, ... (total 9999)", or "" when nothing was found.
pub fn describe(insns: &BTreeMap<String, u32>) -> String {
    if insns.is_empty() {
        return String::new();
    }
    let total: u64 = insns.values().map(|&v| u64::from(v)).sum();
    let each: Vec<String> = insns.iter().map(|(n, v)| format!("{n} {v}")).collect();
    format!("{} (total {total})", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_lists_each_program_and_the_total() {
        let m = BTreeMap::from([
            ("select_cpu".to_string(), 1200),
            ("dispatch".to_string(), 800),
        ]);
        assert_eq!(describe(&m), "dispatch 800, select_cpu 1200 (total 2000)");
        assert_eq!(describe(&BTreeMap::new()), "");
    }
}
