//! What the daemon publishes through scx_stats (the scx convention: other tools can read it from
//! /var/run/scx/root/stats): Metrics, per LLC and per wakequeue shard, built from what
//! counters.rs reads from BPF's maps, and the deltas between two reads that clients see. The table below is the
//! one list of the published per-LLC fields; render.rs draws them for a terminal.

pub mod counters;
mod llc_metrics;
pub mod quantile;
mod render;

use std::collections::BTreeMap;

use anyhow::Result;
use scx_stats::prelude::*;
use scx_stats_derive::{stat_doc, Stats};
use serde::{Deserialize, Serialize};

use crate::bpf_intf::sis_limits_SIS_CAPACITY;
use crate::stats::counters::{Counters, LlcCounts, ShardCounts};
use llc_metrics::llc_metrics;

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

// Adding a counter: its SIS_CNT_ constant in src/bpf/intf.h, then one line here. The order is
// the JSON order (the VM tests decode the JSON as Metrics, so they do not depend on it).
llc_metrics! {
    gauge cpus: u64, "CPUs in the LLC";
    gauge util_pct: f64, "Summed utilization in percent of the LLC's capacity";
    gauge nr_scan: u64, "CPUs a wakeup may scan for an idle one (SIS_UTIL)";
    count wakeups = sis_counter_SIS_CNT_WAKEUPS, "Wakeups (select_cpu calls)";
    paths paths, "Wakeups by placement path";
    count direct_dispatches = sis_counter_SIS_CNT_DIRECT_DISPATCH,
        "Wakeups sent straight to an idle CPU";
    count migrations = sis_counter_SIS_CNT_MIGRATIONS,
        "Tasks that ran on another CPU than last time";
    count dispatch_local = sis_counter_SIS_CNT_DISPATCH_LOCAL,
        "Dispatches from the CPU's own DSQ";
    count dispatch_llc_steal = sis_counter_SIS_CNT_DISPATCH_LLC,
        "Dispatches stolen from a CPU of the same LLC";
    count dispatch_remote_steal = sis_counter_SIS_CNT_DISPATCH_REMOTE,
        "Dispatches stolen from another LLC";
    count tick_kicks = sis_counter_SIS_CNT_TICK_KICKS,
        "Idle CPUs kicked by a busy CPU's tick";
    count dispatch_keep = sis_counter_SIS_CNT_DISPATCH_KEEP,
        "Dispatches that kept the running task, still ahead in vtime";
    count pulls = sis_counter_SIS_CNT_PULLS,
        "Busy CPUs at slice end that took a task lagging in vtime from their LLC";
    count pulls_remote = sis_counter_SIS_CNT_PULLS_REMOTE,
        "Busy CPUs at slice end that took a task lagging in vtime from another LLC";
    count rescues = sis_counter_SIS_CNT_RESCUES,
        "Tasks sent to, or idle CPUs woken for, work waiting on a CPU a higher class took";
    count held_wakeups = sis_counter_SIS_CNT_HELD_WAKEUPS,
        "Wakeups placed on a CPU a higher class (RT, deadline) already held when the decision began";
    count held_avoided = sis_counter_SIS_CNT_HELD_AVOIDED,
        "Wakeups whose prev CPU a higher class held, placed elsewhere";
    count wakeup_preempts = sis_counter_SIS_CNT_WAKEUP_PREEMPTS,
        "Wakees earlier in vtime that preempted the running task";
    count wakeup_kicks = sis_counter_SIS_CNT_WAKEUP_KICKS,
        "Idle CPUs kicked to take a wakee queued behind a busy CPU";
    count scan_runs = sis_counter_SIS_CNT_SCAN_RUNS, "llc_scan stages run";
    count scan_skipped = sis_counter_SIS_CNT_SCAN_SKIPPED,
        "llc_scan stages skipped because nr_scan was 0";
    count scan_depth = sis_counter_SIS_CNT_SCAN_DEPTH, "Sum of the scan depth limits used";
    count scan_visited = sis_counter_SIS_CNT_SCAN_VISITED, "CPUs tested by llc_scan";
    count scan_found = sis_counter_SIS_CNT_SCAN_FOUND, "llc_scan stages that found an idle CPU";
    count scan_last_look = sis_counter_SIS_CNT_SCAN_LAST_LOOK,
        "nr_scan was 0 and the one look at the LLC's idle mask found a CPU (path llc_scan)";
    count select_ns = sis_counter_SIS_CNT_COST_NS,
        "Total select_cpu cost in ns, of the timed calls (select_timed)";
    hist select_ns_hist = cost_hist,
        "select_cpu cost histogram of the timed calls: bucket i counts calls of [2^i, 2^(i+1)) ns";
    count wakeq_enqueued = sis_counter_SIS_CNT_WAKEQ_ENQ,
        "Wakeups queued in this LLC's wakequeue shards (by CPUs of this LLC)";
    count wakeq_dispatch_own = sis_counter_SIS_CNT_WAKEQ_DISP_OWN,
        "Dispatches from the CPU's own shard";
    count wakeq_dispatch_other = sis_counter_SIS_CNT_WAKEQ_DISP_OTHER,
        "Dispatches from another shard of the LLC";
    count wakeq_waits = sis_counter_SIS_CNT_WAKEQ_WAITS,
        "Shard-queued tasks that started running on this LLC";
    count wakeq_wait_ns = sis_counter_SIS_CNT_WAKEQ_WAIT_NS,
        "Their summed wait, enqueue to running, ns";
    hist wakeq_wait_hist = wakeq_wait_hist,
        "Wakequeue wait histogram: bucket i counts waits of [2^i, 2^(i+1)) ns";
    count select_timed = sis_counter_SIS_CNT_COST_SAMPLES,
        "select_cpu calls timed for select_ns (one in 64; bpf_stats times them all)";
    count steal_scans = sis_counter_SIS_CNT_STEAL_SCANS,
        "Idle dispatches that looked for work to steal";
    count steal_looked = sis_counter_SIS_CNT_STEAL_LOOKED,
        "CPUs whose queue those dispatches looked at (only CPUs that may have work)";
    count steal_from_kicker = sis_counter_SIS_CNT_STEAL_KICKER,
        "Steals from the busy CPU that kicked the stealer";
    count steal_skip_young = sis_counter_SIS_CNT_STEAL_SKIP_YOUNG,
        "Queue heads left in place: a steal would save less than steal-min";
    count steal_skip_hot = sis_counter_SIS_CNT_STEAL_SKIP_HOT,
        "Queue heads left in place: cache-hot, a steal would save less than 2x steal-min";
    count steal_wait_ns = sis_counter_SIS_CNT_STEAL_WAIT_NS,
        "Summed wait of the stolen tasks, queued to stolen, ns";
    hist steal_wait_hist = steal_wait_hist,
        "Wait of stolen tasks: bucket i counts waits of [2^i, 2^(i+1)) ns";
    count kicks_skipped = sis_counter_SIS_CNT_KICKS_SKIPPED,
        "Stealer kicks not sent (tick, wakeup): the wait would be below steal-min";
    count trace_events = sis_counter_SIS_CNT_TRACE_EVENTS,
        "Placement trace records written to the ring buffer (scx_sis trace)";
    count trace_drops = sis_counter_SIS_CNT_TRACE_DROPS,
        "Placement trace records lost: the ring buffer was full";
    count dispatches = sis_counter_SIS_CNT_DISPATCHES, "ops.dispatch calls";
    count dispatch_calls = sis_counter_SIS_CNT_DISPATCH_CALLS,
        "Kfunc, helper and iterator calls made by ops.dispatch";
    count dispatch_empty = sis_counter_SIS_CNT_DISPATCH_EMPTY,
        "Dispatches that found nothing to run (the CPU idles)";
    count dispatch_empty_calls = sis_counter_SIS_CNT_DISPATCH_EMPTY_CALLS,
        "Calls made by the dispatches that found nothing";
    count select_calls = sis_counter_SIS_CNT_SELECT_CALLS, "Calls made by select_cpu";
    count enqueue_calls = sis_counter_SIS_CNT_ENQUEUE_CALLS, "Calls made by ops.enqueue";
    count runs = sis_counter_SIS_CNT_RUNS, "ops.running calls (tasks started)";
    count run_calls = sis_counter_SIS_CNT_RUN_CALLS,
        "Calls made by ops.running and ops.stopping";
    count idle_waiting_ns = sis_counter_SIS_CNT_IDLE_WAITING_NS,
        "Idle CPU time, ns, while a task queued in the LLC, not bound to its CPU, had waited longer than steal-min (sampled every timer period): what work conservation missed";
    count steal_skip_short_idle = sis_counter_SIS_CNT_STEAL_SKIP_SHORT_IDLE,
        "Idle dispatches that did not look for work: this CPU's idle periods are shorter than steal-min";
    count switches = sis_counter_SIS_CNT_SWITCHES,
        "Back-to-back switches timed (a task started where one had just stopped, no idle between)";
    count switch_ns = sis_counter_SIS_CNT_SWITCH_NS,
        "Their summed length, ns: the machine's pace, which scales steal-min (switch_ns / switches over 2 us)";
    count pulls_unlagged = sis_counter_SIS_CNT_PULLS_UNLAGGED,
        "Pulls that moved a task whose vtime did not trail the puller's by the lag (a task other than the one judged): 0 unless judging and moving disagree";
    count tun_raced = sis_counter_SIS_CNT_TUN_RACED,
        "Tunables snapshots whose copy raced a write (tune, trace) and was taken again from a whole copy";
    count tun_torn = sis_counter_SIS_CNT_TUN_TORN,
        "Tunables snapshots that found no whole copy in every retry: the built-in defaults decided (stays 0)";
    count wake_waits = sis_counter_SIS_CNT_WAKE_WAITS,
        "Woken or new tasks that started running on this LLC";
    count wake_wait_ns = sis_counter_SIS_CNT_WAKE_WAIT_NS,
        "Their summed wait, wakeup (or fork) to running, ns";
    hist wake_wait_hist = wake_wait_hist,
        "Wait from wakeup (or fork) to running: bucket i counts waits of [2^i, 2^(i+1)) ns";
    gauge wait_p50_us: f64,
        "Median wait from wakeup (or fork) to running over the report's interval, us (wake_wait_hist)";
    gauge wait_p99_us: f64, "The same, 99th percentile, us";
    count slice_shortened = sis_counter_SIS_CNT_SLICE_SHORTENED,
        "Tasks started with less than a whole slice because others waited on their CPU";
    count clock_behind = sis_counter_SIS_CNT_CLOCK_BEHIND,
        "Steals judged on a head queued after the stealer read its clock (its wait taken as 0)";
    count tick_preempts = sis_counter_SIS_CNT_TICK_PREEMPTS,
        "Running tasks a tick preempted for a queued task whose deadline had passed theirs";
    count served_first = sis_counter_SIS_CNT_SERVED_FIRST,
        "Per-CPU kernel threads and scx_sis's own processes queued ahead of their CPU's queue";
    count nopreempt_hold = sis_counter_SIS_CNT_NOPREEMPT_HOLD,
        "Queued wakees that did not preempt: the running task had not yet run its hold";
    count nopreempt_deadline = sis_counter_SIS_CNT_NOPREEMPT_DEADLINE,
        "Queued wakees that did not preempt: the running task's deadline was earlier";
    count nopreempt_sync = sis_counter_SIS_CNT_NOPREEMPT_SYNC,
        "Queued wakees that did not preempt: a sync wakee behind its waker, which is to sleep";
    count migrant_credit_ns = sis_counter_SIS_CNT_MIGRANT_CREDIT_NS,
        "vtime credit, ns, that moved tasks arrived with: how long they kept their new CPU unpreempted";
    shards shards, "Per-shard wakequeue statistics, by shard index";
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

impl From<&ShardCounts> for ShardMetrics {
    fn from(s: &ShardCounts) -> Self {
        let ShardCounts {
            enqueued,
            ran,
            left,
            depth,
            max_depth,
        } = *s;
        Self {
            enqueued,
            ran,
            left,
            depth,
            max_depth,
        }
    }
}

/// What happened between an earlier read and this one: counts subtract (saturating, as a
/// counter that went backwards means a reload, not negative events), gauges stay current.
trait Delta {
    fn delta(&self, earlier: &Self) -> Self;
}

impl Delta for u64 {
    fn delta(&self, earlier: &Self) -> Self {
        self.saturating_sub(*earlier)
    }
}

/// A log2 histogram, bucket by bucket.
impl Delta for Vec<u64> {
    fn delta(&self, earlier: &Self) -> Self {
        self.iter()
            .enumerate()
            .map(|(i, v)| v.delta(earlier.get(i).unwrap_or(&0)))
            .collect()
    }
}

/// By key; a key the earlier read lacks counts from zero.
impl<K: Ord + Clone, V: Delta + Default> Delta for BTreeMap<K, V> {
    fn delta(&self, earlier: &Self) -> Self {
        self.iter()
            .map(|(k, v)| (k.clone(), v.delta(earlier.get(k).unwrap_or(&V::default()))))
            .collect()
    }
}

impl Delta for ShardMetrics {
    fn delta(&self, e: &Self) -> Self {
        Self {
            enqueued: self.enqueued.delta(&e.enqueued),
            ran: self.ran.delta(&e.ran),
            left: self.left.delta(&e.left),
            ..self.clone()
        }
    }
}

const SIS_CAPACITY_F: f64 = sis_limits_SIS_CAPACITY as f64;

impl LlcMetrics {
    pub fn from_counters(c: &Counters, cpus: usize, util: u32, nr_scan: u32) -> Self {
        Self {
            cpus: cpus as u64,
            util_pct: util as f64 * 100.0 / (cpus.max(1) as f64 * SIS_CAPACITY_F),
            nr_scan: nr_scan as u64,
            ..Self::counted(c)
        }
    }

    /// One LLC as counters.rs read it.
    pub fn from_llc(l: &LlcCounts) -> Self {
        Self {
            shards: l.shards.iter().map(|(i, s)| (*i, s.into())).collect(),
            ..Self::from_counters(&l.counters, l.cpus, l.util, l.nr_scan)
        }
        .with_wait_quantiles()
    }

    /// wait_p50_us and wait_p99_us from wake_wait_hist, over whatever interval it covers.
    fn with_wait_quantiles(mut self) -> Self {
        self.wait_p50_us = quantile::log2_hist_quantile(&self.wake_wait_hist, 0.5) / 1000.0;
        self.wait_p99_us = quantile::log2_hist_quantile(&self.wake_wait_hist, 0.99) / 1000.0;
        self
    }

    /// Tasks waiting in this LLC's shards now.
    pub fn wakeq_depth(&self) -> u64 {
        self.shards.values().map(|s| s.depth).sum()
    }

    pub fn path(&self, name: &str) -> u64 {
        self.paths.get(name).copied().unwrap_or(0)
    }
}

impl Metrics {
    /// `f` summed over the LLCs.
    pub fn llc_sum(&self, f: impl Fn(&LlcMetrics) -> u64) -> u64 {
        self.llcs.values().map(f).sum()
    }

    /// A raw snapshot (secs 0) of every LLC, as counters::read returned them.
    pub fn snapshot(at_us: u64, generation: u64, llcs: &[LlcCounts]) -> Metrics {
        Metrics {
            at_us,
            secs: 0.0,
            generation,
            llcs: (0..)
                .zip(llcs)
                .map(|(i, l)| (i, LlcMetrics::from_llc(l)))
                .collect(),
        }
    }

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
                    (*k, v.delta(&e).with_wait_quantiles())
                })
                .collect(),
        }
    }

    /// The wait from wakeup (or fork) to running at quantile `q`, every LLC's histogram summed,
    /// in us.
    pub fn wait_quantile_us(&self, q: f64) -> f64 {
        quantile::log2_hist_quantile(&self.summed_hist(|m| &m.wake_wait_hist), q) / 1000.0
    }

    pub fn json(&self) -> Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// The scx_stats server side: each client gets deltas since its previous read. Its meta is also
/// what `scx_sis --help-stats` prints.
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

/// Every stat with its description, by struct, the way scx schedulers print --help-stats.
pub fn describe(out: &mut impl std::io::Write) -> Result<()> {
    server_data().describe_meta(out, None)
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bpf_intf::*;

    /// An LLC of 4 CPUs with these wakeups, prev_idle wakeups and cost histogram.
    pub(crate) fn llc(wakeups: u64, prev_idle: u64, hist: Vec<u64>) -> LlcMetrics {
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
    fn every_counter_but_enqueue_is_published_once() {
        let mut published = LlcMetrics::counter_sources();
        published.sort_unstable();
        // ops.enqueue calls are counted in BPF but not published.
        let want: Vec<sis_counter> = (0..sis_counter_SIS_NR_COUNTERS)
            .filter(|&c| c != sis_counter_SIS_CNT_ENQUEUE)
            .collect();
        assert_eq!(published, want);
    }

    #[test]
    fn shards_and_gauges_come_from_the_llc_read() {
        let read = LlcCounts {
            cpus: 2,
            util: 1024,
            nr_scan: 2,
            shards: BTreeMap::from([(
                3,
                ShardCounts {
                    enqueued: 5,
                    depth: 1,
                    ..Default::default()
                },
            )]),
            ..Default::default()
        };
        let m = Metrics::snapshot(7, 2, &[read]);
        let l = &m.llcs[&0];
        assert_eq!((m.at_us, m.generation, m.secs), (7, 2, 0.0));
        assert_eq!((l.cpus, l.util_pct, l.nr_scan), (2, 50.0, 2));
        assert_eq!((l.shards[&3].enqueued, l.wakeq_depth()), (5, 1));
    }

    #[test]
    fn help_stats_describes_every_field() {
        let mut out = Vec::new();
        describe(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for name in [
            "[Metrics ",
            "[LlcMetrics ",
            "[ShardMetrics]",
            "wakeup_kicks",
            "max_depth",
        ] {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
        let fields = text.lines().filter(|l| l.starts_with("  ")).count();
        let described = text.lines().filter(|l| l.contains(" : ")).count();
        assert_eq!(fields, described, "a field without a description:\n{text}");
        assert_eq!(fields, 4 + 73 + 5, "{text}");
    }
}
