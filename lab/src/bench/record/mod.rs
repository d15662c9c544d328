//! The record stage: what a run leaves behind. One record per measured run, on the guest's
//! console and in runs.jsonl, and the metrics the later stages take from it; runs.jsonl and
//! plan.json saved in the output directory and read back.

pub mod run_record;
pub mod saved;
