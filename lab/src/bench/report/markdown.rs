//! The markdown report. It leads with the verdicts: the A/A noise floor when `--aa` ran one,
//! then each configuration against EEVDF per workload and metric, as a ratio of medians with its
//! bootstrap interval and a verdict in words. Then per workload, one row per configuration with
//! each metric's median, its ratio to EEVDF and its spread; scx_sis's internals; a scaling table
//! when several CPU counts were run; the failed runs. The numbers and verdicts are the judge
//! stage's (judge/); this module only renders them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::bench::judge::repeats::{configs_with_runs, measured, ratio, summary, Summary};
use crate::bench::judge::verdicts::{ci_status, verdicts, Row};
use crate::bench::model::metric::{self, Metric};
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::Workload;
use crate::bench::plan::meta::Meta;
use crate::bench::run::perf_stat::HW_EVENTS;
use crate::bench::workloads::{self, timed, wakelat};
use scx_sis::verdict::{CONFIDENCE, MIN_TRUSTED_RUNS};

fn interval_cells(r: &Row) -> (String, String, String) {
    match r.interval {
        None => ("–".into(), "–".into(), "–".into()),
        Some(i) => {
            let x = |v: f64| {
                if v.is_finite() {
                    format!("{v:.2}x")
                } else {
                    "∞".into()
                }
            };
            (
                x(i.ratio),
                format!("{} – {}", x(i.lo), x(i.hi)),
                format!("{}/{}", i.n, i.n_base),
            )
        }
    }
}

fn metric_label(m: &Metric) -> String {
    match m.better {
        scx_sis::verdict::Better::Lower => m.label.to_string(),
        scx_sis::verdict::Better::Higher => format!("{} (higher is better)", m.label),
    }
}

/// The noise floor and the verdicts tables, and where --until-ci stopped.
fn verdict_section(out: &mut String, records: &[RunRecord], meta: &Meta) {
    let (floor, rows) = verdicts(records, meta);
    let pct = CONFIDENCE * 100.0;
    let few = floor
        .iter()
        .chain(&rows)
        .filter_map(|r| r.interval)
        .any(|i| i.n.min(i.n_base) < MIN_TRUSTED_RUNS);
    if let Some((twin, of)) = &meta.aa {
        let _ = writeln!(
            out,
            "## Noise floor (A/A)\n\n`{twin}` is `{of}` run again as if it were another \
             configuration, interleaved with the rest: what an A/B of two identical \
             configurations shows on this machine. A ratio's {pct:.0}% interval this wide is \
             the noise any verdict below has to beat.\n"
        );
        header(
            out,
            "workload",
            &[
                "metric",
                "ratio",
                &format!("{pct:.0}% interval"),
                "runs",
                "verdict",
            ],
        );
        for r in &floor {
            let (ratio, iv, n) = interval_cells(r);
            let words = r.verdict().map_or("–".into(), |v| v.words());
            let _ = writeln!(
                out,
                "| {} | {} | {ratio} | {iv} | {n} | {words} |",
                r.workload,
                metric_label(&r.metric)
            );
        }
        out.push('\n');
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Verdicts\n\nEach configuration against `{base}`: the ratio of medians \
         (configuration / {base}) with its {pct:.0}% bootstrap interval; better or worse \
         when the interval excludes 1, else the smallest difference this noise could have \
         shown. Lower is better unless the metric says otherwise. Runs: configuration/{base}.\n",
        base = meta.baseline
    );
    header(
        out,
        "workload",
        &[
            "metric",
            "config",
            "ratio",
            &format!("{pct:.0}% interval"),
            "runs",
            "verdict",
        ],
    );
    for r in &rows {
        let (ratio, iv, n) = interval_cells(r);
        let words = r.verdict().map_or("–".into(), |v| v.words());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {ratio} | {iv} | {n} | {words} |",
            r.workload,
            metric_label(&r.metric),
            r.config
        );
    }
    out.push('\n');
    if few {
        let _ = writeln!(
            out,
            "Fewer than {MIN_TRUSTED_RUNS} runs a side: a bootstrap interval of so few is likely \
             narrower than it should be; take more repeats (or --until-ci) before trusting a \
             verdict.\n"
        );
    }
    if let Some(s) = ci_status(records, meta) {
        let rounds = records.iter().map(|r| r.repeat).max().unwrap_or(0);
        let widest = if s.widest_pct.is_finite() {
            format!("{:.1}%", s.widest_pct)
        } else {
            "unbounded".into()
        };
        let _ = if s.narrow {
            writeln!(
                out,
                "--until-ci {}: stopped after {rounds} rounds, every interval narrower than {}% \
                 (the widest {widest}, {}).\n",
                s.target_pct, s.target_pct, s.widest
            )
        } else {
            writeln!(
                out,
                "--until-ci {}: the budget ran out after {rounds} rounds (--max-repeats {}) with \
                 the widest interval still {widest} ({}).\n",
                s.target_pct,
                meta.max_repeats.unwrap_or(rounds),
                s.widest
            )
        };
    }
}

/// One line for the hardware counters no run had: instead of a column of dashes.
fn hw_note(out: &mut String, records: &[RunRecord]) {
    let ok: Vec<&RunRecord> = records.iter().filter(|r| r.ok).collect();
    let missing: Vec<&str> = HW_EVENTS
        .iter()
        .copied()
        .filter(|e| ok.iter().all(|r| r.hw_unsupported.iter().any(|u| u == e)))
        .collect();
    if ok.is_empty() || missing.is_empty() {
        return;
    }
    let what = if missing.len() == HW_EVENTS.len() {
        "Hardware counters (cycles, instructions, IPC, LLC loads and misses) are".to_string()
    } else {
        format!("The hardware counters {} are", missing.join(", "))
    };
    let _ = writeln!(
        out,
        "{what} not supported on this machine (perf stat: `<not supported>`, as under QEMU TCG, \
         which emulates no PMU), so the report has none of them.\n"
    );
}

fn num(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// "9.53 (1.03x ±2.1%)"; the baseline's own row says "base"; "–" without samples.
fn cell(s: Option<Summary>, base: Option<Summary>, m: &Metric, is_base: bool) -> String {
    let Some(s) = s else {
        return "–".into();
    };
    let cv = match s.cv {
        Some(cv) if s.n > 1 => format!(" ±{:.1}%", cv * 100.0),
        _ => String::new(),
    };
    let r = match base {
        _ if is_base => "base".to_string(),
        // Nothing to compare with (EEVDF has no select_cpu): the number alone.
        None if cv.is_empty() => return num(s.median, m.decimals),
        None => return format!("{} ({})", num(s.median, m.decimals), cv.trim()),
        Some(b) => {
            ratio(s.median, b.median).map_or_else(|| "–".to_string(), |r| format!("{r:.2}x"))
        }
    };
    format!("{} ({r}{cv})", num(s.median, m.decimals))
}

fn spread_cell(s: Option<Summary>, m: &Metric) -> String {
    match s {
        None => "–".into(),
        Some(s) if s.n == 1 => format!("{} (n=1)", num(s.median, m.decimals)),
        Some(s) => format!(
            "{}–{} (n={})",
            num(s.min, m.decimals),
            num(s.max, m.decimals),
            s.n
        ),
    }
}

fn header(out: &mut String, first: &str, cols: &[&str]) {
    let _ = writeln!(out, "| {first} | {} |", cols.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(cols.len()));
}

/// The per-workload tables (one CPU count).
fn matrix(out: &mut String, records: &[RunRecord], meta: &Meta) {
    for &w in &meta.workloads {
        let configs = configs_with_runs(meta, records, w);
        if configs.is_empty() {
            continue;
        }
        let mut cols = workloads::columns(w, &meta.custom);
        cols.extend(metric::HW.into_iter().filter(|m| measured(records, w, m)));
        let example = records
            .iter()
            .find(|r| r.workload == w)
            .map(|r| r.command.clone())
            .unwrap_or_default();
        let _ = writeln!(out, "## {w}\n\n`{example}`\n");
        let labels: Vec<&str> = cols.iter().map(|m| m.label).collect();
        header(out, "config", &labels);
        for c in &configs {
            let row: Vec<String> = cols
                .iter()
                .map(|m| {
                    let base = summary(records, &meta.baseline, w, None, m);
                    cell(
                        summary(records, c, w, None, m),
                        base,
                        m,
                        *c == meta.baseline,
                    )
                })
                .collect();
            let _ = writeln!(out, "| {c} | {} |", row.join(" | "));
        }
        out.push('\n');
        let repeated = configs.iter().any(|c| {
            records
                .iter()
                .filter(|r| r.ok && &r.config == c && r.workload == w)
                .count()
                > 1
        });
        if repeated {
            let _ = writeln!(out, "Spread (min–max over the repeats):\n");
            header(out, "config", &labels);
            for c in &configs {
                let row: Vec<String> = cols
                    .iter()
                    .map(|m| spread_cell(summary(records, c, w, None, m), m))
                    .collect();
                let _ = writeln!(out, "| {c} | {} |", row.join(" | "));
            }
            out.push('\n');
        }
        trace_overhead(out, records, meta, &configs, w);
        internals(out, records, &configs, w);
    }
}

/// Each traced configuration over its untraced twin, per column: what tracing costs.
fn trace_overhead(
    out: &mut String,
    records: &[RunRecord],
    meta: &Meta,
    configs: &[&str],
    w: Workload,
) {
    let pairs: Vec<&(String, String)> = meta
        .traced
        .iter()
        .filter(|(t, u)| configs.contains(&t.as_str()) && configs.contains(&u.as_str()))
        .collect();
    if pairs.is_empty() {
        return;
    }
    let cols = workloads::columns(w, &meta.custom);
    let _ = writeln!(
        out,
        "Tracing's cost (ratio of medians, traced over the same flags untraced):\n"
    );
    let labels: Vec<&str> = cols.iter().map(|m| m.label).collect();
    header(out, "traced / untraced", &labels);
    for (t, u) in pairs {
        let row: Vec<String> = cols
            .iter()
            .map(|m| {
                let (a, b) = (
                    summary(records, t, w, None, m),
                    summary(records, u, w, None, m),
                );
                match (a, b) {
                    (Some(a), Some(b)) => ratio(a.median, b.median)
                        .map_or_else(|| "–".to_string(), |r| format!("{r:.2}x")),
                    _ => "–".into(),
                }
            })
            .collect();
        let _ = writeln!(out, "| {t} / {u} | {} |", row.join(" | "));
    }
    out.push('\n');
}

/// Share of each placement path over all repeats, "prev_idle 41%, llc_scan 30%, ...".
fn path_shares(records: &[RunRecord], config: &str, w: Workload) -> String {
    let mut totals: std::collections::BTreeMap<&str, u64> = Default::default();
    for r in records
        .iter()
        .filter(|r| r.ok && r.config == config && r.workload == w)
    {
        for (k, v) in &r.paths {
            *totals.entry(k.as_str()).or_default() += v;
        }
    }
    let all: u64 = totals.values().sum();
    if all == 0 {
        return "–".into();
    }
    let mut v: Vec<(&str, u64)> = totals.into_iter().filter(|(_, n)| *n > 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {:.0}%", *n as f64 * 100.0 / all as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// scx_sis's own numbers for its configurations (medians).
fn internals(out: &mut String, records: &[RunRecord], configs: &[&str], w: Workload) {
    let sis: Vec<&str> = configs
        .iter()
        .copied()
        .filter(|c| {
            records
                .iter()
                .any(|r| r.config == *c && r.workload == w && r.wakeups.is_some())
        })
        .collect();
    if sis.is_empty() {
        return;
    }
    let mut cols = vec![
        &metric::WAKEUPS,
        &metric::SELECT_SIS,
        &metric::SCAN_DEPTH,
        &metric::SCAN_VISITED,
        &metric::STEALS,
        &metric::PULLS,
        &metric::IDLE_WAITING,
    ];
    // Only when a configuration traced: every other report keeps its columns.
    let traced = records
        .iter()
        .any(|r| r.workload == w && r.trace_records.unwrap_or(0) > 0);
    if traced {
        cols.extend([
            &metric::TRACE_RECORDS,
            &metric::TRACE_DROPS,
            &metric::TRACE_READER_CPU,
        ]);
    }
    let _ = writeln!(
        out,
        "scx_sis internals (medians; paths over all repeats):\n"
    );
    let mut labels: Vec<&str> = cols.iter().map(|m| m.label).collect();
    labels.push("paths");
    header(out, "config", &labels);
    for c in sis {
        let mut row: Vec<String> = cols
            .iter()
            .map(|m| {
                summary(records, c, w, None, m).map_or("–".into(), |s| num(s.median, m.decimals))
            })
            .collect();
        row.push(path_shares(records, c, w));
        let _ = writeln!(out, "| {c} | {} |", row.join(" | "));
    }
    out.push('\n');
}

/// One row per (CPU count, workload, config): select_cpu's cost and the scan.
fn scaling(out: &mut String, records: &[RunRecord], meta: &Meta, cpus: &BTreeSet<u32>) {
    let _ = writeln!(
        out,
        "## Scaling: select_cpu cost and scan depth by LLC size\n\n\
         One LLC of N CPUs per VM; low load is `wakelat-low` (1 message thread, 2 workers), high \
         load is `hackbench`.\n"
    );
    let cols = [
        &metric::SELECT_BPF,
        &metric::SELECT_SIS,
        &metric::SCAN_DEPTH,
        &metric::SCAN_VISITED,
        &wakelat::P99,
        &timed::TIME,
    ];
    let mut labels = vec!["workload", "config"];
    labels.extend(cols.iter().map(|m| m.label));
    header(out, "cpus", &labels);
    for &n in cpus {
        for &w in &meta.workloads {
            for (c, _) in &meta.configs {
                if !records
                    .iter()
                    .any(|r| r.cpus == n && r.workload == w && &r.config == c)
                {
                    continue;
                }
                let row: Vec<String> = cols
                    .iter()
                    .map(|m| {
                        summary(records, c, w, Some(n), m)
                            .map_or("–".into(), |s| num(s.median, m.decimals))
                    })
                    .collect();
                let _ = writeln!(out, "| {n} | {w} | {c} | {} |", row.join(" | "));
            }
        }
    }
    out.push('\n');
}

/// The verifier's processed instructions per program, one row per scheduler configuration (from
/// its first run that recorded them: the count depends on the binary and the kernel only).
fn verifier_table(out: &mut String, records: &[RunRecord], meta: &Meta) {
    let rows: Vec<(&str, &BTreeMap<String, u32>)> = meta
        .configs
        .iter()
        .filter_map(|(name, _)| {
            let r = records
                .iter()
                .find(|r| r.config == *name && !r.verified_insns.is_empty())?;
            Some((name.as_str(), &r.verified_insns))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let progs: BTreeSet<&str> = rows
        .iter()
        .flat_map(|(_, m)| m.keys().map(String::as_str))
        .collect();
    let _ = writeln!(
        out,
        "## Verifier: processed instructions per program\n\n\
         What veristat reports (bpf_prog_info.verified_insns): the cost of complexity, which \
         carries over to hardware better than TCG nanoseconds.\n"
    );
    let mut cols = vec!["total"];
    cols.extend(progs.iter().copied());
    header(out, "config", &cols);
    for (name, m) in rows {
        let total: u64 = m.values().map(|&v| u64::from(v)).sum();
        let mut cells = vec![total.to_string()];
        cells.extend(
            progs
                .iter()
                .map(|p| m.get(*p).map_or("–".into(), |v| v.to_string())),
        );
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
    out.push('\n');
}

pub fn markdown(records: &[RunRecord], meta: &Meta) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# scx_sis bench\n");
    for n in &meta.notes {
        let _ = writeln!(out, "- {n}");
    }
    let ok = records.iter().filter(|r| r.ok).count();
    let _ =
        writeln!(
        out,
        "- {} runs ({ok} ok), {} repeat(s), interleaved (repeat 1 of every configuration, then \
         repeat 2, ...)",
        records.len(),
        // --until-ci decides the rounds as it goes: count those that ran.
        records.iter().map(|r| r.repeat).max().unwrap_or(meta.repeats)
    );
    let _ = writeln!(
        out,
        "- cells: median (ratio of medians to {} ±coefficient of variation); \
         migrations and ctx switches: `perf stat` of the workload's tasks; select_cpu ns/call: \
         bpf_stats (run_time_ns / run_cnt of the struct_ops select_cpu program over the run); \
         BPF ns/cs: bpf_stats run_time_ns of every struct_ops program over the run, per context \
         switch of the workload; select ns (sis): scx_sis's own bpf_ktime_get_ns measurement per \
         wakeup",
        meta.baseline
    );
    out.push('\n');
    verdict_section(&mut out, records, meta);
    hw_note(&mut out, records);
    let _ = writeln!(out, "Configurations:\n");
    for (n, d) in &meta.configs {
        let _ = writeln!(out, "- `{n}`: {d}");
    }
    out.push('\n');

    let cpus: BTreeSet<u32> = records.iter().map(|r| r.cpus).collect();
    if cpus.len() > 1 {
        scaling(&mut out, records, meta, &cpus);
    } else {
        matrix(&mut out, records, meta);
    }

    verifier_table(&mut out, records, meta);

    let failed: Vec<&RunRecord> = records.iter().filter(|r| !r.ok).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## Failed runs\n");
        for r in failed {
            let _ = writeln!(
                out,
                "- {} / {} / repeat {} / {} CPUs: {}",
                r.config,
                r.workload,
                r.repeat,
                r.cpus,
                r.error.as_deref().unwrap_or("failed")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(config: &str, w: Workload, repeat: u32, time: f64, migr: u64) -> RunRecord {
        let mut r = RunRecord::new(config, "sis", w, repeat);
        r.ok = true;
        r.cpus = 8;
        r.time_s = Some(time);
        r.migrations = Some(migr);
        r.context_switches = Some(1000);
        r.command = "hackbench -g 2".into();
        r
    }

    fn meta() -> Meta {
        Meta {
            configs: vec![
                ("eevdf".into(), "EEVDF".into()),
                ("all-on".into(), "scx_sis defaults".into()),
            ],
            workloads: vec![timed::HACKBENCH],
            repeats: 3,
            notes: vec!["kernel 7.3".into()],
            traced: vec![],
            custom: vec![],
            aa: None,
            until_ci: None,
            max_repeats: None,
            baseline: "eevdf".into(),
        }
    }

    fn row<'a>(md: &'a str, config: &str) -> Vec<&'a str> {
        md.lines()
            .find(|l| l.starts_with(&format!("| {config} |")))
            .unwrap_or_else(|| panic!("no row {config} in\n{md}"))
            .split('|')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }

    #[test]
    fn table_has_medians_ratios_and_spread() {
        let mut recs = vec![];
        for (i, t) in [10.0, 12.0, 11.0].into_iter().enumerate() {
            recs.push(rec("eevdf", timed::HACKBENCH, i as u32 + 1, t, 100));
        }
        for (i, t) in [5.0, 6.0].into_iter().enumerate() {
            recs.push(rec("all-on", timed::HACKBENCH, i as u32 + 1, t, 0));
        }
        let mut failed = rec("all-on", timed::HACKBENCH, 3, 0.0, 0);
        failed.ok = false;
        failed.error = Some("scx_sis exited".into());
        recs.push(failed);
        recs[3].verified_insns = BTreeMap::from([("sis_select_cpu".to_string(), 42501)]);
        let md = markdown(&recs, &meta());
        assert!(md.contains(
            "| config | time s | migrations | ctx switches | select_cpu ns/call | BPF ns/cs |"
        ));
        let e = row(&md, "eevdf");
        assert_eq!(e[1], "11.00 (base ±9.1%)");
        assert_eq!(e[4], "–", "no select_cpu for EEVDF");
        let a = row(&md, "all-on");
        assert_eq!(a[1], "5.50 (0.50x ±12.9%)");
        // A zero baseline has no ratio; migrations 0 vs 100.
        assert_eq!(a[2], "0 (0.00x)");
        assert!(md.contains("| eevdf | 10.00–12.00 (n=3) |"), "{md}");
        assert!(md.contains("## Failed runs"));
        assert!(md.contains("| all-on | 42501 | 42501 |"), "{md}");
        assert!(
            !md.contains("\n "),
            "no line starts with a space (markdown would indent it)"
        );
        assert!(md.contains("all-on / hackbench / repeat 3 / 8 CPUs: scx_sis exited"));
    }

    #[test]
    fn traced_runs_get_an_overhead_table_and_trace_columns() {
        let mut recs = vec![rec("eevdf", timed::HACKBENCH, 1, 10.0, 100)];
        for (c, t, n) in [("all-on", 4.0, 0u64), ("trace-on", 5.0, 9000)] {
            let mut r = rec(c, timed::HACKBENCH, 1, t, 40);
            r.wakeups = Some(1000);
            r.trace_records = Some(n);
            r.trace_drops = Some(0);
            r.trace_reader_cpu_s = (n > 0).then_some(1.5);
            recs.push(r);
        }
        let mut m = meta();
        m.configs.push(("trace-on".into(), "traced".into()));
        let md = markdown(&recs, &m);
        assert!(!md.contains("Tracing's cost"), "no pairs in meta: {md}");
        m.traced = vec![("trace-on".into(), "all-on".into())];
        let md = markdown(&recs, &m);
        assert!(md.contains("Tracing's cost"), "{md}");
        let o = row(&md, "trace-on / all-on");
        assert_eq!(o[1..], ["1.25x", "1.00x", "1.00x", "–", "–"]);
        assert!(
            md.contains("| trace records | trace drops | reader CPU s | paths |"),
            "{md}"
        );
        assert_eq!(row(&md, "trace-on")[1], "5.00 (0.50x)");
        // The internals row (the last "| trace-on |" line): 9000 records, none dropped.
        let internals = md.lines().rfind(|l| l.starts_with("| trace-on |")).unwrap();
        assert!(internals.contains("| 9000 | 0 | 1.50 |"), "{internals}");
    }

    /// Five rounds of eevdf, its A/A copy and a configuration with 5x the migrations at the
    /// same time: the report opens with the noise floor, then the verdicts.
    fn five_rounds(hw: bool) -> (Vec<RunRecord>, Meta) {
        let times = [10.0, 10.4, 9.7, 10.1, 9.9];
        let mut recs = vec![];
        for (i, t) in times.into_iter().enumerate() {
            let repeat = i as u32 + 1;
            for (c, shift, migr) in [
                ("eevdf", 1.0, 100),
                ("eevdf-aa", 1.01, 101),
                ("wakeq-1", 0.99, 500),
            ] {
                let mut r = rec(c, timed::HACKBENCH, repeat, t * shift, migr + i as u64 * 3);
                if hw {
                    r.cycles = Some(1_000_000 + i as u64 * 1000);
                    r.instructions = Some(if c == "wakeq-1" { 800_000 } else { 1_200_000 });
                    r.llc_loads = Some(5000);
                    r.hw_unsupported = vec!["LLC-load-misses".into()];
                } else {
                    r.hw_unsupported = HW_EVENTS.iter().map(|e| e.to_string()).collect();
                }
                recs.push(r);
            }
        }
        let mut m = meta();
        m.configs = vec![
            ("eevdf".into(), "EEVDF".into()),
            ("eevdf-aa".into(), "EEVDF again".into()),
            ("wakeq-1".into(), "scx_sis --wakeq on".into()),
        ];
        m.aa = Some(("eevdf-aa".into(), "eevdf".into()));
        (recs, m)
    }

    #[test]
    fn the_report_leads_with_the_noise_floor_then_the_verdicts() {
        let (recs, m) = five_rounds(false);
        let md = markdown(&recs, &m);
        let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s} in\n{md}"));
        assert!(at("## Noise floor (A/A)") < at("## Verdicts"));
        assert!(at("## Verdicts") < at("Configurations:"));
        assert!(at("Configurations:") < at("## hackbench"));
        let verdict = |prefix: &str| -> Vec<&str> {
            md.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in\n{md}"))
                .split('|')
                .map(str::trim)
                .collect()
        };
        let v = verdict("| hackbench | migrations | wakeq-1 |");
        assert_eq!(v[7], "worse", "{v:?}");
        let lo: f64 = v[5]
            .split(' ')
            .next()
            .unwrap()
            .trim_end_matches('x')
            .parse()
            .unwrap();
        assert!(lo > 1.0, "the interval excludes 1: {v:?}");
        let v = verdict("| hackbench | time s | wakeq-1 |");
        assert!(
            v[7].starts_with("no difference detectable at this noise (smallest detectable ±"),
            "{v:?}"
        );
        // The A/A copy is judged in the noise floor only, against its original.
        assert!(!md.contains("| hackbench | time s | eevdf-aa |"), "{md}");
        let floor = verdict("| hackbench | time s |");
        assert!(
            floor[6].starts_with("no difference detectable"),
            "{floor:?}"
        );
        assert_eq!(floor[5], "5/5");
        // Under a PMU without hardware counters: one sentence, no column.
        assert_eq!(
            md.matches("not supported on this machine").count(),
            1,
            "{md}"
        );
        assert!(!md.contains("| cycles") && !md.contains("| IPC"), "{md}");
        assert!(!md.contains("Fewer than"), "five runs a side are enough");
    }

    #[test]
    fn a_named_baseline_is_what_every_verdict_and_ratio_is_against() {
        let (recs, mut m) = five_rounds(false);
        m.baseline = "wakeq-1".into();
        let md = markdown(&recs, &m);
        assert!(md.contains("Each configuration against `wakeq-1`"), "{md}");
        // EEVDF's migrations are a fifth of the wakequeue's: better, against the new baseline.
        let row = md
            .lines()
            .find(|l| l.starts_with("| hackbench | migrations | eevdf |"))
            .unwrap_or_else(|| panic!("no eevdf verdict in\n{md}"));
        assert!(row.ends_with("| better |"), "{row}");
        assert!(!md.contains("| hackbench | migrations | wakeq-1 |"), "{md}");
        // The tables' ratios too: the baseline's own cell says base.
        assert!(md.contains("| wakeq-1 | 9.90 (base"), "{md}");
        // The noise floor still compares the A/A copy with its original.
        assert!(md.contains("`eevdf-aa` is `eevdf` run again"), "{md}");
    }

    #[test]
    fn hardware_counters_get_columns_and_verdicts_where_counted() {
        let (recs, m) = five_rounds(true);
        let md = markdown(&recs, &m);
        assert!(
            md.contains("| cycles | instructions | IPC | LLC loads |"),
            "{md}"
        );
        assert!(
            !md.contains("| LLC misses"),
            "never counted: no column\n{md}"
        );
        assert!(
            md.contains("The hardware counters LLC-load-misses are not supported"),
            "{md}"
        );
        let ipc = md
            .lines()
            .find(|l| l.starts_with("| hackbench | IPC (higher is better) | wakeq-1 |"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(
            ipc.ends_with("| worse |"),
            "fewer instructions per cycle: {ipc}"
        );
    }

    #[test]
    fn a_custom_workload_is_judged_by_its_named_metric() {
        use crate::bench::workloads::custom::parse_metric;
        use crate::bench::workloads::parse_custom;
        let mut c = parse_custom("pipeops=perf bench sched pipe -l 1000").unwrap();
        c.metrics.push(
            parse_metric("pipeops:ops/s:higher=([0-9]+) ops/sec")
                .unwrap()
                .1,
        );
        let w = Workload::named("pipeops");
        let mut recs = vec![];
        for repeat in 1..=3 {
            for (config, ops) in [("eevdf", 1000.0), ("all-on", 2000.0)] {
                let mut r = rec(config, w, repeat, 2.0 + repeat as f64 / 10.0, 10);
                r.metrics.insert("ops/s".into(), ops + repeat as f64);
                r.command = c.command.clone();
                recs.push(r);
            }
        }
        let mut m = meta();
        m.workloads = vec![w];
        m.custom = vec![c];
        let md = markdown(&recs, &m);
        assert!(
            md.contains("## pipeops\n\n`perf bench sched pipe -l 1000`"),
            "{md}"
        );
        assert!(
            md.contains("| config | wall s | ops/s | migrations |"),
            "{md}"
        );
        let row = md
            .lines()
            .find(|l| l.starts_with("| pipeops | ops/s (higher is better) | all-on | 2.00x |"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(row.ends_with("| better |"), "{row}");
        assert!(md.contains("Fewer than 5 runs a side"), "{md}");
        assert!(
            !md.contains("| pipeops | wall s |"),
            "a named metric replaces the wall time's verdict"
        );
    }

    #[test]
    fn until_ci_says_why_it_stopped() {
        let (recs, mut m) = five_rounds(false);
        m.until_ci = Some(1000.0);
        m.max_repeats = Some(5);
        let md = markdown(&recs, &m);
        assert!(
            md.contains(
                "--until-ci 1000: stopped after 5 rounds, every interval narrower than 1000%"
            ),
            "{md}"
        );
        m.until_ci = Some(0.01);
        let md = markdown(&recs, &m);
        assert!(md.contains("--until-ci 0.01: the budget ran out after 5 rounds (--max-repeats 5) with the widest interval still"), "{md}");
    }

    #[test]
    fn zero_baseline_gives_no_ratio() {
        let recs = vec![
            rec("eevdf", timed::HACKBENCH, 1, 1.0, 0),
            rec("all-on", timed::HACKBENCH, 1, 1.0, 5),
        ];
        let md = markdown(&recs, &meta());
        assert_eq!(row(&md, "all-on")[2], "5 (–)");
        assert_eq!(row(&md, "eevdf")[2], "0 (base)");
    }

    #[test]
    fn several_cpu_counts_make_a_scaling_table() {
        let mut recs = vec![];
        for cpus in [4, 16] {
            let mut r = rec("all-on", timed::HACKBENCH, 1, 2.0, 1);
            r.cpus = cpus;
            r.select_ns_bpf = Some(cpus as f64 * 100.0);
            r.scan_depth = Some(cpus as f64 / 2.0);
            recs.push(r);
        }
        let md = markdown(&recs, &meta());
        assert!(md.contains("## Scaling"), "{md}");
        assert!(
            md.contains("| 4 | hackbench | all-on | 400 | – | 2.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| 16 | hackbench | all-on | 1600 | – | 8.0 |"),
            "{md}"
        );
    }
}
