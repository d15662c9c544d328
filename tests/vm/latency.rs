//! latency.sh's verdicts: under a hackbench loop, what a woken task (cyclictest's thread, ten
//! 50 ms sleeps) waits under scx_sis, held against EEVDF's in the same boot, median of the rounds;
//! a fork storm does not starve busy tasks; the wait histogram shows the wait in `monitor` without
//! a benchmark.
//!
//! cyclictest's thread is judged by what the kernel counts it waited runnable per run
//! (schedstat's run_delay), not by cyclictest's own latency. Under TCG, most of that latency is
//! the timer interrupt's delivery to a busy vCPU: a SCHED_FIFO cyclictest, which the RT class runs
//! at once under any sched_ext scheduler, reads about as late under scx_sis as the SCHED_OTHER
//! one, and 2-3x EEVDF's (docs/bench/cyclictest-under-tcg.md). Its latencies are shown beside the
//! wait.

use crate::harness::GuestRun;
use crate::records::{llc_sum, round, Kv, Verdicts};

/// How much longer than EEVDF's a median may be. Looser than the bench's target (no worse):
/// TCG's spread over three rounds is wide, and this test must fail only on a real regression,
/// such as a wakee that waits out the running task's slice plus every queued task ahead of it.
const SLACK: f64 = 1.5;
/// The same for cyclictest's thread's wait per run. Looser: on 6.12.117 (HZ 1000, voluntary
/// preemption, where EEVDF's wakeup preemption is immediate and its ticks 1 ms apart) scx_sis's
/// thread waits 1.6-3.7x EEVDF's across boots, the most where EEVDF's own wait is shortest (about
/// 1 ms per run; scx_sis's own reads 2.7-4 ms); on 7.3.4 (HZ 250, lazy preemption) 0.6-1.4x. A gap
/// still open, which the bench measures; this check guards against a regression, such as a wakee
/// queued behind its CPU's whole queue (`--preset plain`'s FIFO), which waits some 30x.
const WAIT_SLACK: f64 = 6.0;

/// The median of `v` (the mean of the middle two for an even count); None when empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A judged probe: its check's name, what it measures, its value over one side's rounds, and
/// how much longer than EEVDF's it may be.
type Probe<'a> = (&'a str, &'a str, &'a dyn Fn(&[Kv]) -> Option<f64>, f64);

/// The median of `key` over one side's rounds.
fn side_median(rounds: &[Kv], key: &str) -> Option<f64> {
    median(rounds.iter().filter_map(|k| k.opt::<f64>(key)).collect())
}

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let (eevdf, sis) = (r.kvs("lat_eevdf"), r.kvs("lat_sis"));
    let complete = |rounds: &[Kv]| {
        !rounds.is_empty()
            && rounds.iter().all(|k| {
                k.n::<i64>("crc") == 0
                    && k.n::<i64>("fifo_rc") == 0
                    && k.opt::<i64>("n").unwrap_or(0) > 0
                    && k.opt::<i64>("fifo_n").unwrap_or(0) > 0
                    && k.opt::<i64>("runs").unwrap_or(0) > 0
                    && k.n::<i64>("spawn_rc") == 0
                    && k.n::<i64>("hb_alive") == 1
            })
    };
    let ok = v.check(
        "probes_complete",
        complete(&eevdf) && complete(&sis) && eevdf.len() == sis.len(),
        format!(
            "{} EEVDF and {} scx_sis rounds: both cyclictests and the spawn rc=0, their thread's \
             schedstat read, hackbench ran throughout",
            eevdf.len(),
            sis.len()
        ),
    );
    if !ok {
        for k in eevdf.iter().chain(&sis) {
            v.info(k.raw());
        }
        return;
    }

    // cyclictest's thread's wait per run (us), from the kernel's schedstat, pooled over the
    // rounds: the runs of a round are a few hundred, and EEVDF's own rounds spread 2.8x on
    // 6.12.117, so a median of three per-round ratios would judge the noise.
    let pooled_wait = |rounds: &[Kv]| {
        let sum = |key: &str| rounds.iter().map(|k| k.n::<f64>(key)).sum::<f64>();
        (sum("runs") > 0.0).then(|| sum("wait_ns") / sum("runs") / 1000.0)
    };
    let median_sleeps =
        |rounds: &[Kv]| median(rounds.iter().filter_map(|k| k.opt("sleeps_cs")).collect());
    // Each probe against EEVDF's: both sides' values, their ratio and the check.
    let probes: [Probe; 2] = [
        (
            "cyclictest_wait",
            "cyclictest's thread, waited runnable per run (schedstat; pooled), us",
            &pooled_wait,
            WAIT_SLACK,
        ),
        (
            "ten_sleeps",
            "ten 50 ms sleeps in a row (median), cs",
            &median_sleeps,
            SLACK,
        ),
    ];
    for (check, what, value, slack) in probes {
        let (Some(e), Some(s)) = (value(&eevdf), value(&sis)) else {
            v.fail(check, format!("{what}: missing in some round"));
            continue;
        };
        let ratio = if e > 0.0 { s / e } else { f64::INFINITY };
        v.check(
            check,
            ratio <= slack || s <= e,
            format!(
                "{what}: scx_sis {s:.0} vs EEVDF {e:.0} ({} rounds): {:.2}x, at most {slack}x",
                sis.len(),
                round(ratio, 2)
            ),
        );
    }
    // Shown, not judged: a new process (its start depends on where in the load it lands), and
    // cyclictest's own latencies beside the SCHED_FIFO control's, whose gap to EEVDF's is the
    // timer's delivery under TCG (above).
    let m = |rounds: &[Kv], key: &str| side_median(rounds, key).unwrap_or(0.0);
    let mut table = String::from("SIS-TABLE latency");
    for key in ["spawn_cs", "avg", "p99", "fifo_avg", "fifo_p99"] {
        table += &format!(" {key} eevdf={:.0} sis={:.0}", m(&eevdf, key), m(&sis, key));
    }
    v.lines.push(table);

    // A fork storm cannot starve the tasks already there: the busy loops keep at least half the
    // share of the machine they keep under EEVDF beside the same storm.
    let share = |side: &str| {
        r.kv(&format!("forks_{side}")).map(|k| {
            let ticks: f64 = k.n("loop_ticks");
            let hz_ticks = k.n::<f64>("window_cs") * 8.0; // USER_HZ 100 = cs, 8 CPUs
            (k.n::<i64>("rc"), ticks / hz_ticks.max(1.0))
        })
    };
    match (share("eevdf"), share("sis")) {
        (Some((erc, e)), Some((src, s))) => {
            v.check(
                "fork_storm",
                erc == 0 && src == 0 && s >= 0.5 * e,
                format!(
                    "8 busy loops beside stress-ng --fork 8: their share {s:.2} under scx_sis, \
                     {e:.2} under EEVDF (at least half of it), stress-ng rc={src}/{erc}"
                ),
            );
        }
        _ => v.fail("fork_storm", "no forks_eevdf or forks_sis record"),
    }

    // The wait histogram: every scx_sis window counted its wakeups' waits, with p50 <= p99.
    let mons: Vec<_> = (1..=sis.len())
        .filter_map(|i| r.mon(&format!("mon_{i}")))
        .collect();
    let histo_ok = mons.len() == sis.len()
        && mons.iter().all(|m| {
            let waits = llc_sum(m, |l| l.wake_waits);
            let in_hist = llc_sum(m, |l| l.wake_wait_hist.iter().sum());
            waits > 0
                && waits == in_hist
                && m.llcs
                    .values()
                    .all(|l| l.wake_waits == 0 || (0.0..=l.wait_p99_us).contains(&l.wait_p50_us))
        });
    let detail = mons
        .iter()
        .map(|m| {
            let l = m.llcs.values().next();
            format!(
                "waits={} llc0 p50={:.0}us p99={:.0}us preempts={} clock_behind={}",
                llc_sum(m, |l| l.wake_waits),
                l.map_or(0.0, |l| l.wait_p50_us),
                l.map_or(0.0, |l| l.wait_p99_us),
                llc_sum(m, |l| l.wakeup_preempts),
                llc_sum(m, |l| l.clock_behind),
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    v.check(
        "wait_histogram",
        histo_ok,
        format!(
            "{} of {} windows: every wait counted once in its histogram, p50 <= p99: {detail}",
            mons.len(),
            sis.len()
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
