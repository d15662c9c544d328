//! scx_sis, the library: the policy core of a sched_ext scheduler that rebuilds
//! select_idle_sibling() as switchable placement stages and shows, per LLC, where wakeups went.
//! Both programs build on it: `scx_sis` (the scheduler and its controls, src/main.rs) and
//! `scx_sis_lab` (the bench and the wakelat workload, src/bin/scx_sis_lab/). Nothing here
//! depends on either program's command line.

// The BPF side and its interface.
pub mod bpf_intf;
pub mod bpf_skel;

// The policy: what users set, and how it reaches BPF.
pub mod curves;
pub mod policy;
pub mod topology;
pub mod tunables;
pub mod verifier;

// Loading and running the scheduler.
pub mod features;
pub mod kernel_ops;
pub mod preflight;
pub mod scheduler;

// What BPF counted, and what is published of it.
pub mod counters;
pub mod stats;

// The placement trace.
pub mod trace;

// Pieces both programs use.
pub mod chart;
pub mod elapsed;
pub mod exit;
pub mod instance;
pub mod kernels;
pub mod program;
pub mod shutdown;
