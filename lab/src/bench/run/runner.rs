//! The native runner's round loop: every round brings the machine into each configuration in
//! turn (switch.rs) and measures every workload under it (measure.rs), until the rounds asked
//! for ran or, with `until_ci`, the intervals are narrow (judge/verdicts.rs). The processes it
//! starts are supervised in supervise.rs, bpf_stats is read in bpf_stats.rs.

use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use scx_sis_lab::elapsed::hms;

use super::bpf_stats::enable_bpf_stats;
use super::env::Env;
use super::measure::measure;
use super::switch::{switch_to, Active};
use crate::bench::judge::verdicts::ci_status;
use crate::bench::model::run_record::RunRecord;
use crate::bench::plan::Plan;

/// After `done` rounds with these records, is another round due? The first `plan.repeats`
/// always run; with `until_ci`, more follow until every verdict's interval is narrower than
/// the target or `max_repeats` rounds ran.
pub fn another_round(plan: &Plan, records: &[RunRecord], done: u32) -> bool {
    if done < plan.repeats {
        return true;
    }
    if done >= plan.max_rounds() {
        return false;
    }
    ci_status(records, &plan.meta(vec![])).is_some_and(|s| !s.narrow)
}

/// The configurations' order in round `round` (from 1) of `n`: the given order, rotated by
/// one more place each round. Over `n` rounds each configuration runs once in each place, so
/// what a place costs (the first run after EEVDF, a machine warmed by the one before) falls on
/// all of them alike.
fn round_order(n: usize, round: u32) -> impl Iterator<Item = usize> {
    let shift = (round.saturating_sub(1) as usize) % n.max(1);
    (0..n).map(move |i| (i + shift) % n)
}

/// Every round runs every configuration (round 1 first, then 2, ...), so drift spreads over
/// all of them. `sink` gets each record as soon as it is measured.
pub fn run_plan(
    plan: &Plan,
    env: &Env,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(&RunRecord) -> Result<()>,
) -> Result<()> {
    fs::create_dir_all(&env.dir)
        .with_context(|| format!("failed to create {}", env.dir.display()))?;
    let _stats = enable_bpf_stats();
    let per_round = plan.configs.len() * plan.workloads.len();
    let rounds = plan.max_rounds();
    let t0 = Instant::now();
    let mut done = 0usize;
    let mut records: Vec<RunRecord> = Vec::new();
    let mut active = Active::Nothing;
    let mut repeat = 0;
    while !stop.load(Ordering::Relaxed) && another_round(plan, &records, repeat) {
        repeat += 1;
        // The ETA counts the rounds promised: --repeats, or with --until-ci its budget.
        let total = rounds as usize * per_round;
        for c in round_order(plan.configs.len(), repeat).map(|i| &plan.configs[i]) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let switched = switch_to(&mut active, c, env);
            for &w in &plan.workloads {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let elapsed = t0.elapsed();
                let eta = if done == 0 {
                    "-".to_string()
                } else {
                    hms(elapsed.mul_f64((total - done) as f64 / done as f64))
                };
                eprintln!(
                    "{} [{}/{total}] repeat {repeat}/{rounds} config {} workload {w}: elapsed {}, ETA {eta}",
                    env.progress,
                    done + 1,
                    c.name,
                    hms(elapsed)
                );
                let r = match &switched {
                    Ok(()) => measure(&mut active, c, w, repeat, plan, env, stop),
                    Err(e) => {
                        let mut r = RunRecord::new(&c.name, c.kind(), w, repeat);
                        (r.cpus, r.topo, r.kernel) =
                            (env.cpus, env.topo.clone(), env.kernel.clone());
                        r.error = Some(format!("setting up {}: {e:#}", c.name));
                        r
                    }
                };
                if let Some(e) = &r.error {
                    eprintln!("{} run failed: {} {w}: {e}", env.progress, c.name);
                }
                sink(&r)?;
                records.push(r);
                done += 1;
            }
        }
        if let Some(s) = ci_status(&records, &plan.meta(vec![])) {
            eprintln!(
                "{} after round {repeat}: widest interval {:.1}% ({}), target {}%",
                env.progress, s.widest_pct, s.widest, s.target_pct
            );
        }
    }
    drop(active);
    eprintln!(
        "{} done: {done} runs in {repeat} rounds in {}",
        env.progress,
        hms(t0.elapsed())
    );
    if stop.load(Ordering::Relaxed) {
        bail!("interrupted after {done} runs");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::config::resolve;
    use crate::bench::workloads::timed::HACKBENCH;

    #[test]
    fn each_configuration_runs_once_in_each_place_over_n_rounds() {
        let n = 4;
        assert_eq!(round_order(n, 1).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(round_order(n, 2).collect::<Vec<_>>(), [1, 2, 3, 0]);
        for place in 0..n {
            let mut at: Vec<usize> = (1..=n as u32)
                .map(|r| round_order(n, r).nth(place).unwrap())
                .collect();
            at.sort();
            assert_eq!(at, [0, 1, 2, 3], "place {place}");
        }
        assert_eq!(round_order(n, 5).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(round_order(0, 3).count(), 0);
    }

    /// How many rounds `another_round` lets a plan of eevdf and all-on under hackbench run,
    /// when every run's numbers scatter by `sigma` (log-normal) around the same medians.
    /// all-on under hackbench, --until-ci 10 with @max rounds at most.
    fn until_ci_plan(repeats: u32, max: u32) -> Plan {
        Plan {
            repeats,
            configs: resolve(Some(&["all-on".into()]), &[], &[], false).unwrap(),
            workloads: vec![HACKBENCH],
            quick: true,
            work: 1.0,
            custom: vec![],
            until_ci: Some(10.0),
            max_repeats: Some(max),
            baseline: "eevdf".into(),
        }
    }

    /// `n` values around `median` with a log-normal spread of `sigma` (about its CV).
    fn runs(rng: &mut fastrand::Rng, n: usize, median: f64, sigma: f64) -> Vec<f64> {
        let normal = |rng: &mut fastrand::Rng| {
            let (u, v) = (1.0 - rng.f64(), rng.f64());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        (0..n)
            .map(|_| median * (sigma * normal(rng)).exp())
            .collect()
    }

    fn rounds_until_narrow(sigma: f64, repeats: u32, max: u32) -> (u32, Vec<RunRecord>) {
        let plan = until_ci_plan(repeats, max);
        let mut rng = fastrand::Rng::with_seed(11);
        let (mut records, mut done) = (Vec::new(), 0);
        while another_round(&plan, &records, done) {
            done += 1;
            for c in &plan.configs {
                let mut r = RunRecord::new(&c.name, c.kind(), HACKBENCH, done);
                r.ok = true;
                r.time_s = Some(runs(&mut rng, 1, 10.0, sigma)[0]);
                r.migrations = Some(runs(&mut rng, 1, 1000.0, sigma)[0] as u64);
                r.context_switches = Some(runs(&mut rng, 1, 5000.0, sigma)[0] as u64);
                records.push(r);
            }
        }
        (done, records)
    }

    #[test]
    fn until_ci_stops_once_every_interval_is_narrow_or_the_budget_is_spent() {
        // Quiet runs: the intervals are narrow after the --repeats rounds; no round is added.
        let (done, _) = rounds_until_narrow(0.005, 5, 30);
        assert_eq!(done, 5);
        // Noise no interval of 30 rounds can narrow to 10%: the budget ends it.
        let (done, records) = rounds_until_narrow(0.5, 3, 12);
        assert_eq!(done, 12);
        assert_eq!(records.len(), 24, "every round ran every configuration");
        // In between: more than --repeats, fewer than the budget, and narrow when it stopped.
        let (done, records) = rounds_until_narrow(0.05, 3, 40);
        assert!(done > 3 && done < 40, "{done} rounds");
        let plan_meta = |n| crate::bench::plan::meta::Meta {
            until_ci: Some(10.0),
            ..until_ci_plan(n, 40).meta(vec![])
        };
        let s = ci_status(&records, &plan_meta(3)).unwrap();
        assert!(
            s.narrow && s.widest_pct < 10.0,
            "{} {}",
            s.widest_pct,
            s.widest
        );
        let fewer: Vec<RunRecord> = records
            .iter()
            .filter(|r| r.repeat < done)
            .cloned()
            .collect();
        let s = ci_status(&fewer, &plan_meta(3)).unwrap();
        assert!(
            !s.narrow,
            "one round earlier it was still {}% wide",
            s.widest_pct
        );
    }
}
