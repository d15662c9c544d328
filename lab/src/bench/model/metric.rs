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

pub const MIGRATIONS: Metric = Metric {
    label: "migrations",
    decimals: 0,
    get: Get::Field(|r| r.migrations.map(|v| v as f64)),
    better: Better::Lower,
};
pub const CTX: Metric = Metric {
    label: "ctx switches",
    decimals: 0,
    get: Get::Field(|r| r.context_switches.map(|v| v as f64)),
    better: Better::Lower,
};
pub const SELECT_BPF: Metric = Metric {
    label: "select_cpu ns/call",
    decimals: 0,
    get: Get::Field(|r| r.select_ns_bpf),
    better: Better::Lower,
};
/// Every callback's BPF run time per context switch: the whole scheduler's cost per switch.
pub const BPF_PER_CS: Metric = Metric {
    label: "BPF ns/cs",
    decimals: 0,
    get: Get::Field(|r| match (r.bpf_ns, r.context_switches) {
        (Some(ns), Some(cs)) if cs > 0 => Some(ns as f64 / cs as f64),
        _ => None,
    }),
    better: Better::Lower,
};
pub const SELECT_SIS: Metric = Metric {
    label: "select ns (sis)",
    decimals: 0,
    get: Get::Field(|r| r.select_ns_sis),
    better: Better::Lower,
};
pub const SCAN_DEPTH: Metric = Metric {
    label: "scan depth",
    decimals: 1,
    get: Get::Field(|r| r.scan_depth),
    better: Better::Lower,
};
pub const SCAN_VISITED: Metric = Metric {
    label: "CPUs tested/scan",
    decimals: 1,
    get: Get::Field(|r| r.scan_visited),
    better: Better::Lower,
};
pub const STEALS: Metric = Metric {
    label: "steals",
    decimals: 0,
    get: Get::Field(|r| r.steals.map(|v| v as f64)),
    better: Better::Lower,
};
pub const PULLS: Metric = Metric {
    label: "lag pulls",
    decimals: 0,
    get: Get::Field(|r| r.pulls.map(|v| v as f64)),
    better: Better::Lower,
};
pub const IDLE_WAITING: Metric = Metric {
    label: "idle beside waiting ms",
    decimals: 0,
    get: Get::Field(|r| r.idle_waiting_ms),
    better: Better::Lower,
};
pub const TRACE_RECORDS: Metric = Metric {
    label: "trace records",
    decimals: 0,
    get: Get::Field(|r| r.trace_records.map(|v| v as f64)),
    better: Better::Lower,
};
pub const TRACE_DROPS: Metric = Metric {
    label: "trace drops",
    decimals: 0,
    get: Get::Field(|r| r.trace_drops.map(|v| v as f64)),
    better: Better::Lower,
};
pub const TRACE_READER_CPU: Metric = Metric {
    label: "reader CPU s",
    decimals: 2,
    get: Get::Field(|r| r.trace_reader_cpu_s),
    better: Better::Lower,
};
pub const WAKEUPS: Metric = Metric {
    label: "wakeups",
    decimals: 0,
    get: Get::Field(|r| r.wakeups.map(|v| v as f64)),
    better: Better::Lower,
};

pub const CYCLES: Metric = Metric {
    label: "cycles",
    decimals: 0,
    get: Get::Field(|r| r.cycles.map(|v| v as f64)),
    better: Better::Lower,
};
pub const INSTRUCTIONS: Metric = Metric {
    label: "instructions",
    decimals: 0,
    get: Get::Field(|r| r.instructions.map(|v| v as f64)),
    better: Better::Lower,
};
pub const IPC: Metric = Metric {
    label: "IPC",
    decimals: 2,
    get: Get::Field(|r| match (r.instructions, r.cycles) {
        (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
        _ => None,
    }),
    better: Better::Higher,
};
pub const LLC_LOADS: Metric = Metric {
    label: "LLC loads",
    decimals: 0,
    get: Get::Field(|r| r.llc_loads.map(|v| v as f64)),
    better: Better::Lower,
};
pub const LLC_MISSES: Metric = Metric {
    label: "LLC misses",
    decimals: 0,
    get: Get::Field(|r| r.llc_misses.map(|v| v as f64)),
    better: Better::Lower,
};
/// The hardware counters, shown where any run counted them.
pub const HW: [Metric; 5] = [CYCLES, INSTRUCTIONS, IPC, LLC_LOADS, LLC_MISSES];

/// The columns every workload's table ends with, after its family's own.
pub const COMMON: [Metric; 4] = [MIGRATIONS, CTX, SELECT_BPF, BPF_PER_CS];
