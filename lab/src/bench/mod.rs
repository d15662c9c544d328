//! `scx_sis_lab bench`: the A/B benchmark runner. EEVDF, scx_sis under named configurations
//! (switched live through the tunables map) and other sched_ext schedulers, each under the
//! same workloads, repeated and interleaved; a markdown table, raw JSON lines and an SVG plot.
//!
//! Natively it needs root and a sched_ext kernel. `--vm` boots the project's VM instead: the
//! guest runs `scx_sis_lab bench --native-guest` (scripts/guest/bench.sh) and prints one
//! `SIS-BENCH {json}` line per run; the host renders them.
//!
//! A bench goes through five stages, a folder each: plan/ (what to run), run/ (running it, here
//! or in the VM), record/ (what each run leaves), judge/ (what the records say) and report/ (the
//! markdown report and the plot). native.rs and vm.rs (run/) end a bench by writing its report;
//! the runner asks the judge whether `--until-ci` wants another round.

mod judge;
mod model;
mod plan;
mod record;
mod report;
mod run;
mod workloads;

use anyhow::{bail, Result};

pub use plan::BenchOpts;
use plan::{peers, Plan};
use report::results;
use run::{native, vm};

pub fn run(opts: &BenchOpts) -> Result<()> {
    if opts.native_guest {
        return native::guest(opts);
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
    if opts.vm {
        vm::run(&opts, &plan)
    } else {
        native::run(&opts, &plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::opts::parse;

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
}
