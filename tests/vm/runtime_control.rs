//! runtime_control.sh's monitor objects (records mon <phase>), decoded as `Metrics`: one entry
//! per LLC of the guest's topology (its `SIS-TEST PASS topology ... llc=[0-3 4-7]` line) with
//! that LLC's CPU count, the tunables' generation of each phase, and prev_almost_idle present
//! only while prev-bias is on.

use crate::harness::GuestRun;
use crate::records::{llc_sum, path_sum, Verdicts};

/// The seconds a `--interval 2` report may cover.
const SECS: std::ops::Range<f64> = 1.0..30.0;

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let llc_sizes: Vec<u64> = run
        .passes
        .iter()
        .find_map(|l| l.strip_prefix("SIS-TEST PASS topology "))
        .and_then(|l| l.split("llc=[").nth(1)?.split(']').next())
        .expect("no 'SIS-TEST PASS topology ... llc=[...]' line")
        .split_whitespace()
        .map(|g| {
            g.split(',')
                .map(|r| match r.split_once('-') {
                    Some((a, b)) => b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1,
                    None => 1,
                })
                .sum()
        })
        .collect();
    let want_keys: Vec<u32> = (0..llc_sizes.len() as u32).collect();
    // phase -> (its check, generation, prev_almost_idle must be > 0 (Some(true)), == 0 (Some(false)), any)
    let want = [
        ("on", "prev_bias_on", 1, Some(true)),
        ("off", "prev_bias_off", 2, Some(false)),
        ("on_again", "prev_bias_on_again", 3, Some(true)),
        ("restarted", "restart_monitor", 1, None),
    ];
    for (phase, name, generation, almost_on) in want {
        let Some(rc) = r.kv(&format!("{phase}_rc")) else {
            continue;
        };
        let rc: i32 = rc.n("rc");
        let m = r.mon(phase);
        let keys: Vec<u32> = m.iter().flat_map(|m| m.llcs.keys().copied()).collect();
        let wakeups = m.as_ref().map_or(0, |m| llc_sum(m, |l| l.wakeups));
        let almost = m.as_ref().map_or(0, |m| path_sum(m, "prev_almost_idle"));
        let got_gen = m.as_ref().map(|m| m.generation);
        let secs = m.as_ref().map_or(0.0, |m| m.secs);
        let detail = format!(
            "monitor rc={rc} gen={} wakeups={wakeups} prev_almost_idle={almost} llcs={keys:?} secs={secs:.2}{}",
            got_gen.map_or("none".into(), |g| g.to_string()),
            match r.text(phase) {
                t if t.is_empty() => String::new(),
                t => format!(" stderr: {t}"),
            }
        );
        if phase == "on" {
            v.check(
                "monitor_json_llcs",
                rc == 0 && keys == want_keys && !keys.is_empty(),
                format!("one entry per LLC: want keys {want_keys:?} (topology LLCs {llc_sizes:?}); {detail}"),
            );
        }
        if let Some(m) = &m {
            let mut sizes: Vec<u64> = m.llcs.values().map(|l| l.cpus).collect();
            let mut topo = llc_sizes.clone();
            sizes.sort_unstable();
            topo.sort_unstable();
            v.check(
                &format!("monitor_json_cpus_{phase}"),
                sizes == topo,
                format!("CPUs per LLC {sizes:?}, topology {topo:?}"),
            );
            v.check(
                &format!("monitor_json_secs_{phase}"),
                SECS.contains(&secs),
                format!("secs={secs} (want {SECS:?})"),
            );
        }
        let almost_ok = match almost_on {
            Some(true) => almost > 0,
            Some(false) => almost == 0,
            None => true,
        };
        let keys_ok = almost_on.is_some() || keys == want_keys;
        let want_text = match almost_on {
            Some(true) => format!("prev_almost_idle>0 wakeups>0 gen={generation}"),
            Some(false) => format!("prev_almost_idle=0 wakeups>0 gen={generation}"),
            None => format!("wakeups>0 gen={generation} llcs={want_keys:?}"),
        };
        let ok = rc == 0 && wakeups > 0 && got_gen == Some(generation) && almost_ok && keys_ok;
        if ok && phase == "restarted" {
            v.pass(
                name,
                format!("stats socket of the new instance answers: {detail}"),
            );
        } else if ok {
            v.pass(name, detail);
        } else {
            v.fail(name, format!("want {want_text}; {detail}"));
        }
    }
    let phases = r.names("mon");
    let want_phases: Vec<&str> = want.iter().map(|w| w.0).collect();
    v.check(
        "monitor_json_phases",
        phases == want_phases,
        format!("monitor objects of phases {phases:?}, want {want_phases:?}"),
    );
}
