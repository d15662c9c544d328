//! The numbers the judge and the report take from a run record: what a metric is (a column, its
//! decimals, where its value is, which way is better) and the metrics every workload's records
//! carry. A family's own scores are its module's, in workloads/.

use scx_sis::verdict::Better;

use super::run_record::RunRecord;

/// Where a metric's value is in a record.
#[derive(Clone, Copy)]
pub enum Get {
    Field(fn(&RunRecord) -> Option<f64>),
    /// A metric of the workload's output, by label, in `RunRecord::metrics`.
    Named(&'static str),
}

/// A number the report summarizes over the repeats.
#[derive(Clone, Copy)]
pub struct Metric {
    /// Column header.
    pub label: &'static str,
    pub decimals: usize,
    pub get: Get,
    /// Which way is an improvement (the verdict's words).
    pub better: Better,
}

impl Metric {
    /// A metric `get` reads from the record's fields.
    pub const fn field(
        label: &'static str,
        decimals: usize,
        get: fn(&RunRecord) -> Option<f64>,
        better: Better,
    ) -> Metric {
        Metric {
            label,
            decimals,
            get: Get::Field(get),
            better,
        }
    }

    /// A metric a workload's output gives, kept by `label` in the record's `metrics`.
    pub const fn named(label: &'static str, decimals: usize, better: Better) -> Metric {
        Metric {
            label,
            decimals,
            get: Get::Named(label),
            better,
        }
    }

    pub fn value(&self, r: &RunRecord) -> Option<f64> {
        match self.get {
            Get::Field(f) => f(r),
            Get::Named(label) => r.metrics.get(label).copied(),
        }
    }
}

pub const MIGRATIONS: Metric = Metric::field(
    "migrations",
    0,
    |r| r.migrations.map(|v| v as f64),
    Better::Lower,
);
pub const CTX: Metric = Metric::field(
    "ctx switches",
    0,
    |r| r.context_switches.map(|v| v as f64),
    Better::Lower,
);
pub const SELECT_BPF: Metric =
    Metric::field("select_cpu ns/call", 0, |r| r.select_ns_bpf, Better::Lower);
/// Every callback's BPF run time per context switch: the whole scheduler's cost per switch.
pub const BPF_PER_CS: Metric = Metric::field(
    "BPF ns/cs",
    0,
    |r| match (r.bpf_ns, r.context_switches) {
        (Some(ns), Some(cs)) if cs > 0 => Some(ns as f64 / cs as f64),
        _ => None,
    },
    Better::Lower,
);
pub const SELECT_SIS: Metric =
    Metric::field("select ns (sis)", 0, |r| r.select_ns_sis, Better::Lower);
pub const SCAN_DEPTH: Metric = Metric::field("scan depth", 1, |r| r.scan_depth, Better::Lower);
pub const SCAN_VISITED: Metric =
    Metric::field("CPUs tested/scan", 1, |r| r.scan_visited, Better::Lower);
pub const STEALS: Metric =
    Metric::field("steals", 0, |r| r.steals.map(|v| v as f64), Better::Lower);
pub const PULLS: Metric =
    Metric::field("lag pulls", 0, |r| r.pulls.map(|v| v as f64), Better::Lower);
pub const IDLE_WAITING: Metric = Metric::field(
    "idle beside waiting ms",
    0,
    |r| r.idle_waiting_ms,
    Better::Lower,
);
pub const TRACE_RECORDS: Metric = Metric::field(
    "trace records",
    0,
    |r| r.trace_records.map(|v| v as f64),
    Better::Lower,
);
pub const TRACE_DROPS: Metric = Metric::field(
    "trace drops",
    0,
    |r| r.trace_drops.map(|v| v as f64),
    Better::Lower,
);
pub const TRACE_READER_CPU: Metric =
    Metric::field("reader CPU s", 2, |r| r.trace_reader_cpu_s, Better::Lower);
pub const WAKEUPS: Metric =
    Metric::field("wakeups", 0, |r| r.wakeups.map(|v| v as f64), Better::Lower);

pub const CYCLES: Metric =
    Metric::field("cycles", 0, |r| r.cycles.map(|v| v as f64), Better::Lower);
pub const INSTRUCTIONS: Metric = Metric::field(
    "instructions",
    0,
    |r| r.instructions.map(|v| v as f64),
    Better::Lower,
);
pub const IPC: Metric = Metric::field(
    "IPC",
    2,
    |r| match (r.instructions, r.cycles) {
        (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
        _ => None,
    },
    Better::Higher,
);
pub const LLC_LOADS: Metric = Metric::field(
    "LLC loads",
    0,
    |r| r.llc_loads.map(|v| v as f64),
    Better::Lower,
);
pub const LLC_MISSES: Metric = Metric::field(
    "LLC misses",
    0,
    |r| r.llc_misses.map(|v| v as f64),
    Better::Lower,
);
/// The hardware counters, shown where any run counted them.
pub const HW: [Metric; 5] = [CYCLES, INSTRUCTIONS, IPC, LLC_LOADS, LLC_MISSES];

/// The columns every workload's table ends with, after its family's own.
pub const COMMON: [Metric; 4] = [MIGRATIONS, CTX, SELECT_BPF, BPF_PER_CS];
