//! Verdicts with their uncertainty: one side's median over the other's, with a bootstrap
//! confidence interval, and what that interval lets one say (better, worse, or no difference
//! this noise could reveal, with the smallest one it could have). The lab's bench judges its
//! configurations with it, and `scx_sis ab` its two live policies.
//!
//! The interval is a percentile bootstrap of the ratio of medians: both sides are resampled
//! independently (their repeats are separate runs), the ratio of the two resampled medians is
//! taken many times, and the central `confidence` share of those ratios is the interval. The
//! generator is seeded, so the same records always give the same report (a `--render` of a
//! finished run reprints the same intervals).

use serde::{Deserialize, Serialize};

/// The confidence of every interval unless the caller asks otherwise.
pub const CONFIDENCE: f64 = 0.95;
/// Below this many runs a side, the percentile bootstrap of a median undercovers: its intervals
/// hold the true ratio less often than their confidence says (the coverage test below checks 5).
pub const MIN_TRUSTED_RUNS: usize = 5;
/// Bootstrap resamples per interval at 95%: the 2.5% tail holds 50 of them, enough for a stable
/// bound. A higher confidence takes more, so that its thinner tail still holds as many.
const RESAMPLES: usize = 2000;
const TAIL_RESAMPLES: f64 = 50.0;
/// The generator's seed: the same samples always give the same intervals.
pub const SEED: u64 = 0x5c5_b007;

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// The ratio of medians (other / base) and its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub ratio: f64,
    /// A bound is infinite when enough resamples of the base had a median of 0; JSON has no
    /// infinity, so such a bound is written as null and read back as infinite.
    #[serde(with = "unbounded")]
    pub lo: f64,
    #[serde(with = "unbounded")]
    pub hi: f64,
    /// Samples on each side.
    pub n_base: usize,
    pub n: usize,
}

/// An interval bound in JSON: null for +infinity, which JSON cannot write.
mod unbounded {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

impl Interval {
    /// The interval's width relative to the ratio, in percent: what `--until-ci` compares.
    pub fn width_pct(&self) -> f64 {
        (self.hi - self.lo) / self.ratio * 100.0
    }

    /// The smallest difference this interval could have told from none, in percent: half its
    /// width on the log scale, where 0.8x and 1.25x are the same distance from 1.
    pub fn detectable_pct(&self) -> f64 {
        ((self.hi.ln() - self.lo.ln()) / 2.0).exp_m1() * 100.0
    }

    pub fn verdict(&self, better: Better) -> Verdict {
        let (above, below) = (self.lo > 1.0, self.hi < 1.0);
        match (above, below, better) {
            (true, _, Better::Lower) | (_, true, Better::Higher) => Verdict::Worse,
            (true, _, Better::Higher) | (_, true, Better::Lower) => Verdict::Better,
            _ => Verdict::NoDifference {
                detectable_pct: self.detectable_pct(),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Better,
    Worse,
    /// The interval holds 1: a difference below `detectable_pct` would not have shown.
    NoDifference {
        detectable_pct: f64,
    },
}

impl Verdict {
    pub fn words(&self) -> String {
        match self {
            Verdict::Better => "better".into(),
            Verdict::Worse => "worse".into(),
            Verdict::NoDifference { detectable_pct } if detectable_pct.is_finite() => format!(
                "no difference detectable at this noise (smallest detectable ±{detectable_pct:.1}%)"
            ),
            // An interval reaching 0 or infinity: resampled medians of 0 on one side (a count
            // that is 0 in many of its runs), so no ratio away from 1 could be ruled out.
            Verdict::NoDifference { .. } => "no difference detectable at this noise (too few \
                                             events: one side counted 0 in many runs)"
                .into(),
        }
    }
}

/// The widest of `intervals` (a missing one, no sample yet or a zero base, is unbounded) in
/// percent of its ratio, with its key: what a loop that runs until every interval is narrower
/// than a target (the bench's `--until-ci`) compares. None when there is none.
pub fn widest<K>(intervals: impl IntoIterator<Item = (K, Option<Interval>)>) -> Option<(K, f64)> {
    let mut widest: Option<(K, f64)> = None;
    for (key, i) in intervals {
        let w = i.map_or(f64::INFINITY, |i| i.width_pct());
        let w = if w.is_nan() { f64::INFINITY } else { w };
        if widest.as_ref().is_none_or(|(_, most)| w > *most) {
            widest = Some((key, w));
        }
    }
    widest
}

/// The median of `v`, which it sorts.
pub fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn finite(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| x.is_finite()).collect()
}

/// The bootstrap state: one seeded generator for a whole report.
pub struct Bootstrap {
    rng: fastrand::Rng,
    confidence: f64,
    resamples: usize,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap::new(CONFIDENCE, SEED)
    }
}

impl Bootstrap {
    pub fn new(confidence: f64, seed: u64) -> Self {
        let tail = (1.0 - confidence) / 2.0;
        Bootstrap {
            rng: fastrand::Rng::with_seed(seed),
            confidence,
            resamples: RESAMPLES.max((TAIL_RESAMPLES / tail).ceil() as usize),
        }
    }

    pub fn confidence(&self) -> f64 {
        self.confidence
    }

    fn resampled_median(&mut self, v: &[f64], scratch: &mut Vec<f64>) -> f64 {
        scratch.clear();
        scratch.extend((0..v.len()).map(|_| v[self.rng.usize(..v.len())]));
        median_of(scratch)
    }

    /// median(other) / median(base) with its interval; None without a sample on either side or
    /// with a baseline median that is not positive (no ratio to take).
    pub fn ratio(&mut self, base: &[f64], other: &[f64]) -> Option<Interval> {
        let (mut a, mut b) = (finite(base), finite(other));
        if a.is_empty() || b.is_empty() {
            return None;
        }
        let (ma, mb) = (median_of(&mut a), median_of(&mut b));
        if ma <= 0.0 || mb < 0.0 {
            return None;
        }
        let mut scratch = Vec::with_capacity(a.len().max(b.len()));
        let resamples = self.resamples;
        let mut ratios: Vec<f64> = (0..resamples)
            .map(|_| {
                let ra = self.resampled_median(&a, &mut scratch);
                let rb = self.resampled_median(&b, &mut scratch);
                // A resampled baseline of zeros: the ratio is unbounded above.
                if ra > 0.0 {
                    rb / ra
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let tail = (1.0 - self.confidence) / 2.0;
        let at = |q: f64| ratios[((q * resamples as f64) as usize).min(resamples - 1)];
        Some(Interval {
            ratio: mb / ma,
            lo: at(tail),
            hi: at(1.0 - tail),
            n_base: a.len(),
            n: b.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard normal draw from two uniforms (Box-Muller).
    pub fn normal(rng: &mut fastrand::Rng) -> f64 {
        let (u, v) = (1.0 - rng.f64(), rng.f64());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// `n` run times around `median` with a log-normal spread of `sigma` (about its CV).
    pub fn runs(rng: &mut fastrand::Rng, n: usize, median: f64, sigma: f64) -> Vec<f64> {
        (0..n)
            .map(|_| median * (sigma * normal(rng)).exp())
            .collect()
    }

    /// Of `trials` synthetic A/Bs with B's true median `ratio` times A's: how many intervals
    /// hold the true ratio, and how many verdicts say no difference.
    fn trials(ratio: f64, n: usize, sigma: f64, trials: usize) -> (usize, usize) {
        let mut data = fastrand::Rng::with_seed(7);
        let mut boot = Bootstrap::default();
        let (mut covered, mut none) = (0, 0);
        for _ in 0..trials {
            let a = runs(&mut data, n, 10.0, sigma);
            let b = runs(&mut data, n, 10.0 * ratio, sigma);
            let i = boot.ratio(&a, &b).unwrap();
            covered += usize::from(i.lo <= ratio && ratio <= i.hi);
            none += usize::from(matches!(
                i.verdict(Better::Lower),
                Verdict::NoDifference { .. }
            ));
        }
        (covered, none)
    }

    /// One test for both, so that the two thousand bootstraps take one core at a time.
    #[test]
    fn the_interval_holds_a_known_ratio_and_an_aa_finds_no_difference() {
        // 1,000 A/Bs of 5 runs a side (a bench's few repeats), 10% noise, B 20% slower: a 95%
        // interval must hold the true ratio in (nearly) 95% of them.
        let (covered, _) = trials(1.2, 5, 0.10, 1000);
        assert!(covered >= 930, "covered {covered} of 1000");
        // 1,000 A/As on the same noise: no difference in (nearly) 95% of them.
        let (_, none) = trials(1.0, 5, 0.10, 1000);
        assert!(none >= 930, "no difference in {none} of 1000");
    }

    #[test]
    fn a_large_effect_is_found_and_named_by_direction() {
        let mut data = fastrand::Rng::with_seed(3);
        let a = runs(&mut data, 5, 100.0, 0.05);
        let b = runs(&mut data, 5, 200.0, 0.05);
        let i = Bootstrap::default().ratio(&a, &b).unwrap();
        assert!(i.lo > 1.0 && i.hi > i.lo, "{i:?}");
        assert_eq!(i.verdict(Better::Lower), Verdict::Worse);
        assert_eq!(i.verdict(Better::Higher), Verdict::Better);
        assert_eq!(i.verdict(Better::Lower).words(), "worse");
    }

    #[test]
    fn no_difference_names_the_smallest_detectable_one() {
        let i = Interval {
            ratio: 1.0,
            lo: 0.8,
            hi: 1.25,
            n_base: 5,
            n: 5,
        };
        let v = i.verdict(Better::Lower);
        assert!(
            matches!(v, Verdict::NoDifference { detectable_pct } if (detectable_pct - 25.0).abs() < 1e-9),
            "{v:?}"
        );
        assert_eq!(
            v.words(),
            "no difference detectable at this noise (smallest detectable ±25.0%)"
        );
        assert!((i.width_pct() - 45.0).abs() < 1e-9);
    }

    /// A base of mostly zeros (a counter that rarely ticks in a short window) resamples to a
    /// median of 0 often enough to leave the upper bound infinite; the interval still goes
    /// through JSON, which `ab --json` and the bench's records depend on.
    #[test]
    fn an_unbounded_interval_survives_json() {
        let i = Bootstrap::default()
            .ratio(&[0.0, 0.0, 5.0, 5.0, 5.0], &[5.0; 5])
            .unwrap();
        assert!(i.hi.is_infinite(), "{i:?}");
        let json = serde_json::to_string(&i).unwrap();
        let back: Interval = serde_json::from_str(&json).unwrap();
        assert_eq!(back, i, "{json}");
    }

    #[test]
    fn degenerate_samples() {
        let mut b = Bootstrap::default();
        assert_eq!(b.ratio(&[], &[1.0]), None);
        assert_eq!(
            b.ratio(&[0.0, 0.0], &[1.0]),
            None,
            "no ratio to a zero median"
        );
        // A count that is mostly 0 in the baseline: resampled medians of 0 leave it unbounded.
        let i = b.ratio(&[0.0, 0.0, 1.0, 2.0, 0.0], &[0.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(i, None, "a baseline median of 0 has no ratio");
        let i = b
            .ratio(&[0.0, 0.0, 1.0, 2.0, 1.0], &[0.0, 1.0, 0.0, 0.0, 0.0])
            .unwrap();
        assert_eq!((i.ratio, i.lo, i.hi), (0.0, 0.0, f64::INFINITY));
        assert!(i
            .verdict(Better::Lower)
            .words()
            .ends_with("(too few events: one side counted 0 in many runs)"));
        let i = b
            .ratio(&[1.0, 1.0, 2.0, 1.0, 3.0], &[0.0, 0.0, 1.0, 2.0, 0.0])
            .unwrap();
        assert!(i.lo == 0.0 && i.hi.is_finite(), "{i:?}");
        assert!(i.verdict(Better::Lower).words().contains("too few events"));
        let i = b.ratio(&[2.0], &[3.0]).unwrap();
        assert_eq!(
            (i.ratio, i.lo, i.hi),
            (1.5, 1.5, 1.5),
            "one run a side: no spread"
        );
        let i = b.ratio(&[4.0, f64::NAN, 4.0], &[2.0, 2.0]).unwrap();
        assert_eq!((i.ratio, i.n_base), (0.5, 2));
        assert_eq!(
            Bootstrap::default().ratio(&[1.0, 2.0, 3.0], &[2.0, 3.0, 5.0]),
            Bootstrap::default().ratio(&[1.0, 2.0, 3.0], &[2.0, 3.0, 5.0]),
            "seeded: the same records give the same interval"
        );
    }

    #[test]
    fn the_widest_interval_is_found_and_a_missing_one_is_unbounded() {
        let i = |lo: f64, hi: f64| Interval {
            ratio: 1.0,
            lo,
            hi,
            n_base: 5,
            n: 5,
        };
        let (key, pct) = widest([("a", Some(i(0.9, 1.1))), ("b", Some(i(0.8, 1.3)))]).unwrap();
        assert_eq!(key, "b");
        assert!((pct - 50.0).abs() < 1e-9, "{pct}");
        let (key, pct) = widest([("a", Some(i(0.9, 1.1))), ("none", None)]).unwrap();
        assert_eq!((key, pct), ("none", f64::INFINITY));
        assert!(widest(Vec::<(&str, Option<Interval>)>::new()).is_none());
    }

    #[test]
    fn a_higher_confidence_gives_a_wider_interval_with_as_many_resamples_in_its_tail() {
        let mut data = fastrand::Rng::with_seed(5);
        let a = runs(&mut data, 8, 10.0, 0.1);
        let b = runs(&mut data, 8, 10.0, 0.1);
        let i95 = Bootstrap::default().ratio(&a, &b).unwrap();
        let mut strict = Bootstrap::new(0.995, SEED);
        assert!(strict.resamples >= 20_000, "{}", strict.resamples);
        let i995 = strict.ratio(&a, &b).unwrap();
        assert!(i995.lo <= i95.lo && i995.hi >= i95.hi, "{i95:?} {i995:?}");
        assert_eq!(i95.ratio, i995.ratio);
    }
}
