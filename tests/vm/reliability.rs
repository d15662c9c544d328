//! reliability.sh's verdicts on numbers: during each load the affinity checks (pinned tasks,
//! re-masked tasks, per-CPU kthreads), stress-ng's exit, the monitor over the load, hackbench 8x;
//! then the wakequeue used, the daemon's RSS, the task a SCHED_FIFO hog displaced, the CPU back
//! after hotplug and the stats after it. The operational checks (bad input, faults, unload) stay
//! in the guest.

use crate::harness::GuestRun;
use crate::records::{cs, llc_sum, Records, Verdicts};

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let Some(p) = r.kv("rel_params") else {
        return;
    };
    let (secs, aff, kw_max, n): (u64, i64, i64, u32) =
        (p.n("secs"), p.n("aff"), p.n("kw_max_cs"), p.n("n"));
    for ln in ["features", "wakeq"] {
        if r.has("kv", &format!("aff_pinned_{ln}")) {
            affinity(r, v, ln, aff, kw_max, n);
        }
        if let Some(s) = r.kv(&format!("stress_{ln}")) {
            let (rc, wall) = (s.n::<i32>("rc"), cs(s.n("wall_cs")));
            let name = format!("stress_{ln}");
            if rc == 0 {
                v.pass(
                    &name,
                    format!("stress-ng 2x{n} workers {secs}s rc=0 wall={wall}s"),
                );
            } else {
                v.fail(
                    &name,
                    format!("stress-ng rc={rc} wall={wall}s: {}", r.text(&name)),
                );
            }
        }
        if r.has("kv", &format!("mon_{ln}_rc")) {
            monitor(r, v, ln);
        }
        if r.has("kv", &format!("hackbench_8x_{ln}")) {
            hackbench(r, v, &format!("hackbench_8x_{ln}"));
        }
    }
    if r.has("kv", "mon_wakeq_rc") {
        let enq: u64 = r
            .mons("mon_wakeq")
            .iter()
            .map(|m| llc_sum(m, |l| l.shards.values().map(|s| s.enqueued).sum()))
            .sum();
        if enq > 0 {
            v.pass(
                "wakeq_used",
                format!("wakeq shards enqueued {enq} wakeups during the load"),
            );
        } else {
            v.fail(
                "wakeq_used",
                format!(
                    "the wakequeue was on but the monitor saw no shard enqueue (enqueued={enq})"
                ),
            );
        }
    }
    if let Some(k) = r.kv("rss") {
        rss(v, &k);
    }
    if let Some(k) = r.kv("rt_preempt") {
        let (got, win): (i64, i64) = (k.n("got"), k.n("win"));
        let rescues = r.mon("rt_mon").map_or(0, |m| llc_sum(&m, |l| l.rescues));
        let d = format!(
            "busy loop ran {got} ticks in {win} cs (min 80%) with a SCHED_FIFO hog on cpu{}, last on cpu{}; rescues={rescues}; state={}",
            k.s("cpu"),
            k.s("on"),
            k.s("state")
        );
        v.check(
            "rt_preempt",
            got >= win * 4 / 5 && k.s("state") == "enabled",
            d,
        );
    }
    if let Some(k) = r.kv("hotplug_cpu_back") {
        let hcpu = p.s("hcpu");
        let ticks: i64 = k.n("ticks");
        let d = format!(
            "cpu{hcpu} online={}, online CPUs {}; a task pinned to it ran {ticks} ticks in 3 s on CPU {}; {}",
            k.s("online"),
            k.s("online_cpus"),
            k.s("on"),
            k.s("layout")
        );
        let ok = k.s("online") == "1" && ticks >= 30 && k.s("on") == hcpu;
        v.check("hotplug_cpu_back", ok, d);
    }
    if let Some(k) = r.kv("hp_mon_rc") {
        let rc: i32 = k.n("rc");
        let wakeups = r.mon("hp_mon").map_or(0, |m| llc_sum(&m, |l| l.wakeups));
        if rc == 0 && wakeups > 0 {
            v.pass(
                "hotplug_stats",
                format!("monitor after the restarts: rc=0 wakeups={wakeups}"),
            );
        } else {
            v.fail(
                "hotplug_stats",
                format!(
                    "monitor after the restarts: rc={rc} wakeups={wakeups} {}",
                    r.text("hp_mon")
                ),
            );
        }
    }
}

/// The affinity checks of load `ln` (records aff_pinned_, smp_pinned_, mv_run_, mv_sleep_, kw_,
/// smp_kthreads_).
fn affinity(r: &Records, v: &mut Verdicts, ln: &str, aff: i64, kw_max: i64, n: u32) {
    let k = r.need_kv(&format!("aff_pinned_{ln}"));
    let smp = r.need_kv(&format!("smp_pinned_{ln}"));
    let (ta, tb, cc): (i64, i64, i64) = (k.n("ta"), k.n("tb"), k.n("cc"));
    // Spinners >= 1% of the window's AFF*100 ticks; the sleeper >= 3 rounds (each forks `sleep`,
    // which takes seconds under load in TCG, EEVDF included).
    let min = aff;
    let d = format!(
        "{aff}s: spinner@0 ticks={ta} spinner@{} ticks={tb} (min {min}) sleeper@{} rounds={cc} (min 3); {}",
        n - 1,
        k.s("half"),
        smp.raw()
    );
    let ok = ta >= min
        && tb >= min
        && cc >= 3
        && smp.n::<u64>("bad") == 0
        && smp.n::<u64>("samples") != 0;
    v.check(&format!("affinity_pinned_{ln}"), ok, d);

    // Moved: after each change it ran again within 20 s (no "stuck") and only inside the new
    // mask; at least one change made. "held" (an RT task held the mask's CPUs) is only reported.
    for (task, unit) in [("run", "ticks"), ("sleep", "rounds")] {
        let m = r.need_kv(&format!("mv_{task}_{ln}"));
        let line = m.raw().split_once(' ').map_or("", |x| x.1);
        let d = format!("{task} task (progress {}:{unit}): {line}", m.s("progress"));
        let name = format!("affinity_moved_{task}_{ln}");
        if m.n::<u64>("bad_cpu") == 0 && m.n::<u64>("stuck") == 0 && m.n::<u64>("changes") != 0 {
            v.pass(&name, d);
        } else {
            v.fail(&name, format!("{d} (want >= 1 change, bad_cpu=0 stuck=0)"));
        }
    }

    // Per-CPU kthreads: every stat_refresh write returned within KW_MAX; ksoftirqd/N and
    // kworker/N:M only seen on CPU N ("checked=0" is reported, not failed).
    let kw = r.need_kv(&format!("kw_{ln}"));
    let kth = r.need_kv(&format!("smp_kthreads_{ln}"));
    let d = format!(
        "stat_refresh {} (bound {kw_max}cs); kthreads {}",
        kw.raw(),
        kth.raw()
    );
    let ok = kw.n::<u64>("failed") == 0
        && kw.n::<u64>("writes") != 0
        && kw.n::<i64>("max_cs") <= kw_max
        && kth.n::<u64>("bad") == 0;
    v.check(&format!("kthreads_{ln}"), ok, d);
}

fn monitor(r: &Records, v: &mut Verdicts, ln: &str) {
    let rc: i32 = r.need_kv(&format!("mon_{ln}_rc")).n("rc");
    let mons = r.mons(&format!("mon_{ln}"));
    let wakeups: u64 = mons.iter().map(|m| llc_sum(m, |l| l.wakeups)).sum();
    let enq: u64 = mons
        .iter()
        .map(|m| llc_sum(m, |l| l.shards.values().map(|s| s.enqueued).sum()))
        .sum();
    let d = format!(
        "monitor --json --interval 5 over the load: rc={rc} objects={} wakeups={wakeups} wakeq_enqueued={enq}",
        mons.len()
    );
    let name = format!("monitor_{ln}");
    if rc == 0 && mons.len() >= 2 && wakeups > 0 {
        v.pass(&name, d);
    } else {
        let errs: Vec<&str> = r.texts(&format!("mon_{ln}")).into_iter().take(3).collect();
        v.fail(
            &name,
            format!(
                "{d} (want rc=0, >= 2 objects, wakeups > 0): {}",
                errs.join("|")
            ),
        );
    }
}

/// rec_hackbench's records: rc 0 and a Time line.
fn hackbench(r: &Records, v: &mut Verdicts, name: &str) {
    let k = r.need_kv(name);
    let (rc, wall, args) = (k.n::<i32>("rc"), cs(k.n("wall_cs")), k.s("args"));
    let out = r.texts(name);
    match out.iter().find(|l| l.starts_with("Time:")) {
        Some(time) if rc == 0 => v.pass(name, format!("hackbench {args} rc=0 {time} wall={wall}s")),
        _ => {
            let tail = out[out.len().saturating_sub(3)..].join(" ");
            v.fail(
                name,
                format!("hackbench {args} rc={rc} wall={wall}s: {tail}"),
            );
        }
    }
}

/// Bound: 25% of the first sample + 2 MB. The first sample is taken 2 s after the scheduler was
/// enabled, so pages touched later for the first time (stats rendering, the stats server's
/// per-client thread and buffers, malloc arenas of threads that start later) are growth that is
/// not a leak; 2 MB covers those, 25% covers a larger binary or topology. A leak per stats
/// interval (1 s here) or per monitor request shows up above it within 2 x SIS_REL_SECS.
fn rss(v: &mut Verdicts, k: &crate::records::Kv) {
    let (start, end): (i64, i64) = (k.n("start"), k.n("end"));
    let max = start + start / 4 + 2048;
    let d = format!(
        "daemon pid {} VmRSS start={start}kB end={end}kB growth={}kB bound={max}kB (25% + 2 MB) over {}; samples: {}",
        k.s("pid"),
        end - start,
        k.s("span"),
        k.s("samples")
    );
    if k.s("alive") != "yes" {
        v.fail(
            "rss",
            format!("the daemon died before the end of the load: {d}"),
        );
    } else {
        v.check("rss", start > 0 && end > 0 && end <= max, d);
    }
}
