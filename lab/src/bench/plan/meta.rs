//! What the judge and the report know of the plan besides the records: the configurations and
//! how each is set up, the workloads, the rounds asked for and `--until-ci`'s target, the
//! baseline, the A/A pair and the traced/untraced pairs. Made from the plan (`Plan::meta`), with
//! the notes of where and how long it ran.

use crate::bench::model::workload::Workload;
use crate::bench::workloads::custom::Custom;

/// What the judge and the report need besides the records.
pub struct Meta {
    /// Configuration names and how each is set up, in run order.
    pub configs: Vec<(String, String)>,
    pub workloads: Vec<Workload>,
    pub repeats: u32,
    /// Free text for the header (where it ran, how long it took).
    pub notes: Vec<String>,
    /// (traced configuration, the one with the same flags untraced) among `configs`: the
    /// tracing overhead table compares them.
    pub traced: Vec<(String, String)>,
    /// The custom workloads and presets among `workloads`.
    pub custom: Vec<Custom>,
    /// `--aa`: (the second copy, the configuration it copies).
    pub aa: Option<(String, String)>,
    /// `--until-ci PCT` and its budget of rounds.
    pub until_ci: Option<f64>,
    pub max_repeats: Option<u32>,
    /// The configuration every other is judged against (`--baseline`, eevdf by default).
    pub baseline: String,
}
