//! The trace as a Chrome Trace Event JSON file, which ui.perfetto.dev and chrome://tracing both
//! open: one track per CPU (grouped by LLC), a slice per run, a short slice per placement
//! decision (on the waker's CPU) and per move (on the CPU it moved to), an instant per queueing,
//! and flow arrows from each decision or move to the run it caused.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufWriter, Write};

use anyhow::Result;
use serde::Serialize;

use super::event::{Event, Kind};

/// What the trace came from; written into the file's otherData.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// Every CPU id is below it; each gets a track, even one that never ran a traced task.
    pub nr_cpu_ids: usize,
    /// The LLC index of each CPU, by CPU id.
    pub cpu_llc: Vec<u32>,
    /// Events the ring buffer lost.
    pub drops: u64,
    pub duration_s: f64,
    /// The command line that took the trace.
    pub command: String,
    /// The task filter (--pid/--comm) as the user gave it; empty for all tasks.
    pub filters: String,
}

/// One run of a task on a CPU: its RUN event and when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Index of its RUN in the events.
    pub event: usize,
    pub cpu: i32,
    pub start: u64,
    pub end: u64,
    /// It ended at a STOP; otherwise (STOP lost) at the next RUN on its CPU or the trace's end.
    pub stopped: bool,
}

/// Pair each RUN with the end of its run. A STOP ends whatever run is open on its CPU, even
/// another pid's: a CPU runs one task at a time, so a differing pid means events were lost in
/// between, and the open run cannot have lasted past that STOP.
pub fn runs(events: &[Event]) -> Vec<Run> {
    let trace_end = events.iter().map(|e| e.ts).max().unwrap_or(0);
    let mut open: HashMap<i32, usize> = HashMap::new();
    let mut out: Vec<Run> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match e.kind {
            Kind::Run => {
                if let Some(prev) = open.insert(e.cpu, out.len()) {
                    out[prev].end = e.ts.max(out[prev].start);
                }
                out.push(Run {
                    event: i,
                    cpu: e.cpu,
                    start: e.ts,
                    end: e.ts,
                    stopped: false,
                });
            }
            Kind::Stop => {
                if let Some(r) = open.remove(&e.cpu) {
                    out[r].end = e.ts.max(out[r].start);
                    out[r].stopped = true;
                }
            }
            _ => {}
        }
    }
    for r in open.into_values() {
        out[r].end = trace_end.max(out[r].start);
    }
    out
}

/// The shortest a decision or move slice is drawn, so that it can be seen and clicked.
const MIN_SLICE_NS: u64 = 100;

// The synthetic process all CPU tracks belong to. Perfetto treats pid 0 and tid 0 as the
// kernel's idle task (swapper), so the process is pid 1 and CPU n is tid n + 1.
const PID: u32 = 1;

fn tid(cpu: i32) -> u32 {
    cpu as u32 + 1
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TraceFile {
    trace_events: Vec<TraceEvent>,
    display_time_unit: &'static str,
    other_data: OtherData,
}

#[derive(Serialize)]
struct OtherData {
    command: String,
    filters: String,
    drops: u64,
    duration_s: f64,
    events: usize,
    nr_cpu_ids: usize,
    /// The clock the events' timestamps are on, and the one the file's 0 is.
    clock: &'static str,
    t0_ns: u64,
}

/// One entry of traceEvents; which fields are present depends on `ph`.
#[derive(Serialize)]
struct TraceEvent {
    name: String,
    ph: &'static str,
    pid: u32,
    tid: u32,
    /// Microseconds since the trace's first event.
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args {
    Name {
        name: String,
    },
    SortIndex {
        sort_index: usize,
    },
    Run {
        pid: u32,
        tgid: u32,
        cause: &'static str,
        migrated: bool,
        from_cpu: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        latency_us: Option<f64>,
        stopped: bool,
    },
    Decision {
        pid: u32,
        comm: String,
        prev: i32,
        chosen: i32,
        nr_scan: u32,
        tested: u32,
        idle: bool,
        wake_flags: u32,
        cost_ns: u64,
    },
    Move {
        pid: u32,
        comm: String,
        from_cpu: i32,
        to_cpu: i32,
        wait_us: f64,
        kick: bool,
    },
    Queued {
        pid: u32,
        comm: String,
        depth: u32,
    },
}

/// Time as the file has it: microseconds since `t0`.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

struct Builder {
    t0: u64,
    out: Vec<TraceEvent>,
    next_flow: u64,
}

impl Builder {
    fn push(&mut self, name: String, ph: &'static str, cpu: i32, ts: u64) -> &mut TraceEvent {
        self.out.push(TraceEvent {
            name,
            ph,
            pid: PID,
            tid: tid(cpu),
            ts: us(ts.saturating_sub(self.t0)),
            dur: None,
            cat: None,
            id: None,
            bp: None,
            s: None,
            args: None,
        });
        self.out.last_mut().expect("just pushed")
    }

    /// A metadata event of the CPU process.
    fn meta(&mut self, name: &str, cpu: i32, args: Args) {
        let t0 = self.t0;
        self.push(name.into(), "M", cpu, t0).args = Some(args);
    }

    /// A flow arrow from a point of one slice to a point of another (the points lie inside
    /// the slices, so that each binds to its own slice and not to one that ends there).
    fn flow(&mut self, name: &str, cat: &'static str, from: (i32, u64), to: (i32, u64)) {
        let id = self.next_flow;
        self.next_flow += 1;
        let s = self.push(name.into(), "s", from.0, from.1);
        s.cat = Some(cat);
        s.id = Some(id);
        let f = self.push(name.into(), "f", to.0, to.1);
        f.cat = Some(cat);
        f.id = Some(id);
        f.bp = Some("e");
    }
}

/// A point a little inside a slice that starts at `start` and lasts `dur` ns.
fn inside(start: u64, dur: u64) -> u64 {
    start + (dur / 2).min(10)
}

/// The short slices (decisions, moves) of one CPU track are clamped so they neither cross the
/// end of the run they fall in, nor the start of the next run or short slice: Perfetto drops
/// slices that overlap without nesting, and the 0.1 us minimum could otherwise make them.
fn clamp_short(runs: &[(u64, u64)], starts: &[u64], i: usize, want: u64) -> u64 {
    let ts = starts[i];
    let mut limit = u64::MAX;
    let k = runs.partition_point(|r| r.0 <= ts);
    if k > 0 && runs[k - 1].1 > ts {
        limit = runs[k - 1].1;
    } else if let Some(next) = runs.get(k) {
        limit = next.0;
    }
    if let Some(&next) = starts.get(i + 1) {
        limit = limit.min(next);
    }
    want.min(limit.saturating_sub(ts))
}

/// Write the events as a Chrome Trace Event JSON object.
pub fn write(events: &[Event], meta: &Meta, out: &mut impl Write) -> Result<()> {
    let t0 = events.iter().map(|e| e.ts).min().unwrap_or(0);
    let mut b = Builder {
        t0,
        out: Vec::new(),
        next_flow: 1,
    };

    // Tracks: every CPU below nr_cpu_ids, and any other a record names.
    let mut cpus: BTreeSet<i32> = (0..meta.nr_cpu_ids.max(meta.cpu_llc.len()) as i32).collect();
    for e in events {
        cpus.insert(e.cpu);
        if e.kind == Kind::Decision {
            cpus.insert(e.waker_cpu);
        }
    }
    cpus.retain(|&c| c >= 0);
    let llc = |cpu: i32| meta.cpu_llc.get(cpu as usize).copied();
    b.meta(
        "process_name",
        cpus.first().copied().unwrap_or(0),
        Args::Name {
            name: "CPUs".into(),
        },
    );
    // Sorted by LLC, then CPU, so that the CPUs of one LLC sit together.
    let mut order: Vec<i32> = cpus.iter().copied().collect();
    order.sort_by_key(|&c| (llc(c).unwrap_or(u32::MAX), c));
    for (i, &cpu) in order.iter().enumerate() {
        let name = match llc(cpu) {
            Some(l) => format!("CPU {cpu} (LLC {l})"),
            None => format!("CPU {cpu}"),
        };
        b.meta("thread_name", cpu, Args::Name { name });
        b.meta("thread_sort_index", cpu, Args::SortIndex { sort_index: i });
    }

    // Runs.
    let runs = runs(events);
    let mut run_of: HashMap<usize, Run> = HashMap::new();
    let mut runs_by_cpu: HashMap<i32, Vec<(u64, u64)>> = HashMap::new();
    for r in &runs {
        let e = &events[r.event];
        if r.cpu < 0 {
            continue;
        }
        run_of.insert(r.event, *r);
        runs_by_cpu.entry(r.cpu).or_default().push((r.start, r.end));
        let latency_us = (e.decision_ts != 0).then(|| us(e.ns));
        let x = b.push(format!("{} {}", e.comm, e.pid), "X", r.cpu, r.start);
        x.dur = Some(us(r.end - r.start));
        x.cat = Some("run");
        x.args = Some(Args::Run {
            pid: e.pid,
            tgid: e.tgid,
            cause: e.cause.name(),
            migrated: e.migrated,
            from_cpu: e.from_cpu,
            latency_us,
            stopped: r.stopped,
        });
    }
    for v in runs_by_cpu.values_mut() {
        v.sort_unstable();
    }

    // Decisions on the waker's track, moves on the target's: (track, event index).
    let mut short: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let track = match e.kind {
            Kind::Decision => e.waker_cpu,
            Kind::Move => e.cpu,
            _ => continue,
        };
        if track >= 0 {
            short.entry(track).or_default().push(i);
        }
    }
    // Where each decision or move slice was drawn: event index -> (track, start, dur).
    let mut drawn: HashMap<usize, (i32, u64, u64)> = HashMap::new();
    for (&cpu, idx) in &mut short {
        idx.sort_by_key(|&i| events[i].ts);
        let starts: Vec<u64> = idx.iter().map(|&i| events[i].ts).collect();
        let cpu_runs = runs_by_cpu.get(&cpu).map_or(&[][..], |v| &v[..]);
        for (k, &i) in idx.iter().enumerate() {
            let e = &events[i];
            let want = match e.kind {
                Kind::Decision => e.ns.max(MIN_SLICE_NS),
                // A move's ns is the task's wait, not the move's cost, which is not recorded.
                _ => MIN_SLICE_NS,
            };
            let dur = clamp_short(cpu_runs, &starts, k, want);
            drawn.insert(i, (cpu, e.ts, dur));
        }
    }
    let mut drawn_order: Vec<usize> = drawn.keys().copied().collect();
    drawn_order.sort_unstable();
    for i in drawn_order {
        let (cpu, start, dur) = drawn[&i];
        let e = &events[i];
        let args = match e.kind {
            Kind::Decision => Args::Decision {
                pid: e.pid,
                comm: e.comm.clone(),
                prev: e.from_cpu,
                chosen: e.cpu,
                nr_scan: e.nr_scan,
                tested: e.tested,
                idle: e.idle,
                wake_flags: e.wake_flags,
                cost_ns: e.ns,
            },
            _ => Args::Move {
                pid: e.pid,
                comm: e.comm.clone(),
                from_cpu: e.from_cpu,
                to_cpu: e.cpu,
                wait_us: us(e.ns),
                kick: e.cause.is_kick(),
            },
        };
        let x = b.push(e.cause.name().into(), "X", cpu, start);
        x.dur = Some(us(dur));
        x.cat = Some(if e.kind == Kind::Decision {
            "decision"
        } else {
            "move"
        });
        x.args = Some(args);
    }

    // Queueings as instants on the queue's CPU.
    for e in events
        .iter()
        .filter(|e| e.kind == Kind::Queued && e.cpu >= 0)
    {
        let i = b.push(format!("queued: {}", e.cause.name()), "i", e.cpu, e.ts);
        i.s = Some("t");
        i.cat = Some("queued");
        i.args = Some(Args::Queued {
            pid: e.pid,
            comm: e.comm.clone(),
            depth: e.depth,
        });
    }

    // Flows: a decision to the run that carries its timestamp; a move (not a kick, which
    // moves no task) to the next run of its task. Only drawn when both ends are in the trace.
    let decision_at: HashMap<(u32, u64), usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == Kind::Decision)
        .map(|(i, e)| ((e.pid, e.ts), i))
        .collect();
    let mut pending_move: HashMap<u32, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        match e.kind {
            // A new wakeup: a move still pending belonged to a run that was lost.
            Kind::Decision => {
                pending_move.remove(&e.pid);
            }
            Kind::Move if !e.cause.is_kick() && e.pid != 0 => {
                pending_move.insert(e.pid, i);
            }
            Kind::Run => {
                let moved = pending_move.remove(&e.pid);
                let Some(run) = run_of.get(&i) else { continue };
                let to = (run.cpu, inside(run.start, run.end - run.start));
                if e.decision_ts != 0 {
                    if let Some(&d) = decision_at.get(&(e.pid, e.decision_ts)) {
                        if let Some(&(cpu, start, dur)) = drawn.get(&d) {
                            let name = events[d].cause.name();
                            b.flow(name, "decision", (cpu, inside(start, dur)), to);
                        }
                    }
                }
                if let Some(m) = moved {
                    if let Some(&(cpu, start, dur)) = drawn.get(&m) {
                        let name = events[m].cause.name();
                        b.flow(name, "move", (cpu, inside(start, dur)), to);
                    }
                }
            }
            _ => {}
        }
    }

    let file = TraceFile {
        trace_events: b.out,
        display_time_unit: "ns",
        other_data: OtherData {
            command: meta.command.clone(),
            filters: meta.filters.clone(),
            drops: meta.drops,
            duration_s: meta.duration_s,
            events: events.len(),
            nr_cpu_ids: meta.nr_cpu_ids,
            clock: "CLOCK_MONOTONIC",
            t0_ns: t0,
        },
    };
    let mut w = BufWriter::new(out);
    serde_json::to_writer(&mut w, &file)?;
    w.flush()?;
    Ok(())
}

/// Builders of synthetic events for the trace modules' tests.
#[cfg(test)]
pub(crate) mod synth {
    use super::super::event::{Cause, Event, Kind};
    use crate::stats::counters::PATH_NAMES;
    use crate::trace::event::MOVE_NAMES;

    pub fn path(name: &str) -> Cause {
        Cause::Path(PATH_NAMES.iter().position(|n| *n == name).unwrap())
    }

    pub fn reason(name: &str) -> Cause {
        Cause::Move(MOVE_NAMES.iter().position(|n| *n == name).unwrap())
    }

    fn base(kind: Kind, ts: u64, pid: u32, cpu: i32) -> Event {
        Event {
            ts,
            ns: 0,
            decision_ts: 0,
            pid,
            tgid: pid,
            comm: format!("task{pid}"),
            kind,
            cause: Cause::None,
            cpu,
            from_cpu: -1,
            waker_cpu: -1,
            wake_flags: 0,
            nr_scan: 0,
            tested: 0,
            depth: 0,
            idle: false,
            migrated: false,
        }
    }

    /// select_cpu on `waker` placed `pid` from `prev` to `chosen`, costing `ns`.
    pub fn decision(
        ts: u64,
        pid: u32,
        waker: i32,
        prev: i32,
        chosen: i32,
        p: &str,
        ns: u64,
    ) -> Event {
        Event {
            waker_cpu: waker,
            from_cpu: prev,
            cause: path(p),
            ns,
            tested: 2,
            nr_scan: 4,
            idle: true,
            ..base(Kind::Decision, ts, pid, chosen)
        }
    }

    pub fn queued(ts: u64, pid: u32, cpu: i32, depth: u32) -> Event {
        Event {
            cause: Cause::Queue(0),
            depth,
            ..base(Kind::Queued, ts, pid, cpu)
        }
    }

    /// `pid` moved from `from` to `to` after waiting `wait` ns.
    pub fn moved(ts: u64, pid: u32, from: i32, to: i32, r: &str, wait: u64) -> Event {
        Event {
            from_cpu: from,
            cause: reason(r),
            ns: wait,
            ..base(Kind::Move, ts, pid, to)
        }
    }

    /// `pid` starts on `cpu`, having last run on `from`; `decision_ts` 0 for none.
    pub fn run(ts: u64, pid: u32, cpu: i32, from: i32, cause: Cause, decision_ts: u64) -> Event {
        Event {
            from_cpu: from,
            migrated: from >= 0 && from != cpu,
            cause,
            decision_ts,
            ns: if decision_ts != 0 {
                ts - decision_ts
            } else {
                0
            },
            ..base(Kind::Run, ts, pid, cpu)
        }
    }

    pub fn stop(ts: u64, pid: u32, cpu: i32) -> Event {
        base(Kind::Stop, ts, pid, cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::synth::*;
    use super::*;
    use crate::trace::event::Cause;
    use serde_json::Value;

    fn meta() -> Meta {
        Meta {
            nr_cpu_ids: 4,
            cpu_llc: vec![0, 0, 1, 1],
            drops: 3,
            duration_s: 1.0,
            command: "scx_sis trace".into(),
            filters: "--comm task".into(),
        }
    }

    fn render(events: &[Event]) -> Value {
        let mut out = Vec::new();
        write(events, &meta(), &mut out).unwrap();
        serde_json::from_slice(&out).expect("valid JSON")
    }

    fn of_ph<'a>(v: &'a Value, ph: &str) -> Vec<&'a Value> {
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == ph)
            .collect()
    }

    /// Task 10 woken by CPU 0 onto CPU 2 (llc_scan), runs; task 11 queued on CPU 1, stolen to
    /// CPU 3, runs there; a tick kick; then task 10 runs again with no cause.
    fn stream() -> Vec<Event> {
        vec![
            run(1_000, 20, 0, -1, Cause::None, 0),
            decision(2_000, 10, 0, 1, 2, "llc_scan", 300),
            queued(2_100, 11, 1, 1),
            run(2_500, 10, 2, 1, path("llc_scan"), 2_000),
            moved(3_000, 11, 1, 3, "steal_llc", 900),
            moved(3_050, 0, 1, 3, "tick_kick", 0),
            run(3_200, 11, 3, 1, reason("steal_llc"), 0),
            stop(4_000, 10, 2),
            stop(5_000, 11, 3),
            run(6_000, 10, 2, 2, Cause::None, 0),
            stop(7_000, 10, 2),
            stop(8_000, 20, 0),
        ]
    }

    #[test]
    fn writes_slices_flows_and_a_named_track_per_cpu() {
        let v = render(&stream());
        assert_eq!(v["displayTimeUnit"], "ns");
        assert_eq!(v["otherData"]["drops"], 3);
        assert_eq!(v["otherData"]["filters"], "--comm task");

        let names: Vec<&str> = of_ph(&v, "M")
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "CPU 0 (LLC 0)",
                "CPU 1 (LLC 0)",
                "CPU 2 (LLC 1)",
                "CPU 3 (LLC 1)"
            ]
        );

        // 4 runs, 1 decision, 2 moves (the kick included).
        let x = of_ph(&v, "X");
        assert_eq!(x.len(), 7);
        let run = x.iter().find(|e| e["name"] == "task10 10").unwrap();
        assert_eq!(run["tid"], 3);
        assert_eq!(run["ts"], 1.5);
        assert_eq!(run["dur"], 1.5);
        assert_eq!(run["args"]["cause"], "llc_scan");
        assert_eq!(run["args"]["latency_us"], 0.5);
        let d = x.iter().find(|e| e["name"] == "llc_scan").unwrap();
        assert_eq!((d["tid"].as_u64(), d["dur"].as_f64()), (Some(1), Some(0.3)));
        assert_eq!(of_ph(&v, "i").len(), 1);

        // The decision and the steal each flow to their run; the kick has none.
        let starts = of_ph(&v, "s");
        let ends = of_ph(&v, "f");
        assert_eq!(starts.len(), 2);
        assert_eq!(starts.len(), ends.len());
        for f in &ends {
            assert_eq!(f["bp"], "e");
            let s = starts.iter().find(|s| s["id"] == f["id"]).expect("a start");
            assert_eq!(
                (s["cat"].clone(), s["name"].clone()),
                (f["cat"].clone(), f["name"].clone())
            );
        }
        let names: BTreeSet<&str> = starts.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, BTreeSet::from(["llc_scan", "steal_llc"]));
    }

    #[test]
    fn short_slices_stay_inside_the_run_they_fall_in() {
        // A decision 50 ns before the waker stops: its 0.1 us minimum would cross the stop.
        let events = vec![
            run(1_000, 20, 0, -1, Cause::None, 0),
            decision(1_950, 10, 0, 1, 1, "prev_idle", 10),
            stop(2_000, 20, 0),
        ];
        let v = render(&events);
        let d = of_ph(&v, "X")
            .into_iter()
            .find(|e| e["name"] == "prev_idle")
            .unwrap();
        assert_eq!(d["dur"], 0.05);
    }

    #[test]
    fn lost_events_still_make_valid_json() {
        let events = vec![
            // A STOP whose RUN was lost.
            stop(500, 30, 1),
            // A run with no STOP: it ends at the next run on CPU 0.
            run(1_000, 10, 0, -1, Cause::None, 0),
            // A run whose decision was lost.
            run(2_000, 11, 0, 1, path("sync"), 1_500),
            // A move whose run was lost, then a new wakeup of that task.
            moved(2_100, 12, 1, 2, "pull", 10),
            decision(2_200, 12, 0, 2, 3, "idle_core", 50),
            // A run with no STOP at the trace's end, on a CPU beyond nr_cpu_ids.
            run(3_000, 12, 7, 2, path("idle_core"), 2_200),
        ];
        let v = render(&events);
        let x = of_ph(&v, "X");
        let run10 = x.iter().find(|e| e["name"] == "task10 10").unwrap();
        assert_eq!(run10["dur"], 1.0);
        assert_eq!(run10["args"]["stopped"], false);
        let run11 = x.iter().find(|e| e["name"] == "task11 11").unwrap();
        assert_eq!(run11["dur"], 1.0);
        assert_eq!(of_ph(&v, "s").len(), 1);
        assert_eq!(of_ph(&v, "f").len(), 1);
        assert_eq!(of_ph(&v, "s")[0]["name"], "idle_core");
        let cpu7 = of_ph(&v, "M")
            .into_iter()
            .any(|e| e["args"]["name"] == "CPU 7");
        assert!(cpu7);

        let empty = render(&[]);
        assert_eq!(of_ph(&empty, "X").len(), 0);
        assert_eq!(
            of_ph(&empty, "M")
                .iter()
                .filter(|e| e["name"] == "thread_name")
                .count(),
            4
        );
    }

    #[test]
    fn runs_end_at_stop_next_run_or_trace_end() {
        let events = vec![
            run(10, 1, 0, -1, Cause::None, 0),
            run(20, 2, 0, -1, Cause::None, 0),
            stop(25, 2, 0),
            run(30, 3, 1, -1, Cause::None, 0),
            stop(40, 9, 0),
        ];
        let ends: Vec<(u64, u64, bool)> = runs(&events)
            .iter()
            .map(|r| (r.start, r.end, r.stopped))
            .collect();
        assert_eq!(ends, [(10, 20, false), (20, 25, true), (30, 40, false)]);
    }
}
