//! The workloads that measure a wait under load: `scx_sis_lab probe` with a hackbench loop
//! as its background, started before the probe and killed after it. `latency` is cyclictest's
//! wakeup latency (avg, p99, max) and the time its thread waited runnable per run, `spawn` the
//! start of a ~10 MB program (`scx_sis --version`), `sleeps` ten `sleep 0.05` in a row (0.5 s
//! on an idle machine). Each also
//! shows the hackbench runs the background completed per second (coarse: a run takes 5-15 s
//! under TCG, so most probes see none end). perf stat counts the probe and its background
//! together, so their migrations and context switches are mostly hackbench's.

use anyhow::{bail, Context, Result};

use super::family::Family;
use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};
use crate::probe::{median, ProbeResult};
use scx_sis::verdict::Better;

/// cyclictest's wakeup latency under a hackbench loop.
pub const LATENCY: Workload = Workload::named("latency");
/// The start of the scx_sis binary under a hackbench loop.
pub const SPAWN: Workload = Workload::named("spawn");
/// Ten 50 ms sleeps in a row under a hackbench loop.
pub const SLEEPS: Workload = Workload::named("sleeps");

pub struct UnderLoad;

impl Family for UnderLoad {
    fn workloads(&self) -> &'static [Workload] {
        &[LATENCY, SPAWN, SLEEPS]
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "run under a hackbench loop: cyclictest's wakeup latency, a start of scx_sis, ten \
             50 ms sleeps",
        )
    }

    fn tools(&self, w: Workload) -> &'static [&'static str] {
        if w == LATENCY {
            &["hackbench", "cyclictest"]
        } else {
            &["hackbench"]
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

/// The background: the hackbench workload itself (its groups, about 10 runnable threads per
/// CPU, and its loops), a long job that outlasts most probes. Were its runs short, every
/// restart would bring 40 new threads a group, and the probe would measure how a scheduler
/// places new tasks as much as how it serves a woken one under a steady load.
fn background(s: &Sizing) -> String {
    format!(
        "hackbench -g {} -f 20 --threads --pipe -l {} -s 100",
        s.groups(),
        s.loops()
    )
}

/// The probe's count: cyclictest loops, starts or sleeps.
fn count(w: Workload, s: &Sizing) -> u32 {
    match (w, s.quick) {
        (LATENCY, false) => 300,
        (LATENCY, true) => 100,
        (SPAWN, false) => 5,
        (SPAWN, true) => 3,
        _ => 10,
    }
}

/// `scx_sis_lab probe KIND ...`; `spawn_exe` is what `spawn` starts (the scx_sis binary).
fn command(w: Workload, s: &Sizing, lab_exe: &str, spawn_exe: &str) -> Vec<String> {
    let kind = match w {
        LATENCY => "latency",
        SPAWN => "spawn",
        _ => "sleeps",
    };
    let mut v: Vec<String> = [
        lab_exe,
        "probe",
        kind,
        "--count",
        &count(w, s).to_string(),
        "--warmup",
        &WARMUP_S.to_string(),
        "--background",
        &background(s),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if w == SPAWN {
        v.extend(["--exe".to_string(), spawn_exe.to_string()]);
    }
    v
}

/// Roughly how long one run takes under TCG with 8 vCPUs and hackbench beside it: a wakeup
/// there waits up to tens of ms, a start up to 15 s.
fn expected_secs(w: Workload, s: &Sizing) -> f64 {
    let n = count(w, s) as f64;
    WARMUP_S
        + match w {
            // Each loop: the 10 ms period and its latency.
            LATENCY => n * 0.05 + 5.0,
            SPAWN => n * 15.0,
            // Each sleep: 50 ms, a process's start and its wakeup.
            _ => n * 1.0,
        }
}

pub const AVG: Metric = Metric::named("avg us", 0, Better::Lower);
pub const P99: Metric = Metric::named("p99 us", 0, Better::Lower);
pub const MAX: Metric = Metric::named("max us", 0, Better::Lower);
/// What cyclictest's thread waited runnable per run (the kernel's schedstat).
pub const WAIT: Metric = Metric::named("wait/run us", 0, Better::Lower);
/// The median start.
pub const START: Metric = Metric::named("start s", 3, Better::Lower);
pub const SLEEPS_S: Metric = Metric::named("sleeps s", 2, Better::Lower);
pub const BACKGROUND: Metric = Metric::named("hackbench runs/s", 3, Better::Higher);

/// What a workload of this module is judged by: its wait. The background's runs/s is no
/// score: a probe of a few seconds beside runs of 5-15 s sees 0 or 1 of them end, a count
/// no ratio can be taken of (the hackbench workload judges that throughput).
fn scores(w: Workload) -> Vec<Metric> {
    match w {
        LATENCY => vec![WAIT, AVG, P99],
        SPAWN => vec![START],
        _ => vec![SLEEPS_S],
    }
}

/// Its table's columns before the common ones: the scores, cyclictest's maximum, and the
/// background's runs/s, which shows whether the load ran throughout.
fn columns(w: Workload) -> Vec<Metric> {
    let mut v = scores(w);
    if w == LATENCY {
        v.push(MAX);
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
    let mut put = |m: &Metric, v: f64| {
        r.metrics.insert(m.label.to_string(), v);
    };
    match r.workload {
        LATENCY => {
            let l = p.latency.context("the latency probe reported no latency")?;
            put(&AVG, l.avg_us);
            put(&P99, l.p99_us);
            put(&MAX, l.max_us);
            if l.wait_per_run_us > 0.0 {
                put(&WAIT, l.wait_per_run_us);
            }
        }
        SPAWN => put(
            &START,
            median(&p.spawn_s).context("the spawn probe reported no start")?,
        ),
        SLEEPS => put(
            &SLEEPS_S,
            p.sleeps_s.context("the sleeps probe reported no time")?,
        ),
        w => bail!("{w} is not a probe under load"),
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
            assert_eq!(background(&s), hackbench(&s));
        }
        assert_eq!(
            background(&s),
            "hackbench -g 2 -f 20 --threads --pipe -l 300 -s 100"
        );
        let c = command(LATENCY, &s, "/bin/scx_sis_lab", "/bin/scx_sis");
        assert_eq!(
            c[..8].join(" "),
            "/bin/scx_sis_lab probe latency --count 300 --warmup 2 --background"
        );
        assert_eq!(c[8], background(&s), "one argument");
        assert_eq!(c.len(), 9);
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
        assert_eq!(BACKGROUND.better, Better::Higher);
        assert!([AVG, P99, MAX, START, SLEEPS_S]
            .iter()
            .all(|m| m.better == Better::Lower));
    }
}
