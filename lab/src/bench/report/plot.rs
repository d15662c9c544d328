//! The bench's SVG plot, drawn with the svg crate. For the matrix, a grid: one row per workload, one panel per
//! metric (the workload's main metric, migrations, context switches), a bar per configuration
//! (its median over the baseline's median, on a log axis around the baseline's 1.0; EEVDF unless
//! --baseline names another) with the ratio's bootstrap interval as its whisker; for a scaling
//! run, the absolute select_cpu cost per CPU count, with min-max whiskers, instead.

use std::collections::BTreeSet;

use scx_sis::chart::{self, px};
use svg::node::element::{Element, Group, Line, Rectangle, Title};
use svg::node::{Node, Value};
use svg::Document;

use crate::bench::judge::repeats::{configs_with_runs, samples, summary};
use crate::bench::model::metric::{self, Metric};
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::Workload;
use crate::bench::plan::config::BASELINE;
use crate::bench::plan::meta::Meta;
use crate::bench::workloads;
use scx_sis::verdict::{Bootstrap, CONFIDENCE};

pub struct Bar {
    pub label: String,
    pub value: Option<f64>,
    pub lo: f64,
    pub hi: f64,
    pub color: &'static str,
}

pub struct Panel {
    pub title: String,
    pub ylabel: String,
    /// A dashed horizontal line (1.0 for ratios); with it, the axis is logarithmic and bars
    /// start at the line (a ratio of 0.5 is as far below it as 2 is above).
    pub reference: Option<f64>,
    pub bars: Vec<Bar>,
}

/// The figure: panels in rows of `columns`, a legend above them, caption lines below.
pub struct Figure {
    pub panels: Vec<Panel>,
    pub columns: usize,
    /// (color, what it stands for).
    pub legend: Vec<(&'static str, String)>,
    /// What a whisker spans.
    pub whiskers: String,
    /// What the reference line stands for ("eevdf = 1.0").
    pub reference: String,
    pub caption: String,
}

const EEVDF_COLOR: &str = "#888888";
const SIS_COLOR: &str = "#4477aa";
const PLAIN_COLOR: &str = "#ee7733";
const PEER_COLOR: &str = "#228833";

fn color(config: &str, kind: &str) -> &'static str {
    match (config, kind) {
        (BASELINE, _) => EEVDF_COLOR,
        ("plain", _) => PLAIN_COLOR,
        (_, "peer") => PEER_COLOR,
        _ => SIS_COLOR,
    }
}

fn kind_of<'a>(records: &'a [RunRecord], config: &str) -> &'a str {
    records
        .iter()
        .find(|r| r.config == config)
        .map_or("sis", |r| r.kind.as_str())
}

/// The metrics drawn for a workload: its main one, then the two that carry over from TCG to
/// hardware.
pub fn ratio_metrics(w: Workload, meta: &Meta) -> [Metric; 3] {
    [
        workloads::primary(w, &meta.custom),
        metric::MIGRATIONS,
        metric::CTX,
    ]
}

/// The matrix's figure: per workload, one panel per metric of `ratio_metrics`, each bar the
/// ratio to the baseline's median and its whisker the ratio's bootstrap interval (the baseline's
/// own bar: the baseline against itself, the interval noise alone gives).
pub fn ratio_figure(records: &[RunRecord], meta: &Meta, caption: String) -> Figure {
    let mut boot = Bootstrap::default();
    let mut panels = Vec::new();
    for &w in &meta.workloads {
        let configs = configs_with_runs(meta, records, w);
        if configs.is_empty() {
            continue;
        }
        for m in ratio_metrics(w, meta) {
            let base = samples(records, &meta.baseline, w, None, &m);
            let bars = configs
                .iter()
                .map(|c| {
                    let i = boot.ratio(&base, &samples(records, c, w, None, &m));
                    Bar {
                        label: (*c).to_string(),
                        value: i.map(|i| i.ratio),
                        lo: i.map_or(0.0, |i| i.lo),
                        hi: i.map_or(0.0, |i| i.hi),
                        color: color(c, kind_of(records, c)),
                    }
                })
                .collect();
            let higher = m.better == scx_sis::verdict::Better::Higher;
            panels.push(Panel {
                title: format!("{w}: {}", m.label),
                ylabel: format!(
                    "{} / {} median (log{})",
                    m.label,
                    meta.baseline,
                    if higher { "; higher is better" } else { "" }
                ),
                reference: Some(1.0),
                bars,
            });
        }
    }
    let kinds: BTreeSet<&str> = records.iter().map(|r| r.kind.as_str()).collect();
    let eevdf = if meta.baseline == BASELINE {
        format!("{BASELINE} (the baseline, 1.0)")
    } else {
        format!("{BASELINE} (the kernel's own)")
    };
    let mut legend = vec![(EEVDF_COLOR, eevdf)];
    if records
        .iter()
        .any(|r| r.kind == "sis" && r.config != "plain")
    {
        legend.push((SIS_COLOR, "scx_sis configurations".into()));
    }
    if records.iter().any(|r| r.config == "plain") {
        legend.push((PLAIN_COLOR, "plain (scx_simple's behaviour)".into()));
    }
    if kinds.contains("peer") {
        legend.push((PEER_COLOR, "other sched_ext schedulers (--peer)".into()));
    }
    Figure {
        panels,
        columns: 3,
        legend,
        whiskers: format!("{:.0}% bootstrap interval of the ratio", CONFIDENCE * 100.0),
        reference: format!("{} = 1.0", meta.baseline),
        caption,
    }
}

/// A scaling run's figure: select_cpu ns/call (bpf_stats) per CPU count and configuration.
pub fn scaling_figure(records: &[RunRecord], meta: &Meta, caption: String) -> Figure {
    let cpus: BTreeSet<u32> = records.iter().map(|r| r.cpus).collect();
    let m = metric::SELECT_BPF;
    let mut panels = Vec::new();
    for &w in &meta.workloads {
        let mut bars = Vec::new();
        for &n in &cpus {
            for (c, _) in &meta.configs {
                if !records
                    .iter()
                    .any(|r| r.cpus == n && r.workload == w && &r.config == c)
                {
                    continue;
                }
                let s = summary(records, c, w, Some(n), &m);
                bars.push(Bar {
                    label: format!("{n} CPUs {c}"),
                    value: s.map(|s| s.median),
                    lo: s.map_or(0.0, |s| s.min),
                    hi: s.map_or(0.0, |s| s.max),
                    color: if c == "all-on" {
                        SIS_COLOR
                    } else {
                        PLAIN_COLOR
                    },
                });
            }
        }
        panels.push(Panel {
            title: format!("{w}: select_cpu cost"),
            ylabel: "ns per call (bpf_stats)".into(),
            reference: None,
            bars,
        });
    }
    Figure {
        panels,
        columns: 2,
        legend: vec![
            (SIS_COLOR, "all-on".into()),
            (PLAIN_COLOR, "other configurations".into()),
        ],
        whiskers: "min-max over the repeats".into(),
        reference: String::new(),
        caption,
    }
}

/// The tick step of a linear axis up to `max`: 1, 2, 2.5 or 5 times a power of ten, about 5
/// ticks.
fn value_step(max: f64) -> f64 {
    chart::tick_step(max, 5.0, &[1.0, 2.0, 2.5, 5.0])
}

/// Enough decimals to tell the ticks apart (2.5 steps need one).
fn tick_label(t: f64, step: f64) -> String {
    if t == 0.0 {
        return "0".into();
    }
    if step >= 1e5 {
        return format!("{}M", tick_label(t / 1e6, step / 1e6));
    }
    if step >= 100.0 && t >= 1e4 {
        return format!("{}k", tick_label(t / 1e3, step / 1e3));
    }
    let decimals = (0..3)
        .find(|d| {
            let k = step * 10f64.powi(*d);
            (k - k.round()).abs() < 1e-9
        })
        .unwrap_or(3) as usize;
    format!("{t:.decimals$}")
}

/// A ratio tick: "0.5x", "1x", "20x" (three significant digits at most).
fn ratio_label(t: f64) -> String {
    let digits = (2 - t.log10().floor() as i32).max(0);
    let k = 10f64.powi(digits);
    format!("{}x", (t * k).round() / k)
}

/// The range of a log axis holding every positive value, 1.0 and at least 1/1.5..1.5, with
/// room for the value labels.
pub fn log_range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((1.0 / 1.5, 1.5), |(lo, hi), v| {
            (f64::min(lo, v), f64::max(hi, v))
        });
    (lo / 1.5, hi * 1.4)
}

/// The ticks of a log axis over lo..hi: 1-2-5 per decade, finer on a short axis, coarser on a
/// long one.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10();
    let mantissas: &[f64] = if decades <= 1.0 {
        &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]
    } else if decades <= 3.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut ticks = Vec::new();
    for e in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
        for m in mantissas {
            let t = m * 10f64.powi(e);
            if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                ticks.push(t);
            }
        }
    }
    ticks
}

/// A panel's vertical axis: linear from 0, or logarithmic around the reference line.
enum Axis {
    Linear { ymax: f64, step: f64 },
    Log { lo: f64, hi: f64 },
}

impl Axis {
    fn of(p: &Panel) -> Axis {
        let drawn = p.bars.iter().filter(|b| b.value.is_some());
        if p.reference.is_some() {
            let (lo, hi) = log_range(drawn.flat_map(|b| [b.value.unwrap_or(1.0), b.lo, b.hi]));
            return Axis::Log { lo, hi };
        }
        let top = drawn
            .map(|b| b.hi.max(b.value.unwrap_or(0.0)))
            .fold(0.0, f64::max);
        let step = value_step(top * 1.05);
        let ymax = ((top * 1.05) / step).ceil().max(1.0) * step;
        Axis::Linear { ymax, step }
    }

    /// 0 at the top of the plot area, 1 at its bottom (values off a log axis are clamped).
    fn frac(&self, v: f64) -> f64 {
        match *self {
            Axis::Linear { ymax, .. } => 1.0 - v / ymax,
            Axis::Log { lo, hi } => (hi.ln() - v.clamp(lo, hi).ln()) / (hi.ln() - lo.ln()),
        }
    }

    /// Where bars start.
    fn base(&self) -> f64 {
        match self {
            Axis::Linear { .. } => 0.0,
            Axis::Log { .. } => 1.0,
        }
    }

    fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            Axis::Linear { ymax, step } => {
                let mut v = Vec::new();
                let mut t = 0.0;
                while t <= ymax + step / 2.0 {
                    v.push((t, tick_label(t, step)));
                    t += step;
                }
                v
            }
            Axis::Log { lo, hi } => log_ticks(lo, hi)
                .into_iter()
                .map(|t| (t, ratio_label(t)))
                .collect(),
        }
    }
}

const PANEL_H: f64 = 300.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 86.0;
const LEFT: f64 = 62.0;
const RIGHT: f64 = 12.0;
const SLOT: f64 = 38.0;
const LEGEND_H: f64 = 30.0;
const REFERENCE_COLOR: &str = "#cc3311";

fn panel_width(p: &Panel) -> f64 {
    (LEFT + RIGHT + SLOT * p.bars.len() as f64).max(380.0)
}

/// A `text` element at (x, y) that keeps its words inline, `<text ...>words</text>`: the form the
/// bench's readers match (tests/vm looks for `>hackbench: time s<`), where the crate's Text
/// element writes the words on a line of their own.
fn text(x: f64, y: f64, font_size: u32, words: impl Into<String>) -> Element {
    inline_text(words)
        .with("x", px(x))
        .with("y", px(y))
        .with("font-size", font_size)
}

/// A bare Element written inline: its only child is the words (escaped by the crate).
fn inline_text(words: impl Into<String>) -> Element {
    let mut e = Element::new("text");
    e.append(svg::node::Text::new(words));
    e
}

/// Attributes set builder-style on an Element (the crate gives `set` to its typed elements).
trait With {
    fn with(self, name: &str, value: impl Into<Value>) -> Self;
}

impl With for Element {
    fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.assign(name, value);
        self
    }
}

fn line(x1: f64, x2: f64, y1: f64, y2: f64) -> Line {
    Line::new()
        .set("x1", px(x1))
        .set("x2", px(x2))
        .set("y1", px(y1))
        .set("y2", px(y2))
}

/// Text rotated by `degrees` about its anchor at (x, y).
fn rotated(x: f64, y: f64, degrees: i32, font_size: u32, words: impl Into<String>) -> Element {
    inline_text(words)
        .with(
            "transform",
            format!("translate({:.1},{:.1}) rotate({degrees})", px(x), px(y)),
        )
        .with("font-size", font_size)
}

/// One panel whose top left corner is (x0, y0): its title, axis, ticks, reference line and a
/// bar per configuration with its whisker, value and label.
fn draw_panel(p: &Panel, x0: f64, y0: f64, width: f64) -> Group {
    let plot_h = PANEL_H - TOP - BOTTOM;
    let plot_w = width - LEFT - RIGHT;
    let area = PlotArea {
        axis: Axis::of(p),
        top: y0 + TOP,
        height: plot_h,
    };
    let y = |v: f64| area.y(v);
    let (left, right) = (x0 + LEFT, x0 + LEFT + plot_w);
    let mut g = Group::new()
        .set("class", "panel")
        .add(
            text(x0 + 8.0, y0 + 20.0, 14, p.title.clone())
                .with("class", "title")
                .with("font-weight", "bold"),
        )
        .add(
            rotated(
                x0 + 14.0,
                y0 + TOP + plot_h / 2.0,
                -90,
                11,
                p.ylabel.clone(),
            )
            .with("text-anchor", "middle"),
        );
    for (t, label) in area.axis.ticks() {
        g = g
            .add(line(left, right, y(t), y(t)).set("stroke", "#e0e0e0"))
            .add(text(left - 4.0, y(t) + 3.5, 10, label).with("text-anchor", "end"));
    }
    if let Some(r) = p.reference {
        g = g.add(
            line(left, right, y(r), y(r))
                .set("class", "reference")
                .set("stroke", REFERENCE_COLOR)
                .set("stroke-dasharray", "5,3"),
        );
    }
    let slot = plot_w / p.bars.len().max(1) as f64;
    let bottom = area.bottom();
    for (i, b) in p.bars.iter().enumerate() {
        let cx = left + slot * (i as f64 + 0.5);
        g = match b.value {
            Some(v) => draw_bar(g, b, v, &area, cx, slot),
            None => {
                g.add(text(cx, y(area.axis.base()) - 4.0, 10, "n/a").with("text-anchor", "middle"))
            }
        };
        g = g.add(rotated(cx, bottom + 14.0, -40, 11, b.label.clone()).with("text-anchor", "end"));
    }
    g.add(line(left, left, y0 + TOP, bottom).set("stroke", "#000"))
        .add(line(left, right, bottom, bottom).set("stroke", "#000"))
}

/// A panel's plot area: its axis and where it lies on the page.
struct PlotArea {
    axis: Axis,
    top: f64,
    height: f64,
}

impl PlotArea {
    fn y(&self, v: f64) -> f64 {
        self.top + self.height * self.axis.frac(v)
    }

    fn bottom(&self) -> f64 {
        self.top + self.height
    }
}

/// A bar of value `v` centred on `cx` in a slot `slot` wide, its whisker lo..hi and its value
/// beyond the whisker.
fn draw_bar(g: Group, b: &Bar, v: f64, area: &PlotArea, cx: f64, slot: f64) -> Group {
    let (axis, bottom) = (&area.axis, area.bottom());
    let y = |v: f64| area.y(v);
    let bw = (slot * 0.6).min(40.0);
    let (y1, y2) = (y(axis.base()), y(v));
    let bar = Rectangle::new()
        .set("class", "bar")
        .set("x", px(cx - bw / 2.0))
        .set("y", px(y1.min(y2)))
        .set("width", px(bw))
        .set("height", px((y1 - y2).abs().max(1.0)))
        .set("fill", b.color)
        .add(Title::new(format!(
            "{}: {v:.3} ({:.3} – {:.3})",
            b.label, b.lo, b.hi
        )));
    let (ylo, yhi) = (y(b.lo), y(b.hi));
    let whisker = Group::new()
        .set("class", "whisker")
        .set("stroke", "#222")
        .add(line(cx, cx, ylo, yhi))
        .add(line(cx - 5.0, cx + 5.0, ylo, ylo))
        .add(line(cx - 5.0, cx + 5.0, yhi, yhi));
    // The median's figure beyond the whisker's far end from the bar's base.
    // A ratio (log axis) with two decimals, an absolute value with none.
    let figure = if matches!(axis, Axis::Log { .. }) {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    };
    let ty = if v >= axis.base() {
        y(b.hi.max(v)) - 4.0
    } else {
        (y(b.lo.min(v)) + 11.0).min(bottom - 2.0)
    };
    g.add(bar)
        .add(whisker)
        .add(text(cx, ty, 9, figure).with("text-anchor", "middle"))
}

/// The legend above the panels: a swatch per colour, the reference line if a panel has one,
/// and what a whisker spans.
fn draw_legend(fig: &Figure) -> Vec<Group> {
    let mut entries = Vec::new();
    let mut x = 10.0;
    for (color, what) in &fig.legend {
        entries.push(
            Group::new()
                .set("class", "legend")
                .add(
                    Rectangle::new()
                        .set("x", px(x))
                        .set("y", 10)
                        .set("width", 14)
                        .set("height", 14)
                        .set("fill", *color),
                )
                .add(text(x + 20.0, 21.0, 12, what.clone())),
        );
        x += 20.0 + 7.0 * what.chars().count() as f64 + 24.0;
    }
    if fig.panels.iter().any(|p| p.reference.is_some()) {
        entries.push(
            Group::new()
                .set("class", "legend")
                .add(
                    line(x, x + 22.0, 17.0, 17.0)
                        .set("stroke", REFERENCE_COLOR)
                        .set("stroke-dasharray", "5,3"),
                )
                .add(text(x + 28.0, 21.0, 12, fig.reference.clone())),
        );
        x += 28.0 + 7.0 * fig.reference.chars().count() as f64 + 24.0;
    }
    entries.push(
        Group::new()
            .set("class", "legend")
            .add(line(x + 5.0, x + 5.0, 9.0, 25.0).set("stroke", "#222"))
            .add(line(x, x + 10.0, 9.0, 9.0).set("stroke", "#222"))
            .add(line(x, x + 10.0, 25.0, 25.0).set("stroke", "#222"))
            .add(text(x + 16.0, 21.0, 12, fig.whiskers.clone())),
    );
    entries
}

/// The whole figure: the legend on top, the panels `columns` per row, the caption at the bottom.
pub fn svg(fig: &Figure) -> String {
    let columns = fig.columns.max(1);
    let width = fig.panels.iter().map(panel_width).fold(380.0, f64::max);
    let rows = fig.panels.len().div_ceil(columns).max(1);
    let cols = fig.panels.len().clamp(1, columns);
    let lines = fig.caption.lines().count() as f64;
    let (w, h) = (
        (width * cols as f64).round(),
        (LEGEND_H + PANEL_H * rows as f64 + 15.0 * lines + 12.0).round(),
    );
    let mut doc = Document::new()
        .set("width", w)
        .set("height", h)
        .set("viewBox", (0, 0, w, h))
        .set("font-family", "sans-serif")
        .add(
            Rectangle::new()
                .set("width", "100%")
                .set("height", "100%")
                .set("fill", "white"),
        );
    for entry in draw_legend(fig) {
        doc = doc.add(entry);
    }
    for (i, p) in fig.panels.iter().enumerate() {
        let (col, row) = (i % columns, i / columns);
        doc = doc.add(draw_panel(
            p,
            col as f64 * width,
            LEGEND_H + row as f64 * PANEL_H,
            width,
        ));
    }
    for (i, caption) in fig.caption.lines().enumerate() {
        let y = LEGEND_H + PANEL_H * rows as f64 + 12.0 + 15.0 * i as f64;
        doc = doc.add(text(8.0, y.round(), 11, caption).with("fill", "#444"));
    }
    // A text file ends with a newline.
    doc.to_string() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::{timed::HACKBENCH, wakelat::WAKELAT};

    #[test]
    fn ticks_are_round() {
        assert_eq!(value_step(1.2), 0.25);
        assert_eq!(value_step(10.0), 2.0);
        assert_eq!(value_step(4000.0), 1000.0);
        assert_eq!(value_step(0.0), 1.0);
        assert_eq!(tick_label(7.5, 2.5), "7.5");
        assert_eq!(tick_label(0.5, 0.25), "0.50");
        assert_eq!(tick_label(2000.0, 500.0), "2000");
        assert_eq!(tick_label(15000.0, 5000.0), "15k");
        assert_eq!(tick_label(1_250_000.0, 250_000.0), "1.25M");
        assert_eq!(tick_label(0.0, 250_000.0), "0");
        assert_eq!(ratio_label(0.7000000000000001), "0.7x");
        assert_eq!(ratio_label(1.0), "1x");
        assert_eq!(ratio_label(20.0), "20x");
        assert_eq!(ratio_label(0.05), "0.05x");
    }

    #[test]
    fn log_axis_holds_the_values_and_one() {
        let (lo, hi) = log_range([0.0, 0.3, 12.0, f64::NAN]);
        assert!(lo < 0.3 && hi > 12.0, "{lo} {hi}");
        let (lo, hi) = log_range([]);
        assert!(lo < 1.0 / 1.5 && hi > 1.5);
        let t = log_ticks(lo, hi);
        assert!(
            t.contains(&1.0) && t.contains(&2.0) && t.contains(&0.5),
            "{t:?}"
        );
        assert!(t.windows(2).all(|w| w[0] < w[1]));
        assert!(log_ticks(0.001, 1000.0)
            .iter()
            .all(|t| t.log10().fract() == 0.0));
    }

    fn rec(config: &str, kind: &str, w: Workload, repeat: u32, x: f64) -> RunRecord {
        let mut r = RunRecord::new(config, kind, w, repeat);
        r.ok = true;
        r.cpus = 8;
        r.time_s = Some(x);
        r.p99_us = Some(x * 100.0);
        r.migrations = Some((x * 10.0) as u64);
        r.context_switches = Some((x * 1000.0) as u64);
        r
    }

    /// Every workload has a panel per metric (its main one, migrations, ctx switches), every
    /// panel a bar and a whisker per configuration, on a log ratio axis with the 1.0 line.
    #[test]
    fn a_panel_per_metric_and_workload_with_a_whisker_per_config() {
        let workloads = vec![HACKBENCH, WAKELAT];
        let configs = [
            ("eevdf", "eevdf"),
            ("all-on", "sis"),
            ("plain", "sis"),
            ("bpfland", "peer"),
        ];
        let mut recs = vec![];
        for repeat in 1..=3 {
            for (i, (c, kind)) in configs.iter().enumerate() {
                for &w in &workloads {
                    recs.push(rec(c, kind, w, repeat, (i + 1) as f64 * repeat as f64));
                }
            }
        }
        let meta = Meta {
            configs: configs
                .iter()
                .map(|(c, _)| (c.to_string(), String::new()))
                .collect(),
            workloads: workloads.clone(),
            repeats: 3,
            notes: vec![],
            traced: vec![],
            custom: vec![],
            aa: None,
            until_ci: None,
            max_repeats: None,
            baseline: "eevdf".into(),
        };
        let fig = ratio_figure(&recs, &meta, "one\ntwo".into());
        let s = svg(&fig);
        assert!(s.starts_with("<svg ") && s.trim_end().ends_with("</svg>"));
        let panels = workloads.len() * 3;
        assert_eq!(s.matches("<g class=\"panel\">").count(), panels);
        for w in &workloads {
            for m in ratio_metrics(*w, &meta) {
                assert!(
                    s.contains(&format!(">{w}: {}</text>", m.label)),
                    "no panel for {w} {}",
                    m.label
                );
            }
        }
        assert!(s.contains(">hackbench: migrations</text>"));
        assert!(s.contains(">wakelat: ctx switches</text>"));
        assert_eq!(
            s.matches("class=\"whisker\"").count(),
            panels * configs.len(),
            "a whisker per configuration and panel"
        );
        assert_eq!(
            s.matches("<rect class=\"bar\"").count(),
            panels * configs.len()
        );
        assert_eq!(s.matches("class=\"reference\"").count(), panels);
        for (c, _) in configs {
            assert_eq!(s.matches(&format!(">{c}</text>")).count(), panels, "{c}");
        }
        for (_, what) in &fig.legend {
            let escaped = svg::node::Text::new(what.as_str()).to_string();
            assert!(s.contains(&escaped), "legend {what}");
        }
        assert_eq!(fig.legend.len(), 4, "eevdf, scx_sis, plain, peers");
        assert!(s.contains(">1x</text>"), "the ratio axis labels 1x");
        assert!(
            s.contains(">95% bootstrap interval of the ratio</text>"),
            "{s}"
        );
        assert!(
            !s.contains("min-max"),
            "whiskers are intervals, not min-max"
        );
        assert!(s.contains(">two</text>"), "caption lines");
    }

    #[test]
    fn missing_values_and_labels() {
        let bar = |label: &str, v: Option<f64>| Bar {
            label: label.into(),
            value: v,
            lo: 0.9,
            hi: 1.1,
            color: SIS_COLOR,
        };
        let fig = Figure {
            panels: vec![
                Panel {
                    title: "hackbench: time s".into(),
                    ylabel: "ratio".into(),
                    reference: Some(1.0),
                    bars: vec![bar("eevdf", Some(1.0)), bar("a<b", Some(0.0))],
                },
                Panel {
                    title: "scaling".into(),
                    ylabel: "ns".into(),
                    reference: None,
                    bars: vec![bar("eevdf", None), bar("x", Some(2000.0))],
                },
            ],
            columns: 2,
            legend: vec![],
            whiskers: "min-max".into(),
            reference: "eevdf = 1.0".into(),
            caption: "caption".into(),
        };
        let s = svg(&fig);
        assert_eq!(s.matches("<g class=\"panel\">").count(), 2);
        assert_eq!(s.matches("class=\"whisker\"").count(), 3);
        assert!(s.contains("a&lt;b"), "labels are escaped");
        assert!(s.contains("n/a"));
        assert!(
            !s.contains("NaN") && !s.contains("inf"),
            "a zero ratio stays on the axis"
        );
    }
}
