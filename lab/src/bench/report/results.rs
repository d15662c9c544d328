//! results.md and results.svg: the report and the plot rendered from the records into the output
//! directory, at the end of a bench or again (`--render`) from what it saved there.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use scx_sis_lab::elapsed::hms;

use super::{markdown, plot};
use crate::bench::model::run_record::RunRecord;
use crate::bench::plan::meta::Meta;
use crate::bench::plan::Plan;
use crate::bench::record::saved::{self, save_plan};

/// Write results.md and results.svg from the records, and the SVG to `svg_copy` too; returns
/// the markdown.
fn render(
    out: &Path,
    records: &[RunRecord],
    meta: &Meta,
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

pub fn rerender(dir: &Path, svg_copy: Option<&Path>) -> Result<()> {
    let (saved, records) = saved::load(dir)?;
    println!(
        "{}",
        render(dir, &records, &saved.plan.meta(saved.notes), svg_copy)?
    );
    Ok(())
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
