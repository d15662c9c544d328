//! Loading and running the scheduler: the checks before anything is touched, the kernel's
//! interfaces and ops, the CPU layout BPF needs, the load itself with the verifier's counts, and
//! the loop that runs until an exit.

pub mod features;
pub mod kernel_ops;
pub mod preflight;
mod priority;
pub mod scheduler;
pub mod topology;
pub mod verifier;
