//! The workloads: their command lines (sized to the CPU count), and the parsing of what they
//! print (what `perf stat` around them prints is perf_stat.rs's). Besides the built-in ones, custom workloads: any shell command
//! (`--workload NAME='COMMAND'`), scored by its wall time or by numbers a regex pulls out of its
//! output (`--metric`), and the presets for schbench and tbench, run when their binaries are on
//! the PATH.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::under_load;
use scx_sis::verdict::Better;

/// A name that lives as long as the process: a custom workload's or metric's name, made once and
/// shared by every record that carries it, so that `Workload` stays `Copy` like the built-ins.
/// Names are interned, so reading a long runs.jsonl back adds nothing per record.
pub fn intern(s: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(n);
    n
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Workload {
    /// hackbench -g G -f 20 --threads --pipe -l L -s 100.
    Hackbench,
    /// perf bench sched messaging -t -p (threads, pipes).
    Messaging,
    /// perf bench sched pipe: two tasks ping-pong, the pure wakeup path.
    Pipe,
    /// scx_sis_lab wakelat with about half the CPUs busy.
    Wakelat,
    /// scx_sis_lab wakelat with one message thread and two workers (low load).
    WakelatLow,
    /// cyclictest's wakeup latency under a hackbench loop (under_load.rs).
    Latency,
    /// The start of the scx_sis binary under a hackbench loop.
    Spawn,
    /// Ten 50 ms sleeps in a row under a hackbench loop.
    Sleeps,
    /// A command of the user's or a preset's, by name; the plan's `Custom` says what it runs.
    Custom(&'static str),
}

pub const ALL: &[Workload] = &[
    Workload::Hackbench,
    Workload::Messaging,
    Workload::Pipe,
    Workload::Wakelat,
    Workload::WakelatLow,
    Workload::Latency,
    Workload::Spawn,
    Workload::Sleeps,
];
/// The matrix's workloads unless --workloads says otherwise.
pub const DEFAULT: &[Workload] = &[
    Workload::Hackbench,
    Workload::Messaging,
    Workload::Pipe,
    Workload::Wakelat,
];
/// A scaling run's: low load and high load.
pub const SCALING_DEFAULT: &[Workload] = &[Workload::WakelatLow, Workload::Hackbench];

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Hackbench => "hackbench",
            Workload::Messaging => "messaging",
            Workload::Pipe => "pipe",
            Workload::Wakelat => "wakelat",
            Workload::WakelatLow => "wakelat-low",
            Workload::Latency => "latency",
            Workload::Spawn => "spawn",
            Workload::Sleeps => "sleeps",
            Workload::Custom(n) => n,
        }
    }

    /// The external programs a built-in needs besides perf (scx_sis_lab itself for wakelat and
    /// the probes).
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Workload::Hackbench | Workload::Spawn | Workload::Sleeps => &["hackbench"],
            Workload::Latency => &["hackbench", "cyclictest"],
            _ => &[],
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;
    /// A built-in by its name; any other valid name is a custom workload, which the plan must
    /// define (`--workload` or a preset).
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some(w) = ALL.iter().copied().find(|w| w.name() == s) {
            return Ok(w);
        }
        if !valid_name(s) {
            return Err(format!(
                "'{s}' is not a workload name (letters, digits, '-', '_', '.')"
            ));
        }
        Ok(Workload::Custom(intern(s)))
    }
}

// As its name ("hackbench", "wakelat-low", ...), the form every runs.jsonl has, so that records
// written before custom workloads existed still read.
impl Serialize for Workload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

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

/// `NAME='COMMAND ...'` of `--workload`.
pub fn parse_custom(s: &str) -> Result<Custom> {
    let (name, command) = s
        .split_once('=')
        .with_context(|| format!("--workload '{s}': expected NAME='COMMAND ...'"))?;
    let name = name.trim();
    if !valid_name(name) || ALL.iter().any(|w| w.name() == name) {
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

/// How big a run is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// CPUs of the machine the workload runs on.
    pub cpus: u32,
    /// Short runs (about a fifth).
    pub quick: bool,
    /// Multiplier of the loop counts: 1 is sized for QEMU TCG (5-15 s a run with 8 vCPUs; the
    /// total work stays the same whatever the CPU count, since TCG runs every vCPU on one
    /// host thread); native machines are ~100x faster and want ~30.
    pub work: f64,
}

impl Sizing {
    /// Groups of 40 threads (20 senders, 20 receivers): one per 4 CPUs, so ~10 runnable
    /// threads per CPU.
    pub fn groups(&self) -> u32 {
        (self.cpus / 4).max(1)
    }

    fn scaled(&self, base: u32) -> u32 {
        let q = if self.quick { 0.2 } else { 1.0 };
        ((base as f64 * q * self.work).round() as u32).max(1)
    }

    /// Loops per sender: 600 group-loops in total, split over the groups, then scaled.
    pub fn loops(&self) -> u32 {
        self.scaled(600 / self.groups()).max(5)
    }

    pub fn pipe_loops(&self) -> u32 {
        self.scaled(40_000).max(100)
    }

    /// (message threads, workers each, runtime s, warmup s).
    pub fn wakelat(&self, low: bool) -> (u32, u32, f64, f64) {
        let (runtime, warmup) = if self.quick { (2.0, 0.5) } else { (5.0, 1.0) };
        if low {
            (1, 2, runtime, warmup)
        } else {
            // ~cpus/2 workers spinning 100 us per request: about half the machine.
            ((self.cpus / 4).max(1), 2, runtime, warmup)
        }
    }
}

/// The programs a workload's command names besides itself: scx_sis_lab (wakelat and the
/// probes) and scx_sis (what the spawn probe starts).
pub struct Exes<'a> {
    pub lab: &'a str,
    pub sched: &'a str,
}

/// The workload's command line.
pub fn command(w: Workload, s: &Sizing, exes: &Exes, customs: &[Custom]) -> Vec<String> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (g, l) = (s.groups().to_string(), s.loops().to_string());
    let lab_exe = exes.lab;
    match w {
        Workload::Latency | Workload::Spawn | Workload::Sleeps => {
            under_load::command(w, s, exes.lab, exes.sched)
        }
        Workload::Custom(name) => {
            let c = customs.iter().find(|c| c.name == name);
            v(&["sh", "-c", c.map_or("false", |c| c.command.as_str())])
        }
        Workload::Hackbench => v(&[
            "hackbench",
            "-g",
            &g,
            "-f",
            "20",
            "--threads",
            "--pipe",
            "-l",
            &l,
            "-s",
            "100",
        ]),
        Workload::Messaging => v(&[
            "perf",
            "bench",
            "sched",
            "messaging",
            "-t",
            "-p",
            "-g",
            &g,
            "-l",
            &l,
        ]),
        Workload::Pipe => v(&[
            "perf",
            "bench",
            "sched",
            "pipe",
            "-l",
            &s.pipe_loops().to_string(),
        ]),
        Workload::Wakelat | Workload::WakelatLow => {
            let (m, wk, rt, wu) = s.wakelat(w == Workload::WakelatLow);
            v(&[
                lab_exe,
                "wakelat",
                "--json",
                "--message-threads",
                &m.to_string(),
                "--workers",
                &wk.to_string(),
                "--runtime",
                &rt.to_string(),
                "--warmup",
                &wu.to_string(),
            ])
        }
    }
}

/// Roughly how long one run takes under TCG with 8 vCPUs (for the VM's timeout).
pub fn expected_secs(w: Workload, s: &Sizing) -> f64 {
    let q = if s.quick { 0.2 } else { 1.0 };
    match w {
        Workload::Hackbench | Workload::Messaging | Workload::Pipe => 10.0 * q * s.work,
        Workload::Wakelat | Workload::WakelatLow => {
            let (_, _, rt, wu) = s.wakelat(false);
            rt + wu + 1.5
        }
        Workload::Latency | Workload::Spawn | Workload::Sleeps => under_load::expected_secs(w, s),
        // Unknown: a run may take a minute before its timeout counts as a hang.
        Workload::Custom(_) => 60.0,
    }
}

/// hackbench's "Time: 1.585".
pub fn parse_hackbench(out: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Time:"))
        .and_then(|v| v.trim().parse().ok())
}

/// perf bench's " Total time: 0.744 [sec]".
pub fn parse_perf_bench(out: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Total time:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WakelatResult {
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub rps: f64,
    pub samples: u64,
}

/// `scx_sis_lab wakelat --json`: the last line that parses as its JSON object.
pub fn parse_wakelat(out: &str) -> Option<WakelatResult> {
    out.lines().rev().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l.trim()).ok()?;
        Some(WakelatResult {
            p50_us: v.get("p50_us")?.as_f64(),
            p99_us: v.get("p99_us")?.as_f64(),
            rps: v.get("requests_per_sec")?.as_f64()?,
            samples: v.get("samples")?.as_u64()?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!("mine".parse::<Workload>(), Ok(Workload::Custom("mine")));
        let w: Workload = serde_json::from_str("\"mine\"").unwrap();
        assert_eq!(
            (w, serde_json::to_string(&w).unwrap()),
            (Workload::Custom("mine"), "\"mine\"".into())
        );
        assert_eq!(
            serde_json::to_string(&Workload::WakelatLow).unwrap(),
            "\"wakelat-low\""
        );
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
    fn hackbench_time() {
        let out = "Running in threaded mode with 2 groups using 40 file descriptors each \
                   (== 80 tasks)\nEach sender will pass 300 messages of 100 bytes\nTime: 9.585\n";
        assert_eq!(parse_hackbench(out), Some(9.585));
        assert_eq!(parse_hackbench("Time: soon\n"), None);
        assert_eq!(parse_hackbench(""), None);
    }

    #[test]
    fn perf_bench_total_time() {
        let messaging = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver threads \
                         per group\n# 2 groups == 80 threads run\n\n     Total time: 1.410 [sec]\n";
        assert_eq!(parse_perf_bench(messaging), Some(1.41));
        let pipe = "# Running 'sched/pipe' benchmark:\n# Executed 5000 pipe operations between \
                    two processes\n\n     Total time: 0.716 [sec]\n\n     143.320200 usecs/op\n\
                    \n        6977 ops/sec\n";
        assert_eq!(parse_perf_bench(pipe), Some(0.716));
        assert_eq!(parse_perf_bench("nothing"), None);
    }

    #[test]
    fn wakelat_json() {
        let out = "wakelat: warmup done\n{\"p50_us\":12.5,\"p90_us\":30.0,\"p99_us\":88.1,\
                   \"p999_us\":120.0,\"max_us\":400.0,\"samples\":1000,\"requests_per_sec\":\
                   2000.5,\"message_threads\":2,\"workers\":2}\n";
        let r = parse_wakelat(out).unwrap();
        assert_eq!(
            (r.p50_us, r.p99_us, r.rps, r.samples),
            (Some(12.5), Some(88.1), 2000.5, 1000)
        );
        let empty = "{\"p50_us\":null,\"p99_us\":null,\"samples\":0,\"requests_per_sec\":0.0}";
        let r = parse_wakelat(empty).unwrap();
        assert_eq!((r.p50_us, r.p99_us, r.samples), (None, None, 0));
        assert_eq!(parse_wakelat("not json"), None);
    }

    const EXES: Exes = Exes {
        lab: "/bin/scx_sis_lab",
        sched: "/bin/scx_sis",
    };

    #[test]
    fn sizing_follows_the_cpu_count() {
        let s = |cpus, quick| Sizing {
            cpus,
            quick,
            work: 1.0,
        };
        assert_eq!((s(8, false).groups(), s(8, false).loops()), (2, 300));
        assert_eq!((s(32, false).groups(), s(32, false).loops()), (8, 75));
        assert_eq!((s(2, false).groups(), s(2, false).loops()), (1, 600));
        assert_eq!(s(8, true).loops(), 60);
        assert_eq!(s(8, false).wakelat(true).0, 1);
        assert_eq!(s(16, false).wakelat(false).0, 4);
        let hb = command(Workload::Hackbench, &s(8, false), &EXES, &[]).join(" ");
        assert_eq!(hb, "hackbench -g 2 -f 20 --threads --pipe -l 300 -s 100");
        let wl = command(Workload::WakelatLow, &s(8, true), &EXES, &[]).join(" ");
        assert_eq!(
            wl,
            "/bin/scx_sis_lab wakelat --json --message-threads 1 --workers 2 --runtime 2 --warmup 0.5"
        );
        assert_eq!("wakelat-low".parse::<Workload>(), Ok(Workload::WakelatLow));
        assert!("a b".parse::<Workload>().is_err());
        let c = parse_custom("mine=sleep 1; echo done").unwrap();
        let cmd = command(Workload::Custom("mine"), &s(8, false), &EXES, &[c]);
        assert_eq!(cmd, ["sh", "-c", "sleep 1; echo done"]);
    }
}
