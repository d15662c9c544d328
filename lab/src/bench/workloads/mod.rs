//! The workloads: one module per family of built-ins, owning its workloads' command lines, how
//! their output is read and what they are judged by (family.rs says what a family tells), the
//! custom workloads and presets (custom.rs), and here the registry of families and the one
//! place the stages above ask about any workload. It imports only the model below it.

use anyhow::Result;

use crate::bench::model::metric::{self, Metric};
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};
use custom::Custom;
use family::Family;

pub mod custom;
pub mod family;

/// Declares each family's module and lists the family in `FAMILIES`: a new family of built-in
/// workloads is its module and one line here.
macro_rules! families {
    ($($module:ident::$family:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every family of built-ins, in the order `--workloads`' help names their workloads.
        pub const FAMILIES: &[&dyn Family] = &[$(&$module::$family),*];
    };
}

families! {
    timed::Timed,
    wakelat::Wakelat,
    under_load::UnderLoad,
}

/// The matrix's workloads unless --workloads says otherwise.
pub const DEFAULT: &[Workload] = &[
    timed::HACKBENCH,
    timed::MESSAGING,
    timed::PIPE,
    wakelat::WAKELAT,
];
/// A scaling run's: low load and high load.
pub const SCALING_DEFAULT: &[Workload] = &[wakelat::WAKELAT_LOW, timed::HACKBENCH];

/// The family of a built-in; None for a custom workload.
pub fn family(w: Workload) -> Option<&'static dyn Family> {
    FAMILIES
        .iter()
        .copied()
        .find(|f| f.workloads().contains(&w))
}

/// Every built-in, family by family.
pub fn builtins() -> impl Iterator<Item = Workload> {
    FAMILIES.iter().flat_map(|f| f.workloads().iter().copied())
}

/// Is `name` a built-in's?
pub fn is_builtin(name: &str) -> bool {
    builtins().any(|w| w.name() == name)
}

/// `NAME='COMMAND ...'` of `--workload`, a name no built-in has.
pub fn parse_custom(s: &str) -> Result<Custom> {
    custom::parse_custom(s, is_builtin)
}

/// The built-ins for `--workloads`' help: their names, and after a family's its note.
pub fn described() -> String {
    let names = |ws: &mut dyn Iterator<Item = Workload>| {
        ws.map(Workload::name).collect::<Vec<_>>().join(", ")
    };
    let mut s = names(&mut builtins());
    for f in FAMILIES {
        if let Some(note) = f.note() {
            s.push_str(&format!(
                " ({} {note})",
                names(&mut f.workloads().iter().copied())
            ));
        }
    }
    s
}

/// The programs a built-in needs besides perf and scx_sis_lab (a custom workload's are its
/// `Custom::tools`).
pub fn tools(w: Workload) -> &'static [&'static str] {
    family(w).map_or(&[], |f| f.tools(w))
}

/// Whether a configuration of `kind` (ConfigSpec::kind) runs `w`: one that asks the running
/// scx_sis itself runs only under scx_sis.
pub fn runs_under(w: Workload, kind: &str) -> bool {
    kind == "sis" || !family(w).is_some_and(|f| f.sis_only(w))
}

/// The workload's command line, run under `perf stat`.
pub fn command(w: Workload, s: &Sizing, exes: &Exes, customs: &[Custom]) -> Vec<String> {
    match family(w) {
        Some(f) => f.command(w, s, exes),
        None => custom::command(w, customs),
    }
}

/// Roughly how long one run takes under TCG with 8 vCPUs (for the VM's timeout).
pub fn expected_secs(w: Workload, s: &Sizing) -> f64 {
    family(w).map_or(custom::EXPECTED_SECS, |f| f.expected_secs(w, s))
}

/// The command's output into the record of its run (`r.wall_s` already set).
pub fn parse(r: &mut RunRecord, customs: &[Custom], stdout: &str, stderr: &str) -> Result<()> {
    match family(r.workload) {
        Some(f) => f.parse(r, stdout),
        None => custom::parse(r, customs, stdout, stderr),
    }
}

/// What a workload is judged by; the first is the one the plot shows.
pub fn scores(w: Workload, customs: &[Custom]) -> Vec<Metric> {
    match family(w) {
        Some(f) => f.scores(w),
        None => custom::scores(w, customs),
    }
}

/// The main table's columns for a workload: its family's, then those every workload shows.
pub fn columns(w: Workload, customs: &[Custom]) -> Vec<Metric> {
    let mut v = match family(w) {
        Some(f) => f.columns(w),
        None => custom::columns(w, customs),
    };
    v.extend(metric::COMMON);
    v
}

/// The metric the plot shows for a workload: its first score.
pub fn primary(w: Workload, customs: &[Custom]) -> Metric {
    scores(w, customs)[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::workload::valid_name;

    #[test]
    fn every_builtin_has_one_family_and_a_name_of_its_own() {
        let names: Vec<&str> = builtins().map(Workload::name).collect();
        assert!(names.contains(&"hackbench"), "{names:?}");
        for w in builtins() {
            assert_eq!(names.iter().filter(|n| **n == w.name()).count(), 1, "{w}");
            assert!(valid_name(w.name()), "{w}");
            assert!(!scores(w, &[]).is_empty(), "{w}");
        }
        assert!(DEFAULT
            .iter()
            .chain(SCALING_DEFAULT)
            .all(|w| family(*w).is_some()));
        assert!(custom::PRESETS.iter().all(|p| !is_builtin(p)));
        assert!(parse_custom("hackbench=true").is_err(), "a built-in's name");
        assert_eq!(tools(under_load::LATENCY), ["hackbench", "cyclictest"]);
        // The stats request asks scx_sis: it runs only under scx_sis's configurations.
        assert!(runs_under(under_load::STATS, "sis"));
        assert!(!runs_under(under_load::STATS, "eevdf") && !runs_under(under_load::STATS, "peer"));
        assert!(runs_under(under_load::LATENCY, "eevdf"));
    }

    #[test]
    fn every_workload_gets_the_common_columns_after_its_own() {
        let labels = |v: Vec<Metric>| v.iter().map(|m| m.label).collect::<Vec<_>>();
        let tail = [
            "migrations",
            "ctx switches",
            "select_cpu ns/call",
            "BPF ns/cs",
        ];
        assert_eq!(
            labels(columns(timed::PIPE, &[])),
            [&["time s"][..], &tail].concat()
        );
        assert_eq!(
            labels(columns(wakelat::WAKELAT, &[])),
            [&["p50 us", "p99 us", "requests/s"][..], &tail].concat()
        );
        let mine = Workload::named("mine");
        assert_eq!(
            labels(columns(mine, &[])),
            [&["wall s"][..], &tail].concat()
        );
        assert_eq!(
            expected_secs(
                mine,
                &Sizing {
                    cpus: 8,
                    quick: true,
                    work: 1.0
                }
            ),
            60.0
        );
    }
}
