//! The SVG plot, written by hand: one panel per workload, a bar per configuration (the median
//! ratio to EEVDF of the workload's main metric) with min-max whiskers; for a scaling run, the
//! absolute select_cpu cost per CPU count instead.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::config::BASELINE;
use super::record::{self, RunRecord};
use super::report::{summary, Meta};
use super::summary::ratios;

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
    /// A dashed horizontal line (1.0 for ratios).
    pub reference: Option<f64>,
    pub bars: Vec<Bar>,
}

fn color(config: &str, kind: &str) -> &'static str {
    match (config, kind) {
        (BASELINE, _) => "#888888",
        ("plain", _) => "#ee7733",
        (_, "peer") => "#228833",
        _ => "#4477aa",
    }
}

fn kind_of<'a>(records: &'a [RunRecord], config: &str) -> &'a str {
    records
        .iter()
        .find(|r| r.config == config)
        .map_or("sis", |r| r.kind.as_str())
}

/// Panels of the matrix: ratio to EEVDF of each workload's main metric.
pub fn ratio_panels(records: &[RunRecord], meta: &Meta) -> Vec<Panel> {
    let mut panels = Vec::new();
    for &w in &meta.workloads {
        let m = record::primary(w);
        let base = summary(records, BASELINE, w, None, m);
        let bars = meta
            .configs
            .iter()
            .filter(|(c, _)| records.iter().any(|r| &r.config == c && r.workload == w))
            .map(|(c, _)| {
                let r = summary(records, c, w, None, m)
                    .zip(base)
                    .and_then(|(s, b)| ratios(&s, &b));
                Bar {
                    label: c.clone(),
                    value: r.map(|r| r.median),
                    lo: r.map_or(0.0, |r| r.min),
                    hi: r.map_or(0.0, |r| r.max),
                    color: color(c, kind_of(records, c)),
                }
            })
            .collect();
        panels.push(Panel {
            title: format!("{w}: {} vs {BASELINE}", m.label),
            ylabel: format!("{} / {BASELINE} (lower is better)", m.label),
            reference: Some(1.0),
            bars,
        });
    }
    panels
}

/// Panels of a scaling run: select_cpu ns/call (bpf_stats) per CPU count and configuration.
pub fn scaling_panels(records: &[RunRecord], meta: &Meta) -> Vec<Panel> {
    let cpus: BTreeSet<u32> = records.iter().map(|r| r.cpus).collect();
    let m = &record::SELECT_BPF;
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
                let s = summary(records, c, w, Some(n), m);
                bars.push(Bar {
                    label: format!("{n} CPUs {c}"),
                    value: s.map(|s| s.median),
                    lo: s.map_or(0.0, |s| s.min),
                    hi: s.map_or(0.0, |s| s.max),
                    color: if c == "all-on" { "#4477aa" } else { "#ee7733" },
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
    panels
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step of 1, 2, 2.5 or 5 times a power of ten giving about 5 ticks up to `max`.
pub fn tick_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
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

const PANEL_H: f64 = 320.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 90.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 15.0;
const COLUMNS: usize = 2;

fn panel_width(p: &Panel) -> f64 {
    (LEFT + RIGHT + 44.0 * p.bars.len() as f64).max(380.0)
}

fn draw_panel(out: &mut String, p: &Panel, x0: f64, y0: f64, width: f64) {
    let plot_h = PANEL_H - TOP - BOTTOM;
    let plot_w = width - LEFT - RIGHT;
    let top = p
        .bars
        .iter()
        .filter(|b| b.value.is_some())
        .map(|b| b.hi.max(b.value.unwrap_or(0.0)))
        .fold(p.reference.unwrap_or(0.0), f64::max);
    let step = tick_step(top * 1.05);
    let ymax = ((top * 1.05) / step).ceil().max(1.0) * step;
    let y = |v: f64| y0 + TOP + plot_h * (1.0 - v / ymax);
    let _ = writeln!(out, "<g class=\"panel\">");
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        x0 + 8.0,
        y0 + 20.0,
        esc(&p.title)
    );
    let _ = writeln!(
        out,
        "<text transform=\"translate({:.1},{:.1}) rotate(-90)\" font-size=\"11\" \
         text-anchor=\"middle\">{}</text>",
        x0 + 14.0,
        y0 + TOP + plot_h / 2.0,
        esc(&p.ylabel)
    );
    let mut t = 0.0;
    while t <= ymax + step / 2.0 {
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#e0e0e0\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            x0 + LEFT,
            x0 + LEFT + plot_w,
            y(t),
            y(t),
            x0 + LEFT - 4.0,
            y(t) + 3.5,
            tick_label(t, step)
        );
        t += step;
    }
    let slot = plot_w / p.bars.len().max(1) as f64;
    for (i, b) in p.bars.iter().enumerate() {
        let cx = x0 + LEFT + slot * (i as f64 + 0.5);
        let bw = (slot * 0.6).min(40.0);
        if let Some(v) = b.value {
            let _ = writeln!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"{}\">\
                 <title>{}: {v:.3} (min {:.3}, max {:.3})</title></rect>",
                cx - bw / 2.0,
                y(v),
                (y(0.0) - y(v)).max(0.0),
                b.color,
                esc(&b.label),
                b.lo,
                b.hi
            );
            let _ = writeln!(
                out,
                "<line class=\"whisker\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" \
                 stroke=\"#222\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" \
                 stroke=\"#222\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" \
                 stroke=\"#222\"/>",
                y(b.lo),
                y(b.hi),
                cx - 5.0,
                cx + 5.0,
                y(b.lo),
                y(b.lo),
                cx - 5.0,
                cx + 5.0,
                y(b.hi),
                y(b.hi)
            );
            let _ = writeln!(
                out,
                "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\">{}</text>",
                y(b.hi.max(v)) - 4.0,
                if p.reference.is_some() {
                    format!("{v:.2}")
                } else {
                    format!("{v:.0}")
                }
            );
        } else {
            let _ = writeln!(
                out,
                "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">n/a</text>",
                y(0.0) - 4.0
            );
        }
        let _ = writeln!(
            out,
            "<text transform=\"translate({cx:.1},{:.1}) rotate(-40)\" font-size=\"11\" \
             text-anchor=\"end\">{}</text>",
            y(0.0) + 14.0,
            esc(&b.label)
        );
    }
    if let Some(r) = p.reference {
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#cc3311\" \
             stroke-dasharray=\"5,3\"/>",
            x0 + LEFT,
            x0 + LEFT + plot_w,
            y(r),
            y(r)
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#000\"/>\
         <line x1=\"{0:.1}\" x2=\"{3:.1}\" y1=\"{2:.1}\" y2=\"{2:.1}\" stroke=\"#000\"/>",
        x0 + LEFT,
        y(ymax),
        y(0.0),
        x0 + LEFT + plot_w
    );
    let _ = writeln!(out, "</g>");
}

/// The whole figure: panels two per row, two caption lines at the bottom.
pub fn svg(panels: &[Panel], caption: &str) -> String {
    let width = panels.iter().map(panel_width).fold(380.0, f64::max);
    let rows = panels.len().div_ceil(COLUMNS).max(1);
    let cols = panels.len().clamp(1, COLUMNS);
    let (w, h) = (width * cols as f64, PANEL_H * rows as f64 + 40.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" \
         viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"sans-serif\">"
    );
    let _ = writeln!(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    for (i, p) in panels.iter().enumerate() {
        let (col, row) = (i % COLUMNS, i / COLUMNS);
        draw_panel(&mut out, p, col as f64 * width, row as f64 * PANEL_H, width);
    }
    for (i, line) in caption.lines().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"8\" y=\"{:.0}\" font-size=\"11\" fill=\"#444\">{}</text>",
            h - 34.0 + 15.0 * i as f64,
            esc(line)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(1.2), 0.25);
        assert_eq!(tick_step(10.0), 2.0);
        assert_eq!(tick_step(4000.0), 1000.0);
        assert_eq!(tick_step(0.0), 1.0);
        assert_eq!(tick_label(7.5, 2.5), "7.5");
        assert_eq!(tick_label(0.5, 0.25), "0.50");
        assert_eq!(tick_label(2000.0, 500.0), "2000");
        assert_eq!(tick_label(15000.0, 5000.0), "15k");
        assert_eq!(tick_label(1_250_000.0, 250_000.0), "1.25M");
        assert_eq!(tick_label(0.0, 250_000.0), "0");
    }

    #[test]
    fn one_panel_per_workload_with_bars_and_whiskers() {
        let bar = |label: &str, v: Option<f64>| Bar {
            label: label.into(),
            value: v,
            lo: 0.9,
            hi: 1.1,
            color: "#4477aa",
        };
        let panels = vec![
            Panel {
                title: "hackbench: time s vs eevdf".into(),
                ylabel: "ratio".into(),
                reference: Some(1.0),
                bars: vec![bar("eevdf", Some(1.0)), bar("a<b", Some(0.95))],
            },
            Panel {
                title: "pipe".into(),
                ylabel: "ratio".into(),
                reference: Some(1.0),
                bars: vec![bar("eevdf", None)],
            },
        ];
        let s = svg(&panels, "caption");
        assert!(s.starts_with("<svg "));
        assert!(s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<g class=\"panel\">").count(), 2);
        assert_eq!(s.matches("<rect x=").count(), 2, "one bar per value");
        assert_eq!(s.matches("class=\"whisker\"").count(), 2);
        assert!(s.contains("a&lt;b"), "labels are escaped");
        assert!(s.contains("n/a"));
    }
}
