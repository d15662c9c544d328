//! fleet.sh's tune storm: while the lab's tune-storm and a `tune` loop changed the tunables under
//! hackbench, every snapshot BPF took was of a whole copy. `tun_raced` counts the snapshots whose
//! copy raced a write and were taken again (so the storm did reach the race: without it the check
//! proves nothing), `tun_torn` those left without a whole copy, which must stay 0.

use crate::harness::GuestRun;
use crate::records::{llc_sum, Verdicts};

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let Some(tunes) = r.kv("tune_storm_tunes") else {
        return;
    };
    let Some(m) = r.mon_or_fail("tune_storm", v, "tune_storm_no_torn_snapshot") else {
        return;
    };
    let raced = llc_sum(&m, |l| l.tun_raced);
    let torn = llc_sum(&m, |l| l.tun_torn);
    let wakeups = llc_sum(&m, |l| l.wakeups);
    let d = format!(
        "{} writes by the lab's tune-storm and {} tunes ({} failed) over {:.1} s: {wakeups} wakeups, snapshots raced and retaken {raced}, torn {torn}",
        tunes.s("writes"),
        tunes.s("tunes"),
        tunes.s("fails"),
        m.secs
    );
    if torn != 0 {
        v.fail("tune_storm_no_torn_snapshot", d);
    } else if raced == 0 {
        v.fail(
            "tune_storm_no_torn_snapshot",
            format!("no snapshot raced a write, the storm did not test it: {d}"),
        );
    } else {
        v.pass("tune_storm_no_torn_snapshot", d);
    }
}
