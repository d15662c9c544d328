//! The workloads: their command lines (sized to the CPU count), and the parsing of what they
//! and `perf stat -x,` print.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// hackbench -g G -f 20 --threads --pipe -l L -s 100 (the seeds' shape).
    Hackbench,
    /// perf bench sched messaging -t -p (threads, pipes).
    Messaging,
    /// perf bench sched pipe: two tasks ping-pong, the pure wakeup path.
    Pipe,
    /// scx_sis_lab wakelat with about half the CPUs busy.
    Wakelat,
    /// scx_sis_lab wakelat with one message thread and two workers (low load).
    WakelatLow,
}

pub const ALL: &[Workload] = &[
    Workload::Hackbench,
    Workload::Messaging,
    Workload::Pipe,
    Workload::Wakelat,
    Workload::WakelatLow,
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
        }
    }

    pub fn is_wakelat(self) -> bool {
        matches!(self, Workload::Wakelat | Workload::WakelatLow)
    }

    /// The external program it needs besides perf (scx_sis_lab itself for wakelat).
    pub fn tool(self) -> Option<&'static str> {
        match self {
            Workload::Hackbench => Some("hackbench"),
            _ => None,
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
    fn from_str(s: &str) -> Result<Self, String> {
        ALL.iter()
            .copied()
            .find(|w| w.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = ALL.iter().map(|w| w.name()).collect();
                format!("unknown workload '{s}' (known: {})", names.join(", "))
            })
    }
}

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

    /// Loops per sender: 600 group-loops in total (~9.5 s under TCG, 8 vCPUs, EEVDF).
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

/// The workload's command line; `lab_exe` is scx_sis_lab (for wakelat).
pub fn command(w: Workload, s: &Sizing, lab_exe: &str) -> Vec<String> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (g, l) = (s.groups().to_string(), s.loops().to_string());
    match w {
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
    }
}

pub const PERF_EVENTS: &str = "cpu-migrations,context-switches";

/// `perf stat -x, -o FILE -e EVENTS -- CMD...`
pub fn perf_stat_command(out_file: &str, cmd: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "perf",
        "stat",
        "-x,",
        "-o",
        out_file,
        "-e",
        PERF_EVENTS,
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(cmd.iter().cloned());
    v
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfCounts {
    pub migrations: Option<u64>,
    pub context_switches: Option<u64>,
}

/// The counts of `perf stat -x,` output: "value,unit,event,run time,percent,..." lines;
/// "<not counted>" / "<not supported>" give None. Comments (#) and blank lines are skipped.
pub fn parse_perf_stat(text: &str) -> PerfCounts {
    let mut c = PerfCounts::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 3 {
            continue;
        }
        let value = f[0].trim().parse::<u64>().ok().or_else(|| {
            // Some perf versions print counts as floats ("761.00").
            f[0].trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v.round() as u64)
        });
        // The event may carry modifiers: "cpu-migrations:u".
        let event = f[2].trim().split(':').next().unwrap_or("");
        match event {
            "cpu-migrations" | "migrations" => c.migrations = value,
            "context-switches" | "cs" => c.context_switches = value,
            _ => {}
        }
    }
    c
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
    fn perf_stat_csv() {
        let text = "# started on Sat Nov 30 04:10:00 2024\n\n\
                    761,,cpu-migrations,12424066187,100.00,,\n\
                    8576,,context-switches,12424066187,100.00,,\n";
        let c = parse_perf_stat(text);
        assert_eq!(c.migrations, Some(761));
        assert_eq!(c.context_switches, Some(8576));
    }

    #[test]
    fn perf_stat_modifiers_floats_and_not_counted() {
        let text = "12.00,,cpu-migrations:u,100,100.00,,\n\
                    <not counted>,,context-switches:u,0,0.00,,\n";
        let c = parse_perf_stat(text);
        assert_eq!(c.migrations, Some(12));
        assert_eq!(c.context_switches, None);
        assert_eq!(parse_perf_stat(""), PerfCounts::default());
        assert_eq!(parse_perf_stat("garbage\n1,2\n"), PerfCounts::default());
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
        let hb = command(Workload::Hackbench, &s(8, false), "/bin/scx_sis_lab").join(" ");
        assert_eq!(hb, "hackbench -g 2 -f 20 --threads --pipe -l 300 -s 100");
        let wl = command(Workload::WakelatLow, &s(8, true), "/bin/scx_sis_lab").join(" ");
        assert_eq!(
            wl,
            "/bin/scx_sis_lab wakelat --json --message-threads 1 --workers 2 --runtime 2 --warmup 0.5"
        );
        assert_eq!("wakelat-low".parse::<Workload>(), Ok(Workload::WakelatLow));
        assert!("fio".parse::<Workload>().is_err());
    }
}
