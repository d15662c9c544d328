//! A picture of a window of the trace as SVG, for readers who would rather look than read: one
//! lane per CPU, grouped by LLC; each run a rectangle in its task's colour; each migration an
//! arrow from the CPU the task last ran on to the one it starts on, coloured by its cause (the
//! placement path or move reason), with a legend of the causes in the window.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use anyhow::{bail, Result};
use svg::node::element::{Group, Line, Polygon, Rectangle, Text, Title};
use svg::Document;

use super::event::{Cause, Event, Kind};
use super::perfetto::runs;
use crate::bpf_intf;
use crate::counters::NR_PATHS;

/// The default window's length, halved (down to MIN_WINDOW_NS) while its densest stretch holds
/// more than MAX_ARROWS migrations.
const WINDOW_NS: u64 = 20_000_000;
const MIN_WINDOW_NS: u64 = 500_000;
/// About 15 px between arrows on the plot's ~900 px, where each can still be told apart.
const MAX_ARROWS: usize = 60;
/// Above this many CPUs, only the lanes of CPUs that ran something in the window are drawn.
const MAX_ALL_LANES: usize = 32;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 100.0;
const LEGEND_W: f64 = 200.0;
const PLOT_W: f64 = WIDTH - LEFT - LEGEND_W - 10.0;
const TOP: f64 = 56.0;
const LANE_H: f64 = 16.0;
const LANE_GAP: f64 = 2.0;
const LLC_GAP: f64 = 10.0;
const AXIS_H: f64 = 34.0;

/// Light, so the arrows stand out over them; a task's colour is its pid modulo the palette, so
/// it is the same in every picture, and consecutive pids (one workload's threads) differ.
const TASK_COLORS: [&str; 12] = [
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d",
    "#9edae5", "#d9d9d9", "#fdd0a2", "#c7e9c0",
];

/// One per placement path, in the order of PATH_NAMES.
const PATH_COLORS: [&str; NR_PATHS] = [
    "#1f77b4", // sync
    "#2ca02c", // prev_idle
    "#17becf", // prev_almost_idle
    "#9467bd", // idle_core
    "#08306b", // llc_scan
    "#d62728", // cross_llc
    "#8c564b", // fallback
    "#7f7f7f", // kernel_dfl
];

/// One per move reason, in the order of MOVE_NAMES.
const MOVE_COLORS: [&str; bpf_intf::sis_move_SIS_NR_MOVES as usize] = [
    "#ff7f0e", // steal_llc
    "#e7298a", // steal_remote
    "#bcbd22", // pull
    "#a6761d", // pull_remote
    "#e377c2", // rescue_held
    "#6a3d9a", // rescue_reenq
    "#1b9e77", // wakeq
    "#525252", // plain_fifo
    "#fdae61", // tick_kick
    "#f46d43", // wakeup_kick
    "#c51b7d", // held_kick
];

/// A migration without a cause: black and dashed.
const UNEXPLAINED_COLOR: &str = "#000000";

fn cause_color(c: Cause) -> &'static str {
    match c {
        Cause::Path(i) => PATH_COLORS.get(i).copied().unwrap_or(UNEXPLAINED_COLOR),
        Cause::Move(i) => MOVE_COLORS.get(i).copied().unwrap_or(UNEXPLAINED_COLOR),
        _ => UNEXPLAINED_COLOR,
    }
}

fn cause_label(c: Cause) -> &'static str {
    match c {
        Cause::None => super::summary::UNEXPLAINED,
        c => c.name(),
    }
}

/// Rounded to 0.1 px, which keeps the file small.
fn px(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The window drawn when none is given: the densest stretch of migrations, of WINDOW_NS or
/// shorter until it holds at most MAX_ARROWS (a picture of a few hundred crossing arrows shows
/// nothing), starting a little before its first migration; without migrations, the trace's
/// first WINDOW_NS. None for an empty trace. (start, end) in the events' clock, ns.
pub fn default_window(events: &[Event]) -> Option<(u64, u64)> {
    let first = events.iter().map(|e| e.ts).min()?;
    let last = events.iter().map(|e| e.ts).max()? + 1;
    let mut migrations: Vec<u64> = events
        .iter()
        .filter(|e| e.kind == Kind::Run && e.migrated)
        .map(|e| e.ts)
        .collect();
    migrations.sort_unstable();
    if migrations.is_empty() {
        return Some((first, last.min(first + WINDOW_NS)));
    }
    let mut len = WINDOW_NS;
    let start = loop {
        // The migration that starts the stretch of `len` holding the most.
        let (mut best, mut best_n, mut j) = (0, 0, 0);
        for (i, &t) in migrations.iter().enumerate() {
            while j < migrations.len() && migrations[j] < t + len {
                j += 1;
            }
            if j - i > best_n {
                (best, best_n) = (i, j - i);
            }
        }
        if best_n <= MAX_ARROWS || len / 2 < MIN_WINDOW_NS {
            break migrations[best];
        }
        len /= 2;
    };
    let start = start.saturating_sub(len / 20).max(first);
    let end = (start + len).min(last);
    Some((end.saturating_sub(len).max(first), end))
}

/// A CPU's lane: its CPU, LLC and top edge.
struct Lane {
    cpu: i32,
    llc: Option<u32>,
    y: f64,
}

/// Draw the trace's `window` ((start, end) ns in the events' clock; None: default_window) as
/// SVG. `cpu_llc` is each CPU's LLC index.
pub fn draw(
    events: &[Event],
    cpu_llc: &[u32],
    window: Option<(u64, u64)>,
    out: &mut impl Write,
) -> Result<()> {
    let Some((w0, w1)) = window.or_else(|| default_window(events)) else {
        let doc = Document::new()
            .set("width", 480)
            .set("height", 60)
            .set("viewBox", (0, 0, 480, 60))
            .set("font-family", "sans-serif")
            .set("font-size", 12)
            .add(background(480.0, 60.0))
            .add(text(10.0, 24.0, "scx_sis trace").set("font-weight", "bold"))
            .add(text(10.0, 44.0, "no events in the trace").set("class", "note"));
        svg::write(&mut *out, &doc)?;
        return Ok(());
    };
    if w1 <= w0 {
        bail!("an empty window: it ends ({w1} ns) before it starts ({w0} ns)");
    }
    let t0 = events.iter().map(|e| e.ts).min().unwrap_or(w0);
    let t_end = events.iter().map(|e| e.ts).max().unwrap_or(w1);
    let ms = |ts: u64| ts.saturating_sub(t0) as f64 / 1e6;
    let scale = PLOT_W / (w1 - w0) as f64;
    let x_of = |ts: u64| LEFT + (ts.clamp(w0, w1) - w0) as f64 * scale;
    let llc_of = |cpu: i32| -> Option<u32> {
        usize::try_from(cpu)
            .ok()
            .and_then(|c| cpu_llc.get(c).copied())
    };

    // What the window holds.
    let all_runs = runs(events);
    let shown: Vec<_> = all_runs
        .iter()
        .filter(|r| r.cpu >= 0 && r.start < w1 && r.end.max(r.start + 1) > w0)
        .collect();
    let migrations: Vec<&Event> = events
        .iter()
        .filter(|e| e.kind == Kind::Run && e.migrated && e.ts >= w0 && e.ts < w1)
        .collect();

    // Lanes: every CPU, or on a large machine only those with something in the window.
    let mut cpus: BTreeSet<i32> = (0..cpu_llc.len() as i32).collect();
    cpus.extend(events.iter().map(|e| e.cpu).filter(|&c| c >= 0));
    let busy: BTreeSet<i32> = shown
        .iter()
        .map(|r| r.cpu)
        .chain(migrations.iter().flat_map(|e| [e.cpu, e.from_cpu]))
        .filter(|&c| c >= 0)
        .collect();
    let hidden = if cpus.len() > MAX_ALL_LANES {
        let n = cpus.len() - busy.len();
        cpus = busy;
        n
    } else {
        0
    };
    let mut order: Vec<i32> = cpus.into_iter().collect();
    order.sort_by_key(|&c| (llc_of(c).unwrap_or(u32::MAX), c));
    let mut lanes: Vec<Lane> = Vec::new();
    let mut y = TOP;
    for &cpu in &order {
        let llc = llc_of(cpu);
        if lanes.last().is_some_and(|l| l.llc != llc) {
            y += LLC_GAP;
        }
        lanes.push(Lane { cpu, llc, y });
        y += LANE_H + LANE_GAP;
    }
    let lane_of: HashMap<i32, &Lane> = lanes.iter().map(|l| (l.cpu, l)).collect();
    let plot_bottom = y;

    // Migrations that can be drawn (both lanes present), by cause for the legend.
    let arrows: Vec<&Event> = migrations
        .iter()
        .copied()
        .filter(|e| lane_of.contains_key(&e.cpu) && lane_of.contains_key(&e.from_cpu))
        .collect();
    let mut legend: BTreeMap<Cause, usize> = BTreeMap::new();
    for e in &arrows {
        *legend.entry(e.cause).or_default() += 1;
    }
    let cross = |e: &Event| {
        llc_of(e.from_cpu)
            .zip(llc_of(e.cpu))
            .is_some_and(|(a, b)| a != b)
    };
    let n_cross = arrows.iter().filter(|e| cross(e)).count();
    let n_unexplained = arrows.iter().filter(|e| e.cause == Cause::None).count();

    let legend_h = 40.0 + 16.0 * (legend.len() as f64 + 3.0);
    let height = (plot_bottom + AXIS_H).max(TOP + legend_h) + 10.0;
    let mut doc = Document::new()
        .set("width", WIDTH)
        .set("height", px(height))
        .set("viewBox", (0, 0, WIDTH, px(height)))
        .set("font-family", "sans-serif")
        .set("font-size", 11)
        .add(background(WIDTH, height));

    // Title: the window, then the whole trace.
    let total_runs = all_runs.len();
    let total_migrations = events
        .iter()
        .filter(|e| e.kind == Kind::Run && e.migrated)
        .count();
    doc = doc
        .add(
            text(
                10.0,
                20.0,
                format!(
                    "scx_sis trace: {:.3} to {:.3} ms: {} runs, {} migrations ({} across LLCs, {} unexplained)",
                    ms(w0),
                    ms(w1),
                    shown.len(),
                    migrations.len(),
                    n_cross,
                    n_unexplained
                ),
            )
            .set("font-size", 13)
            .set("font-weight", "bold"),
        )
        .add(text(
            10.0,
            38.0,
            format!(
                "whole trace: {:.3} ms, {} runs, {} migrations; lanes: CPUs by LLC; a rectangle: a run, coloured by task; an arrow: a migration, coloured by cause",
                ms(t_end),
                total_runs,
                total_migrations
            ),
        ).set("fill", "#444444"));

    // Lanes, their labels and the LLC separators.
    let mut prev_llc: Option<Option<u32>> = None;
    for l in &lanes {
        if prev_llc != Some(l.llc) {
            if prev_llc.is_some() {
                let sep_y = px(l.y - LLC_GAP / 2.0 - LANE_GAP / 2.0);
                doc = doc.add(
                    Line::new()
                        .set("class", "llc-separator")
                        .set("x1", 4)
                        .set("x2", px(LEFT + PLOT_W))
                        .set("y1", sep_y)
                        .set("y2", sep_y)
                        .set("stroke", "#888888")
                        .set("stroke-dasharray", "4 3"),
                );
            }
            let name = l.llc.map_or("LLC ?".to_string(), |n| format!("LLC {n}"));
            doc = doc.add(
                text(4.0, l.y + LANE_H * 0.75, name)
                    .set("font-weight", "bold")
                    .set("fill", "#444444"),
            );
            prev_llc = Some(l.llc);
        }
        doc = doc
            .add(
                Rectangle::new()
                    .set("class", "lane")
                    .set("x", LEFT)
                    .set("y", px(l.y))
                    .set("width", px(PLOT_W))
                    .set("height", LANE_H)
                    .set("fill", "#f4f4f4"),
            )
            .add(
                text(LEFT - 6.0, l.y + LANE_H * 0.75, format!("CPU {}", l.cpu))
                    .set("text-anchor", "end"),
            );
    }

    // Runs.
    let mut run_group = Group::new().set("class", "runs");
    for r in &shown {
        let Some(lane) = lane_of.get(&r.cpu) else {
            continue;
        };
        let e = &events[r.event];
        let x0 = x_of(r.start);
        let w = (x_of(r.end) - x0).max(0.5);
        let tip = format!(
            "{} {}: CPU {}, {:.3} to {:.3} ms, {}{}",
            e.comm,
            e.pid,
            r.cpu,
            ms(r.start),
            ms(r.end),
            cause_label(e.cause),
            if r.stopped { "" } else { " (end not traced)" }
        );
        run_group = run_group.add(
            Rectangle::new()
                .set("class", "run")
                .set("x", px(x0))
                .set("y", px(lane.y + 1.0))
                .set("width", px(w))
                .set("height", LANE_H - 2.0)
                .set("fill", TASK_COLORS[e.pid as usize % TASK_COLORS.len()])
                .set("stroke", "#ffffff")
                .set("stroke-width", 0.3)
                .add(Title::new(tip)),
        );
        // A label only where it fits: about 6 px per character at 9 px.
        if w >= 6.0 * e.comm.chars().count() as f64 + 4.0 {
            run_group = run_group.add(
                text(x0 + 2.0, lane.y + LANE_H * 0.72, e.comm.clone())
                    .set("class", "label")
                    .set("font-size", 9),
            );
        }
    }
    doc = doc.add(run_group);

    // Migrations: an arrow at the run's start, from the lane it left to the lane it runs on.
    let mut arrow_group = Group::new().set("class", "migrations");
    for e in &arrows {
        let (from, to) = (lane_of[&e.from_cpu], lane_of[&e.cpu]);
        let x = px(x_of(e.ts));
        let y0 = from.y + LANE_H / 2.0;
        let y1 = to.y + LANE_H / 2.0;
        let dir = if y1 >= y0 { 1.0 } else { -1.0 };
        let color = cause_color(e.cause);
        let is_cross = cross(e);
        let mut line = Line::new()
            .set("x1", x)
            .set("x2", x)
            .set("y1", px(y0))
            .set("y2", px(y1 - dir * 5.0))
            .set("stroke", color)
            .set("stroke-width", if is_cross { 2.5 } else { 1.2 });
        if e.cause == Cause::None {
            line = line.set("stroke-dasharray", "3 2");
        }
        let head = Polygon::new().set("fill", color).set(
            "points",
            vec![
                (px(x - 3.5), px(y1 - dir * 6.0)),
                (px(x + 3.5), px(y1 - dir * 6.0)),
                (x, px(y1)),
            ],
        );
        let tip = format!(
            "{} {}: CPU {} to CPU {} at {:.3} ms, {}{}",
            e.comm,
            e.pid,
            e.from_cpu,
            e.cpu,
            ms(e.ts),
            cause_label(e.cause),
            if is_cross { ", across LLCs" } else { "" }
        );
        arrow_group = arrow_group.add(
            Group::new()
                .set("class", "migration")
                .add(Title::new(tip))
                .add(line)
                .add(head),
        );
    }
    doc = doc.add(arrow_group);

    // The time axis, in ms since the trace's first event.
    let axis_y = plot_bottom + 4.0;
    doc = doc.add(
        Line::new()
            .set("x1", LEFT)
            .set("x2", px(LEFT + PLOT_W))
            .set("y1", px(axis_y))
            .set("y2", px(axis_y))
            .set("stroke", "#000000"),
    );
    let (step, decimals) = tick_step(ms(w1) - ms(w0));
    // Ticks as multiples of the step, so that no rounding error adds up along the axis.
    let first_tick = (ms(w0) / step - 1e-9).ceil() as u64;
    let last_tick = (ms(w1) / step + 1e-9).floor() as u64;
    for k in first_tick..=last_tick {
        let tick = k as f64 * step;
        let x = px(LEFT + (tick - ms(w0)) * 1e6 * scale);
        doc = doc
            .add(
                Line::new()
                    .set("x1", x)
                    .set("x2", x)
                    .set("y1", px(axis_y))
                    .set("y2", px(axis_y + 4.0))
                    .set("stroke", "#000000"),
            )
            .add(
                text(x, axis_y + 16.0, format!("{tick:.decimals$}"))
                    .set("class", "tick")
                    .set("text-anchor", "middle"),
            );
    }
    doc = doc.add(
        text(LEFT + PLOT_W, axis_y + 30.0, "ms since the trace's start")
            .set("text-anchor", "end")
            .set("fill", "#444444"),
    );

    // The legend: the causes present, most first.
    let lx = LEFT + PLOT_W + 20.0;
    let mut ly = TOP + 10.0;
    doc = doc.add(text(lx, ly, "migrations by cause").set("font-weight", "bold"));
    let mut causes: Vec<(Cause, usize)> = legend.into_iter().collect();
    causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (c, n) in &causes {
        ly += 16.0;
        doc = doc.add(
            Group::new()
                .set("class", "legend-entry")
                .add(
                    Rectangle::new()
                        .set("x", lx)
                        .set("y", px(ly - 9.0))
                        .set("width", 18)
                        .set("height", 10)
                        .set("fill", cause_color(*c)),
                )
                .add(text(lx + 24.0, ly, format!("{} {n}", cause_label(*c)))),
        );
    }
    ly += 22.0;
    if causes.is_empty() {
        doc = doc.add(text(lx, ly, "none in this window").set("class", "note"));
        ly += 16.0;
    }
    if n_cross > 0 {
        doc = doc.add(text(lx, ly, "thick: across LLCs").set("fill", "#444444"));
        ly += 16.0;
    }
    if n_unexplained > 0 {
        doc = doc.add(text(lx, ly, "dashed: no cause traced").set("fill", "#444444"));
        ly += 16.0;
    }
    if hidden > 0 {
        doc = doc.add(
            text(
                lx,
                ly,
                format!("{hidden} CPUs idle in the window: not drawn"),
            )
            .set("fill", "#444444"),
        );
    }
    if shown.is_empty() {
        doc = doc.add(text(LEFT + 10.0, TOP - 4.0, "no runs in this window").set("class", "note"));
    }

    svg::write(&mut *out, &doc)?;
    Ok(())
}

fn background(w: f64, h: f64) -> Rectangle {
    Rectangle::new()
        .set("class", "background")
        .set("width", w)
        .set("height", px(h))
        .set("fill", "#ffffff")
}

fn text(x: f64, y: f64, s: impl Into<String>) -> Text {
    Text::new(s).set("x", px(x)).set("y", px(y))
}

/// A tick step of 1, 2 or 5 times a power of ten giving 4 to 10 ticks over `span` ms, and the
/// decimals its labels need.
fn tick_step(span: f64) -> (f64, usize) {
    let raw = (span / 8.0).max(1e-6);
    let pow = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * pow);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    (step, decimals)
}

#[cfg(test)]
mod tests {
    use super::super::perfetto::synth::*;
    use super::*;
    use svg::node::element::tag::Type;
    use svg::parser::Event as XmlEvent;

    const LLC: [u32; 4] = [0, 0, 1, 1];

    fn render(events: &[Event], window: Option<(u64, u64)>) -> String {
        let mut out = Vec::new();
        draw(events, &LLC, window, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Parse it, check that tags nest and close, and return the (tag, class) of every element
    /// and every text.
    fn parse(doc: &str) -> (Vec<(String, String)>, Vec<String>) {
        assert!(doc.starts_with("<svg"), "{doc}");
        let mut stack = Vec::new();
        let (mut els, mut texts) = (Vec::new(), Vec::new());
        for ev in svg::read(doc).unwrap() {
            match ev {
                XmlEvent::Error(e) => panic!("{e:?} in {doc}"),
                XmlEvent::Text(t) => texts.push(t.trim().to_string()),
                XmlEvent::Tag(name, ty, attrs) => {
                    let class = attrs
                        .get("class")
                        .map(|v| v.to_string())
                        .unwrap_or_default();
                    match ty {
                        Type::Start => {
                            stack.push(name.to_string());
                            els.push((name.to_string(), class));
                        }
                        Type::Empty => els.push((name.to_string(), class)),
                        Type::End => assert_eq!(stack.pop().as_deref(), Some(name)),
                    }
                }
                _ => {}
            }
        }
        assert!(stack.is_empty(), "unclosed {stack:?}");
        (els, texts)
    }

    fn count(els: &[(String, String)], tag: &str, class: &str) -> usize {
        els.iter().filter(|(t, c)| t == tag && c == class).count()
    }

    fn stream() -> Vec<Event> {
        vec![
            run(1_000_000, 10, 0, -1, Cause::None, 0),
            decision(2_000_000, 11, 0, 1, 2, "cross_llc", 300),
            stop(3_000_000, 10, 0),
            run(3_000_000, 11, 2, 1, path("cross_llc"), 2_000_000),
            moved(4_000_000, 10, 0, 1, "steal_llc", 1000),
            run(4_100_000, 10, 1, 0, reason("steal_llc"), 0),
            stop(5_000_000, 11, 2),
            run(6_000_000, 11, 3, 2, Cause::None, 0),
            stop(7_000_000, 11, 3),
            stop(8_000_000, 10, 1),
        ]
    }

    #[test]
    fn draws_a_rect_per_run_an_arrow_per_migration_and_a_legend_of_causes_present() {
        let doc = render(&stream(), None);
        let (els, texts) = parse(&doc);
        assert_eq!(count(&els, "rect", "run"), 4);
        assert_eq!(count(&els, "g", "migration"), 3);
        assert_eq!(count(&els, "g", "legend-entry"), 3);
        assert_eq!(count(&els, "rect", "lane"), 4);
        assert_eq!(count(&els, "line", "llc-separator"), 1);
        let has = |s: &str| texts.iter().any(|t| t == s);
        assert!(
            has("cross_llc 1") && has("steal_llc 1") && has("unexplained 1"),
            "{texts:?}"
        );
        assert!(!doc.contains("llc_scan"));
        assert!(has("thick: across LLCs"));
        assert!((0..4).all(|cpu| has(&format!("CPU {cpu}"))));
        assert!(has("LLC 0") && has("LLC 1"));
    }

    #[test]
    fn a_window_keeps_only_what_it_holds() {
        // 3.5 to 4.5 ms: runs of 11 on CPU 2 and 10 on CPU 1; the steal's migration only.
        let doc = render(&stream(), Some((3_500_000, 4_500_000)));
        let (els, texts) = parse(&doc);
        assert_eq!(count(&els, "rect", "run"), 2);
        assert_eq!(count(&els, "g", "migration"), 1);
        assert_eq!(count(&els, "g", "legend-entry"), 1);
        assert!(!texts.iter().any(|t| t == "cross_llc 1"));
        assert!(texts.iter().any(|t| t == "steal_llc 1"));
        assert!(draw(&stream(), &LLC, Some((5, 5)), &mut Vec::new()).is_err());
    }

    #[test]
    fn an_empty_trace_draws_a_note() {
        let doc = render(&[], None);
        let (els, texts) = parse(&doc);
        assert_eq!(count(&els, "text", "note"), 1);
        assert!(texts.iter().any(|t| t == "no events in the trace"));
        assert_eq!(count(&els, "rect", "run"), 0);
    }

    #[test]
    fn the_default_window_finds_the_densest_migrations() {
        // A lone migration at 1 ms, then 5 within 2 ms around 100 ms.
        let mut events = vec![run(1_000_000, 1, 1, 0, Cause::None, 0)];
        for i in 0..5 {
            events.push(run(
                100_000_000 + i * 400_000,
                2,
                i as i32 % 2,
                2,
                Cause::None,
                0,
            ));
        }
        events.push(stop(200_000_000, 2, 0));
        let (a, b) = default_window(&events).unwrap();
        assert_eq!(b - a, WINDOW_NS);
        assert!(a <= 100_000_000 && b > 101_600_000, "{a} {b}");

        // Too many to tell apart: the window shrinks until it holds at most MAX_ARROWS.
        let dense: Vec<Event> = (0..400u64)
            .map(|i| {
                run(
                    i * 20_000,
                    3,
                    (i % 2) as i32,
                    ((i + 1) % 2) as i32,
                    Cause::None,
                    0,
                )
            })
            .collect();
        let (a, b) = default_window(&dense).unwrap();
        let held = dense.iter().filter(|e| e.ts >= a && e.ts < b).count();
        assert!(
            held <= MAX_ARROWS && b - a < WINDOW_NS,
            "{held} in {a}..{b}"
        );

        // No migrations: the first WINDOW_NS.
        let calm = vec![run(5, 1, 0, 0, Cause::None, 0), stop(50_000_000, 1, 0)];
        assert_eq!(default_window(&calm), Some((5, 5 + WINDOW_NS)));
    }

    #[test]
    fn ticks_are_round_numbers() {
        for (span, step, decimals) in [
            (20.0, 5.0, 0),
            (1.0, 0.2, 1),
            (0.5, 0.1, 1),
            (80.0, 10.0, 0),
        ] {
            let (s, d) = tick_step(span);
            assert!((s - step).abs() < 1e-12 && d == decimals, "{span}: {s} {d}");
        }
    }
}
