//! A picture of a window of the trace as SVG, for readers who would rather look than read: one
//! lane per CPU, grouped by LLC; each run a rectangle in its task's colour; each migration an
//! arrow from the CPU the task last ran on to the one it starts on, coloured by its cause (the
//! placement path or move reason), with a legend of the causes in the window. window.rs picks
//! the window when none is given, layout.rs places times and lanes, this file draws.

mod layout;
mod window;

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{bail, Result};
use svg::node::element::{Group, Line, Polygon, Rectangle, Text, Title};
use svg::Document;

use super::chrome_trace::{runs, Run};
use super::event::{Cause, Event, Kind};
use crate::bpf_intf;
use crate::chart::{self, px};
use crate::stats::counters::PATHS;
use layout::{Frame, Lanes, Tally};
pub use window::default_window;

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
        Cause::Path(i) => PATHS.get(i).map_or(UNEXPLAINED_COLOR, |p| p.color),
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

/// Draw the trace's `window` ((start, end) ns in the events' clock; None: default_window) as
/// SVG. `cpu_llc` is each CPU's LLC index.
pub fn draw(
    events: &[Event],
    cpu_llc: &[u32],
    window: Option<(u64, u64)>,
    out: &mut impl Write,
) -> Result<()> {
    let Some((w0, w1)) = window.or_else(|| default_window(events)) else {
        svg::write(&mut *out, &empty_picture())?;
        return Ok(());
    };
    if w1 <= w0 {
        bail!("an empty window: it ends ({w1} ns) before it starts ({w0} ns)");
    }
    let frame = Frame {
        w0,
        w1,
        t0: events.iter().map(|e| e.ts).min().unwrap_or(w0),
        scale: PLOT_W / (w1 - w0) as f64,
        cpu_llc,
    };

    // What the window holds.
    let all_runs = runs(events);
    let shown: Vec<&Run> = all_runs
        .iter()
        .filter(|r| r.cpu >= 0 && r.start < w1 && r.end.max(r.start + 1) > w0)
        .collect();
    let migrations: Vec<&Event> = events
        .iter()
        .filter(|e| e.kind == Kind::Run && e.migrated && e.ts >= w0 && e.ts < w1)
        .collect();
    let lanes = Lanes::new(events, &frame, &shown, &migrations);

    // Migrations that can be drawn (both lanes present), by cause for the legend.
    let arrows: Vec<&Event> = migrations
        .iter()
        .copied()
        .filter(|e| lanes.of(e.cpu).is_some() && lanes.of(e.from_cpu).is_some())
        .collect();
    let mut legend: BTreeMap<Cause, usize> = BTreeMap::new();
    for e in &arrows {
        *legend.entry(e.cause).or_default() += 1;
    }
    let tally = Tally {
        runs: shown.len(),
        migrations: migrations.len(),
        cross: arrows.iter().filter(|e| frame.crosses(e)).count(),
        unexplained: arrows.iter().filter(|e| e.cause == Cause::None).count(),
    };

    let legend_h = 40.0 + 16.0 * (legend.len() as f64 + 3.0);
    let height = (lanes.bottom + AXIS_H).max(TOP + legend_h) + 10.0;
    let mut doc = Document::new()
        .set("width", WIDTH)
        .set("height", px(height))
        .set("viewBox", (0, 0, WIDTH, px(height)))
        .set("font-family", "sans-serif")
        .set("font-size", 11)
        .add(background(WIDTH, height));
    doc = draw_title(doc, &frame, events, all_runs.len(), &tally);
    doc = draw_lanes(doc, &lanes);
    doc = doc
        .add(draw_runs(events, &frame, &lanes, &shown))
        .add(draw_migrations(&frame, &lanes, &arrows));
    doc = draw_axis(doc, &frame, lanes.bottom);
    doc = draw_legend(doc, legend, &tally, lanes.hidden);
    if shown.is_empty() {
        doc = doc.add(text(LEFT + 10.0, TOP - 4.0, "no runs in this window").set("class", "note"));
    }
    svg::write(&mut *out, &doc)?;
    Ok(())
}

/// The picture of a trace without events: a title and a note.
fn empty_picture() -> Document {
    Document::new()
        .set("width", 480)
        .set("height", 60)
        .set("viewBox", (0, 0, 480, 60))
        .set("font-family", "sans-serif")
        .set("font-size", 12)
        .add(background(480.0, 60.0))
        .add(text(10.0, 24.0, "scx_sis trace").set("font-weight", "bold"))
        .add(text(10.0, 44.0, "no events in the trace").set("class", "note"))
}

/// Title: the window, then the whole trace.
fn draw_title(
    doc: Document,
    frame: &Frame,
    events: &[Event],
    total_runs: usize,
    window: &Tally,
) -> Document {
    let t_end = events.iter().map(|e| e.ts).max().unwrap_or(frame.w1);
    let total_migrations = events
        .iter()
        .filter(|e| e.kind == Kind::Run && e.migrated)
        .count();
    doc.add(
        text(
            10.0,
            20.0,
            format!(
                "scx_sis trace: {:.3} to {:.3} ms: {} runs, {} migrations ({} across LLCs, {} unexplained)",
                frame.ms(frame.w0),
                frame.ms(frame.w1),
                window.runs,
                window.migrations,
                window.cross,
                window.unexplained
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
            frame.ms(t_end),
            total_runs,
            total_migrations
        ),
    ).set("fill", "#444444"))
}

/// Lanes, their labels and the LLC separators.
fn draw_lanes(mut doc: Document, lanes: &Lanes) -> Document {
    let mut prev_llc: Option<Option<u32>> = None;
    for l in &lanes.lanes {
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
    doc
}

/// Runs: a rectangle each in its task's colour, labelled where the label fits.
fn draw_runs(events: &[Event], frame: &Frame, lanes: &Lanes, shown: &[&Run]) -> Group {
    let mut group = Group::new().set("class", "runs");
    for r in shown {
        let Some(lane) = lanes.of(r.cpu) else {
            continue;
        };
        let e = &events[r.event];
        let x0 = frame.x(r.start);
        let w = (frame.x(r.end) - x0).max(0.5);
        let tip = format!(
            "{} {}: CPU {}, {:.3} to {:.3} ms, {}{}",
            e.comm,
            e.pid,
            r.cpu,
            frame.ms(r.start),
            frame.ms(r.end),
            cause_label(e.cause),
            if r.stopped { "" } else { " (end not traced)" }
        );
        group = group.add(
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
            group = group.add(
                text(x0 + 2.0, lane.y + LANE_H * 0.72, e.comm.clone())
                    .set("class", "label")
                    .set("font-size", 9),
            );
        }
    }
    group
}

/// Migrations: an arrow at the run's start, from the lane it left to the lane it runs on.
fn draw_migrations(frame: &Frame, lanes: &Lanes, arrows: &[&Event]) -> Group {
    let mut group = Group::new().set("class", "migrations");
    for e in arrows {
        let (Some(from), Some(to)) = (lanes.of(e.from_cpu), lanes.of(e.cpu)) else {
            continue;
        };
        let x = px(frame.x(e.ts));
        let y0 = from.y + LANE_H / 2.0;
        let y1 = to.y + LANE_H / 2.0;
        let dir = if y1 >= y0 { 1.0 } else { -1.0 };
        let color = cause_color(e.cause);
        let is_cross = frame.crosses(e);
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
            frame.ms(e.ts),
            cause_label(e.cause),
            if is_cross { ", across LLCs" } else { "" }
        );
        group = group.add(
            Group::new()
                .set("class", "migration")
                .add(Title::new(tip))
                .add(line)
                .add(head),
        );
    }
    group
}

/// The time axis below the lanes, in ms since the trace's first event.
fn draw_axis(mut doc: Document, frame: &Frame, plot_bottom: f64) -> Document {
    let axis_y = plot_bottom + 4.0;
    doc = doc.add(
        Line::new()
            .set("x1", LEFT)
            .set("x2", px(LEFT + PLOT_W))
            .set("y1", px(axis_y))
            .set("y2", px(axis_y))
            .set("stroke", "#000000"),
    );
    let (ms0, ms1) = (frame.ms(frame.w0), frame.ms(frame.w1));
    let (step, decimals) = time_step(ms1 - ms0);
    // Ticks as multiples of the step, so that no rounding error adds up along the axis.
    let first_tick = (ms0 / step - 1e-9).ceil() as u64;
    let last_tick = (ms1 / step + 1e-9).floor() as u64;
    for k in first_tick..=last_tick {
        let tick = k as f64 * step;
        let x = px(LEFT + (tick - ms0) * 1e6 * frame.scale);
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
    doc.add(
        text(LEFT + PLOT_W, axis_y + 30.0, "ms since the trace's start")
            .set("text-anchor", "end")
            .set("fill", "#444444"),
    )
}

/// The legend right of the lanes: the causes present, most first, then what line styles and
/// missing lanes mean.
fn draw_legend(
    mut doc: Document,
    legend: BTreeMap<Cause, usize>,
    window: &Tally,
    hidden: usize,
) -> Document {
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
    if window.cross > 0 {
        doc = doc.add(text(lx, ly, "thick: across LLCs").set("fill", "#444444"));
        ly += 16.0;
    }
    if window.unexplained > 0 {
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
    doc
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

/// The time axis's tick step for a window of `span` ms (1, 2 or 5 times a power of ten, 4 to
/// 10 ticks, at least 1 ns), and the decimals its labels need.
fn time_step(span: f64) -> (f64, usize) {
    let step = chart::tick_step(span.max(8e-6), 8.0, &[1.0, 2.0, 5.0]);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    (step, decimals)
}

#[cfg(test)]
mod tests {
    use super::super::chrome_trace::synth::*;
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
    fn ticks_are_round_numbers() {
        for (span, step, decimals) in [
            (20.0, 5.0, 0),
            (1.0, 0.2, 1),
            (0.5, 0.1, 1),
            (80.0, 10.0, 0),
        ] {
            let (s, d) = time_step(span);
            assert!((s - step).abs() < 1e-12 && d == decimals, "{span}: {s} {d}");
        }
    }
}
