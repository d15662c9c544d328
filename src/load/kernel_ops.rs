//! What this kernel's sched_ext_ops gets before load: how the scheduler learns that a higher
//! class holds a CPU (a held CPU), which ops flags are set, and a refusal if the kernel lacks an op
//! we need.

use anyhow::{bail, Result};
use scx_utils::compat::{self, ksym_exists, struct_has_field};

use crate::bpf_skel::OpenBpfSkel;

/// The ops members scx_sis sets on every kernel. libbpf leaves out, with an info line only,
/// a member the kernel's struct lacks, so each is checked against the kernel's BTF first.
const BASE_OPS: [&str; 11] = [
    "select_cpu",
    "enqueue",
    "dispatch",
    "tick",
    "running",
    "stopping",
    "enable",
    "init_task",
    "exit_task",
    "init",
    "exit",
];

/// How the scheduler learns that a higher sched class took a CPU and gave it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldMechanism {
    /// 6.19+: the sched_switch tracepoint, with a reenqueue callable from anywhere.
    SchedSwitch,
    /// 6.12..6.18: ops.cpu_release / ops.cpu_acquire (deprecated from 6.19).
    CpuRelease,
}

impl HeldMechanism {
    /// The tracepoint where the kernel can reenqueue a local DSQ outside ops.cpu_release:
    /// scx_bpf_reenqueue_local's v2 (6.19), the kfunc sis_sched_switch calls
    /// (scx_bpf_reenqueue_local_from_anywhere() does nothing without it). The generic
    /// scx_bpf_dsq_reenq (7.0) does not count: the tracepoint does not call it.
    pub fn detect() -> Self {
        Self::choose(|k| ksym_exists(k).unwrap_or(false))
    }

    fn choose(has_kfunc: impl Fn(&str) -> bool) -> Self {
        if has_kfunc("scx_bpf_reenqueue_local___v2") {
            Self::SchedSwitch
        } else {
            Self::CpuRelease
        }
    }

    /// The ops members this mechanism needs besides BASE_OPS.
    fn ops(self) -> &'static [&'static str] {
        match self {
            Self::SchedSwitch => &[],
            Self::CpuRelease => &["cpu_acquire", "cpu_release"],
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::SchedSwitch => "tp_btf/sched_switch + scx_bpf_reenqueue_local from anywhere",
            Self::CpuRelease => "ops.cpu_release/cpu_acquire",
        }
    }
}

/// The ops members @mechanism needs that @has_member says the kernel lacks.
fn missing_ops(mechanism: HeldMechanism, has_member: impl Fn(&str) -> bool) -> Vec<&'static str> {
    BASE_OPS
        .iter()
        .chain(mechanism.ops())
        .copied()
        .filter(|m| !has_member(m))
        .collect()
}

/// The ops flags to set: (name, value on this kernel, wanted). A value of 0 means the kernel
/// does not know the flag, and it is left out (a kernel refuses flags it does not know).
fn flags(queued_wakeup: bool) -> [(&'static str, u64, bool); 4] {
    [
        ("ENQ_LAST", *compat::SCX_OPS_ENQ_LAST, true),
        ("ENQ_EXITING", *compat::SCX_OPS_ENQ_EXITING, true),
        (
            "ENQ_MIGRATION_DISABLED",
            *compat::SCX_OPS_ENQ_MIGRATION_DISABLED,
            true,
        ),
        (
            "ALLOW_QUEUED_WAKEUP",
            *compat::SCX_OPS_ALLOW_QUEUED_WAKEUP,
            queued_wakeup,
        ),
    ]
    // BUILTIN_IDLE_PER_NODE stays off even on NUMA machines: with it, the global idle-mask
    // kfuncs that placement and the steals call (scx_bpf_get_idle_cpumask, pick_idle_cpu on
    // a cross-node mask) are refused, and they would all need their per-node variants.
}

/// What was chosen for this load, for the startup line.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub mechanism: HeldMechanism,
    pub flags: Vec<&'static str>,
    /// Flags asked for that this kernel does not know.
    pub unknown: Vec<&'static str>,
}

impl Chosen {
    /// One line, e.g. "held CPUs: ops.cpu_release/cpu_acquire; ops flags: ENQ_LAST|...".
    pub fn report(&self) -> String {
        let mut line = format!(
            "held CPUs: {}; ops flags: {}",
            self.mechanism.describe(),
            if self.flags.is_empty() {
                "none".to_string()
            } else {
                self.flags.join("|")
            }
        );
        if !self.unknown.is_empty() {
            line += &format!(" (unknown to this kernel: {})", self.unknown.join("|"));
        }
        line
    }
}

/// Choose the mechanism and the flags for this kernel and set them on the open skeleton;
/// an error when the kernel's sched_ext_ops lacks a member the choice needs.
pub fn configure(skel: &mut OpenBpfSkel<'_>, queued_wakeup: bool) -> Result<Chosen> {
    let mechanism = HeldMechanism::detect();
    let missing = missing_ops(mechanism, |m| {
        struct_has_field("sched_ext_ops", m).unwrap_or(false)
    });
    if !missing.is_empty() {
        bail!(
            "this kernel's sched_ext_ops has no {}, which scx_sis needs ({}); run it on a kernel that has them",
            missing.join(", "),
            mechanism.describe()
        );
    }

    let mut chosen = Chosen {
        mechanism,
        flags: Vec::new(),
        unknown: Vec::new(),
    };
    let mut bits = 0;
    for (name, value, wanted) in flags(queued_wakeup) {
        match (wanted, value) {
            (false, _) => {}
            (true, 0) => chosen.unknown.push(name),
            (true, v) => {
                bits |= v;
                chosen.flags.push(name);
            }
        }
    }

    let ops = skel.struct_ops.sis_ops_mut();
    ops.flags |= bits;
    if mechanism == HeldMechanism::SchedSwitch {
        // Deprecated from 6.19: with them set the kernel warns at every load.
        ops.cpu_acquire = std::ptr::null_mut();
        ops.cpu_release = std::ptr::null_mut();
        skel.progs.sis_sched_switch.set_autoload(true);
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracepoint_needs_a_reenqueue_from_anywhere() {
        assert_eq!(HeldMechanism::choose(|_| false), HeldMechanism::CpuRelease);
        assert_eq!(
            HeldMechanism::choose(|k| k == "scx_bpf_reenqueue_local___v2"),
            HeldMechanism::SchedSwitch
        );
        assert_eq!(
            HeldMechanism::choose(|k| k == "scx_bpf_dsq_reenq"),
            HeldMechanism::CpuRelease
        );
    }

    #[test]
    fn a_missing_member_is_named_and_the_old_ops_are_needed_only_without_the_tracepoint() {
        assert!(missing_ops(HeldMechanism::CpuRelease, |_| true).is_empty());
        assert_eq!(
            missing_ops(HeldMechanism::CpuRelease, |m| m != "cpu_release"),
            vec!["cpu_release"]
        );
        assert!(missing_ops(HeldMechanism::SchedSwitch, |m| !m.starts_with("cpu_")).is_empty());
        assert_eq!(
            missing_ops(HeldMechanism::SchedSwitch, |m| m != "tick"),
            vec!["tick"]
        );
    }

    #[test]
    fn the_report_names_the_mechanism_and_the_flags() {
        let c = Chosen {
            mechanism: HeldMechanism::SchedSwitch,
            flags: vec!["ENQ_LAST", "ENQ_EXITING"],
            unknown: vec!["ALLOW_QUEUED_WAKEUP"],
        };
        assert_eq!(
            c.report(),
            "held CPUs: tp_btf/sched_switch + scx_bpf_reenqueue_local from anywhere; \
             ops flags: ENQ_LAST|ENQ_EXITING (unknown to this kernel: ALLOW_QUEUED_WAKEUP)"
        );
    }
}
