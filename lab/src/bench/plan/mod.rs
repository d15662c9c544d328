//! The plan stage: what a bench will run, decided before anything runs. The command line, the
//! named configurations, the peers installed from crates.io, where the binaries and tools are,
//! and the plan itself (configurations x workloads x repeats), which the VM's guest gets as JSON,
//! and what the later stages read of it (meta.rs).

pub mod config;
pub mod locate;
pub mod matrix;
pub mod meta;
pub mod opts;
pub mod peers;

pub use matrix::Plan;
pub use opts::BenchOpts;
