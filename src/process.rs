//! What both programs do at their edges as processes: the command line and one error line at a
//! failure (program.rs), the exit status by cause (exit.rs), the signal flag every long mode polls
//! (shutdown.rs), and reaching a running scx_sis from another process (instance.rs).

pub mod exit;
pub mod instance;
pub mod program;
pub mod shutdown;
