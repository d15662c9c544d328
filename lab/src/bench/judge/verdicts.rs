//! The verdicts: each configuration against the baseline (and the A/A copy against its
//! original, the noise floor), per workload and metric, as the library's bootstrap interval of
//! the ratio of medians (`scx_sis::verdict`); and where `--until-ci` stands, the widest of those
//! intervals against its target, which is also the runner's rule for another round.

use super::repeats::{configs_with_runs, measured, samples};
use crate::bench::model::metric::{self, Metric};
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::Workload;
use crate::bench::plan::meta::Meta;
use crate::bench::workloads;
use scx_sis::verdict::{self, Bootstrap, Interval, Verdict};

/// One comparison: `config` against `base` under `workload`, on `metric`.
pub struct Row {
    pub workload: Workload,
    pub metric: Metric,
    pub config: String,
    /// None when either side has no sample, or the base's median is 0.
    pub interval: Option<Interval>,
}

impl Row {
    pub fn verdict(&self) -> Option<Verdict> {
        self.interval.map(|i| i.verdict(self.metric.better))
    }
}

/// The metrics every configuration of `w` gets a verdict on: its scores, migrations and context
/// switches, and where the PMU counted them, cycles, IPC and LLC misses.
pub fn verdict_metrics(records: &[RunRecord], meta: &Meta, w: Workload) -> Vec<Metric> {
    let mut v = workloads::scores(w, &meta.custom);
    v.extend([metric::MIGRATIONS, metric::CTX]);
    v.extend(
        [metric::CYCLES, metric::IPC, metric::LLC_MISSES]
            .into_iter()
            .filter(|m| measured(records, w, m)),
    );
    v
}

/// The verdicts: (the A/A noise floor, every other configuration against the baseline), in
/// the order of the workloads, metrics and configurations. Seeded, so the same records give the
/// same intervals.
pub fn verdicts(records: &[RunRecord], meta: &Meta) -> (Vec<Row>, Vec<Row>) {
    let mut boot = Bootstrap::default();
    let (mut floor, mut rows) = (Vec::new(), Vec::new());
    for &w in &meta.workloads {
        let configs = configs_with_runs(meta, records, w);
        for metric in verdict_metrics(records, meta, w) {
            let mut compare = |config: &str, base: &str| Row {
                workload: w,
                metric,
                config: config.to_string(),
                interval: boot.ratio(
                    &samples(records, base, w, None, &metric),
                    &samples(records, config, w, None, &metric),
                ),
            };
            if let Some((twin, of)) = &meta.aa {
                if configs.contains(&twin.as_str()) && configs.contains(&of.as_str()) {
                    floor.push(compare(twin, of));
                }
            }
            let base = meta.baseline.as_str();
            if !configs.contains(&base) {
                continue;
            }
            for c in &configs {
                let twin = meta.aa.as_ref().is_some_and(|(t, _)| t == c);
                if *c != base && !twin {
                    rows.push(compare(c, base));
                }
            }
        }
    }
    (floor, rows)
}

/// Where `--until-ci` stands: the widest interval of all verdicts (noise floor included), and
/// whether it is narrower than the target.
pub struct CiStatus {
    pub target_pct: f64,
    pub widest_pct: f64,
    /// "config / workload / metric" of the widest interval.
    pub widest: String,
    pub narrow: bool,
}

pub fn ci_status(records: &[RunRecord], meta: &Meta) -> Option<CiStatus> {
    let target_pct = meta.until_ci?;
    let (floor, rows) = verdicts(records, meta);
    let labelled = floor.iter().chain(&rows).map(|r| {
        let label = format!("{} / {} / {}", r.config, r.workload, r.metric.label);
        (label, r.interval)
    });
    let (widest, widest_pct) = verdict::widest(labelled).unwrap_or((String::new(), 0.0));
    Some(CiStatus {
        target_pct,
        widest_pct,
        widest,
        narrow: widest_pct < target_pct,
    })
}
