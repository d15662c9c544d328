//! `scx_sis trace`: record the running scheduler's placement for a while, then write the
//! Chrome trace-event file (for ui.perfetto.dev), print the summary (text or JSON) and draw the picture if asked.
//!
//! The output files are opened before recording starts (`process::output`), so that a path that
//! cannot be written fails before the trace costs anything.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::TraceOpts;
use scx_sis::load::topology::Layout;
use scx_sis::process::output::{self, Output};
use scx_sis::stats::Metrics;
use scx_sis::trace::session::{self, Capture, End, Filter};
use scx_sis::trace::{chrome_trace, summary, svg};

/// `--json`: the summary, the session and the scheduler's own counters over the same window.
#[derive(Serialize)]
struct Report<'a> {
    records: usize,
    duration_s: f64,
    filter: &'a Filter,
    /// Records BPF wrote and lost over the window, by its counters.
    written: u64,
    dropped: u64,
    /// Why recording stopped.
    end: End,
    /// The processes and task names the records are about (a filter's result, at a glance).
    tgids: BTreeSet<u32>,
    comms: BTreeSet<&'a str>,
    summary: &'a summary::Summary,
    /// None when the scheduler went away before its counters could be read.
    counters: Option<&'a Metrics>,
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
        max_records: opts.max_records as usize,
    };
    let layout = Layout::detect().context("failed to read the CPU topology")?;
    let cpu_llc = cpu_llcs(&layout);
    let owner = output::invoking_user();
    let trace_out = Output::create(&opts.output, "-o", owner)?;
    let svg_out = opts
        .svg
        .as_deref()
        .map(|p| Output::create(p, "--svg", owner))
        .transpose()?;
    // A trace or picture on stdout keeps it to itself: the summary goes to stderr.
    let stdout_taken = trace_out.is_stdout() || svg_out.as_ref().is_some_and(Output::is_stdout);
    let cap = session::capture(&session_opts, shutdown, || {
        eprintln!(
            "trace: recording for {} s{}",
            opts.duration,
            describe(&filter)
        )
    })?;
    let counted = cap.counters.as_ref();
    let written = counted.map_or(0, |c| c.llc_sum(|l| l.trace_events));
    let dropped = counted.map_or(0, |c| c.llc_sum(|l| l.trace_drops));
    match counted {
        Some(_) => eprintln!(
            "trace: {} records in {:.1} s ({written} written, {dropped} dropped); ended: {}",
            cap.events.len(),
            cap.duration_s,
            cap.end
        ),
        None => eprintln!(
            "trace: {} records in {:.1} s (the scheduler's counts are unavailable); ended: {}",
            cap.events.len(),
            cap.duration_s,
            cap.end
        ),
    }
    if cap.end == End::RecordLimit {
        eprintln!(
            "trace: kept the first {} records; --max-records keeps more, --pid or --comm records fewer",
            opts.max_records
        );
    }
    if dropped > 0 {
        eprintln!(
            "trace: {dropped} records were lost because the ring buffer was full: \
             --pid or --comm record fewer, or load the scheduler with a larger --trace-buffer-kib"
        );
    }

    let meta = chrome_trace::Meta {
        nr_cpu_ids: layout.nr_cpu_ids,
        cpu_llc: cpu_llc.clone(),
        drops: dropped,
        duration_s: cap.duration_s,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        filters: describe(&filter).trim_start_matches(", ").to_string(),
    };
    trace_out.write(|w| chrome_trace::write(&cap.events, &meta, w))?;
    eprintln!(
        "trace: wrote {} (open it in ui.perfetto.dev or chrome://tracing)",
        opts.output.display()
    );
    if let Some(out) = svg_out {
        let path = out.path().to_path_buf();
        out.write(|w| svg::draw(&cap.events, &cpu_llc, None, w))?;
        eprintln!("trace: drew {}", path.display());
    }

    let summary = summary::summarize(&cap.events, &cpu_llc, cap.balance_lag_ns);
    if opts.json {
        let report = Report {
            records: cap.events.len(),
            duration_s: cap.duration_s,
            filter: &filter,
            written,
            dropped,
            end: cap.end,
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
            counters: counted,
        };
        say(
            stdout_taken,
            &format!("{}\n", serde_json::to_string(&report)?),
        );
    } else {
        say(
            stdout_taken,
            &format!("{summary}{}", crosscheck(&cap, &summary)),
        );
    }
    Ok(())
}

/// The trace's counts beside the scheduler's counters for the same window: they differ by the
/// drops (and, with a filter, by the tasks left out).
fn crosscheck(cap: &Capture, summary: &summary::Summary) -> String {
    let Some(counters) = &cap.counters else {
        return String::new();
    };
    format!(
        "counters over the same window: {} wakeups ({} decisions traced), {} migrations ({} traced)\n",
        counters.llc_sum(|l| l.wakeups),
        summary.decisions,
        counters.llc_sum(|l| l.migrations),
        summary.migrations
    )
}

/// The summary, on stdout unless the trace itself went there.
fn say(stdout_taken: bool, text: &str) {
    if stdout_taken {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
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
