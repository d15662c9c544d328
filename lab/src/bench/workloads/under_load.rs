//! The workloads that measure a wait under load: `scx_sis_lab probe` with a hackbench as its
//! background, started before the probe and killed after it. The probes: cyclictest's wakeup
//! latency and the time its thread waited runnable per run (`latency`), a shell that forks
//! short sleeps and what it waited per run (`shell`), the start of a ~10 MB program
//! (`spawn`: `scx_sis --version`), ten `sleep 0.05` in a row (`sleeps`: 0.5 s on an idle
//! machine), cyclictest at SCHED_FIFO (`fifo`: the part of a wakeup no sched_ext scheduler
//! decides), and the running scx_sis's stats request against its time on the idle machine
//! (`stats`; run under scx_sis's configurations only: under the others nobody answers).
//!
//! A light task's wait depends on the load's shape as much as on its size, so the waits are
//! measured under three: the hackbench workload itself (threads and pipes, one long run; the
//! bare names), `hackbench -T` (one long run of socket pairs; `-T`), and process-mode hackbench
//! restarted in a loop, whose tasks keep starting and ending (`-loop`). Each also shows the
//! hackbench runs the background completed per second (coarse: most probes see few end). perf
//! stat counts the probe and its background together, so their migrations and context switches
//! are mostly hackbench's.

use anyhow::{bail, Context, Result};

use super::family::Family;
use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};
use crate::probe::{median, ProbeResult};
use scx_sis::verdict::Better;

pub const LATENCY: Workload = Workload::named("latency");
pub const LATENCY_T: Workload = Workload::named("latency-T");
pub const LATENCY_LOOP: Workload = Workload::named("latency-loop");
pub const SHELL: Workload = Workload::named("shell");
pub const SHELL_T: Workload = Workload::named("shell-T");
pub const SHELL_LOOP: Workload = Workload::named("shell-loop");
pub const SPAWN: Workload = Workload::named("spawn");
pub const SPAWN_LOOP: Workload = Workload::named("spawn-loop");
pub const SLEEPS: Workload = Workload::named("sleeps");
pub const SLEEPS_LOOP: Workload = Workload::named("sleeps-loop");
pub const FIFO: Workload = Workload::named("fifo");
pub const STATS: Workload = Workload::named("stats");

/// What the probe measures (`scx_sis_lab probe KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Latency,
    Shell,
    Spawn,
    Sleeps,
    Fifo,
    Stats,
}

/// What runs beside the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    /// The hackbench workload itself, one long run.
    Threads,
    /// `hackbench -T` (socket pairs between threads), one run longer than any probe.
    LongT,
    /// Process-mode hackbench of 200 loops, started again as each run ends.
    Restart,
    /// Process-mode hackbench at one group per 2 CPUs (`-g 4` on 8 CPUs), one long run: twice
    /// the CPUs' worth of runnable tasks, the stats request's load.
    Heavy,
}

/// Each workload's probe and load, in the order `--workloads`' help names them.
const SPECS: [(Workload, Probe, Load); 12] = [
    (LATENCY, Probe::Latency, Load::Threads),
    (LATENCY_T, Probe::Latency, Load::LongT),
    (LATENCY_LOOP, Probe::Latency, Load::Restart),
    (SHELL, Probe::Shell, Load::Threads),
    (SHELL_T, Probe::Shell, Load::LongT),
    (SHELL_LOOP, Probe::Shell, Load::Restart),
    (SPAWN, Probe::Spawn, Load::Threads),
    (SPAWN_LOOP, Probe::Spawn, Load::Restart),
    (SLEEPS, Probe::Sleeps, Load::Threads),
    (SLEEPS_LOOP, Probe::Sleeps, Load::Restart),
    (FIFO, Probe::Fifo, Load::Threads),
    (STATS, Probe::Stats, Load::Heavy),
];

/// The family's workloads: SPECS' first column.
const WORKLOADS: [Workload; SPECS.len()] = {
    let mut out = [LATENCY; SPECS.len()];
    let mut i = 0;
    while i < SPECS.len() {
        out[i] = SPECS[i].0;
        i += 1;
    }
    out
};

/// `w`'s probe and load; None when `w` is not the family's.
fn find_spec(w: Workload) -> Option<(Probe, Load)> {
    SPECS
        .iter()
        .find(|(x, _, _)| *x == w)
        .map(|&(_, p, l)| (p, l))
}

/// `w`'s probe and load; `w` is one of WORKLOADS (the Family contract).
fn spec(w: Workload) -> (Probe, Load) {
    find_spec(w).unwrap_or_else(|| panic!("{w} is not a probe under load"))
}

pub struct UnderLoad;

impl Family for UnderLoad {
    fn workloads(&self) -> &'static [Workload] {
        &WORKLOADS
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "run under hackbench: cyclictest's wait, a forking shell's wait, a start of scx_sis, \
             ten 50 ms sleeps, a SCHED_FIFO cyclictest, a stats request; -T under hackbench -T, \
             -loop under a restarting hackbench",
        )
    }

    fn sis_only(&self, w: Workload) -> bool {
        spec(w).0 == Probe::Stats
    }

    fn tools(&self, w: Workload) -> &'static [&'static str] {
        match spec(w).0 {
            Probe::Latency | Probe::Fifo => &["hackbench", "cyclictest"],
            _ => &["hackbench"],
        }
    }

    fn command(&self, w: Workload, s: &Sizing, exes: &Exes) -> Vec<String> {
        command(w, s, exes.lab, exes.sched)
    }

    fn expected_secs(&self, w: Workload, s: &Sizing) -> f64 {
        expected_secs(w, s)
    }

    fn parse(&self, r: &mut RunRecord, stdout: &str) -> Result<()> {
        record(r, stdout)
    }

    fn scores(&self, w: Workload) -> Vec<Metric> {
        scores(w)
    }

    fn columns(&self, w: Workload) -> Vec<Metric> {
        columns(w)
    }
}

/// Seconds the background runs before the probe starts: enough for hackbench's 40 threads a
/// group to exist and be running on every CPU (under TCG) when the probe begins.
pub const WARMUP_S: f64 = 2.0;

/// Loops of a run meant to outlast any probe (it is killed after the probe).
const LONG_LOOPS: u32 = 1_000_000;

/// The background command of `load`. The bench's own is the hackbench workload (its groups,
/// about 10 runnable threads per CPU, and its loops), a long job that outlasts most probes.
fn background(load: Load, s: &Sizing) -> String {
    let g = s.groups();
    match load {
        Load::Threads => format!(
            "hackbench -g {g} -f 20 --threads --pipe -l {} -s 100",
            s.loops()
        ),
        Load::LongT => format!("hackbench -g {g} -T -l {LONG_LOOPS}"),
        Load::Restart => format!(
            "hackbench -g {g} -l {}",
            ((200.0 * s.work).round() as u32).max(10)
        ),
        Load::Heavy => format!("hackbench -g {} -l {LONG_LOOPS}", 2 * g),
    }
}

/// The probe's count: cyclictest loops, forks, starts, sleeps or requests.
fn count(p: Probe, s: &Sizing) -> u32 {
    match (p, s.quick) {
        (Probe::Latency | Probe::Fifo, false) => 300,
        (Probe::Latency | Probe::Fifo, true) => 100,
        (Probe::Shell, false) => 100,
        (Probe::Shell, true) => 30,
        (Probe::Spawn | Probe::Stats, false) => 5,
        (Probe::Spawn | Probe::Stats, true) => 3,
        (Probe::Sleeps, _) => 10,
    }
}

/// `scx_sis_lab probe KIND ...`; `sched_exe` is the scx_sis binary `spawn` starts and `stats`
/// asks.
fn command(w: Workload, s: &Sizing, lab_exe: &str, sched_exe: &str) -> Vec<String> {
    let (p, load) = spec(w);
    let kind = format!("{p:?}").to_lowercase();
    let mut v: Vec<String> = [
        lab_exe,
        "probe",
        &kind,
        "--count",
        &count(p, s).to_string(),
        "--warmup",
        &WARMUP_S.to_string(),
        "--background",
        &background(load, s),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if matches!(p, Probe::Spawn | Probe::Stats) {
        v.extend(["--exe".to_string(), sched_exe.to_string()]);
    }
    v
}

/// Roughly how long one run takes under TCG with 8 vCPUs and hackbench beside it: a wakeup
/// there waits up to tens of ms, a start up to 15 s, a stats request up to 7 s.
fn expected_secs(w: Workload, s: &Sizing) -> f64 {
    let p = spec(w).0;
    let n = count(p, s) as f64;
    WARMUP_S
        + match p {
            // Each loop: the 10 ms period and its latency.
            Probe::Latency | Probe::Fifo => n * 0.05 + 5.0,
            // Each fork: a start, 5 ms and the shell's wakeup.
            Probe::Shell => n * 0.5 + 5.0,
            Probe::Spawn => n * 15.0,
            // Idle, then loaded.
            Probe::Stats => n * (2.0 + 7.0),
            // Each sleep: 50 ms, a process's start and its wakeup.
            Probe::Sleeps => n * 1.0,
        }
}

pub const AVG: Metric = Metric::named("avg us", 0, Better::Lower);
pub const P99: Metric = Metric::named("p99 us", 0, Better::Lower);
pub const MAX: Metric = Metric::named("max us", 0, Better::Lower);
/// What cyclictest's thread waited runnable per run (the kernel's schedstat).
pub const WAIT: Metric = Metric::named("wait/run us", 0, Better::Lower);
/// What the forking shell waited runnable per run (the kernel's schedstat).
pub const SHELL_WAIT: Metric = Metric::named("shell wait/run us", 0, Better::Lower);
/// The median start.
pub const START: Metric = Metric::named("start s", 3, Better::Lower);
pub const SLEEPS_S: Metric = Metric::named("sleeps s", 2, Better::Lower);
/// The median stats request under the load over the median on the idle machine.
pub const STATS_X: Metric = Metric::named("stats x idle", 2, Better::Lower);
pub const STATS_S: Metric = Metric::named("stats s", 2, Better::Lower);
pub const STATS_IDLE_S: Metric = Metric::named("stats idle s", 2, Better::Lower);
pub const BACKGROUND: Metric = Metric::named("hackbench runs/s", 3, Better::Higher);

/// What a workload of this module is judged by: its wait. The background's runs/s is no
/// score: a probe of a few seconds beside runs of 5-15 s sees 0 or 1 of them end, a count
/// no ratio can be taken of (the hackbench workload judges that throughput).
fn scores(w: Workload) -> Vec<Metric> {
    match spec(w).0 {
        Probe::Latency => vec![WAIT, AVG, P99],
        Probe::Shell => vec![SHELL_WAIT],
        Probe::Spawn => vec![START],
        Probe::Sleeps => vec![SLEEPS_S],
        Probe::Fifo => vec![AVG, P99],
        Probe::Stats => vec![STATS_X],
    }
}

/// Its table's columns before the common ones: the scores, cyclictest's maximum, the stats
/// request's times, and the background's runs/s, which shows whether the load ran throughout.
fn columns(w: Workload) -> Vec<Metric> {
    let mut v = scores(w);
    match spec(w).0 {
        Probe::Latency | Probe::Fifo => v.push(MAX),
        Probe::Stats => v.extend([STATS_S, STATS_IDLE_S]),
        _ => {}
    }
    v.push(BACKGROUND);
    v
}

/// The probe's JSON (the last line of `stdout` that is one) into `r`'s metrics.
fn record(r: &mut RunRecord, stdout: &str) -> Result<()> {
    let p: ProbeResult = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l.trim()).ok())
        .with_context(|| format!("no JSON in the probe's output: {}", stdout.trim()))?;
    let Some((probe, _)) = find_spec(r.workload) else {
        bail!("{} is not a probe under load", r.workload);
    };
    let mut put = |m: &Metric, v: f64| {
        r.metrics.insert(m.label.to_string(), v);
    };
    match probe {
        Probe::Latency | Probe::Fifo => {
            let l = p.latency.context("the latency probe reported no latency")?;
            put(&AVG, l.avg_us);
            put(&P99, l.p99_us);
            put(&MAX, l.max_us);
            if probe == Probe::Latency && l.wait_per_run_us > 0.0 {
                put(&WAIT, l.wait_per_run_us);
            }
        }
        Probe::Shell => put(
            &SHELL_WAIT,
            p.shell_wait_per_run_us
                .context("the shell probe reported no wait")?,
        ),
        Probe::Spawn => put(
            &START,
            median(&p.spawn_s).context("the spawn probe reported no start")?,
        ),
        Probe::Sleeps => put(
            &SLEEPS_S,
            p.sleeps_s.context("the sleeps probe reported no time")?,
        ),
        Probe::Stats => {
            let idle = median(&p.stats_idle_s).context("the stats probe reported no idle time")?;
            let loaded =
                median(&p.stats_loaded_s).context("the stats probe reported no loaded time")?;
            put(&STATS_S, loaded);
            put(&STATS_IDLE_S, idle);
            if idle > 0.0 {
                put(&STATS_X, loaded / idle);
            }
        }
    }
    if p.background_s > 0.0 {
        put(&BACKGROUND, p.background_runs as f64 / p.background_s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::timed::{Timed, HACKBENCH};

    fn sizing(quick: bool) -> Sizing {
        Sizing {
            cpus: 8,
            quick,
            work: 1.0,
        }
    }

    #[test]
    fn probes_run_under_a_hackbench_sized_like_the_workload() {
        let s = sizing(false);
        // The hackbench workload's own command line.
        let hackbench = |s: &Sizing| {
            let exes = Exes { lab: "", sched: "" };
            Timed.command(HACKBENCH, s, &exes).join(" ")
        };
        for s in [s, sizing(true), Sizing { cpus: 32, ..s }] {
            assert_eq!(background(Load::Threads, &s), hackbench(&s));
        }
        assert_eq!(
            background(Load::Threads, &s),
            "hackbench -g 2 -f 20 --threads --pipe -l 300 -s 100"
        );
        // latency.sh's loads, and twice the groups for the stats request (-g 4 on 8 CPUs).
        assert_eq!(background(Load::LongT, &s), "hackbench -g 2 -T -l 1000000");
        assert_eq!(background(Load::Restart, &s), "hackbench -g 2 -l 200");
        assert_eq!(background(Load::Heavy, &s), "hackbench -g 4 -l 1000000");
        let two = Sizing { cpus: 2, ..s };
        assert_eq!(background(Load::Restart, &two), "hackbench -g 1 -l 200");
        let c = command(LATENCY, &s, "/bin/scx_sis_lab", "/bin/scx_sis");
        assert_eq!(
            c[..8].join(" "),
            "/bin/scx_sis_lab probe latency --count 300 --warmup 2 --background"
        );
        assert_eq!(c[8], background(Load::Threads, &s), "one argument");
        assert_eq!(c.len(), 9);
        let c = command(SHELL_LOOP, &s, "/bin/scx_sis_lab", "/bin/scx_sis");
        assert_eq!(c[2..5].join(" "), "shell --count 100");
        assert_eq!(c[8], background(Load::Restart, &s));
        let c = command(STATS, &s, "/bin/scx_sis_lab", "/bin/scx_sis");
        assert_eq!(c[2..5].join(" "), "stats --count 5");
        assert_eq!(c[c.len() - 2..].join(" "), "--exe /bin/scx_sis");
        assert_eq!(command(FIFO, &s, "l", "s")[2], "fifo");
        let c = command(
            SPAWN,
            &sizing(true),
            "/bin/scx_sis_lab",
            "/bin/scx_sis",
        );
        assert_eq!(c[2..5].join(" "), "spawn --count 3");
        assert_eq!(c[c.len() - 2..].join(" "), "--exe /bin/scx_sis");
        let c = command(SLEEPS, &s, "/bin/scx_sis_lab", "/bin/scx_sis");
        assert_eq!(c[2..5].join(" "), "sleeps --count 10");
        assert!(expected_secs(SPAWN, &s) > expected_secs(SLEEPS, &s));
    }

    #[test]
    fn every_workload_has_one_probe_and_load() {
        let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name()).collect();
        assert_eq!(names[..3], ["latency", "latency-T", "latency-loop"]);
        // Both light tasks' waits are measured under each of the three shapes of load.
        for p in [Probe::Latency, Probe::Shell] {
            let loads: Vec<Load> = SPECS
                .iter()
                .filter(|(_, q, _)| *q == p)
                .map(|(_, _, l)| *l)
                .collect();
            assert_eq!(loads, [Load::Threads, Load::LongT, Load::Restart], "{p:?}");
        }
    }

    fn rec(w: Workload, out: &str) -> Result<RunRecord> {
        let mut r = RunRecord::new("eevdf", "eevdf", w, 1);
        record(&mut r, out).map(|_| r)
    }

    #[test]
    fn the_probes_output_becomes_metrics() {
        let out =
            "warming up\n{\"probe\":\"latency\",\"latency\":{\"samples\":300,\"avg_us\":9800.5,\
                   \"p99_us\":51000.0,\"max_us\":64000.0},\"background_runs\":6,\
                   \"background_s\":12.0}\n";
        let r = rec(LATENCY, out).unwrap();
        let got: Vec<(&str, f64)> = r.metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            got,
            [
                ("avg us", 9800.5),
                ("hackbench runs/s", 0.5),
                ("max us", 64000.0),
                ("p99 us", 51000.0)
            ]
        );
        // The thread's wait, when the probe read it (a record from before it did has none).
        let out = out.replace(
            "\"max_us\":64000.0",
            "\"max_us\":64000.0,\"wait_per_run_us\":7056.5",
        );
        assert_eq!(
            WAIT.value(&rec(LATENCY, &out).unwrap()),
            Some(7056.5)
        );
        let out = "{\"probe\":\"spawn\",\"spawn_s\":[2.5,11.0,2.3],\"background_runs\":1,\
                   \"background_s\":16.0}";
        assert_eq!(START.value(&rec(SPAWN, out).unwrap()), Some(2.5));
        let out =
            "{\"probe\":\"sleeps\",\"sleeps_s\":2.2,\"background_runs\":1,\"background_s\":3.0}";
        assert_eq!(
            SLEEPS_S.value(&rec(SLEEPS, out).unwrap()),
            Some(2.2)
        );

        let out = "{\"probe\":\"shell\",\"shell_wait_per_run_us\":812.5,\"background_runs\":0,\
                   \"background_s\":9.0}";
        assert_eq!(SHELL_WAIT.value(&rec(SHELL_T, out).unwrap()), Some(812.5));
        let out = "{\"probe\":\"stats\",\"stats_idle_s\":[1.5,1.0,2.0],\
                   \"stats_loaded_s\":[3.0,2.5,9.0],\"background_runs\":0,\"background_s\":20.0}";
        let r = rec(STATS, out).unwrap();
        assert_eq!(
            (STATS_X.value(&r), STATS_S.value(&r), STATS_IDLE_S.value(&r)),
            (Some(2.0), Some(3.0), Some(1.5))
        );
        // The SCHED_FIFO control: cyclictest's numbers, no thread wait to speak of.
        let fifo = "{\"probe\":\"fifo\",\"latency\":{\"samples\":3,\"avg_us\":40.0,\
                    \"p99_us\":90.0,\"max_us\":90.0,\"wait_per_run_us\":3.0},\
                    \"background_runs\":0,\"background_s\":4.0}";
        let r = rec(FIFO, fifo).unwrap();
        assert_eq!((AVG.value(&r), WAIT.value(&r)), (Some(40.0), None));

        assert!(rec(SLEEPS, "cyclictest: oops").is_err());
        let no_starts = "{\"probe\":\"spawn\",\"background_runs\":1,\"background_s\":1.0}";
        assert!(rec(SPAWN, no_starts).is_err());
        assert!(rec(HACKBENCH, no_starts).is_err());
    }

    #[test]
    fn each_is_judged_by_its_wait_and_shows_the_background() {
        let labels = |v: Vec<Metric>| v.iter().map(|m| m.label).collect::<Vec<_>>();
        assert_eq!(
            labels(scores(LATENCY)),
            ["wait/run us", "avg us", "p99 us"]
        );
        assert_eq!(
            labels(columns(LATENCY)),
            [
                "wait/run us",
                "avg us",
                "p99 us",
                "max us",
                "hackbench runs/s"
            ]
        );
        assert_eq!(labels(scores(SPAWN)), ["start s"]);
        assert_eq!(
            labels(columns(SPAWN)),
            ["start s", "hackbench runs/s"]
        );
        assert_eq!(
            labels(columns(SLEEPS)),
            ["sleeps s", "hackbench runs/s"]
        );
        assert_eq!(labels(scores(SHELL_LOOP)), ["shell wait/run us"]);
        assert_eq!(
            labels(columns(STATS)),
            ["stats x idle", "stats s", "stats idle s", "hackbench runs/s"]
        );
        assert_eq!(labels(scores(FIFO)), ["avg us", "p99 us"]);
        assert_eq!(BACKGROUND.better, Better::Higher);
        assert!([AVG, P99, MAX, START, SLEEPS_S]
            .iter()
            .all(|m| m.better == Better::Lower));
    }
}
