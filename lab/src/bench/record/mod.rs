//! The record stage: what a bench leaves in its output directory. runs.jsonl (the records, one
//! a line, as the runs arrive) and plan.json (the plan and the report's notes), saved and read
//! back. The record itself is the model's (model/run_record.rs).

pub mod saved;
