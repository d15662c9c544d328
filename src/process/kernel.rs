//! What the kernel says about this machine and this process, read from /proc and sysfs before
//! anything is touched: its release, whether it has sched_ext and which scheduler that runs, and
//! whether this process is root. The daemon's checks before it loads (`load::preflight`) and
//! every process that reaches a running instance (`instance`, `pins`, `ab`) ask here, so the
//! modules above them share these probes without importing one another.

use std::fs;
use std::path::Path;

use anyhow::Result;

use crate::process::exit::Cause;

/// The name every scx_sis gives its ops: the kernel shows it with the build id appended
/// (`load::scheduler::ops_name()`), so a loaded scheduler whose name starts with it is an scx_sis.
pub const OPS_NAME: &str = "scx_sis";

const SCX_SYSFS: &str = "/sys/kernel/sched_ext";

pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// sched_ext's state ("enabled", "disabled", ...), or "missing" without sched_ext.
pub fn scx_state() -> String {
    fs::read_to_string(format!("{SCX_SYSFS}/state"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "missing".into())
}

/// The loaded scheduler's ops name, or "" when none is loaded.
pub fn scx_ops() -> String {
    fs::read_to_string(format!("{SCX_SYSFS}/root/ops"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The name of the sched_ext scheduler currently loaded, if any.
pub fn loaded_scheduler() -> Option<String> {
    if matches!(scx_state().as_str(), "disabled" | "missing") {
        return None;
    }
    let ops = scx_ops();
    Some(if ops.is_empty() {
        "an unnamed scheduler".into()
    } else {
        ops
    })
}

/// Whether the scheduler sched_ext runs is an scx_sis (of any build).
pub fn sis_loaded() -> bool {
    loaded_scheduler().is_some_and(|n| n.starts_with(OPS_NAME))
}

/// Fails with "must run as root to {to_do}" unless this process runs as root.
pub fn require_root(to_do: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Cause::Unsupported.error(format!("must run as root to {to_do}")));
    }
    Ok(())
}

/// Fails naming the kernel, then `remedy`, unless this kernel has sched_ext.
pub fn require_sched_ext(remedy: &str) -> Result<()> {
    if !Path::new(SCX_SYSFS).exists() {
        return Err(Cause::Unsupported.error(format!(
            "kernel {} has no sched_ext (/sys/kernel/sched_ext is missing): {remedy}",
            kernel_release()
        )));
    }
    Ok(())
}
