//! The flag SIGINT and SIGTERM set, which every long-running mode polls to stop cleanly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

/// Set by SIGINT/SIGTERM. Installs the process's one signal handler, so call it once.
pub fn flag() -> Result<Arc<AtomicBool>> {
    install(|_| {})
}

/// Like `flag`, for runs that clean up before they stop: the first signal also prints `notice`,
/// a second one exits at once with status 130.
pub fn flag_then_exit(notice: &'static str) -> Result<Arc<AtomicBool>> {
    install(move |already_set| {
        if already_set {
            std::process::exit(130);
        }
        eprintln!("{notice}");
    })
}

/// Like `flag`, for runs with nothing to clean up that may wait on another process (a stats
/// request): a second signal exits at once with status 130.
pub fn flag_or_exit() -> Result<Arc<AtomicBool>> {
    install(|already_set| {
        if already_set {
            std::process::exit(130);
        }
    })
}

/// `on_signal` is told whether the flag was already set.
fn install(on_signal: impl Fn(bool) + Send + 'static) -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || on_signal(flag.swap(true, Ordering::Relaxed)))
        .context("failed to install the SIGINT/SIGTERM handler")?;
    Ok(stop)
}
