//! The lab's library: what the bench and the VM tests share. The sched_ext kernels the project's
//! VM boots (kernels.rs) and durations as progress lines print them (elapsed.rs).

pub mod elapsed;
pub mod kernels;
