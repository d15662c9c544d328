//! `scx_sis_lab trace-check FILE`: read a trace that `scx_sis trace` wrote back as the JSON
//! Perfetto and chrome://tracing load, and print what it holds, for the VM tests and for
//! anyone who wants to know whether a file is whole before uploading it: slices by category,
//! flow arrows and whether each start has its end, tracks, instants, and the drops it records.
//! Exits non-zero when the file is not a trace or a flow arrow has lost an end.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Args)]
pub struct TraceCheckOpts {
    /// A trace file written by `scx_sis trace -o FILE`.
    pub file: PathBuf,
}

#[derive(Debug, Default, Serialize, PartialEq)]
pub struct TraceContents {
    pub events: usize,
    /// Complete ("X") slices by category (run, decision, move).
    pub slices: BTreeMap<String, usize>,
    pub instants: usize,
    /// Named tracks (thread_name metadata).
    pub tracks: usize,
    pub flow_starts: usize,
    pub flow_ends: usize,
    /// Flow ids with a start and no end, or an end and no start.
    pub unmatched_flows: usize,
    /// Slices with a negative duration or no timestamp.
    pub bad_slices: usize,
    /// What the file says was dropped while recording.
    pub drops: Option<u64>,
}

pub fn run(opts: &TraceCheckOpts) -> Result<()> {
    let file =
        File::open(&opts.file).with_context(|| format!("cannot open {}", opts.file.display()))?;
    let v: Value = serde_json::from_reader(BufReader::new(file))
        .with_context(|| format!("{} is not JSON", opts.file.display()))?;
    let c = check(&v).with_context(|| format!("{}", opts.file.display()))?;
    println!("{}", serde_json::to_string(&c)?);
    if c.unmatched_flows > 0 || c.bad_slices > 0 {
        bail!(
            "{}: {} unmatched flow arrows, {} malformed slices",
            opts.file.display(),
            c.unmatched_flows,
            c.bad_slices
        );
    }
    Ok(())
}

pub fn check(v: &Value) -> Result<TraceContents> {
    let Some(events) = v.get("traceEvents").and_then(Value::as_array) else {
        bail!("no traceEvents array: not a Chrome/Perfetto JSON trace");
    };
    let mut c = TraceContents {
        events: events.len(),
        drops: v.pointer("/otherData/drops").and_then(Value::as_u64),
        ..Default::default()
    };
    // +1 per start, -1 per end, by flow id: what remains unbalanced lost an end.
    let mut flows: HashMap<String, i64> = HashMap::new();
    for e in events {
        let ph = e.get("ph").and_then(Value::as_str).unwrap_or("");
        let cat = e.get("cat").and_then(Value::as_str).unwrap_or("");
        match ph {
            "X" => {
                *c.slices.entry(cat.to_string()).or_default() += 1;
                let ts = e.get("ts").and_then(Value::as_f64);
                let dur = e.get("dur").and_then(Value::as_f64).unwrap_or(-1.0);
                if ts.is_none() || dur < 0.0 {
                    c.bad_slices += 1;
                }
            }
            "i" | "I" => c.instants += 1,
            "M" if e.get("name").and_then(Value::as_str) == Some("thread_name") => c.tracks += 1,
            "s" | "f" => {
                let id = e.get("id").map(Value::to_string).unwrap_or_default();
                let step = if ph == "s" {
                    c.flow_starts += 1;
                    1
                } else {
                    c.flow_ends += 1;
                    -1
                };
                *flows.entry(format!("{cat}/{id}")).or_default() += step;
            }
            _ => {}
        }
    }
    c.unmatched_flows = flows.values().filter(|&&n| n != 0).count();
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_slices_and_finds_a_flow_without_its_end() {
        let v = json!({"traceEvents": [
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1},
            {"name": "a 1", "ph": "X", "cat": "run", "ts": 1.0, "dur": 2.0},
            {"name": "llc_scan", "ph": "X", "cat": "decision", "ts": 0.5, "dur": 0.1},
            {"name": "llc_scan", "ph": "s", "cat": "decision", "id": 7, "ts": 0.5},
            {"name": "llc_scan", "ph": "f", "cat": "decision", "id": 7, "ts": 1.0},
            {"name": "steal_llc", "ph": "s", "cat": "move", "id": 8, "ts": 2.0}
        ], "otherData": {"drops": 4}});
        let c = check(&v).unwrap();
        assert_eq!(c.slices["run"], 1);
        assert_eq!(c.slices["decision"], 1);
        assert_eq!((c.flow_starts, c.flow_ends, c.unmatched_flows), (2, 1, 1));
        assert_eq!((c.tracks, c.drops), (1, Some(4)));
        assert!(check(&json!({"x": 1})).is_err());
    }
}
