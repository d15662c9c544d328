//! steal.sh's verdicts (issue 13): its "SIS-JSON <phase> <object>" lines decoded as the library's
//! own `Metrics`, summed over the LLCs, and judged here.

use std::collections::BTreeMap;

use scx_sis::stats::{LlcMetrics, Metrics};

/// Each phase's window, its LLCs summed into one LlcMetrics (counters only).
fn windows(console: &str) -> BTreeMap<String, LlcMetrics> {
    let mut out = BTreeMap::new();
    for line in console.lines() {
        let Some(rest) = line.find("SIS-JSON ").map(|i| &line[i + 9..]) else {
            continue;
        };
        let (phase, json) = rest.split_once(' ').unwrap_or((rest, ""));
        let m: Metrics = serde_json::from_str(json.trim())
            .unwrap_or_else(|e| panic!("SIS-JSON {phase}: not a monitor object ({e}): {json:?}"));
        let mut sum = LlcMetrics::default();
        for l in m.llcs.values() {
            sum.wakeups += l.wakeups;
            sum.steal_scans += l.steal_scans;
            sum.steal_looked += l.steal_looked;
            sum.steal_from_kicker += l.steal_from_kicker;
            sum.steal_skip_young += l.steal_skip_young;
            sum.steal_skip_hot += l.steal_skip_hot;
            sum.dispatch_llc_steal += l.dispatch_llc_steal;
            sum.dispatch_remote_steal += l.dispatch_remote_steal;
            sum.tick_kicks += l.tick_kicks;
            sum.wakeup_kicks += l.wakeup_kicks;
            sum.migrations += l.migrations;
            sum.pulls += l.pulls;
            sum.pulls_remote += l.pulls_remote;
            sum.rescues += l.rescues;
            for (k, v) in &l.paths {
                *sum.paths.entry(k.clone()).or_default() += v;
            }
            sum.steal_wait_hist.resize(l.steal_wait_hist.len(), 0);
            for (a, b) in sum.steal_wait_hist.iter_mut().zip(&l.steal_wait_hist) {
                *a += b;
            }
        }
        out.insert(phase.to_string(), sum);
    }
    out
}

fn line(phase: &str, m: &LlcMetrics) -> String {
    format!(
        "{phase}: wakeups={} migrations={} steals={}+{} (from kicker {}) skipped young={} hot={} \
         scans={} looked={} kicks tick={} wakeup={} pulls={}+{} rescues={} paths {:?}",
        m.wakeups,
        m.migrations,
        m.dispatch_llc_steal,
        m.dispatch_remote_steal,
        m.steal_from_kicker,
        m.steal_skip_young,
        m.steal_skip_hot,
        m.steal_scans,
        m.steal_looked,
        m.tick_kicks,
        m.wakeup_kicks,
        m.pulls,
        m.pulls_remote,
        m.rescues,
        m.paths.iter().filter(|(_, v)| **v > 0).collect::<Vec<_>>()
    )
}

/// The verdicts; `say` prints each window's figures.
pub fn check(console: &str, say: &dyn Fn(&str)) {
    let w = windows(console);
    let get = |p: &str| {
        w.get(p).unwrap_or_else(|| {
            panic!(
                "steal.sh printed no SIS-JSON {p} window; got {:?}",
                w.keys()
            )
        })
    };
    for (p, m) in &w {
        say(&format!("    {}", line(p, m)));
    }
    let (idle, dfl, eager, lazy) = (
        get("idle"),
        get("hb_default"),
        get("hb_eager"),
        get("hb_lazy"),
    );

    // An idle CPU with nothing to steal looks at the CPUs that may have work, not at every CPU.
    assert!(
        idle.steal_scans > 0,
        "idle: no idle dispatch looked for work: {}",
        line("idle", idle)
    );
    let per_scan = idle.steal_looked as f64 / idle.steal_scans as f64;
    assert!(
        per_scan < 1.0,
        "idle: {per_scan:.2} CPUs looked at per idle dispatch (want < 1; every CPU would be 7): {}",
        line("idle", idle)
    );

    // With steal-min 0 no head is left in place; with 100 ms young heads are, and far fewer
    // tasks are stolen. (Under TCG most heads have already waited the default's 0.5 ms, so the
    // default's skips are reported, not judged.)
    let skipped = |m: &LlcMetrics| m.steal_skip_young + m.steal_skip_hot;
    let steals = |m: &LlcMetrics| m.dispatch_llc_steal + m.dispatch_remote_steal;
    assert_eq!(
        skipped(eager),
        0,
        "steal-min 0 skipped heads: {}",
        line("hb_eager", eager)
    );
    assert!(
        skipped(lazy) > 0 && steals(lazy) < steals(eager),
        "steal-min 100 ms should leave young heads and steal less than steal-min 0: {} / {}",
        line("hb_lazy", lazy),
        line("hb_eager", eager)
    );

    // A stealer woken by a busy CPU takes that CPU's work first.
    assert!(
        eager.tick_kicks + eager.wakeup_kicks > 0 && eager.steal_from_kicker > 0,
        "steal-min 0: kicks sent but no steal from the kicker: {}",
        line("hb_eager", eager)
    );

    // Every steal is in the wait histogram (the wakequeue is off, so every steal is steal()'s).
    for (p, m) in [("hb_default", dfl), ("hb_eager", eager)] {
        let in_hist: u64 = m.steal_wait_hist.iter().sum();
        assert_eq!(
            in_hist,
            steals(m),
            "{p}: steal_wait_hist total vs steals: {}",
            line(p, m)
        );
    }
}
