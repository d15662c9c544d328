//! policy.sh's verdicts: prev-bias cuts migrations per context switch, the SIS_UTIL curves at
//! idle and under hogs, SIS_UTIL's affinity corner case. The guest's records are listed in
//! policy.sh beside each check.

use scx_sis::policy::curves;
use scx_sis::policy::Curve;
use scx_sis::stats::counters::PATH_NAMES;
use scx_sis::stats::Metrics;

use crate::harness::GuestRun;
use crate::records::{cs, llc_sum, path_sum, ratio, round, Records, Verdicts};

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    if r.has("kv", "pb_params") {
        prev_bias(r, v);
    }
    if r.has("mon", "curve_idle") || r.has("text", "curve_idle") {
        curves(r, v);
    }
    if r.has("kv", "aff_params") {
        affinity(r, v);
    }
}

/// The lower middle value (policy.sh's old pol_median: `sort -g`, element (n+1)/2).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len().div_ceil(2) - 1]
}

/// perf stat -x, lines: the count of the event whose name contains `event` (awk's `$1 + 0`, so
/// "<not counted>" is 0); None without such a line.
fn perf_count(lines: &[&str], event: &str) -> Option<f64> {
    lines.iter().find_map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        (f.len() > 2 && f[2].contains(event)).then(|| f[0].trim().parse().unwrap_or(0.0))
    })
}

fn list(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| format!("{x:.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn prev_bias(r: &Records, v: &mut Verdicts) {
    let p = r.need_kv("pb_params");
    let max: f64 = p.n("max");
    // Per setting: ratios, migrations, context switches; prev_almost_idle and steal sums.
    let (mut on, mut off) = (Setting::default(), Setting::default());
    let mut bad = String::new();
    let mut last_out = String::new();
    for run in r.kvs("pb_run") {
        let (i, pb, rc) = (
            run.n::<u32>("i"),
            run.s("pb").to_string(),
            run.n::<i32>("rc"),
        );
        let key = format!("{i}_{pb}");
        let perf = r.texts(&format!("pb_perf_{key}"));
        let (mig, csw) = (
            perf_count(&perf, "cpu-migrations"),
            perf_count(&perf, "context-switches"),
        );
        last_out = r.text(&format!("pb_out_{key}"));
        let (Some(mig), Some(csw), 0) = (mig, csw, rc) else {
            let o = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
            bad += &format!(" run{i}/{pb}:rc={rc},mig={},cs={}", o(mig), o(csw));
            continue;
        };
        let per_cs = ratio(mig, csw, 3, -1.0);
        let mons = r.mons(&format!("pb_mon_{key}"));
        let sum = |f: &dyn Fn(&Metrics) -> u64| mons.iter().map(f).sum::<u64>();
        let pai = sum(&|m| path_sum(m, "prev_almost_idle"));
        let steals = sum(&|m| llc_sum(m, |l| l.dispatch_llc_steal + l.dispatch_remote_steal));
        let wakeups = sum(&|m| llc_sum(m, |l| l.wakeups));
        let tail: String = last_out.chars().take(90).collect();
        v.info(format!(
            "prev_bias run {i} {pb}: cpu-migrations={mig} context-switches={csw} per-cs={per_cs:.3} wall={}s | prev_almost_idle={pai} wakeups={wakeups} steals={steals} | {tail}",
            cs(run.n("wall_cs"))
        ));
        let s = if pb == "on" { &mut on } else { &mut off };
        s.ratios.push(per_cs);
        s.migs.push(mig);
        s.css.push(csw);
        s.pai += pai;
        s.steals += steals;
    }
    const NAME: &str = "prev_bias_migrations";
    if !bad.is_empty() || on.ratios.is_empty() || off.ratios.is_empty() {
        v.fail(NAME, format!("workload failed:{bad} ({last_out})"));
        return;
    }
    let (mr_on, mr_off) = (median(on.ratios.clone()), median(off.ratios.clone()));
    let (mm_on, mm_off) = (median(on.migs.clone()), median(off.migs.clone()));
    let (mc_on, mc_off) = (median(on.css.clone()), median(off.css.clone()));
    let rel = ratio(mr_on, mr_off, 3, -1.0);
    let detail = format!(
        "median cpu-migrations on={mm_on} off={mm_off}, context-switches on={mc_on} off={mc_off}, migrations per cs on={mr_on:.3} off={mr_off:.3} (on/off={rel:.3}, bound {max}) | per run on=[{}] off=[{}] | prev_almost_idle on={} off={}, steals on={} off={}",
        list(&on.ratios),
        list(&off.ratios),
        on.pai,
        off.pai,
        on.steals,
        off.steals
    );
    if mm_off < 10.0 {
        v.fail(
            NAME,
            format!("too few migrations with prev-bias off to show a cut: {detail}"),
        );
    } else if on.pai == 0 || off.pai != 0 {
        v.fail(NAME, format!("prev_almost_idle must decide some wakeups with prev-bias on and none with it off: {detail}"));
    } else {
        v.check(NAME, rel != -1.0 && rel <= max, detail);
    }
}

#[derive(Default)]
struct Setting {
    ratios: Vec<f64>,
    migs: Vec<f64>,
    css: Vec<f64>,
    pai: u64,
    steals: u64,
}

/// "llcN:cpus=C,util=U%,nr_scan=S " per LLC.
fn gauges(m: &Metrics) -> String {
    m.llcs
        .iter()
        .map(|(i, l)| {
            format!(
                "llc{i}:cpus={},util={:.1}%,nr_scan={} ",
                l.cpus, l.util_pct, l.nr_scan
            )
        })
        .collect()
}

/// What llc_scan did: runs, skips, mean depth limit, CPUs tested, hit rate.
fn scan_line(m: &Metrics) -> String {
    let s = |f: fn(&scx_sis::stats::LlcMetrics) -> u64| llc_sum(m, f);
    let (runs, depth, visited, found) = (
        s(|l| l.scan_runs),
        s(|l| l.scan_depth),
        s(|l| l.scan_visited),
        s(|l| l.scan_found),
    );
    format!(
        "scan_runs={runs} scan_skipped={} depth_avg={:.3} visited={visited} found={found} hit={:.3}",
        s(|l| l.scan_skipped),
        ratio(depth as f64, runs as f64, 3, -1.0),
        ratio(found as f64, runs as f64, 3, -1.0)
    )
}

/// "sync=.. prev_idle=.. ..." summed over LLCs: every path but the plain preset's.
fn paths(m: &Metrics) -> String {
    PATH_NAMES
        .iter()
        .filter(|p| **p != "kernel_dfl")
        .map(|p| format!("{p}={} ", path_sum(m, p)))
        .collect()
}

/// One info line per LLC.
fn curve_report(v: &mut Verdicts, label: &str, m: &Metrics) {
    for (i, l) in &m.llcs {
        v.info(format!(
            "{label} llc{i}: cpus={} util_pct={} nr_scan={} wakeups={} scan_runs={} scan_skipped={} scan_depth={} scan_visited={} scan_found={}",
            l.cpus, l.util_pct, l.nr_scan, l.wakeups, l.scan_runs, l.scan_skipped, l.scan_depth,
            l.scan_visited, l.scan_found
        ));
    }
}

fn curves(r: &Records, v: &mut Verdicts) {
    let idle = r.mon("curve_idle").unwrap_or_default();
    curve_report(v, "sis_util idle", &idle);
    let mut why = String::new();
    for (i, l) in &idle.llcs {
        if l.nr_scan != l.cpus {
            why += &format!(" llc{i} nr_scan {} != cpus {};", l.nr_scan, l.cpus);
        }
    }
    if idle.llcs.is_empty() {
        why = r.no_mon("curve_idle");
    }
    if why.is_empty() {
        v.pass(
            "sis_util_idle",
            format!("quadratic, nothing running: {}", gauges(&idle)),
        );
    } else {
        v.fail(
            "sis_util_idle",
            format!("{} | {}", why.trim_start(), gauges(&idle)),
        );
    }

    // One CPU hog per CPU must get every CPU: a CPU left idle beside two hogs sharing another is
    // what a user of `stress-ng --cpu N` sees first, and it also skews every curve below.
    let hogs = r.need_kv("curve_hogs");
    let least_busy: u64 = hogs.s("min_busy_pct").parse().unwrap_or(0);
    v.check(
        "sis_util_hogs_fill",
        least_busy >= HOGS_MIN_BUSY_PCT,
        format!(
            "stress-ng --cpu {} up after {} window(s) of 1 s, least busy CPU {}% (want >= {}%)",
            hogs.s("cpus"),
            hogs.s("windows"),
            hogs.s("min_busy_pct"),
            HOGS_MIN_BUSY_PCT
        ),
    );

    let q = need_mon(r, "curve_quadratic");
    curve_report(v, "sis_util quadratic+hogs", &q);
    let mut why = String::new();
    for (i, l) in &q.llcs {
        if l.util_pct < 85.0 {
            why += &format!(" llc{i} util {}% <= 85%;", l.util_pct);
        }
        if l.nr_scan != 0 {
            why += &format!(" llc{i} nr_scan {} != 0;", l.nr_scan);
        }
    }
    let runs = llc_sum(&q, |l| l.scan_runs);
    let visited = llc_sum(&q, |l| l.scan_visited);
    let skipped = llc_sum(&q, |l| l.scan_skipped);
    // Our utilization counts the time an ext task runs. Under TCG, on a host with fewer cores
    // than vCPUs, the time between two tasks (dispatch, rq locks a descheduled vCPU holds) reached
    // a fifth of an LLC for one timer period while /proc/stat showed 0.1% idle, and that period
    // scans. A curve that did not stop the scan would scan every wakeup, not a few in a hundred.
    let reached = runs + skipped;
    if runs * QUADRATIC_MAX_SCAN_SHARE_INV > reached {
        why += &format!(
            " scan_runs {runs} > 1/{QUADRATIC_MAX_SCAN_SHARE_INV} of the {reached} wakeups that reached llc_scan;"
        );
    }
    let widest = q.llcs.values().map(|l| l.cpus).max().unwrap_or(0);
    if visited > runs * widest {
        why += &format!(" scan_visited {visited} > scan_runs x {widest} CPUs;");
    }
    if skipped == 0 {
        why += " no wakeup reached llc_scan (scan_skipped 0);";
    }
    let d = format!("{}| {} | {}", gauges(&q), scan_line(&q), paths(&q));
    verdict(v, "sis_util_busy_quadratic", &why, &d);

    for (curve, label) in [(Curve::Linear, "linear"), (Curve::Off, "off")] {
        let m = need_mon(r, &format!("curve_{label}"));
        curve_report(v, &format!("sis_util {label}+hogs"), &m);
        check_curve(v, &format!("sis_util_busy_{label}"), &m, curve);
    }
}

/// Least busy CPU, %, that one CPU hog per CPU must reach within the guest's 8 windows of 1 s
/// (the guest stops waiting at the same figure).
const HOGS_MIN_BUSY_PCT: u64 = 90;

/// Under hogs, quadratic may scan at most one wakeup in this many that reach the stage.
const QUADRATIC_MAX_SCAN_SHARE_INV: u64 = 50;

fn need_mon(r: &Records, name: &str) -> Metrics {
    r.mon(name).unwrap_or_else(|| panic!("{}", r.no_mon(name)))
}

/// PASS with `detail` when `why` is empty, else FAIL with the reasons first.
fn verdict(v: &mut Verdicts, name: &str, why: &str, detail: &str) {
    if why.is_empty() {
        v.pass(name, detail);
    } else {
        v.fail(name, format!("{} | {detail}", why.trim_start()));
    }
}

/// Every LLC above 85% busy and at the depth the library's curve gives for its size and
/// utilization (under hogs: linear's floor, min(LLC, 4); off: the whole LLC); the scan ran with
/// that depth and was never skipped.
fn check_curve(v: &mut Verdicts, name: &str, m: &Metrics, curve: Curve) {
    let mut why = String::new();
    for (i, l) in &m.llcs {
        let util_bp = (l.util_pct * 100.0).round().max(0.0) as u64;
        let want = curves::nr_scan(curve, l.cpus as u32, util_bp, 10_000) as u64;
        if l.util_pct < 85.0 {
            why += &format!(" llc{i} util {}% <= 85%;", l.util_pct);
        }
        if l.nr_scan != want {
            why += &format!(" llc{i} nr_scan {} != {want};", l.nr_scan);
        }
        if l.scan_depth != l.scan_runs * want {
            why += &format!(
                " llc{i} depth {} != runs {} x {want};",
                l.scan_depth, l.scan_runs
            );
        }
    }
    let runs = llc_sum(m, |l| l.scan_runs);
    let visited = llc_sum(m, |l| l.scan_visited);
    let skipped = llc_sum(m, |l| l.scan_skipped);
    if runs == 0 || visited < runs {
        why += &format!(" scan ran {runs} times visiting {visited} CPUs (expected > 0);");
    }
    if skipped != 0 {
        why += &format!(" scan skipped {skipped} times;");
    }
    let d = format!("{}| {} | {}", gauges(m), scan_line(m), paths(m));
    verdict(v, name, &why, &d);
}

/// pol_probe's sample: uptime_cs task_ticks cpu_idle_ticks run_ns wait_ns timeslices last_cpu
/// pid2_ticks.
struct Probe {
    t: i64,
    ticks: i64,
    idle: i64,
    run_ns: i64,
    wait_ns: i64,
    slices: i64,
    cpu: i64,
    ticks2: i64,
}

fn probe(kv: &crate::records::Kv, key: &str) -> Probe {
    let f = kv.list(key);
    assert_eq!(f.len(), 8, "pol_probe sample {key}: {f:?}");
    Probe {
        t: f[0],
        ticks: f[1],
        idle: f[2],
        run_ns: f[3],
        wait_ns: f[4],
        slices: f[5],
        cpu: f[6],
        ticks2: f[7],
    }
}

fn affinity(r: &Records, v: &mut Verdicts) {
    let p = r.need_kv("aff_params");
    let (start, idle) = (p.s("start"), p.s("idle"));
    for curve in ["off", "linear", "quadratic"] {
        // A curve whose tune failed has no records (the guest failed "tune").
        let Some(w) = r.kv(&format!("aff_wake_{curve}")) else {
            continue;
        };
        let (a, b) = (probe(&w, "p0"), probe(&w, "p1"));
        let win = b.t - a.t;
        let (wrun, wwait) = (
            (b.run_ns - a.run_ns) / 10_000_000,
            (b.wait_ns - a.wait_ns) / 10_000_000,
        );
        let runs = b.slices - a.slices;
        let mon = r.mon(&format!("aff_mon_{curve}"));
        // Wakeups in the window that found no idle CPU (the waking task's, nearly all of them).
        let fell_back = mon
            .as_ref()
            .map(|m| (path_sum(m, "fallback"), llc_sum(m, |l| l.wakeups)));
        if let Some(m) = mon {
            let u = m.llcs.get(&0).map(|l| (l.util_pct, l.nr_scan));
            v.info(format!(
                "affinity {curve} waking task: util_pct={} nr_scan={} | {} | {}| migrations={} steals={} tick_kicks={}",
                u.map_or(String::new(), |u| u.0.to_string()),
                u.map_or(String::new(), |u| u.1.to_string()),
                scan_line(&m),
                paths(&m),
                llc_sum(&m, |l| l.migrations),
                llc_sum(&m, |l| l.dispatch_llc_steal),
                llc_sum(&m, |l| l.tick_kicks)
            ));
        }
        let d = format!(
            "window={}s waking task ran {}s, waited {}s over {runs} runs, last on CPU {}; CPU {idle} idle {}s; CPU {start}'s bound loop ran {}s; others on CPU {idle} (ticks:pid:comm): [{}]",
            cs(win), cs(wrun), cs(wwait), b.cpu, cs(b.idle - a.idle), cs(b.ticks2 - a.ticks2),
            w.opt::<String>("others").unwrap_or_default().trim()
        );
        // It sleeps most of the time: queued behind a hog (a busy prev, no scan reaching the idle
        // CPU, nobody stealing it) it would wait a large part of the window. Under TCG a host
        // that deschedules QEMU stretches every wait too (0.03 ms a run on a quiet host, 2.7 ms
        // beside another VM), so a long wait fails only if placement explains it: more than 1 in
        // 10 wakeups fell back to a busy CPU, or the task ended up elsewhere than the idle CPU.
        let name = format!("affinity_wake_{curve}");
        let placed_idle =
            fell_back.is_some_and(|(fb, wk)| wk > 0 && fb * 10 <= wk) && b.cpu.to_string() == idle;
        let fb = fell_back.map_or("no monitor".into(), |(fb, wk)| {
            format!("{fb} of {wk} wakeups fell back")
        });
        if win > 0 && runs > 0 && wwait * 5 <= win {
            v.pass(&name, format!("{d}; {fb}"));
        } else if win > 0 && runs > 0 && placed_idle {
            v.pass(
                &name,
                format!("waited more than 20% of the window, with the wakeups placed on idle CPUs (the host stalled QEMU): {d}; {fb}"),
            );
        } else {
            v.fail(
                &name,
                format!("waited more than 20% of the window: {d}; {fb}"),
            );
        }

        let k = r.need_kv(&format!("aff_busy_{curve}"));
        let (a, b) = (probe(&k, "p0"), probe(&k, "p1"));
        let (win, bk, bi, bh) = (
            b.t - a.t,
            b.ticks - a.ticks,
            b.idle - a.idle,
            b.ticks2 - a.ticks2,
        );
        let d = format!(
            "window={}s unbound busy loop ran {}s, last on CPU {}; CPU {start}'s bound loop ran {}s; CPU {idle} idle {}s",
            cs(win), cs(bk), b.cpu, cs(bh), cs(bi)
        );
        // Work conservation: with a CPU free, neither loop may wait; sharing a CPU gives each at
        // most half the window. The idle CPU's /proc/stat idle time is only shown (it can lag on
        // 6.12).
        let name = format!("affinity_busy_{curve}");
        if win > 0 && bk * 100 >= win * 65 && bh * 100 >= win * 65 {
            v.pass(&name, d);
        } else {
            v.fail(
                &name,
                format!("both loops must get >= 65% of the window while CPU {idle} is free: {d}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_the_lower_middle() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.0);
    }

    #[test]
    fn perf_csv_counts() {
        let l = [
            "# started on x",
            "",
            "12,,cpu-migrations,100,100.00,,",
            "<not counted>,,context-switches,0,0,,",
        ];
        assert_eq!(perf_count(&l, "cpu-migrations"), Some(12.0));
        assert_eq!(perf_count(&l, "context-switches"), Some(0.0));
        assert_eq!(perf_count(&l[..2], "cpu-migrations"), None);
        assert_eq!(round(0.12345, 3), 0.123);
    }
}
