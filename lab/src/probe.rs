//! `scx_sis_lab probe`: what a woken or a new task waits while the machine is loaded. A
//! background command (the bench gives a hackbench) runs again and again from before the probe
//! until after it; the probe is cyclictest's wakeup latency (`latency`, or `fifo` at SCHED_FIFO),
//! the wait of a shell that forks short sleeps (`shell`), the wall time of a fork+exec of a
//! program (`spawn`) or a row of short sleeps (`sleeps`), or a stats request to the running
//! scx_sis (`stats`), timed on the idle machine first. It prints one JSON object (ProbeResult)
//! on stdout.

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
    /// COUNT `sleep` processes of --sleep-ms in a row: their wall time.
    Sleeps,
    /// A shell that forks COUNT 5 ms sleeps, as a script does: what it waited runnable per run.
    Shell,
    /// cyclictest at SCHED_FIFO, which the RT class runs, not a sched_ext scheduler: the timer's
    /// delivery and the time callbacks keep interrupts off, the part no placement decides.
    Fifo,
    /// `EXE monitor --json --count 1` COUNT times before the background starts, then COUNT
    /// times under it: the running scx_sis's stats request, idle and loaded.
    Stats,
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
    #[arg(long, default_value_t = 2.0, value_parser = parse_secs)]
    pub warmup: f64,

    /// latency, fifo: cyclictest's loops [default: 300]; spawn: starts [default: 5]; sleeps:
    /// sleeps [default: 10]; shell: forks [default: 100]; stats: requests each way [default: 5].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: Option<u32>,

    /// sleeps: the length of each sleep.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub sleep_ms: u64,

    /// spawn, stats: the scx_sis binary to start [default: scx_sis beside this binary].
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

/// cyclictest's period: long enough that under TCG a wakeup's latency (tens of ms under load)
/// is not swallowed by the next period's.
pub const CYCLICTEST_INTERVAL_US: u32 = 10_000;

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
    /// shell: what the forking shell waited runnable per run, in us (its schedstat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_wait_per_run_us: Option<f64>,
    /// stats: the wall time of each request on the idle machine, then under the background.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stats_idle_s: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stats_loaded_s: Vec<f64>,
    /// The background's runs that ended (successfully) while it ran, and for how long it ran.
    pub background_runs: u64,
    pub background_s: f64,
}

/// cyclictest's wakeup latencies, in us, and what its thread waited runnable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub samples: u64,
    pub avg_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The time cyclictest's measuring thread waited runnable, per run, in us, as the kernel
    /// counts it (schedstat's run_delay over its runs; the same code under EEVDF and sched_ext):
    /// the part of a wakeup's latency that a scheduler decides. Under TCG the rest, the timer's
    /// delivery to a busy vCPU, is most of it (docs/bench/cyclictest-under-tcg.md). 0: not read.
    #[serde(default)]
    pub wait_per_run_us: f64,
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

/// cyclictest's `-v` output: a line per loop, `THREAD: LOOP: LATENCY_US`, among headers and
/// the summary line (`T: 0 (...) ... Avg: ... Max: ...`), which are skipped. Every sample is
/// there, so the p99 is exact at any latency: the nearest-rank one, the ceil(0.99 n)-th
/// smallest.
pub fn parse_cyclictest_verbose(text: &str) -> Result<Latency> {
    let mut v: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').map(str::trim).collect();
            match f[..] {
                [t, i, us] if t.parse::<u32>().is_ok() && i.parse::<u64>().is_ok() => {
                    us.parse().ok()
                }
                _ => None,
            }
        })
        .collect();
    if v.is_empty() {
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!("no 'thread: loop: latency' line in cyclictest's -v output (last line: {last})");
    }
    v.sort_unstable();
    let n = v.len();
    let rank = (n * 99).div_ceil(100).max(1);
    Ok(Latency {
        samples: n as u64,
        avg_us: v.iter().sum::<u64>() as f64 / n as f64,
        p99_us: v[rank - 1] as f64,
        max_us: v[n - 1] as f64,
        wait_per_run_us: 0.0,
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

fn run_latency(loops: u32, fifo: bool) -> Result<Latency> {
    let mut args = cyclictest_args(loops);
    if fifo {
        args.extend(["-p".to_string(), FIFO_PRIO.to_string()]);
    }
    let mut child = Command::new("cyclictest")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("failed to start cyclictest (rt-tests)")?;
    let pid = child.id();
    // Drain the pipes beside the polling below, or a full pipe would stop cyclictest.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut text);
            }
            text
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    // The measuring thread's counts go with it when it exits: keep the last read before that.
    let mut wait = None;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        wait = threads_wait(pid).or(wait);
        thread::sleep(Duration::from_millis(200));
    };
    let (out, err) = (out.join(), err.join());
    let (out, err) = (out.unwrap_or_default(), err.unwrap_or_default());
    if !status.success() {
        bail!(
            "cyclictest exited with {status}: {}",
            err.lines().last().unwrap_or("")
        );
    }
    let mut l = parse_cyclictest_verbose(&out)?;
    if let Some((delay_ns, runs)) = wait.filter(|&(_, runs)| runs > 0) {
        l.wait_per_run_us = delay_ns as f64 / runs as f64 / 1000.0;
    }
    Ok(l)
}

/// A task's /proc schedstat line, "RUN_NS WAIT_NS RUNS": (the time it waited runnable, its runs).
pub fn parse_schedstat(line: &str) -> Option<(u64, u64)> {
    let f: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match f[..] {
        [_, wait, runs] => Some((wait, runs)),
        _ => None,
    }
}

/// The threads of process `pid` but its main one, summed: (waited runnable ns, runs). None when
/// the process or its schedstat (CONFIG_SCHED_INFO) is gone or it has no other thread.
pub fn threads_wait(pid: u32) -> Option<(u64, u64)> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum: Option<(u64, u64)> = None;
    for e in dir.flatten() {
        if e.file_name().to_str() == Some(&pid.to_string()) {
            continue;
        }
        let line = std::fs::read_to_string(e.path().join("schedstat")).ok();
        if let Some((w, r)) = line.as_deref().and_then(parse_schedstat) {
            let (sw, sr) = sum.unwrap_or((0, 0));
            sum = Some((sw + w, sr + r));
        }
    }
    sum
}

/// The SCHED_FIFO control's priority: above every RT thread the kernel runs by default (50).
const FIFO_PRIO: u32 = 99;

/// cyclictest's arguments: one thread, no -p (SCHED_OTHER, as an ordinary woken task), memory
/// locked, every sample printed (-v) rather than a histogram of 1 us buckets, whose range a
/// wakeup under TCG (up to some 700 ms seen) overflows unless its text dump, a line per bucket,
/// grows to millions of lines.
pub fn cyclictest_args(loops: u32) -> Vec<String> {
    [
        "-m".to_string(),
        "-q".into(),
        "-v".into(),
        "-t".into(),
        "1".into(),
        "-i".into(),
        CYCLICTEST_INTERVAL_US.to_string(),
        "-l".into(),
        loops.to_string(),
    ]
    .to_vec()
}

/// `exe ARGS` `count` times in a row: the wall time of each, from the fork to the exit. Its
/// stdout is dropped; a failed run is an error with its stderr.
fn run_timed(exe: &Path, args: &[&str], count: u32) -> Result<Vec<f64>> {
    let mut times = Vec::new();
    for _ in 0..count {
        let t0 = Instant::now();
        let out = Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .with_context(|| format!("failed to start {}", exe.display()))?;
        let dt = t0.elapsed().as_secs_f64();
        if !out.status.success() {
            bail!(
                "{} {} exited with {}: {}",
                exe.display(),
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        times.push(dt);
    }
    Ok(times)
}

/// `sleep SECS` COUNT times in a row, as a shell script's loop runs it: each a new process
/// that starts, sleeps and is woken, so the row waits on a start and a wakeup per sleep.
fn run_sleeps(count: u32, ms: u64) -> Result<f64> {
    let secs = format!("{}", ms as f64 / 1000.0);
    let t0 = Instant::now();
    for _ in 0..count {
        let st = Command::new("sleep")
            .arg(&secs)
            .stdin(Stdio::null())
            .status()
            .context("failed to start sleep")?;
        if !st.success() {
            bail!("sleep {secs} exited with {st}");
        }
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// The forking shell's script: `$1` sleeps of 5 ms, each a fork and exec the shell waits for,
/// then the shell's own schedstat line, read while it still runs (a child reads its parent's).
const SHELL_SCRIPT: &str = "i=0; while [ $i -lt \"$1\" ]; do sleep 0.005; i=$((i + 1)); done; \
                            cat /proc/$$/schedstat";

/// A shell that forks `count` short sleeps: what it waited runnable per run, in us. The shell
/// sleeps on each child and is woken by its exit, a light task's wakeup per fork.
fn run_shell(count: u32) -> Result<f64> {
    let out = Command::new("sh")
        .args(["-c", SHELL_SCRIPT, "sh", &count.to_string()])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("failed to start sh")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("the forking shell exited with {}", out.status);
    }
    match text.lines().last().and_then(parse_schedstat) {
        Some((wait, runs)) if runs > 0 => Ok(wait as f64 / runs as f64 / 1000.0),
        _ => bail!(
            "the forking shell printed no schedstat line (CONFIG_SCHED_INFO?): {}",
            text.trim()
        ),
    }
}

/// The running scx_sis's stats request, as a user asks it.
const STATS_ARGS: [&str; 4] = ["monitor", "--json", "--count", "1"];

fn default_exe() -> Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find the scx_sis_lab binary itself")?;
    Ok(me.with_file_name("scx_sis"))
}

pub fn run(opts: &ProbeOpts) -> Result<()> {
    let starts_exe = matches!(opts.kind, Kind::Spawn | Kind::Stats);
    let exe = match (&opts.exe, starts_exe) {
        (Some(e), _) => e.clone(),
        (None, true) => default_exe()?,
        (None, false) => PathBuf::new(),
    };
    if starts_exe && !exe.is_file() {
        bail!("--exe {}: no such file", exe.display());
    }
    let mut r = ProbeResult {
        probe: format!("{:?}", opts.kind).to_lowercase(),
        ..Default::default()
    };
    // The stats request's base: the same requests on the machine before the load.
    if opts.kind == Kind::Stats {
        r.stats_idle_s = run_timed(&exe, &STATS_ARGS, opts.count.unwrap_or(5))?;
    }
    let bg = match &opts.background {
        Some(cmd) => {
            let bg = Background::start(cmd)?;
            thread::sleep(Duration::from_secs_f64(opts.warmup));
            Some(bg)
        }
        None => None,
    };
    let measured = match opts.kind {
        Kind::Latency | Kind::Fifo => {
            run_latency(opts.count.unwrap_or(300), opts.kind == Kind::Fifo)
                .map(|l| r.latency = Some(l))
        }
        Kind::Shell => {
            run_shell(opts.count.unwrap_or(100)).map(|w| r.shell_wait_per_run_us = Some(w))
        }
        Kind::Stats => {
            run_timed(&exe, &STATS_ARGS, opts.count.unwrap_or(5)).map(|t| r.stats_loaded_s = t)
        }
        Kind::Spawn => {
            run_timed(&exe, &["--version"], opts.count.unwrap_or(5)).map(|t| r.spawn_s = t)
        }
        Kind::Sleeps => {
            run_sleeps(opts.count.unwrap_or(10), opts.sleep_ms).map(|t| r.sleeps_s = Some(t))
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

    /// `cyclictest -m -q -v -i 1000 -l 20 -t 1` (rt-tests 2.4) on the build host, as printed.
    const REAL: &str = "Max CPUs = 2
Online CPUs = 2
# /dev/cpu_dma_latency set to 0us
Thread 0 Interval: 1500
       0:       0:     115
       0:       1:      63
       0:       2:     112
       0:       3:     117
       0:       4:     110
       0:       5:      48
       0:       6:     116
       0:       7:      95
       0:       8:     115
       0:       9:      45
       0:      10:     122
       0:      11:      98
       0:      12:     119
       0:      13:      30
       0:      14:     118
       0:      15:      93
       0:      16:     119
       0:      17:      75
       0:      18:     118
       0:      19:     115
T: 0 (10129) P: 0 I:1000 C:     20 Min:     30 Act:  115 Avg:   97 Max:     122
";

    #[test]
    fn cyclictest_samples_give_avg_p99_and_max() {
        let l = parse_cyclictest_verbose(REAL).unwrap();
        // cyclictest's own summary line says the same (its Avg is rounded down).
        assert_eq!((l.samples, l.avg_us.floor(), l.max_us), (20, 97.0, 122.0));
        // Rank 20 of 20: the largest.
        assert_eq!(l.p99_us, 122.0);
    }

    #[test]
    fn p99_is_the_nearest_rank_sample_at_any_latency() {
        let lines = |v: &[u64]| {
            v.iter()
                .enumerate()
                .map(|(i, us)| format!("       0:{i:8}:{us:8}\n"))
                .collect::<String>()
        };
        // 300 samples: the 297th smallest, however large (no histogram to overflow).
        let mut v: Vec<u64> = (1..=300).collect();
        v[296] = 650_000;
        v[297] = 660_000;
        v[298] = 670_000;
        v[299] = 680_000;
        v.reverse();
        let l = parse_cyclictest_verbose(&lines(&v)).unwrap();
        assert_eq!((l.p99_us, l.max_us, l.samples), (650_000.0, 680_000.0, 300));
        let l = parse_cyclictest_verbose(&lines(&[7])).unwrap();
        assert_eq!((l.avg_us, l.p99_us, l.max_us), (7.0, 7.0, 7.0));
    }

    #[test]
    fn output_without_samples_is_an_error_that_says_what() {
        let e = |t: &str| parse_cyclictest_verbose(t).unwrap_err().to_string();
        assert!(e("").contains("no 'thread: loop: latency' line"));
        // The summary line and headers are no samples; the last line is quoted.
        let summary =
            "Thread 0 Interval: 1500\nT: 0 (1) P: 0 I:1000 C: 0 Min: 0 Act: 0 Avg: 0 Max: 0\n";
        assert!(e(summary).contains("(last line: T: 0"), "{}", e(summary));
        assert!(e("a: b: c\n0: x: 5\n").contains("no 'thread"));
    }

    #[test]
    fn cyclictest_runs_as_an_ordinary_task() {
        let a = cyclictest_args(300).join(" ");
        assert_eq!(a, "-m -q -v -t 1 -i 10000 -l 300");
        assert!(!a.contains("-p"), "no RT priority: SCHED_OTHER");
    }

    #[test]
    fn schedstat_gives_the_wait_and_the_runs() {
        assert_eq!(
            parse_schedstat("1026981096 6625994245 351\n"),
            Some((6625994245, 351))
        );
        assert_eq!(parse_schedstat("1 2"), None);
        assert_eq!(parse_schedstat("a b c"), None);
    }

    #[test]
    fn a_threads_wait_is_read_while_it_lives_and_not_its_main_threads() {
        if !Path::new("/proc/self/schedstat").exists() {
            eprintln!("skipped: this kernel has no schedstat (CONFIG_SCHED_INFO)");
            return;
        }
        let me = std::process::id();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        // A thread that has run: it slept and woke, so its runs are counted.
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            rx.recv().ok();
        });
        thread::sleep(Duration::from_millis(100));
        let (_, runs) = threads_wait(me).expect("the test's threads have schedstat lines");
        assert!(runs >= 1, "{runs}");
        tx.send(()).unwrap();
        t.join().unwrap();
        // A process with only its main thread gives none.
        let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
        thread::sleep(Duration::from_millis(100));
        assert_eq!(threads_wait(sleeper.id()), None);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }

    #[test]
    fn the_forking_shell_reads_its_own_wait() {
        if !Path::new("/proc/self/schedstat").exists() {
            eprintln!("skipped: this kernel has no schedstat (CONFIG_SCHED_INFO)");
            return;
        }
        // Five forks: the shell ran at least once per child it waited for.
        let w = run_shell(5).unwrap();
        assert!(w.is_finite() && w >= 0.0, "{w}");
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
        // `true` ends at once: over 1.5 s it ran again and again, even on a busy host.
        let bg = Background::start("true").unwrap();
        thread::sleep(Duration::from_millis(1500));
        let (runs, secs) = bg.stop().unwrap();
        assert!(runs >= 1, "{runs} runs");
        assert!(secs >= 1.5);
        // A long run in progress is killed, not waited for.
        let bg = Background::start("sleep 30").unwrap();
        let t0 = Instant::now();
        assert_eq!(bg.stop().unwrap().0, 0);
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(Background::start("/nonexistent/x").is_err());
        let bg = Background::start("false").unwrap();
        thread::sleep(Duration::from_millis(1500));
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
