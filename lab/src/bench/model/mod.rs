//! The bench's bottom layer: what every stage speaks of. A workload by name and how big its runs
//! are (workload.rs), the record one run leaves (run_record.rs) and the numbers taken from it
//! (metric.rs). It imports no other part of the bench.

pub mod metric;
pub mod run_record;
pub mod workload;
