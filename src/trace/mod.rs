//! The placement trace (`scx_sis trace`): BPF writes one record per decision, queueing, move
//! and run to a ring buffer while the trace tunable is on (src/bpf/trace.bpf.h); a session
//! switches it on for a running instance, collects the records and turns them into a Perfetto
//! trace, a summary and a picture.

pub mod event;
pub mod perfetto;
pub mod session;
pub mod summary;
pub mod svg;
