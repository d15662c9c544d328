//! `scx_sis_lab probe`: what a woken or a new task waits while the machine is loaded. A
//! background command (the bench gives a hackbench) runs again and again from before the probe
//! until after it; the probe is cyclictest's wakeup latency (`latency`), the wall time of a
//! fork+exec of a program (`spawn`) or a row of short sleeps (`sleeps`). It prints one JSON
//! object (ProbeResult) on stdout.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// cyclictest, one SCHED_OTHER thread at a 10 ms period: wakeup latency avg, p99, max.
    Latency,
    /// Start a program (`EXE --version`) COUNT times in a row: the wall time of each.
    Spawn,
    /// COUNT sleeps of --sleep-ms in a row: their wall time.
    Sleeps,
}

#[derive(Debug, Clone, Args)]
pub struct ProbeOpts {
    #[arg(value_enum)]
    pub kind: Kind,

    /// The load: a command (split on whitespace) started before the probe, run again each time
    /// it ends, and killed after the probe; without it the probe runs on a quiet machine.
    #[arg(long, value_name = "COMMAND")]
    pub background: Option<String>,

    /// Seconds the background runs before the probe starts.
    #[arg(long, default_value_t = 1.0, value_parser = parse_secs)]
    pub warmup: f64,

    /// latency: cyclictest's loops [default: 300]; spawn: starts [default: 5]; sleeps: sleeps
    /// [default: 10].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: Option<u32>,

    /// sleeps: the length of each sleep.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub sleep_ms: u64,

    /// spawn: the program to start, with --version [default: scx_sis beside this binary].
    #[arg(long, value_name = "PATH")]
    pub exe: Option<PathBuf>,
}

fn parse_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if (0.0..=600.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is outside [0, 600]"))
    }
}

/// cyclictest's period: the issue's 10 ms, long enough that under TCG a wakeup's latency
/// (tens of ms under load) is not swallowed by the next period's.
pub const CYCLICTEST_INTERVAL_US: u32 = 10_000;
/// cyclictest's histogram, in 1 us buckets: latencies above it count only as overflows. 200 ms
/// holds the worst wakeups seen under QEMU TCG with hackbench (about 130 ms); the text dump of
/// the buckets, which cyclictest writes whatever the output, grows with it, so no larger.
pub const HISTOGRAM_US: u32 = 200_000;

/// What `probe` prints: the probe's numbers (those of its kind) and the background's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub probe: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// spawn: the wall time of each start, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spawn_s: Vec<f64>,
    /// sleeps: the wall time of the whole row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleeps_s: Option<f64>,
    /// The background's runs that ended (successfully) while it ran, and for how long it ran.
    pub background_runs: u64,
    pub background_s: f64,
}

/// cyclictest's wakeup latencies, in us.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub samples: u64,
    pub avg_us: f64,
    /// None when the 99th percentile is among the overflows (above the histogram) and not the
    /// maximum itself: its value is unknown.
    pub p99_us: Option<f64>,
    pub max_us: f64,
    /// Samples above the histogram's range.
    pub overflows: u64,
}

/// The median of `v` (the mean of the two middle values for an even count).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// cyclictest's `--json` file for one thread (thread "0"): its histogram (bucket in us to
/// count, only the buckets that are not empty), cycles, avg and max. The p99 is the
/// nearest-rank one: the ceil(0.99 n)-th smallest sample. Samples above the histogram's range
/// are in no bucket (cycles minus the buckets' sum): a p99 among them is the maximum if it is
/// the last sample, else unknown.
pub fn parse_cyclictest_json(text: &str) -> Result<Latency> {
    let v: serde_json::Value =
        serde_json::from_str(text).context("cyclictest's --json file is not JSON")?;
    let t = v
        .get("thread")
        .and_then(|t| t.get("0"))
        .context("cyclictest's JSON has no thread 0")?;
    let num = |k: &str| {
        t.get(k)
            .and_then(|x| x.as_f64())
            .with_context(|| format!("cyclictest's JSON has no number '{k}' for thread 0"))
    };
    let cycles = num("cycles")? as u64;
    let (avg, max) = (num("avg")?, num("max")?);
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    if let Some(h) = t.get("histogram").and_then(|h| h.as_object()) {
        for (k, c) in h {
            let us: u64 = k
                .trim()
                .parse()
                .with_context(|| format!("cyclictest's histogram bucket '{k}' is not a number"))?;
            let c = c
                .as_u64()
                .with_context(|| format!("cyclictest's histogram count for {k} us"))?;
            buckets.push((us, c));
        }
    } else {
        bail!("cyclictest's JSON has no histogram (run it with -h)");
    }
    if cycles == 0 {
        bail!("cyclictest measured no cycle");
    }
    buckets.sort();
    let in_hist: u64 = buckets.iter().map(|b| b.1).sum();
    let overflows = cycles.saturating_sub(in_hist);
    let rank = (cycles * 99).div_ceil(100);
    let mut seen = 0;
    let mut p99 = None;
    for (us, c) in &buckets {
        seen += c;
        if seen >= rank {
            p99 = Some(*us as f64);
            break;
        }
    }
    if p99.is_none() && rank == cycles {
        p99 = Some(max);
    }
    Ok(Latency {
        samples: cycles,
        avg_us: avg,
        p99_us: p99,
        max_us: max,
        overflows,
    })
}

/// The background: `cmd` run again and again in its own process group until stopped.
struct Background {
    stop: Arc<AtomicBool>,
    pgid: Arc<std::sync::atomic::AtomicI32>,
    thread: thread::JoinHandle<Result<u64>>,
    t0: Instant,
}

impl Background {
    fn start(cmd: &str) -> Result<Background> {
        let words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            bail!("--background: an empty command");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let pgid = Arc::new(std::sync::atomic::AtomicI32::new(0));
        // The first start fails here, with the reason, rather than as a quiet count of 0 runs.
        let first = spawn_in_group(&words)?;
        let (s, g) = (stop.clone(), pgid.clone());
        let thread = thread::spawn(move || -> Result<u64> {
            let mut runs = 0;
            let mut child = first;
            loop {
                g.store(child.id() as i32, Ordering::SeqCst);
                let st = child.wait()?;
                if s.load(Ordering::SeqCst) {
                    return Ok(runs);
                }
                if !st.success() {
                    bail!("--background '{}' exited with {st}", words.join(" "));
                }
                runs += 1;
                child = spawn_in_group(&words)?;
            }
        });
        Ok(Background {
            stop,
            pgid,
            thread,
            t0: Instant::now(),
        })
    }

    /// Kill the run in progress (its whole group: hackbench's workers too); (runs that ended,
    /// seconds it ran).
    fn stop(self) -> Result<(u64, f64)> {
        self.stop.store(true, Ordering::SeqCst);
        let secs = self.t0.elapsed().as_secs_f64();
        // The loop stores each new run's group before waiting on it, and checks the flag after
        // each wait; killing until the thread ends covers a run started between the two.
        while !self.thread.is_finished() {
            let g = self.pgid.load(Ordering::SeqCst);
            if g > 0 {
                // SAFETY: the process group this probe created for its background run.
                unsafe { libc::kill(-g, libc::SIGKILL) };
            }
            thread::sleep(Duration::from_millis(20));
        }
        let runs = self
            .thread
            .join()
            .map_err(|_| anyhow::anyhow!("the background thread panicked"))??;
        Ok((runs, secs))
    }
}

fn spawn_in_group(words: &[String]) -> Result<std::process::Child> {
    Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .with_context(|| format!("--background: failed to start {}", words[0]))
}

fn run_latency(loops: u32) -> Result<Latency> {
    let json = std::env::temp_dir().join(format!(
        "scx_sis_lab-cyclictest-{}.json",
        std::process::id()
    ));
    let _ = fs::remove_file(&json);
    let out = Command::new("cyclictest")
        .args(cyclictest_args(loops, &json))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("failed to start cyclictest (rt-tests)")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "cyclictest exited with {}: {}",
            out.status,
            err.lines().last().unwrap_or("")
        );
    }
    let text = fs::read_to_string(&json)
        .with_context(|| format!("cyclictest wrote no {}", json.display()))?;
    let _ = fs::remove_file(&json);
    parse_cyclictest_json(&text)
}

/// cyclictest's arguments: one thread, no -p (SCHED_OTHER, as an ordinary woken task), memory
/// locked, quiet, the histogram dumped to nowhere and read back from the JSON file.
pub fn cyclictest_args(loops: u32, json: &Path) -> Vec<String> {
    vec![
        "-m".into(),
        "-q".into(),
        "-t".into(),
        "1".into(),
        "-i".into(),
        CYCLICTEST_INTERVAL_US.to_string(),
        "-l".into(),
        loops.to_string(),
        "-h".into(),
        HISTOGRAM_US.to_string(),
        "--histfile=/dev/null".into(),
        format!("--json={}", json.display()),
    ]
}

fn run_spawn(exe: &Path, count: u32) -> Result<Vec<f64>> {
    let mut times = Vec::new();
    for _ in 0..count {
        let t0 = Instant::now();
        let st = Command::new(exe)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("failed to start {}", exe.display()))?;
        let dt = t0.elapsed().as_secs_f64();
        if !st.success() {
            bail!("{} --version exited with {st}", exe.display());
        }
        times.push(dt);
    }
    Ok(times)
}

fn run_sleeps(count: u32, ms: u64) -> f64 {
    let t0 = Instant::now();
    for _ in 0..count {
        thread::sleep(Duration::from_millis(ms));
    }
    t0.elapsed().as_secs_f64()
}

fn default_exe() -> Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find the scx_sis_lab binary itself")?;
    Ok(me.with_file_name("scx_sis"))
}

pub fn run(opts: &ProbeOpts) -> Result<()> {
    let exe = match (&opts.exe, opts.kind) {
        (Some(e), _) => e.clone(),
        (None, Kind::Spawn) => default_exe()?,
        (None, _) => PathBuf::new(),
    };
    if opts.kind == Kind::Spawn && !exe.is_file() {
        bail!("--exe {}: no such file", exe.display());
    }
    let bg = match &opts.background {
        Some(cmd) => {
            let bg = Background::start(cmd)?;
            thread::sleep(Duration::from_secs_f64(opts.warmup));
            Some(bg)
        }
        None => None,
    };
    let mut r = ProbeResult {
        probe: format!("{:?}", opts.kind).to_lowercase(),
        ..Default::default()
    };
    let measured = match opts.kind {
        Kind::Latency => run_latency(opts.count.unwrap_or(300)).map(|l| r.latency = Some(l)),
        Kind::Spawn => run_spawn(&exe, opts.count.unwrap_or(5)).map(|t| r.spawn_s = t),
        Kind::Sleeps => {
            r.sleeps_s = Some(run_sleeps(opts.count.unwrap_or(10), opts.sleep_ms));
            Ok(())
        }
    };
    // Stopped whatever the probe gave, so that no hackbench outlives it.
    if let Some(bg) = bg {
        let (runs, secs) = bg.stop()?;
        (r.background_runs, r.background_s) = (runs, secs);
    }
    measured?;
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cyclictest -m -q -i 1000 -l 50 -t 1 -h 400 --json=...` (rt-tests 2.4) on a loaded
    /// host: 31 samples in the histogram, 19 above its 400 us (the largest 4477 us).
    const REAL: &str = r##"{
  "file_version": 1,
  "cmdline:": "cyclictest -m -q -i 1000 -l 50 -t 1 -h 400 --json=/tmp/ct.json",
  "rt_test_version:": "2.40",
  "start_time": "Sun, 06 Dec 2026 02:21:21 +0000",
  "end_time": "Sun, 06 Dec 2026 02:21:21 +0000",
  "return_code": 0,
  "sysinfo": {
    "sysname": "Linux",
    "nodename": "vm",
    "release": "6.18.44-fc-v1252",
    "version": "#1 SMP PREEMPT_DYNAMIC @0",
    "machine": "x86_64",
    "realtime": 0
  },
  "num_threads": 1,
  "resolution_in_ns": 0,
  "thread": {
    "0": {
      "histogram": {
        "73": 1,
        "74": 1,
        "76": 1,
        "79": 1,
        "80": 1,
        "81": 1,
        "82": 3,
        "83": 2,
        "84": 1,
        "85": 4,
        "86": 1,
        "87": 4,
        "88": 1,
        "89": 1,
        "90": 1,
        "91": 1,
        "94": 1,
        "102": 1,
        "109": 1,
        "180": 1,
        "224": 1,
        "237": 1
      },
      "cycles": 50,
      "min": 73,
      "max": 4477,
      "avg": 909.64,
      "cpu": 0,
      "node": 0
    }
  }
}"##;

    fn hist(entries: &[(u64, u64)], cycles: u64, max: u64) -> String {
        let h: Vec<String> = entries
            .iter()
            .map(|(k, c)| format!("\"{k}\": {c}"))
            .collect();
        format!(
            r#"{{"thread": {{"0": {{"histogram": {{{}}}, "cycles": {cycles}, "min": 1, "max": {max}, "avg": 10.5}}}}}}"#,
            h.join(", ")
        )
    }

    #[test]
    fn cyclictest_json_gives_avg_p99_and_max() {
        // This file's histogram holds 31 of the 50 cycles: the other 19 (cycles minus the
        // buckets' sum) were above its 400 us.
        let l = parse_cyclictest_json(REAL).unwrap();
        assert_eq!((l.samples, l.avg_us, l.max_us), (50, 909.64, 4477.0));
        assert_eq!(l.overflows, 19);
        // Rank 50 of 50: the maximum, though above the histogram.
        assert_eq!(l.p99_us, Some(4477.0));
    }

    #[test]
    fn p99_is_the_nearest_rank_sample() {
        // 300 samples: the p99 is the 297th smallest. Buckets are sorted by value, not as
        // the JSON lists them (its keys are strings).
        let l = parse_cyclictest_json(&hist(&[(900, 2), (10, 290), (500, 5), (80, 3)], 300, 950))
            .unwrap();
        assert_eq!((l.p99_us, l.overflows), (Some(500.0), 0));
        let l = parse_cyclictest_json(&hist(&[(10, 296), (20, 1), (30, 3)], 300, 30)).unwrap();
        assert_eq!(l.p99_us, Some(20.0));
        // Above the histogram: unknown, unless it is the maximum itself.
        let l = parse_cyclictest_json(&hist(&[(10, 290)], 300, 250_000)).unwrap();
        assert_eq!((l.p99_us, l.overflows, l.max_us), (None, 10, 250_000.0));
        let l = parse_cyclictest_json(&hist(&[(10, 99)], 100, 300_000)).unwrap();
        assert_eq!(l.p99_us, Some(10.0), "rank 99 of 100 is in the histogram");
        let l = parse_cyclictest_json(&hist(&[(10, 49)], 50, 300_000)).unwrap();
        assert_eq!(l.p99_us, Some(300_000.0), "rank 50 of 50 is the maximum");
    }

    #[test]
    fn broken_cyclictest_json_is_an_error_that_says_what() {
        let e = |t: &str| parse_cyclictest_json(t).unwrap_err().to_string();
        assert!(e("").contains("not JSON"));
        assert!(e(r#"{"thread": {}}"#).contains("no thread 0"));
        assert!(e(r#"{"thread": {"0": {"cycles": 3, "avg": 1}}}"#).contains("'max'"));
        assert!(e(r#"{"thread": {"0": {"cycles": 3, "avg": 1, "max": 2}}}"#).contains("-h"));
        assert!(e(&hist(&[], 0, 0)).contains("no cycle"));
        assert!(e(
            r#"{"thread": {"0": {"histogram": {"x": 1}, "cycles": 1, "avg": 1, "max": 1}}}"#
        )
        .contains("'x'"));
    }

    #[test]
    fn cyclictest_runs_as_an_ordinary_task() {
        let a = cyclictest_args(300, Path::new("/tmp/x.json")).join(" ");
        assert_eq!(
            a,
            "-m -q -t 1 -i 10000 -l 300 -h 200000 --histfile=/dev/null --json=/tmp/x.json"
        );
        assert!(!a.contains("-p"), "no RT priority: SCHED_OTHER");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
    }

    #[test]
    fn the_background_runs_again_and_again_and_dies_with_the_probe() {
        let bg = Background::start("sleep 0.05").unwrap();
        thread::sleep(Duration::from_millis(400));
        let (runs, secs) = bg.stop().unwrap();
        assert!(runs >= 2, "{runs} runs");
        assert!(secs >= 0.4);
        // A long run in progress is killed, not waited for.
        let bg = Background::start("sleep 30").unwrap();
        let t0 = Instant::now();
        assert_eq!(bg.stop().unwrap().0, 0);
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(Background::start("/nonexistent/x").is_err());
        let bg = Background::start("false").unwrap();
        thread::sleep(Duration::from_millis(200));
        assert!(bg.stop().unwrap_err().to_string().contains("exited with"));
    }

    #[test]
    fn probe_results_read_back() {
        let r = ProbeResult {
            probe: "spawn".into(),
            spawn_s: vec![0.5, 0.25],
            background_runs: 3,
            background_s: 4.5,
            ..Default::default()
        };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(
            j,
            r#"{"probe":"spawn","spawn_s":[0.5,0.25],"background_runs":3,"background_s":4.5}"#
        );
        assert_eq!(serde_json::from_str::<ProbeResult>(&j).unwrap(), r);
    }
}
