//! The run stage: carrying the plan out. Natively, or as the VM's guest: the rounds
//! (runner.rs) bring the machine into each configuration (switch.rs, with the processes it
//! starts supervised in supervise.rs) and measure every workload under it (measure.rs, with
//! `perf stat` around it in perf_stat.rs and the kernel's bpf_stats in bpf_stats.rs; what the
//! workload runs and how its output is read is workloads/). With `--vm`, the host boots the VM
//! and collects the guest's records (vm.rs).

pub mod bpf_stats;
pub mod env;
pub mod measure;
pub mod native;
pub mod perf_stat;
pub mod runner;
pub mod supervise;
pub mod switch;
pub mod vm;
