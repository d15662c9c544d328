//! The plan of a bench: which configurations and workloads, how many repeats, how much work;
//! passed to the VM's guest as JSON.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use scx_sis::policy::tunables;

use super::config::{self, ConfigSpec, Target};
use super::meta::Meta;
use super::opts::BenchOpts;
use crate::bench::model::workload::{intern, Sizing, Workload};
use crate::bench::workloads::custom::{self, Custom};
use crate::bench::workloads::{self, is_builtin};

/// --until-ci's budget unless --max-repeats says otherwise.
pub const MAX_REPEATS_DEFAULT: u32 = 20;

/// Everything the guest needs to run the matrix; passed as JSON through the VM's environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Rounds to run (with `until_ci`, the least).
    pub repeats: u32,
    pub configs: Vec<ConfigSpec>,
    pub workloads: Vec<Workload>,
    pub quick: bool,
    pub work: f64,
    /// The custom workloads and presets among `workloads`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom: Vec<Custom>,
    /// Add rounds until every verdict's interval is narrower than this many percent of its
    /// ratio, up to `max_repeats` rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ci: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeats: Option<u32>,
    /// The configuration every other is judged against; a plan written before --baseline
    /// judged against EEVDF.
    #[serde(default = "eevdf")]
    pub baseline: String,
}

fn eevdf() -> String {
    config::BASELINE.to_string()
}

impl Plan {
    pub fn from_opts(opts: &BenchOpts) -> Result<Plan> {
        let scaling = !opts.cpus.is_empty();
        let mut configs =
            config::resolve(opts.configs.as_deref(), &opts.config, &opts.peer, scaling)?;
        let baseline = opts.baseline.clone();
        if !scaling && !configs.iter().any(|c| c.name == baseline) {
            let all: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
            bail!(
                "--baseline {baseline}: not among the configurations run ({})",
                all.join(", ")
            );
        }
        if let Some(of) = &opts.aa {
            // --aa alone copies the baseline.
            config::add_aa(&mut configs, if of.is_empty() { &baseline } else { of })?;
        }
        let (workloads, custom) = workloads(opts, scaling)?;
        let in_vm = opts.vm || opts.native_guest;
        let max_repeats = opts
            .until_ci
            .map(|_| opts.max_repeats.unwrap_or(MAX_REPEATS_DEFAULT));
        if let Some(max) = max_repeats {
            if max < opts.repeats {
                bail!("--max-repeats {max} is below --repeats {}", opts.repeats);
            }
        }
        Ok(Plan {
            repeats: opts.repeats,
            configs,
            workloads,
            quick: opts.quick,
            work: opts.work.unwrap_or(if in_vm { 1.0 } else { 30.0 }),
            custom,
            until_ci: opts.until_ci,
            max_repeats,
            baseline,
        })
    }

    /// The runs of one round: each configuration's workloads that run under it (a stats
    /// request, only under scx_sis).
    pub fn runs_per_round(&self) -> usize {
        self.configs
            .iter()
            .map(|c| {
                self.workloads
                    .iter()
                    .filter(|w| workloads::runs_under(**w, c.kind()))
                    .count()
            })
            .sum()
    }

    /// The most rounds this plan may run.
    pub fn max_rounds(&self) -> u32 {
        self.max_repeats.unwrap_or(self.repeats).max(self.repeats)
    }

    /// What the judge and the report read of this plan, with the notes for the report's header.
    pub fn meta(&self, notes: Vec<String>) -> Meta {
        Meta {
            configs: self
                .configs
                .iter()
                .map(|c| match &c.aa_of {
                    Some(of) => (
                        c.name.clone(),
                        format!("{}: `{of}` again, the A/A copy", c.describe()),
                    ),
                    None => (c.name.clone(), c.describe()),
                })
                .collect(),
            workloads: self.workloads.clone(),
            repeats: self.repeats,
            notes,
            traced: self.traced_pairs(),
            custom: self.custom.clone(),
            aa: self
                .configs
                .iter()
                .find_map(|c| Some((c.name.clone(), c.aa_of.clone()?))),
            until_ci: self.until_ci,
            max_repeats: self.max_repeats,
            baseline: self.baseline.clone(),
        }
    }

    /// Every traced scx_sis configuration with an untraced one of the same tunables (trace-on
    /// and all-on), by name. Compared as tunables, so the flags' order does not matter.
    fn traced_pairs(&self) -> Vec<(String, String)> {
        let sis = |c: &ConfigSpec| match &c.target {
            Target::Sis { flags, trace } => config::tunables_for(flags)
                .ok()
                .map(|t| (tunables::describe(&t), *trace)),
            _ => None,
        };
        let mut out = Vec::new();
        for t in &self.configs {
            let Some((flags, true)) = sis(t) else {
                continue;
            };
            let twin = self
                .configs
                .iter()
                .find(|u| sis(u).is_some_and(|(f, traced)| !traced && f == flags));
            if let Some(u) = twin {
                out.push((t.name.clone(), u.name.clone()));
            }
        }
        out
    }
}

/// The workloads to run (--workloads or the default set, then every --workload) and the
/// custom ones among them, with their --metric scores; presets are looked up by name.
fn workloads(opts: &BenchOpts, scaling: bool) -> Result<(Vec<Workload>, Vec<Custom>)> {
    let mut custom: Vec<Custom> = Vec::new();
    for s in &opts.workload {
        let c = workloads::parse_custom(s)?;
        if custom.iter().any(|k| k.name == c.name) {
            bail!("--workload {}: defined twice", c.name);
        }
        custom.push(c);
    }
    for s in &opts.metric {
        let (name, m) = custom::parse_metric(s)?;
        let c = custom
            .iter_mut()
            .find(|c| c.name == name)
            .with_context(|| {
                format!("--metric {name}: no --workload {name}='COMMAND' to read it from")
            })?;
        if c.metrics.iter().any(|k| k.label == m.label) {
            bail!("--metric {name}: two metrics are labelled {}", m.label);
        }
        c.metrics.push(m);
    }
    let mut list = opts.workloads.clone().unwrap_or_else(|| {
        if scaling {
            workloads::SCALING_DEFAULT.to_vec()
        } else {
            workloads::DEFAULT.to_vec()
        }
    });
    for c in &custom {
        list.push(Workload::named(intern(&c.name)));
    }
    let mut seen = Vec::new();
    list.retain(|w| {
        let first = !seen.contains(w);
        seen.push(*w);
        first
    });
    for w in &list {
        let name = w.name();
        if is_builtin(name) || custom.iter().any(|c| c.name == name) {
            continue;
        }
        // Sized at run time, for the CPUs of the machine it runs on.
        let sizing = Sizing {
            cpus: 8,
            quick: opts.quick,
            work: 1.0,
        };
        let preset = custom::preset(name, &sizing).with_context(|| {
            format!(
                "unknown workload '{name}' (built-in: {}; presets: {}; or define it with \
                 --workload {name}='COMMAND')",
                workloads::builtins()
                    .map(|w| w.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                custom::PRESETS.join(", ")
            )
        })?;
        custom.push(preset);
    }
    if list.is_empty() {
        bail!("no workload to run");
    }
    Ok((list, custom))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::opts::parse;

    #[test]
    fn defaults_make_the_full_matrix() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.repeats, o.kernel.as_str(), o.topo.as_str()),
            (3, "7", "2llc-smt")
        );
        let p = Plan::from_opts(&o).unwrap();
        assert_eq!(p.configs.len(), 9);
        assert_eq!(p.workloads, workloads::DEFAULT);
        assert_eq!(p.work, 30.0, "native default");
        let p = Plan::from_opts(&parse(&["--vm"]).unwrap()).unwrap();
        assert_eq!(p.work, 1.0);
    }

    #[test]
    fn traced_configs_are_paired_with_their_untraced_twin() {
        let o = parse(&[
            "--configs",
            "trace-on,all-on,wakeq-1",
            "--config",
            "wq1-traced=--wakeq-shards 1 --trace --wakeq on",
            "--config",
            "plain-traced=--preset plain --trace",
        ])
        .unwrap();
        let p = Plan::from_opts(&o).unwrap();
        assert_eq!(
            p.meta(vec![]).traced,
            [
                ("trace-on".to_string(), "all-on".to_string()),
                ("wq1-traced".into(), "wakeq-1".into())
            ],
            "plain-traced has no untraced twin in this plan"
        );
    }

    #[test]
    fn lists_and_extras_parse() {
        let o = parse(&[
            "--vm",
            "--configs",
            "eevdf,all-on",
            "--workloads",
            "hackbench,wakelat-low",
            "--config",
            "wq2=--wakeq on --wakeq-shards 2",
            "--peer",
            "/x/scx_bpfland",
            "--cpus",
            "4,8",
            "--quick",
        ])
        .unwrap();
        assert_eq!(o.cpus, vec![4, 8]);
        let p = Plan::from_opts(&o).unwrap();
        let names: Vec<&str> = p.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["eevdf", "all-on", "wq2", "scx_bpfland"]);
        assert_eq!(
            p.workloads,
            [workloads::timed::HACKBENCH, workloads::wakelat::WAKELAT_LOW]
        );
        assert!(p.meta(vec![]).traced.is_empty());
        assert_eq!((p.until_ci, p.max_rounds()), (None, 3));
        // The plan survives the trip through the VM's environment.
        let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn custom_workloads_presets_aa_and_until_ci() {
        let o = parse(&[
            "--workloads",
            "hackbench,schbench",
            "--workload",
            "pipeops=perf bench sched pipe -l 1000",
            "--metric",
            "pipeops:ops/s:higher=([0-9]+) ops/sec",
            "--configs",
            "eevdf,all-on",
            "--aa",
            "--until-ci",
            "10",
            "--repeats",
            "3",
        ])
        .unwrap();
        let p = Plan::from_opts(&o).unwrap();
        let names: Vec<&str> = p.workloads.iter().map(|w| w.name()).collect();
        assert_eq!(names, ["hackbench", "schbench", "pipeops"]);
        let custom: Vec<&str> = p.custom.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(custom, ["pipeops", "schbench"]);
        assert_eq!(p.custom[0].metrics[0].label, "ops/s");
        let configs: Vec<&str> = p.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(configs, ["eevdf", "eevdf-aa", "all-on"]);
        assert_eq!(p.meta(vec![]).aa, Some(("eevdf-aa".into(), "eevdf".into())));
        assert_eq!(
            (p.until_ci, p.max_rounds()),
            (Some(10.0), MAX_REPEATS_DEFAULT)
        );
        let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);

        let o = parse(&["--aa", "all-on", "--configs", "all-on"]).unwrap();
        let p = Plan::from_opts(&o).unwrap();
        assert_eq!(
            p.meta(vec![]).aa,
            Some(("all-on-aa".into(), "all-on".into()))
        );

        // --baseline: the verdicts' reference, and what --aa alone copies.
        let o = parse(&[
            "--baseline",
            "all-on",
            "--aa",
            "--configs",
            "all-on,wakeq-1",
        ])
        .unwrap();
        let p = Plan::from_opts(&o).unwrap();
        let configs: Vec<&str> = p.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(configs, ["eevdf", "all-on", "all-on-aa", "wakeq-1"]);
        let m = p.meta(vec![]);
        assert_eq!(m.baseline, "all-on");
        assert_eq!(m.aa, Some(("all-on-aa".into(), "all-on".into())));
        let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back.baseline, "all-on");

        let bad = |args: &[&str]| {
            Plan::from_opts(&parse(args).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(bad(&["--workloads", "fio"]).contains("unknown workload 'fio'"));
        assert!(bad(&["--baseline", "wq2", "--configs", "all-on"]).contains("not among"));
        assert!(bad(&["--metric", "x=([0-9]+)"]).contains("no --workload x"));
        assert!(
            bad(&["--until-ci", "5", "--max-repeats", "2", "--repeats", "3"]).contains("below")
        );
        assert!(parse(&["--max-repeats", "5"]).is_err(), "needs --until-ci");
        assert!(parse(&["--until-ci", "0"]).is_err());
    }
}
