//! Checks made before touching anything, each failing with one clear line.

use std::fs;
use std::path::Path;

use anyhow::{bail, Result};

const SCX_SYSFS: &str = "/sys/kernel/sched_ext";

pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The name of the sched_ext scheduler currently loaded, if any.
pub fn loaded_scheduler() -> Option<String> {
    let state = fs::read_to_string(format!("{SCX_SYSFS}/state")).ok()?;
    if state.trim() == "disabled" {
        return None;
    }
    let ops = fs::read_to_string(format!("{SCX_SYSFS}/root/ops"))
        .unwrap_or_else(|_| "an unnamed scheduler".into());
    Some(ops.trim().to_string())
}

pub fn check_can_load() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("must run as root to load a BPF scheduler (try: sudo scx_sis)");
    }
    if !Path::new(SCX_SYSFS).exists() {
        bail!(
            "kernel {} has no sched_ext (/sys/kernel/sched_ext is missing): boot a 6.12+ kernel \
             built with CONFIG_SCHED_CLASS_EXT=y, or try it in a VM with scripts/run.sh",
            kernel_release()
        );
    }
    if let Some(name) = loaded_scheduler() {
        bail!("another sched_ext scheduler is already loaded: {name}");
    }
    Ok(())
}
