//! What a bench leaves in its output directory: runs.jsonl (a record a line, as runs arrive),
//! plan.json (for --render), and results.md and results.svg rendered from them.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use scx_sis_lab::elapsed::hms;

use super::{markdown, plot};
use crate::bench::plan::Plan;
use crate::bench::record::run_record::RunRecord;

/// Write results.md and results.svg from the records, and the SVG to `svg_copy` too; returns
/// the markdown.
fn render(
    out: &Path,
    records: &[RunRecord],
    meta: &markdown::Meta,
    svg_copy: Option<&Path>,
) -> Result<String> {
    let md = markdown::markdown(records, meta);
    fs::write(out.join("results.md"), &md)
        .with_context(|| format!("failed to write {}", out.join("results.md").display()))?;
    let scaling = records
        .iter()
        .map(|r| r.cpus)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let head = format!(
        "scx_sis bench: {}",
        meta.notes.first().map_or("", String::as_str)
    );
    let fig = if scaling {
        let caption = format!(
            "{head}\nbars: median, whiskers: min-max over {} repeat(s)",
            meta.repeats
        );
        plot::scaling_figure(records, meta, caption)
    } else {
        let caption = format!(
            "{head}\nbars: median / {}'s median, whiskers: the ratio's {:.0}% bootstrap \
             interval (where it crosses 1.0, no difference is detectable); log axis, lower is \
             better unless a panel says higher\nmigrations and ctx switches: perf stat of the \
             workload's tasks (they carry over from the VM to hardware better than times)",
            meta.baseline,
            scx_sis::verdict::CONFIDENCE * 100.0
        );
        plot::ratio_figure(records, meta, caption)
    };
    let svg = plot::svg(&fig);
    let mut paths = vec![out.join("results.svg")];
    paths.extend(svg_copy.map(Path::to_path_buf));
    for p in paths {
        fs::write(&p, &svg).with_context(|| format!("failed to write {}", p.display()))?;
    }
    Ok(md)
}

/// OUT/plan.json: the plan and the report's notes, for --render.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    plan: Plan,
    notes: Vec<String>,
}

pub fn save_plan(out: &Path, plan: &Plan, notes: &[String]) -> Result<()> {
    let saved = Saved {
        plan: plan.clone(),
        notes: notes.to_vec(),
    };
    let p = out.join("plan.json");
    fs::write(&p, serde_json::to_string_pretty(&saved)?)
        .with_context(|| format!("failed to write {}", p.display()))
}

pub fn rerender(dir: &Path, svg_copy: Option<&Path>) -> Result<()> {
    let p = dir.join("plan.json");
    let saved: Saved = serde_json::from_str(
        &fs::read_to_string(&p).with_context(|| format!("failed to read {}", p.display()))?,
    )
    .with_context(|| format!("{} is not a bench plan", p.display()))?;
    let p = dir.join("runs.jsonl");
    let text = fs::read_to_string(&p).with_context(|| format!("failed to read {}", p.display()))?;
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str::<RunRecord>(l)
                .with_context(|| format!("{}:{}: not a run record", p.display(), i + 1))
        })
        .collect::<Result<Vec<_>>>()?;
    println!(
        "{}",
        render(dir, &records, &saved.plan.meta(saved.notes), svg_copy)?
    );
    Ok(())
}

/// runs.jsonl, one line per run as it arrives.
pub struct Jsonl(File);

impl Jsonl {
    pub fn create(out: &Path) -> Result<Jsonl> {
        fs::create_dir_all(out).with_context(|| format!("failed to create {}", out.display()))?;
        let p = out.join("runs.jsonl");
        Ok(Jsonl(File::create(&p).with_context(|| {
            format!("failed to create {}", p.display())
        })?))
    }

    pub fn push(&mut self, r: &RunRecord) -> Result<()> {
        writeln!(self.0, "{}", serde_json::to_string(r)?)?;
        self.0.flush()?;
        Ok(())
    }
}

fn where_it_ran(records: &[RunRecord], how: &str) -> String {
    let cpus: BTreeSet<u32> = records.iter().map(|r| r.cpus).collect();
    match records.first() {
        Some(r) if cpus.len() > 1 => {
            let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
            format!(
                "kernel {} ({how}, one LLC of N = {} CPUs)",
                r.kernel,
                list.join(", ")
            )
        }
        Some(r) => format!(
            "kernel {} ({how}, topology {}, {} CPUs)",
            r.kernel, r.topo, r.cpus
        ),
        None => format!("nothing ran ({how})"),
    }
}

/// Save the plan, render results.md / results.svg and print the table: the
/// last step of a native run and of a `--vm` run alike.
pub fn write_results(
    out: &Path,
    plan: &Plan,
    records: &[RunRecord],
    how: &str,
    t0: Instant,
    svg_copy: Option<&Path>,
) -> Result<()> {
    let notes = vec![
        where_it_ran(records, how),
        format!("wall time {}", hms(t0.elapsed())),
    ];
    save_plan(out, plan, &notes)?;
    let md = render(out, records, &plan.meta(notes), svg_copy)?;
    println!("{md}");
    eprintln!(
        "bench: wrote {0}/results.md, {0}/results.svg, {0}/runs.jsonl",
        out.display()
    );
    if let Some(p) = svg_copy {
        eprintln!("bench: wrote {}", p.display());
    }
    Ok(())
}
