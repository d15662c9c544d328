//! The placement trace (`scx_sis trace`): BPF writes one record per decision, queueing, move
//! and run to a ring buffer while the trace tunable is on (src/bpf/trace.bpf.h); a session
//! switches it on for a running instance, collects the records and turns them into a Chrome
//! trace-event file (chrome_trace), a summary and a picture.

pub mod chrome_trace;
pub mod event;
pub mod session;
pub mod summary;
pub mod svg;
