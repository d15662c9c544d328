//! The environment a run needs: the binaries it starts, the machine it runs on (copied into
//! every record), the scratch directory and the prefix of its progress lines. Made once per
//! bench (native.rs) and passed down by the runner. A module of its own so that what the runner
//! calls (switch.rs, supervise.rs, measure.rs) imports it without importing the runner: imports
//! point from the runner down, never back.

use std::path::PathBuf;

/// Where and how the runner runs.
pub struct Env {
    /// The scx_sis binary, run as the daemon.
    pub sched_exe: PathBuf,
    /// The scx_sis_lab binary, run as the wakelat workload.
    pub lab_exe: PathBuf,
    pub cpus: u32,
    pub topo: String,
    pub kernel: String,
    /// Scratch files (workload output, perf stat output) and scheduler logs.
    pub dir: PathBuf,
    /// Prefix of the progress lines on stderr.
    pub progress: &'static str,
}
