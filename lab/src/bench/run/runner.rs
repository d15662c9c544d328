//! The native runner's round loop: every round brings the machine into each configuration in
//! turn (switch.rs) and measures every workload under it (measure.rs), until the rounds asked
//! for ran or, with `until_ci`, the judge finds the intervals narrow. The judge stage sits above
//! this one, so the driver hands its word down as a `Judge`. The processes the runner starts are
//! supervised in supervise.rs, bpf_stats is read in bpf_stats.rs.

use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use scx_sis_lab::elapsed::hms;

use super::bpf_stats::enable_bpf_stats;
use super::env::Env;
use super::measure::measure;
use super::switch::{switch_to, Active};
use crate::bench::model::run_record::RunRecord;
use crate::bench::plan::Plan;
use crate::bench::workloads;

/// What the judge says of the records so far: whether every verdict's interval is as narrow as
/// `--until-ci` asks, and a progress line saying how wide the widest is.
pub struct SoFar {
    pub narrow: bool,
    pub line: String,
}

/// The judge's word on a plan's records so far; None when the plan sets no `until_ci`.
pub type Judge = fn(&Plan, &[RunRecord]) -> Option<SoFar>;

/// After `done` rounds with these records, is another round due? The first `plan.repeats`
/// always run; with `until_ci`, more follow until `judge` finds every interval narrow or
/// `max_repeats` rounds ran.
pub fn another_round(plan: &Plan, records: &[RunRecord], done: u32, judge: Judge) -> bool {
    if done < plan.repeats {
        return true;
    }
    if done >= plan.max_rounds() {
        return false;
    }
    judge(plan, records).is_some_and(|s| !s.narrow)
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
    judge: Judge,
    sink: &mut dyn FnMut(&RunRecord) -> Result<()>,
) -> Result<()> {
    fs::create_dir_all(&env.dir)
        .with_context(|| format!("failed to create {}", env.dir.display()))?;
    let _stats = enable_bpf_stats();
    let per_round = plan.runs_per_round();
    let rounds = plan.max_rounds();
    let t0 = Instant::now();
    let mut done = 0usize;
    let mut records: Vec<RunRecord> = Vec::new();
    let mut active = Active::Nothing;
    let mut repeat = 0;
    while !stop.load(Ordering::Relaxed) && another_round(plan, &records, repeat, judge) {
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
                if !workloads::runs_under(w, c.kind()) {
                    continue;
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
        if let Some(s) = judge(plan, &records) {
            eprintln!("{} after round {repeat}: {}", env.progress, s.line);
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
}
