//! Custom workloads: any shell command (`--workload NAME='COMMAND'`), run as `sh -c COMMAND`
//! under perf stat like the built-ins and scored by its wall time or by numbers a regex pulls
//! out of its output (`--metric`); and the presets for schbench and tbench, run when their
//! binaries are on the PATH. Not a `Family`: what a custom workload runs is the plan's, so each
//! function here takes the plan's definitions.

use anyhow::{bail, Context, Result};
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{intern, valid_name, Sizing, Workload};
use scx_sis::verdict::Better;

/// A number pulled out of a custom workload's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedMetric {
    /// Its column in the report and its key in the record's `metrics`.
    pub label: String,
    /// The last match in the output (stdout, then stderr) counts: its first group if it has one,
    /// else the whole match.
    pub regex: String,
    pub better: Better,
}

/// A custom workload: a shell command, run as `sh -c COMMAND` under perf stat like the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Custom {
    pub name: String,
    pub command: String,
    /// Its scores; without any, its wall time is.
    #[serde(default)]
    pub metrics: Vec<NamedMetric>,
    /// Programs it needs on the PATH (a preset's), checked before anything runs.
    #[serde(default)]
    pub tools: Vec<String>,
}

/// The label of a metric named without one.
pub const DEFAULT_METRIC_LABEL: &str = "score";

/// A custom workload's score without `--metric`: its wall time.
pub const WALL: Metric = Metric::field("wall s", 2, |r| r.time_s, Better::Lower);

/// Unknown: a run may take a minute before its timeout counts as a hang.
pub const EXPECTED_SECS: f64 = 60.0;

/// `NAME='COMMAND ...'` of `--workload`; `builtin` says whether a name is a built-in's.
pub fn parse_custom(s: &str, builtin: impl Fn(&str) -> bool) -> Result<Custom> {
    let (name, command) = s
        .split_once('=')
        .with_context(|| format!("--workload '{s}': expected NAME='COMMAND ...'"))?;
    let name = name.trim();
    if !valid_name(name) || builtin(name) {
        bail!("--workload '{s}': the name must be letters, digits, '-', '_' or '.', and not a built-in workload's");
    }
    if command.trim().is_empty() {
        bail!("--workload {name}: no command");
    }
    Ok(Custom {
        name: name.to_string(),
        command: command.trim().to_string(),
        metrics: vec![],
        tools: vec![],
    })
}

/// `NAME[:LABEL][:higher|:lower]=REGEX` of `--metric`: (workload name, the metric).
pub fn parse_metric(s: &str) -> Result<(String, NamedMetric)> {
    let (left, regex) = s.split_once('=').with_context(|| {
        format!("--metric '{s}': expected NAME[:LABEL][:higher|:lower]='REGEX'")
    })?;
    let mut parts: Vec<&str> = left.split(':').map(str::trim).collect();
    let better = match parts.last() {
        Some(&"higher") if parts.len() > 1 => Better::Higher,
        Some(&"lower") if parts.len() > 1 => Better::Lower,
        _ => Better::Lower,
    };
    if parts.len() > 1 && matches!(parts.last(), Some(&"higher" | &"lower")) {
        parts.pop();
    }
    let (name, label) = match parts[..] {
        [name] => (name, DEFAULT_METRIC_LABEL),
        [name, label] if !label.is_empty() => (name, label),
        _ => bail!("--metric '{s}': expected NAME[:LABEL][:higher|:lower]='REGEX'"),
    };
    Regex::new(regex).with_context(|| format!("--metric {name}: not a regex"))?;
    Ok((
        name.to_string(),
        NamedMetric {
            label: label.to_string(),
            regex: regex.to_string(),
            better,
        },
    ))
}

/// The value `m` finds in `out`: its last match's first group (or the whole match).
pub fn extract(m: &NamedMetric, out: &str) -> Option<f64> {
    let re = Regex::new(&m.regex).ok()?;
    scx_sis::ab::user_metric::last_number(&re, out)
}

/// The presets: schbench (Chris Mason's message/worker wakeup benchmark, which prints to
/// stderr) and tbench (dbench's network half, against its tbench_srv), sized like wakelat.
/// They are used only when their programs are on the PATH; the bench ships neither.
pub fn preset(name: &str, s: &Sizing) -> Option<Custom> {
    let (m, workers, runtime, _) = s.wakelat(false);
    let rt = (runtime as u64).max(1);
    let metric = |label: &str, regex: &str, better| NamedMetric {
        label: label.into(),
        regex: regex.into(),
        better,
    };
    match name {
        "schbench" => Some(Custom {
            name: name.into(),
            command: format!("schbench -m {m} -t {workers} -r {rt}"),
            metrics: vec![
                metric(
                    "wakeup p99 us",
                    r"(?s)Wakeup Latencies percentiles.*?\* 99\.0th: *([0-9]+)",
                    Better::Lower,
                ),
                metric(
                    "requests/s",
                    r"(?s)RPS percentiles.*?\* 50\.0th: *([0-9]+)",
                    Better::Higher,
                ),
            ],
            tools: vec!["schbench".into()],
        }),
        "tbench" => Some(Custom {
            name: name.into(),
            command: format!(
                "tbench_srv >/dev/null 2>&1 & srv=$!; sleep 1; tbench -t {rt} {} 127.0.0.1; \
                 rc=$?; kill $srv; exit $rc",
                s.cpus
            ),
            metrics: vec![metric(
                "MB/s",
                r"Throughput ([0-9.]+) MB/sec",
                Better::Higher,
            )],
            tools: vec!["tbench".into(), "tbench_srv".into()],
        }),
        _ => None,
    }
}

pub const PRESETS: &[&str] = &["schbench", "tbench"];

/// The plan's custom workloads, the presets among them sized for this machine.
pub fn sized(customs: &[Custom], sizing: &Sizing) -> Vec<Custom> {
    customs
        .iter()
        .map(|c| {
            preset(&c.name, sizing)
                .filter(|_| !c.tools.is_empty())
                .unwrap_or_else(|| c.clone())
        })
        .collect()
}

fn find(w: Workload, customs: &[Custom]) -> Option<&Custom> {
    customs.iter().find(|c| c.name == w.name())
}

/// `sh -c COMMAND`; a workload the plan does not define runs `false`.
pub fn command(w: Workload, customs: &[Custom]) -> Vec<String> {
    let c = find(w, customs);
    ["sh", "-c", c.map_or("false", |c| c.command.as_str())]
        .map(String::from)
        .to_vec()
}

/// Its score is its wall time unless it names metrics (then both are kept); each metric is
/// read from stdout and stderr together.
pub fn parse(r: &mut RunRecord, customs: &[Custom], stdout: &str, stderr: &str) -> Result<()> {
    r.time_s = Some(r.wall_s);
    let name = r.workload.name();
    let text = format!("{stdout}\n{stderr}");
    for m in find(r.workload, customs).map_or(&[][..], |c| &c.metrics[..]) {
        let v = extract(m, &text).with_context(|| {
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            format!(
                "{name}: no number for --metric {}={} in its output: {}",
                m.label,
                m.regex,
                lines[lines.len().saturating_sub(3)..].join(" | ")
            )
        })?;
        r.metrics.insert(m.label.clone(), v);
    }
    Ok(())
}

/// Its named metrics, else its wall time.
pub fn scores(w: Workload, customs: &[Custom]) -> Vec<Metric> {
    let named: Vec<Metric> = find(w, customs)
        .map(|c| {
            c.metrics
                .iter()
                .map(|m| Metric::named(intern(&m.label), 2, m.better))
                .collect()
        })
        .unwrap_or_default();
    if named.is_empty() {
        vec![WALL]
    } else {
        named
    }
}

/// Its wall time, then its named metrics.
pub fn columns(w: Workload, customs: &[Custom]) -> Vec<Metric> {
    let mut v = scores(w, customs);
    if v[0].label != WALL.label {
        v.insert(0, WALL);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_custom(s: &str) -> Result<Custom> {
        super::parse_custom(s, |n| n == "hackbench")
    }

    #[test]
    fn custom_workloads_and_their_metrics() {
        let c = parse_custom("pipeops=perf bench sched pipe -l 1000").unwrap();
        assert_eq!(
            (c.name.as_str(), c.command.as_str()),
            ("pipeops", "perf bench sched pipe -l 1000")
        );
        assert!(parse_custom("hackbench=true").is_err(), "a built-in's name");
        assert!(parse_custom("x=").is_err());
        assert!(parse_custom("no command").is_err());
        let (w, m) = parse_metric("pipeops:ops/s:higher=([0-9]+) ops/sec").unwrap();
        assert_eq!(
            (w.as_str(), m.label.as_str(), m.better),
            ("pipeops", "ops/s", Better::Higher)
        );
        let (_, m) = parse_metric("x=took ([0-9.]+) s").unwrap();
        assert_eq!(
            (m.label.as_str(), m.better),
            (DEFAULT_METRIC_LABEL, Better::Lower)
        );
        let (_, m) = parse_metric("x:higher=a=(\\d+)").unwrap();
        assert_eq!(
            (m.label.as_str(), m.better, m.regex.as_str()),
            ("score", Better::Higher, "a=(\\d+)")
        );
        assert!(parse_metric("x=(unclosed").is_err());
        assert!(parse_metric("x:a:b:c=1").is_err());
        // The last match counts; a group if there is one; thousands separators go.
        let out = "ops 5\n     5,977 ops/sec\nlater: 6,100 ops/sec\n";
        let (_, m) = parse_metric("p:ops/s:higher=([0-9,]+) ops/sec").unwrap();
        assert_eq!(extract(&m, out), Some(6100.0));
        let (_, whole) = parse_metric("p=[0-9]+").unwrap();
        assert_eq!(extract(&whole, "a 1 b 22"), Some(22.0));
        assert_eq!(extract(&m, "nothing"), None);
    }

    #[test]
    fn presets_read_schbench_and_tbench() {
        let s = Sizing {
            cpus: 8,
            quick: false,
            work: 1.0,
        };
        let sch = preset("schbench", &s).unwrap();
        assert_eq!(sch.command, "schbench -m 2 -t 2 -r 5");
        // Two periodic reports, then the final one: the last block's numbers count.
        let out = "Wakeup Latencies percentiles (usec) runtime 2 (s) (1 total samples)\n\
                   \t* 99.0th: 999        (1 samples)\n\
                   RPS percentiles (requests) runtime 2 (s) (3 total samples)\n\
                   \t* 50.0th: 1        (3 samples)\n\
                   Wakeup Latencies percentiles (usec) runtime 5 (s) (41567 total samples)\n\
                   \t  50.0th: 11         (10767 samples)\n\
                   \t* 99.0th: 36         (3347 samples)\n\
                   \t  min=1, max=731\n\
                   Request Latencies percentiles (usec) runtime 5 (s) (4156 total samples)\n\
                   \t* 99.0th: 15568      (3347 samples)\n\
                   RPS percentiles (requests) runtime 5 (s) (5 total samples)\n\
                   \t  20.0th: 1443000    (31 samples)\n\
                   \t* 50.0th: 1443840    (31 samples)\n";
        let got: Vec<Option<f64>> = sch.metrics.iter().map(|m| extract(m, out)).collect();
        assert_eq!(got, [Some(36.0), Some(1443840.0)]);
        let tb = preset("tbench", &s).unwrap();
        assert!(
            tb.command.contains("tbench -t 5 8 127.0.0.1"),
            "{}",
            tb.command
        );
        let out = "Throughput 1234.56 MB/sec  8 clients  8 procs  max_latency=3.2 ms\n";
        assert_eq!(extract(&tb.metrics[0], out), Some(1234.56));
        assert_eq!(tb.metrics[0].better, Better::Higher);
        assert!(preset("fio", &s).is_none());
    }

    #[test]
    fn a_custom_workload_runs_its_command_under_sh() {
        let c = parse_custom("mine=sleep 1; echo done").unwrap();
        let mine = Workload::named("mine");
        assert_eq!(command(mine, &[c]), ["sh", "-c", "sleep 1; echo done"]);
        assert_eq!(command(mine, &[]), ["sh", "-c", "false"]);
    }
}
