//! The checks before the daemon touches anything, each failing with one clear line. The kernel's
//! answers they read are `process::kernel`'s, shared with the processes that reach a running
//! instance; they are re-exported here for the lab's bench, which checks the machine as the
//! daemon does before it loads a scheduler.

use anyhow::Result;

use crate::process::exit::Cause;
use crate::process::instance::{self, InstanceLock};

pub use crate::process::kernel::{
    kernel_release, loaded_scheduler, require_root, require_sched_ext, scx_ops, scx_state,
};

/// Everything that must hold before loading; the returned lock keeps a second instance out.
pub fn check_can_load() -> Result<InstanceLock> {
    require_root("load a BPF scheduler (try: sudo scx_sis)")?;
    require_sched_ext(
        "boot a 6.12+ kernel built with CONFIG_SCHED_CLASS_EXT=y, or try it in a VM with \
         scripts/run.sh",
    )?;
    let none_loaded = || match loaded_scheduler() {
        Some(name) => Err(Cause::Busy.error(format!(
            "another sched_ext scheduler is already loaded: {name}"
        ))),
        None => Ok(()),
    };
    none_loaded()?;
    let lock = instance::lock()?;
    // A scheduler may have attached while we waited for nothing: check again under the lock.
    none_loaded()?;
    Ok(lock)
}
