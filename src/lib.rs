//! scx_sis, the library: the policy core of a sched_ext scheduler that rebuilds
//! select_idle_sibling() as switchable placement stages and shows, per LLC, where wakeups went.
//! Both programs build on it: `scx_sis` (the scheduler and its controls, src/bin/scx_sis/) and
//! `scx_sis_lab` (the bench and the wakelat workload, the crate in lab/). Nothing here
//! depends on either program's command line.

// The BPF side and its interface.
pub mod bpf_intf;
pub mod bpf_skel;

// The policy: what users set, and how it reaches BPF.
pub mod policy;

// Loading and running the scheduler.
pub mod load;

// What BPF counted, and what is published of it.
pub mod stats;

// The placement trace.
pub mod trace;

// Live A/B tests of two policies on the running scheduler.
pub mod ab;

// The programs' edges: command line, exit status, signals, the running instance and its pins.
pub mod process;

// Pieces both programs use.
pub mod chart;
pub mod verdict;
