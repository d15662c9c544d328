//! wakeq.sh's verdicts: every configuration's workloads complete and its shard books balance
//! (one SIS-TABLE row each, measurements for the record), shard dispatch respects affinity, 20
//! live toggles under hackbench lose nothing.

use scx_sis::stats::Metrics;

use crate::harness::GuestRun;
use crate::records::{llc_sum, Verdicts};

/// "enqueued ran left depth" summed over every shard of every LLC.
fn books(m: &Metrics) -> [u64; 4] {
    let s = |f: fn(&scx_sis::stats::ShardMetrics) -> u64| {
        llc_sum(m, |l| l.shards.values().map(f).sum())
    };
    [
        s(|x| x.enqueued),
        s(|x| x.ran),
        s(|x| x.left),
        s(|x| x.depth),
    ]
}

/// The number after "Time:" in hackbench's output.
fn hackbench_time(lines: &[&str]) -> Option<String> {
    lines
        .iter()
        .find_map(|l| l.strip_prefix("Time:"))
        .map(|t| t.trim().to_string())
}

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    for c in r.kvs("wq_run") {
        let name = c.s("name");
        let (wrc, hrc): (i32, i32) = (c.n("wrc"), c.n("hrc"));
        let wl = r.json(&format!("wl_{name}"));
        let num = |k: &str| wl.as_ref().and_then(|j| j[k].as_f64());
        let (p50, p99, rps) = (num("p50_us"), num("p99_us"), num("requests_per_sec"));
        let hb = hackbench_time(&r.texts(&format!("hb_{name}")));
        let o = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
        let rps_int = rps.map_or(String::new(), |x| (x.trunc() as i64).to_string());
        let hb_s = hb.clone().unwrap_or_default();
        let row = format!(
            "SIS-TABLE {name} wakelat_p50_us={} wakelat_p99_us={} requests_per_s={rps_int} hackbench_s={hb_s}",
            o(p50),
            o(p99)
        );
        v.lines.push(row);
        let cname = format!("completes_{name}");
        if wrc == 0 && hrc == 0 && hb.is_some() && p99.is_some() {
            v.pass(
                &cname,
                format!(
                    "wakelat rc=0 p99={}us rps={rps_int}, hackbench rc=0 time={hb_s}s",
                    o(p99)
                ),
            );
        } else {
            v.fail(&cname, format!("wakelat rc={wrc} hackbench rc={hrc}"));
        }

        let bname = format!("books_{name}");
        let Some(m) = r.mon_or_fail(&bname, v, &bname) else {
            continue;
        };
        let [e, ran, left, depth] = books(&m);
        let d = format!("enqueued={e} ran={ran} left={left} queued_now={depth}");
        let expect = c.s("expect");
        if e != ran + left + depth {
            v.fail(&bname, format!("{d}: enqueued != ran + left + queued"));
        } else if expect == "used" && e == 0 {
            v.fail(
                &bname,
                format!("{d}: the wakequeue was on but nothing was queued"),
            );
        } else if expect == "unused" && e != 0 {
            v.fail(
                &bname,
                format!("{d}: the wakequeue was off but tasks were queued"),
            );
        } else {
            v.pass(&bname, d);
        }
    }

    if let Some(a) = r.kv("affinity") {
        let (rc, samples, outside): (i32, u64, u64) = (a.n("rc"), a.n("samples"), a.n("outside"));
        if rc == 0 && samples > 0 && outside == 0 {
            v.pass("affinity", format!("hackbench on CPUs 4-5 with the wakequeue on: rc=0, {samples} samples, none outside 4-5"));
        } else {
            v.fail(
                "affinity",
                format!("rc={rc} samples={samples} outside_4_5={outside}"),
            );
        }
    }

    if let Some(t) = r.kv("toggle") {
        let (rc, bad): (i32, u64) = (t.n("rc"), t.n("failed_tunes"));
        let state = t.s("state");
        // Without a final object the queues were not shown drained: a failure.
        let depth = r.mon("toggle_final").map(|m| books(&m)[3]);
        let d = depth.map_or("none".to_string(), |d| d.to_string());
        let time = hackbench_time(&r.texts("hb_toggle")).unwrap_or_default();
        if rc == 0 && bad == 0 && state == "enabled" && t.s("alive") == "yes" && depth == Some(0) {
            v.pass(
                "toggle20",
                format!("hackbench rc=0 Time: {time}, 40 tunes ok, still enabled, queued now={d}"),
            );
        } else {
            v.fail(
                "toggle20",
                format!("hackbench rc={rc} failed_tunes={bad} state={state} queued_now={d}"),
            );
        }
    }
}
