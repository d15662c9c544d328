//! What a built-in workload's module tells the stages above it: its workloads, the programs they
//! need, their command lines, how long a run takes, how their output becomes a record's numbers,
//! and which of those numbers judge them and fill their table. A family is one module that
//! implements `Family` and one line in mod.rs's `families!`.

use anyhow::Result;

use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};

/// A family of built-in workloads. Every method but `workloads` and `note` is asked only about
/// a workload `workloads` lists (and `parse` only of a record of one).
pub trait Family: Sync {
    /// Its workloads, in the order `--workloads`' help names them.
    fn workloads(&self) -> &'static [Workload];

    /// What `--workloads`' help says of them after their names, if anything.
    fn note(&self) -> Option<&'static str> {
        None
    }

    /// Whether `w` asks the running scx_sis itself (a stats request): under EEVDF or a peer
    /// nobody would answer, so it runs only under scx_sis's configurations.
    fn sis_only(&self, _w: Workload) -> bool {
        false
    }

    /// The programs `w` needs on the PATH besides perf and scx_sis_lab.
    fn tools(&self, w: Workload) -> &'static [&'static str];

    /// `w`'s command line, run under `perf stat`.
    fn command(&self, w: Workload, s: &Sizing, exes: &Exes) -> Vec<String>;

    /// Roughly how long one run of `w` takes under TCG with 8 vCPUs (for the VM's timeout).
    fn expected_secs(&self, w: Workload, s: &Sizing) -> f64;

    /// The command's stdout into `r`'s numbers (`r.workload` is the family's); an error when it
    /// holds no score.
    fn parse(&self, r: &mut RunRecord, stdout: &str) -> Result<()>;

    /// What `w` is judged by; the first is the one the plot shows.
    fn scores(&self, w: Workload) -> Vec<Metric>;

    /// `w`'s table's columns before those every workload shows (`metric::COMMON`).
    fn columns(&self, w: Workload) -> Vec<Metric>;
}
