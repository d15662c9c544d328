//! `scx_sis trace`: record the running scheduler's placement for a while, then write the
//! Perfetto trace, print the summary (text or JSON) and draw the picture if asked.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::TraceOpts;
use scx_sis::stats::Metrics;
use scx_sis::topology::Layout;
use scx_sis::trace::session::{self, Capture, Filter};
use scx_sis::trace::{perfetto, summary, svg};

/// `--json`: the summary, the session and the scheduler's own counters over the same window.
#[derive(Serialize)]
struct Report<'a> {
    records: usize,
    duration_s: f64,
    filter: &'a Filter,
    /// Records BPF wrote and lost over the window, by its counters.
    written: u64,
    dropped: u64,
    /// The processes and task names the records are about (a filter's result, at a glance).
    tgids: BTreeSet<u32>,
    comms: BTreeSet<&'a str>,
    summary: &'a summary::Summary,
    counters: &'a Metrics,
}

pub fn run(opts: &TraceOpts, shutdown: Arc<AtomicBool>) -> Result<()> {
    let filter = Filter {
        tgid: opts.pid,
        comm: opts.comm.clone(),
    };
    let session_opts = session::Options {
        duration: Duration::from_secs_f64(opts.duration),
        filter: filter.clone(),
        force: opts.force,
    };
    let layout = Layout::detect().context("failed to read the CPU topology")?;
    let cpu_llc = cpu_llcs(&layout);
    eprintln!(
        "trace: recording for {} s{}",
        opts.duration,
        describe(&filter)
    );
    let cap = session::capture(&session_opts, shutdown)?;
    let written = cap.counters.llc_sum(|l| l.trace_events);
    let dropped = cap.counters.llc_sum(|l| l.trace_drops);
    eprintln!(
        "trace: {} records in {:.1} s ({written} written, {dropped} dropped)",
        cap.events.len(),
        cap.duration_s
    );
    if dropped > 0 {
        eprintln!(
            "trace: {dropped} records were lost because the ring buffer was full: \
             --pid or --comm record fewer, or load the scheduler with a larger --trace-buffer-kib"
        );
    }

    let meta = perfetto::Meta {
        nr_cpu_ids: layout.nr_cpu_ids,
        cpu_llc: cpu_llc.clone(),
        drops: dropped,
        duration_s: cap.duration_s,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        filters: describe(&filter).trim_start_matches(", ").to_string(),
    };
    write_file(&opts.output, |w| perfetto::write(&cap.events, &meta, w))?;
    eprintln!(
        "trace: wrote {} (open it in ui.perfetto.dev or chrome://tracing)",
        opts.output.display()
    );
    if let Some(path) = &opts.svg {
        write_file(path, |w| svg::draw(&cap.events, &cpu_llc, None, w))?;
        eprintln!("trace: drew {}", path.display());
    }

    let summary = summary::summarize(&cap.events, &cpu_llc);
    if opts.json {
        let report = Report {
            records: cap.events.len(),
            duration_s: cap.duration_s,
            filter: &filter,
            written,
            dropped,
            // pid 0: a kick's record, about a CPU rather than a task.
            tgids: cap
                .events
                .iter()
                .filter(|e| e.pid != 0)
                .map(|e| e.tgid)
                .collect(),
            comms: cap
                .events
                .iter()
                .filter(|e| e.pid != 0)
                .map(|e| e.comm.as_str())
                .collect(),
            summary: &summary,
            counters: &cap.counters,
        };
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{summary}");
        print_crosscheck(&cap, &summary);
    }
    Ok(())
}

/// The trace's counts beside the scheduler's counters for the same window: they differ by the
/// drops (and, with a filter, by the tasks left out).
fn print_crosscheck(cap: &Capture, summary: &summary::Summary) {
    println!(
        "counters over the same window: {} wakeups ({} decisions traced), {} migrations ({} traced)",
        cap.counters.llc_sum(|l| l.wakeups),
        summary.decisions,
        cap.counters.llc_sum(|l| l.migrations),
        summary.migrations
    );
}

fn describe(f: &Filter) -> String {
    match (f.tgid, &f.comm) {
        (Some(p), _) => format!(", pid {p} only"),
        (None, Some(c)) => format!(", comm {c} only"),
        (None, None) => String::new(),
    }
}

/// The LLC index of every CPU id (0 for ids the topology does not list).
fn cpu_llcs(layout: &Layout) -> Vec<u32> {
    let mut v = vec![0; layout.nr_cpu_ids];
    for (llc, cpus) in layout.llcs.iter().enumerate() {
        for &cpu in cpus {
            if let Some(slot) = v.get_mut(cpu) {
                *slot = llc as u32;
            }
        }
    }
    v
}

/// Write through a buffer, so that a failure names the file and leaves no claim of success.
fn write_file(
    path: &std::path::Path,
    f: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let file =
        File::create(path).with_context(|| format!("failed to create {}", path.display()))?;
    let mut w = BufWriter::new(file);
    f(&mut w).with_context(|| format!("failed to write {}", path.display()))?;
    w.flush()
        .with_context(|| format!("failed to write {}", path.display()))
}
