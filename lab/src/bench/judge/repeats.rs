//! The repeats of one measurement (a metric of one configuration under one workload): picked
//! out of the records, and their summary statistics: median, min-max, coefficient of variation,
//! and the ratio of two medians.

use serde::Serialize;

use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::Workload;
use crate::bench::plan::meta::Meta;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation over the mean (0 for one sample); None when the mean is 0.
    pub cv: Option<f64>,
}

/// The summary of `samples` (NaN and infinities ignored); None without any finite sample.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let mean = v.iter().sum::<f64>() / n as f64;
    let cv = if mean == 0.0 {
        None
    } else if n == 1 {
        Some(0.0)
    } else {
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Some(var.sqrt() / mean.abs())
    };
    Some(Summary {
        n,
        median,
        min: v[0],
        max: v[n - 1],
        mean,
        cv,
    })
}

/// `value / base`; None when the base is 0 or either is not finite.
pub fn ratio(value: f64, base: f64) -> Option<f64> {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        None
    } else {
        Some(value / base)
    }
}

/// The samples of `m` over the successful runs of (config, workload[, cpus]).
pub fn samples(
    records: &[RunRecord],
    config: &str,
    w: Workload,
    cpus: Option<u32>,
    m: &Metric,
) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.ok && r.config == config && r.workload == w)
        .filter(|r| cpus.is_none_or(|c| r.cpus == c))
        .filter_map(|r| m.value(r))
        .collect()
}

/// The summary of `samples`.
pub fn summary(
    records: &[RunRecord],
    config: &str,
    w: Workload,
    cpus: Option<u32>,
    m: &Metric,
) -> Option<Summary> {
    summarize(&samples(records, config, w, cpus, m))
}

/// Does any successful run of `w` have a value of `m`?
pub fn measured(records: &[RunRecord], w: Workload, m: &Metric) -> bool {
    records
        .iter()
        .any(|r| r.ok && r.workload == w && m.value(r).is_some())
}

/// The configurations of `meta` that have a run of `w` (failed or not), in run order.
pub fn configs_with_runs<'a>(meta: &'a Meta, records: &[RunRecord], w: Workload) -> Vec<&'a str> {
    meta.configs
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| records.iter().any(|r| r.config == *n && r.workload == w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_count_takes_the_middle() {
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (s.n, s.median, s.min, s.max, s.mean),
            (3, 2.0, 1.0, 3.0, 2.0)
        );
        // Sample stddev of 1,2,3 is 1, over the mean 2.
        assert!((s.cv.unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn even_count_averages_the_two_middles() {
        let s = summarize(&[4.0, 1.0, 3.0, 10.0]).unwrap();
        assert_eq!(s.median, 3.5);
        assert_eq!((s.min, s.max), (1.0, 10.0));
        assert_eq!(summarize(&[2.0, 4.0]).unwrap().median, 3.0);
    }

    #[test]
    fn single_sample_has_no_spread() {
        let s = summarize(&[7.5]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (1, 7.5, 7.5, 7.5));
        assert_eq!(s.cv, Some(0.0));
    }

    #[test]
    fn empty_and_non_finite_samples() {
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[f64::NAN]), None);
        let s = summarize(&[f64::NAN, 2.0, f64::INFINITY]).unwrap();
        assert_eq!((s.n, s.median), (1, 2.0));
    }

    #[test]
    fn zero_mean_has_no_cv() {
        let s = summarize(&[0.0, 0.0]).unwrap();
        assert_eq!(s.median, 0.0);
        assert_eq!(s.cv, None);
    }

    #[test]
    fn ratio_against_a_zero_baseline_is_none() {
        assert_eq!(ratio(5.0, 0.0), None);
        assert_eq!(ratio(0.0, 0.0), None);
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(f64::NAN, 2.0), None);
    }
}
