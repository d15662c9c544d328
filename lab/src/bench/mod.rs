//! `scx_sis_lab bench`: the A/B benchmark runner. EEVDF, scx_sis under named configurations
//! (switched live through the tunables map) and other sched_ext schedulers, each under the
//! same workloads, repeated and interleaved; a markdown table, raw JSON lines and an SVG plot.
//!
//! Natively it needs root and a sched_ext kernel. `--vm` boots the project's VM instead: the
//! guest runs `scx_sis_lab bench --native-guest` (scripts/guest/bench.sh) and prints one
//! `SIS-BENCH {json}` line per run; the host renders them.
//!
//! In layers, each folder importing only those below it (tests/architecture.rs holds it):
//! model/ (a workload by name, its sizing, the run record, the metrics), workloads/ (a module
//! per family of built-ins, the custom workloads, the registry), then the stages plan/ (what to
//! run), record/ (the files a bench saves), run/ (running it, here or in the VM), judge/ (what
//! the records say) and report/ (the markdown report and the plot). This file is the driver on
//! top: it makes the plan, runs it, hands the runner the judge's word for `--until-ci`, and has
//! the report written when the run ends.

mod judge;
mod model;
mod plan;
mod record;
mod report;
mod run;
mod workloads;

use anyhow::{bail, Result};

use judge::verdicts::ci_status;
use model::run_record::RunRecord;
pub use plan::BenchOpts;
use plan::{peers, Plan};
use report::results;
use run::runner::SoFar;
use run::{native, vm};

pub fn run(opts: &BenchOpts) -> Result<()> {
    if opts.native_guest {
        return native::guest(opts, so_far);
    }
    if let Some(dir) = &opts.render {
        return results::rerender(dir, opts.svg.as_deref());
    }
    if !opts.cpus.is_empty() && !opts.vm {
        bail!("--cpus boots one VM per CPU count: add --vm");
    }
    let mut opts = opts.clone();
    // Installed (or found in the cache) before anything else runs, so that a failed install
    // stops the bench before a VM boots.
    opts.peer.extend(peers::install_all(&opts.peers)?);
    let plan = Plan::from_opts(&opts)?;
    let ran = if opts.vm {
        vm::run(&opts, &plan)?
    } else {
        native::run(&opts, &plan, so_far)?
    };
    results::write_results(
        &opts.out,
        &plan,
        &ran.records,
        &ran.how,
        ran.t0,
        opts.svg.as_deref(),
    )?;
    (ran.end)(&ran.records)
}

/// The judge's word on the records so far, as the runner asks it between rounds.
fn so_far(plan: &Plan, records: &[RunRecord]) -> Option<SoFar> {
    ci_status(records, &plan.meta(vec![])).map(|s| SoFar {
        narrow: s.narrow,
        line: format!(
            "widest interval {:.1}% ({}), target {}%",
            s.widest_pct, s.widest, s.target_pct
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::config::resolve;
    use plan::opts::parse;
    use run::runner::another_round;
    use workloads::timed::HACKBENCH;

    #[test]
    fn bad_values_are_rejected() {
        assert!(parse(&["--workloads", "a b"]).is_err());
        assert!(parse(&["--repeats", "0"]).is_err());
        assert!(parse(&["--cpus", "0"]).is_err());
        assert!(parse(&["--work", "-1"]).is_err());
        let o = parse(&["--cpus", "4"]).unwrap();
        let e = run(&o).unwrap_err();
        assert!(e.to_string().contains("add --vm"), "{e}");
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
        while another_round(&plan, &records, done, so_far) {
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
        let plan_meta = |n| plan::meta::Meta {
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
