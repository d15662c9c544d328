//! What both programs do at their edges as processes: the command line and one error line at a
//! failure (program.rs), the exit status by cause (exit.rs), the signal flag every long mode polls
//! (shutdown.rs), reaching a running scx_sis from another process (instance.rs), the pinned
//! maps it is reached through, their directory and the writers' lock (pins.rs), and an output
//! file written safely, replaced whole or streamed in place (output.rs).
//!
//! Nothing here imports `ab`, `trace` or `stats`: they build on this.

pub mod exit;
pub mod instance;
pub mod output;
pub mod pins;
pub mod program;
pub mod shutdown;
