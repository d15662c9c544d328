//! What both programs do at their edges as processes: the command line and one error line at a
//! failure (program.rs), the exit status by cause (exit.rs), the signal flag every long mode polls
//! (shutdown.rs), what the kernel says of sched_ext and of this process (kernel.rs), reaching a
//! running scx_sis from another process and the daemon's instance lock (instance.rs), the pinned
//! maps it is reached through, their directory and the writers' lock (pins.rs), and an output
//! file written safely, replaced whole or streamed in place (output.rs).
//!
//! Nothing here imports `stats`, `ab`, `trace` or `load`: they build on this, and share the
//! kernel's answers through it rather than through one another.

pub mod exit;
pub mod instance;
pub mod kernel;
pub mod output;
pub mod pins;
pub mod program;
pub mod shutdown;
