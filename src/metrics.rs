//! What the daemon publishes through scx_stats (the scx convention: other
//! tools can read it from /var/run/scx/root/stats) and how it is rendered:
//! a per-LLC table, JSON, and a bpftrace-style cost histogram.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use scx_stats::prelude::*;
use scx_stats_derive::{stat_doc, Stats};
use serde::{Deserialize, Serialize};

use crate::bpf_intf::*;
use crate::stats::{Counters, PATH_NAMES};

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top)]
pub struct Metrics {
    #[stat(desc = "Monotonic time of the snapshot in microseconds")]
    pub at_us: u64,
    #[stat(desc = "Seconds covered by this report (0 for a raw snapshot)")]
    pub secs: f64,
    #[stat(desc = "Generation of the tunables in force")]
    pub generation: u64,
    #[stat(desc = "Per-LLC statistics, by LLC index")]
    pub llcs: BTreeMap<u32, LlcMetrics>,
}

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "Statistics of one LLC")]
pub struct LlcMetrics {
    #[stat(desc = "CPUs in the LLC")]
    pub cpus: u64,
    #[stat(desc = "Summed utilization in percent of the LLC's capacity")]
    pub util_pct: f64,
    #[stat(desc = "CPUs a wakeup may scan for an idle one (SIS_UTIL)")]
    pub nr_scan: u64,
    #[stat(desc = "Wakeups (select_cpu calls)")]
    pub wakeups: u64,
    #[stat(desc = "Wakeups by placement path")]
    pub paths: BTreeMap<String, u64>,
    #[stat(desc = "Wakeups sent straight to an idle CPU")]
    pub direct_dispatches: u64,
    #[stat(desc = "Tasks that ran on another CPU than last time")]
    pub migrations: u64,
    #[stat(desc = "Dispatches from the CPU's own DSQ")]
    pub dispatch_local: u64,
    #[stat(desc = "Dispatches stolen from a CPU of the same LLC")]
    pub dispatch_llc_steal: u64,
    #[stat(desc = "Dispatches stolen from another LLC")]
    pub dispatch_remote_steal: u64,
    #[stat(desc = "Idle CPUs kicked by a busy CPU's tick")]
    pub tick_kicks: u64,
    #[stat(desc = "Dispatches that kept the running task, still ahead in vtime")]
    pub dispatch_keep: u64,
    #[stat(desc = "Busy CPUs at slice end that took a task lagging in vtime from their LLC")]
    pub pulls: u64,
    #[stat(desc = "Busy CPUs at slice end that took a task lagging in vtime from another LLC")]
    pub pulls_remote: u64,
    #[stat(
        desc = "Tasks sent to, or idle CPUs woken for, work waiting on a CPU a higher class took"
    )]
    pub rescues: u64,
    #[stat(
        desc = "Wakeups placed on a CPU a higher class (RT, deadline) already held when the decision began"
    )]
    pub held_wakeups: u64,
    #[stat(desc = "Wakeups whose prev CPU a higher class held, placed elsewhere")]
    pub held_avoided: u64,
    #[stat(desc = "Wakees earlier in vtime that preempted the running task")]
    pub wakeup_preempts: u64,
    #[stat(desc = "Idle CPUs kicked to take a wakee queued behind a busy CPU")]
    pub wakeup_kicks: u64,
    #[stat(desc = "llc_scan stages run")]
    pub scan_runs: u64,
    #[stat(desc = "llc_scan stages skipped because nr_scan was 0")]
    pub scan_skipped: u64,
    #[stat(desc = "Sum of the scan depth limits used")]
    pub scan_depth: u64,
    #[stat(desc = "CPUs tested by llc_scan")]
    pub scan_visited: u64,
    #[stat(desc = "llc_scan stages that found an idle CPU")]
    pub scan_found: u64,
    #[stat(desc = "Total select_cpu cost in ns")]
    pub select_ns: u64,
    #[stat(desc = "select_cpu cost histogram: bucket i counts calls of [2^i, 2^(i+1)) ns")]
    pub select_ns_hist: Vec<u64>,
    #[stat(desc = "Wakeups queued in this LLC's wakequeue shards (by CPUs of this LLC)")]
    pub wakeq_enqueued: u64,
    #[stat(desc = "Dispatches from the CPU's own shard")]
    pub wakeq_dispatch_own: u64,
    #[stat(desc = "Dispatches from another shard of the LLC")]
    pub wakeq_dispatch_other: u64,
    #[stat(desc = "Shard-queued tasks that started running on this LLC")]
    pub wakeq_waits: u64,
    #[stat(desc = "Their summed wait, enqueue to running, ns")]
    pub wakeq_wait_ns: u64,
    #[stat(desc = "Wakequeue wait histogram: bucket i counts waits of [2^i, 2^(i+1)) ns")]
    pub wakeq_wait_hist: Vec<u64>,
    #[stat(desc = "Per-shard wakequeue statistics, by shard index")]
    pub shards: BTreeMap<u32, ShardMetrics>,
}

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "Statistics of one wakequeue shard")]
pub struct ShardMetrics {
    #[stat(desc = "Tasks queued")]
    pub enqueued: u64,
    #[stat(desc = "Queued tasks that then ran")]
    pub ran: u64,
    #[stat(desc = "Queued tasks that left without running here (requeued, exited)")]
    pub left: u64,
    #[stat(desc = "Tasks queued now (sampled every SIS_UTIL period)")]
    pub depth: u64,
    #[stat(desc = "Largest depth seen")]
    pub max_depth: u64,
}

impl ShardMetrics {
    fn delta(&self, e: &Self) -> Self {
        Self {
            enqueued: self.enqueued.saturating_sub(e.enqueued),
            ran: self.ran.saturating_sub(e.ran),
            left: self.left.saturating_sub(e.left),
            ..self.clone()
        }
    }
}

impl LlcMetrics {
    pub fn from_counters(c: &Counters, cpus: usize, util: u32, nr_scan: u32) -> Self {
        let get = |k: sis_counter| c.get(k);
        Self {
            cpus: cpus as u64,
            util_pct: util as f64 * 100.0 / (cpus.max(1) as f64 * SIS_CAPACITY_F),
            nr_scan: nr_scan as u64,
            wakeups: get(sis_counter_SIS_CNT_WAKEUPS),
            paths: PATH_NAMES
                .iter()
                .zip(c.paths)
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
            direct_dispatches: get(sis_counter_SIS_CNT_DIRECT_DISPATCH),
            migrations: get(sis_counter_SIS_CNT_MIGRATIONS),
            dispatch_local: get(sis_counter_SIS_CNT_DISPATCH_LOCAL),
            dispatch_llc_steal: get(sis_counter_SIS_CNT_DISPATCH_LLC),
            dispatch_remote_steal: get(sis_counter_SIS_CNT_DISPATCH_REMOTE),
            tick_kicks: get(sis_counter_SIS_CNT_TICK_KICKS),
            dispatch_keep: get(sis_counter_SIS_CNT_DISPATCH_KEEP),
            pulls: get(sis_counter_SIS_CNT_PULLS),
            pulls_remote: get(sis_counter_SIS_CNT_PULLS_REMOTE),
            rescues: get(sis_counter_SIS_CNT_RESCUES),
            held_wakeups: get(sis_counter_SIS_CNT_HELD_WAKEUPS),
            held_avoided: get(sis_counter_SIS_CNT_HELD_AVOIDED),
            wakeup_preempts: get(sis_counter_SIS_CNT_WAKEUP_PREEMPTS),
            wakeup_kicks: get(sis_counter_SIS_CNT_WAKEUP_KICKS),
            scan_runs: get(sis_counter_SIS_CNT_SCAN_RUNS),
            scan_skipped: get(sis_counter_SIS_CNT_SCAN_SKIPPED),
            scan_depth: get(sis_counter_SIS_CNT_SCAN_DEPTH),
            scan_visited: get(sis_counter_SIS_CNT_SCAN_VISITED),
            scan_found: get(sis_counter_SIS_CNT_SCAN_FOUND),
            select_ns: get(sis_counter_SIS_CNT_COST_NS),
            select_ns_hist: c.cost_hist.to_vec(),
            wakeq_enqueued: get(sis_counter_SIS_CNT_WAKEQ_ENQ),
            wakeq_dispatch_own: get(sis_counter_SIS_CNT_WAKEQ_DISP_OWN),
            wakeq_dispatch_other: get(sis_counter_SIS_CNT_WAKEQ_DISP_OTHER),
            wakeq_waits: get(sis_counter_SIS_CNT_WAKEQ_WAITS),
            wakeq_wait_ns: get(sis_counter_SIS_CNT_WAKEQ_WAIT_NS),
            wakeq_wait_hist: c.wakeq_wait_hist.to_vec(),
            shards: BTreeMap::new(),
        }
    }

    /// Counters become the growth since `e`; gauges (cpus, util, nr_scan) stay current.
    fn delta(&self, e: &Self) -> Self {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Self {
            wakeups: d(self.wakeups, e.wakeups),
            paths: self
                .paths
                .iter()
                .map(|(k, v)| (k.clone(), d(*v, e.paths.get(k).copied().unwrap_or(0))))
                .collect(),
            direct_dispatches: d(self.direct_dispatches, e.direct_dispatches),
            migrations: d(self.migrations, e.migrations),
            dispatch_local: d(self.dispatch_local, e.dispatch_local),
            dispatch_llc_steal: d(self.dispatch_llc_steal, e.dispatch_llc_steal),
            dispatch_remote_steal: d(self.dispatch_remote_steal, e.dispatch_remote_steal),
            tick_kicks: d(self.tick_kicks, e.tick_kicks),
            dispatch_keep: d(self.dispatch_keep, e.dispatch_keep),
            pulls: d(self.pulls, e.pulls),
            pulls_remote: d(self.pulls_remote, e.pulls_remote),
            rescues: d(self.rescues, e.rescues),
            held_wakeups: d(self.held_wakeups, e.held_wakeups),
            held_avoided: d(self.held_avoided, e.held_avoided),
            wakeup_preempts: d(self.wakeup_preempts, e.wakeup_preempts),
            wakeup_kicks: d(self.wakeup_kicks, e.wakeup_kicks),
            scan_runs: d(self.scan_runs, e.scan_runs),
            scan_skipped: d(self.scan_skipped, e.scan_skipped),
            scan_depth: d(self.scan_depth, e.scan_depth),
            scan_visited: d(self.scan_visited, e.scan_visited),
            scan_found: d(self.scan_found, e.scan_found),
            select_ns: d(self.select_ns, e.select_ns),
            select_ns_hist: hist_delta(&self.select_ns_hist, &e.select_ns_hist),
            wakeq_enqueued: d(self.wakeq_enqueued, e.wakeq_enqueued),
            wakeq_dispatch_own: d(self.wakeq_dispatch_own, e.wakeq_dispatch_own),
            wakeq_dispatch_other: d(self.wakeq_dispatch_other, e.wakeq_dispatch_other),
            wakeq_waits: d(self.wakeq_waits, e.wakeq_waits),
            wakeq_wait_ns: d(self.wakeq_wait_ns, e.wakeq_wait_ns),
            wakeq_wait_hist: hist_delta(&self.wakeq_wait_hist, &e.wakeq_wait_hist),
            shards: self
                .shards
                .iter()
                .map(|(k, v)| (*k, v.delta(&e.shards.get(k).cloned().unwrap_or_default())))
                .collect(),
            ..self.clone()
        }
    }

    /// Tasks waiting in this LLC's shards now.
    pub fn wakeq_depth(&self) -> u64 {
        self.shards.values().map(|s| s.depth).sum()
    }

    pub fn path(&self, name: &str) -> u64 {
        self.paths.get(name).copied().unwrap_or(0)
    }

    /// Upper bound (ns) of the bucket holding the given quantile of select_cpu calls.
    pub fn select_ns_quantile(&self, q: f64) -> u64 {
        log2_quantile(&self.select_ns_hist, q)
    }
}

fn hist_delta(now: &[u64], then: &[u64]) -> Vec<u64> {
    now.iter()
        .enumerate()
        .map(|(i, v)| v.saturating_sub(then.get(i).copied().unwrap_or(0)))
        .collect()
}

/// Upper bound of the log2 bucket (i counts [2^i, 2^(i+1))) holding quantile `q`; 0 if empty.
pub fn log2_quantile(hist: &[u64], q: f64) -> u64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0;
    }
    let want = (total as f64 * q).ceil() as u64;
    let mut seen = 0;
    for (i, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= want {
            return 1u64 << (i + 1);
        }
    }
    1u64 << hist.len()
}

const SIS_CAPACITY_F: f64 = sis_limits_SIS_CAPACITY as f64;

impl Metrics {
    /// What happened between `earlier` and `self`.
    pub fn delta(&self, earlier: &Metrics) -> Metrics {
        Metrics {
            at_us: self.at_us,
            secs: self.at_us.saturating_sub(earlier.at_us) as f64 / 1e6,
            generation: self.generation,
            llcs: self
                .llcs
                .iter()
                .map(|(k, v)| {
                    let e = earlier.llcs.get(k).cloned().unwrap_or_default();
                    (*k, v.delta(&e))
                })
                .collect(),
        }
    }

    /// The per-LLC table, one row per LLC.
    pub fn table(&self) -> String {
        let secs = if self.secs > 0.0 { self.secs } else { 1.0 };
        let rate = |v: u64| v as f64 / secs;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<4} {:>4} {:>5} {:>4} {:>9} {:>7} | {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} | {:>6} {:>6} {:>5} | {:>6} {:>6} | {:>7} {:>6} {:>6} {:>6} | {:>6} {:>5} {:>7} {:>6}",
            "llc", "cpus", "util%", "scan", "wakeup/s", "migr/s",
            "sync", "prev", "almst", "core", "scan", "xllc", "fallb", "dfl",
            "depth", "tested", "hit%", "sel_ns", "p99",
            "local/s", "llc/s", "rem/s", "pull/s",
            "wq/s", "wq_q", "wait_us", "p99"
        );
        for (llc, m) in &self.llcs {
            let share = |name: &str| pct(m.path(name), m.wakeups);
            let avg = |total: u64, n: u64| if n == 0 { 0.0 } else { total as f64 / n as f64 };
            let _ = writeln!(
                out,
                "{:<4} {:>4} {:>5.0} {:>4} {:>9.0} {:>7.0} | {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} | {:>6.1} {:>6.1} {:>5.0} | {:>6.0} {:>6} | {:>7.0} {:>6.0} {:>6.0} {:>6.0} | {:>6.0} {:>5} {:>7.1} {:>6}",
                llc,
                m.cpus,
                m.util_pct,
                m.nr_scan,
                rate(m.wakeups),
                rate(m.migrations),
                share("sync"),
                share("prev_idle"),
                share("prev_almost_idle"),
                share("idle_core"),
                share("llc_scan"),
                share("cross_llc"),
                share("fallback"),
                share("kernel_dfl"),
                avg(m.scan_depth, m.scan_runs),
                avg(m.scan_visited, m.scan_runs),
                pct(m.scan_found, m.scan_runs),
                avg(m.select_ns, m.wakeups),
                pow2_label(m.select_ns_quantile(0.99)),
                rate(m.dispatch_local),
                rate(m.dispatch_llc_steal),
                rate(m.dispatch_remote_steal),
                // Lag pulls from the LLC and from other LLCs in one column; JSON has them apart.
                rate(m.pulls + m.pulls_remote),
                rate(m.wakeq_enqueued),
                m.wakeq_depth(),
                avg(m.wakeq_wait_ns, m.wakeq_waits) / 1000.0,
                pow2_label(log2_quantile(&m.wakeq_wait_hist, 0.99) / 1000),
            );
        }
        out
    }

    /// select_cpu cost per LLC, drawn like bpftrace's hist().
    pub fn histogram(&self) -> String {
        let mut out = String::new();
        for (llc, m) in &self.llcs {
            let _ = writeln!(out, "@select_cpu_ns[llc{llc}]:");
            out.push_str(&bpftrace_hist(&m.select_ns_hist));
            out.push('\n');
        }
        out
    }

    pub fn json(&self) -> Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// bpftrace's power-of-two units: 1K = 1024.
fn pow2_label(v: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut unit = 0;
    let mut v = v;
    while v >= 1024 && v.is_multiple_of(1024) && unit < UNITS.len() - 1 {
        v /= 1024;
        unit += 1;
    }
    format!("{v}{}", UNITS[unit])
}

/// Rows "[lo, hi)   count |@@@@   |" from the first to the last non-empty bucket.
pub fn bpftrace_hist(buckets: &[u64]) -> String {
    const WIDTH: u64 = 52;
    let Some(first) = buckets.iter().position(|&n| n > 0) else {
        return "(no samples)\n".into();
    };
    let last = buckets.iter().rposition(|&n| n > 0).unwrap_or(first);
    let max = buckets.iter().copied().max().unwrap_or(1).max(1);
    let mut out = String::new();
    for (i, &n) in buckets.iter().enumerate().take(last + 1).skip(first) {
        let range = format!("[{}, {})", pow2_label(1 << i), pow2_label(1 << (i + 1)));
        let bar = "@".repeat((n * WIDTH / max) as usize);
        let _ = writeln!(out, "{range:<16}{n:>8} |{bar:<52}|");
    }
    out
}

/// The scx_stats server side: each client gets deltas since its previous read.
pub fn server_data() -> StatsServerData<(), Metrics> {
    let open: Box<dyn StatsOpener<(), Metrics>> = Box::new(move |(req_ch, res_ch)| {
        req_ch.send(())?;
        let mut prev = res_ch.recv()?;
        let read: Box<dyn StatsReader<(), Metrics>> = Box::new(move |_args, (req_ch, res_ch)| {
            req_ch.send(())?;
            let cur = res_ch.recv()?;
            let delta = cur.delta(&prev);
            prev = cur;
            delta.to_json()
        });
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_meta(LlcMetrics::meta())
        .add_meta(ShardMetrics::meta())
        .add_ops("top", StatsOps { open, close: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llc(wakeups: u64, prev_idle: u64, hist: Vec<u64>) -> LlcMetrics {
        LlcMetrics {
            cpus: 4,
            wakeups,
            paths: BTreeMap::from([("prev_idle".into(), prev_idle)]),
            select_ns_hist: hist,
            ..Default::default()
        }
    }

    #[test]
    fn delta_subtracts_counters_and_keeps_gauges() {
        let mut a = Metrics {
            at_us: 1_000_000,
            ..Default::default()
        };
        let mut b = Metrics {
            at_us: 3_000_000,
            ..Default::default()
        };
        a.llcs.insert(0, llc(100, 40, vec![1, 2]));
        let mut later = llc(300, 140, vec![1, 5]);
        later.nr_scan = 2;
        b.llcs.insert(0, later);
        let d = b.delta(&a);
        assert_eq!(d.secs, 2.0);
        assert_eq!(d.llcs[&0].wakeups, 200);
        assert_eq!(d.llcs[&0].path("prev_idle"), 100);
        assert_eq!(d.llcs[&0].select_ns_hist, vec![0, 3]);
        assert_eq!(d.llcs[&0].nr_scan, 2);
    }

    /// Counters where counter i is `scale * (i + 1)` and path i is `scale * (i + 10)`.
    fn counters(scale: u64) -> Counters {
        let mut c = Counters::default();
        for (i, v) in c.counters.iter_mut().enumerate() {
            *v = scale * (i as u64 + 1);
        }
        for (i, v) in c.paths.iter_mut().enumerate() {
            *v = scale * (i as u64 + 10);
        }
        c
    }

    #[test]
    fn new_counters_come_from_their_slots() {
        let m = LlcMetrics::from_counters(&counters(1), 4, 0, 0);
        let slot = |c: sis_counter| c as u64 + 1;
        assert_eq!(m.pulls, slot(sis_counter_SIS_CNT_PULLS));
        assert_eq!(m.pulls_remote, slot(sis_counter_SIS_CNT_PULLS_REMOTE));
        assert_eq!(m.held_wakeups, slot(sis_counter_SIS_CNT_HELD_WAKEUPS));
        assert_eq!(m.held_avoided, slot(sis_counter_SIS_CNT_HELD_AVOIDED));
        assert_eq!(m.wakeup_preempts, slot(sis_counter_SIS_CNT_WAKEUP_PREEMPTS));
        assert_eq!(m.wakeup_kicks, slot(sis_counter_SIS_CNT_WAKEUP_KICKS));
    }

    #[test]
    fn every_counter_becomes_a_delta() {
        // Twice the counts minus the counts is the counts again, for every field
        // delta() handles; one it forgot would stay at twice.
        let once = LlcMetrics::from_counters(&counters(1), 4, 512, 3);
        let twice = LlcMetrics::from_counters(&counters(2), 4, 512, 3);
        assert_eq!(twice.delta(&once), once);
    }

    #[test]
    fn json_counters_come_before_the_histogram() {
        // The guest scripts' pol_field reads an LLC's object only up to "select_ns_hist".
        let mut m = Metrics::default();
        m.llcs.insert(0, LlcMetrics::default());
        let json = m.json().unwrap();
        let hist = json.find("\"select_ns_hist\"").unwrap();
        for name in [
            "pulls",
            "pulls_remote",
            "rescues",
            "held_wakeups",
            "held_avoided",
            "wakeup_preempts",
            "wakeup_kicks",
        ] {
            let at = json.find(&format!("\"{name}\":")).unwrap_or(usize::MAX);
            assert!(at < hist, "{name} missing or after select_ns_hist: {json}");
        }
    }

    #[test]
    fn table_has_a_row_per_llc_with_rates() {
        let mut m = Metrics {
            secs: 2.0,
            ..Default::default()
        };
        m.llcs.insert(0, llc(200, 100, vec![]));
        m.llcs.insert(1, llc(0, 0, vec![]));
        let table = m.table();
        let rows: Vec<_> = table.lines().collect();
        assert_eq!(rows.len(), 3, "{table}");
        let row0: Vec<_> = rows[1].split_whitespace().collect();
        assert_eq!(row0[0], "0");
        assert_eq!(row0[4], "100", "wakeups/s of 200 over 2 s: {table}");
        assert_eq!(row0[8], "50.0", "prev_idle share: {table}");
        let header: Vec<_> = rows[0].split_whitespace().collect();
        assert_eq!(header.len(), row0.len(), "{table}");
    }

    #[test]
    fn json_round_trips() {
        let mut m = Metrics {
            at_us: 5,
            ..Default::default()
        };
        m.llcs.insert(1, llc(7, 3, vec![0, 1]));
        let back: Metrics = serde_json::from_str(&m.json().unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn quantile_reports_the_bucket_upper_bound() {
        // 98 calls in [256, 512), 2 in [4K, 8K): p50 <= 512, p99 <= 8K.
        let mut hist = vec![0; 32];
        hist[8] = 98;
        hist[12] = 2;
        let m = llc(100, 0, hist);
        assert_eq!(m.select_ns_quantile(0.5), 512);
        assert_eq!(m.select_ns_quantile(0.99), 8192);
        assert_eq!(llc(0, 0, vec![0; 32]).select_ns_quantile(0.99), 0);
    }

    #[test]
    fn histogram_looks_like_bpftrace() {
        let mut hist = vec![0; 32];
        hist[9] = 10;
        hist[10] = 5;
        let out = bpftrace_hist(&hist);
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("[512, 1K)"), "{out}");
        assert!(lines[1].starts_with("[1K, 2K)"), "{out}");
        assert_eq!(lines[0].matches('@').count(), 52);
        assert_eq!(lines[1].matches('@').count(), 26);
        assert_eq!(bpftrace_hist(&[0; 4]), "(no samples)\n");
    }
}
