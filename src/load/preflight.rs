//! Checks made before touching anything, each failing with one clear line.

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

use crate::process::exit::Cause;

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

const INSTANCE_LOCK: &str = "/run/scx_sis.lock";

/// Held for the daemon's whole life. The sched_ext state only says "enabled"
/// once a scheduler is attached, a second or so after it starts loading; a
/// second instance started in that window would take the first one's pin.
pub struct InstanceLock(#[allow(dead_code)] File);

fn lock_instance() -> Result<InstanceLock> {
    let file =
        File::create(INSTANCE_LOCK).with_context(|| format!("failed to open {INSTANCE_LOCK}"))?;
    // SAFETY: flock on a file descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(Cause::Busy.error(format!(
            "another scx_sis instance is already starting or running ({INSTANCE_LOCK} is locked)"
        )));
    }
    Ok(InstanceLock(file))
}

/// Whether a daemon holds the instance lock (one runs, or is loading or reloading).
pub fn instance_running() -> bool {
    let Ok(file) = File::open(INSTANCE_LOCK) else {
        return false;
    };
    // SAFETY: flock on a file descriptor we own; a shared lock taken is dropped with the file.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
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

/// Everything that must hold before loading; the returned lock keeps a second instance out.
pub fn check_can_load() -> Result<InstanceLock> {
    require_root("load a BPF scheduler (try: sudo scx_sis)")?;
    require_sched_ext(
        "boot a 6.12+ kernel built with CONFIG_SCHED_CLASS_EXT=y, or try it in a VM with \
         scripts/run.sh",
    )?;
    if let Some(name) = loaded_scheduler() {
        return Err(Cause::Busy.error(format!(
            "another sched_ext scheduler is already loaded: {name}"
        )));
    }
    let lock = lock_instance()?;
    // A scheduler may have attached while we waited for nothing: check again under the lock.
    if let Some(name) = loaded_scheduler() {
        return Err(Cause::Busy.error(format!(
            "another sched_ext scheduler is already loaded: {name}"
        )));
    }
    Ok(lock)
}
