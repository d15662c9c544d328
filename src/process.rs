//! What both programs do at their edges as processes: the command line and one error line at a
//! failure (program.rs), the exit status by cause (exit.rs), the signal flag every long mode polls
//! (shutdown.rs), reaching a running scx_sis from another process (instance.rs), and the pinned
//! maps it is reached through, their directory and the writers' lock (pins.rs).
//!
//! Nothing here imports `ab`, `trace` or `stats`: they build on this.

pub mod exit;
pub mod instance;
pub mod pins;
pub mod program;
pub mod shutdown;
