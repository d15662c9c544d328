//! The plan of a bench: which configurations and workloads, how many repeats, how much work;
//! passed to the VM's guest as JSON.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use scx_sis::tunables;

use super::config::{self, ConfigSpec, Target};
use super::opts::BenchOpts;
use super::report;
use super::workload::{self, Workload};

/// Everything the guest needs to run the matrix; passed as JSON through the VM's environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub repeats: u32,
    pub configs: Vec<ConfigSpec>,
    pub workloads: Vec<Workload>,
    pub quick: bool,
    pub work: f64,
}

impl Plan {
    pub fn from_opts(opts: &BenchOpts) -> Result<Plan> {
        let scaling = !opts.cpus.is_empty();
        let peers: Vec<String> = opts
            .peer
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let configs = config::resolve(opts.configs.as_deref(), &opts.config, &peers, scaling)?;
        let mut workloads = opts.workloads.clone().unwrap_or_else(|| {
            if scaling {
                workload::SCALING_DEFAULT.to_vec()
            } else {
                workload::DEFAULT.to_vec()
            }
        });
        let mut seen = Vec::new();
        workloads.retain(|w| {
            let first = !seen.contains(w);
            seen.push(*w);
            first
        });
        if workloads.is_empty() {
            bail!("no workload to run");
        }
        let in_vm = opts.vm || opts.native_guest;
        Ok(Plan {
            repeats: opts.repeats,
            configs,
            workloads,
            quick: opts.quick,
            work: opts.work.unwrap_or(if in_vm { 1.0 } else { 30.0 }),
        })
    }

    pub fn meta(&self, notes: Vec<String>) -> report::Meta {
        report::Meta {
            configs: self
                .configs
                .iter()
                .map(|c| (c.name.clone(), c.describe()))
                .collect(),
            workloads: self.workloads.clone(),
            repeats: self.repeats,
            notes,
            traced: self.traced_pairs(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::opts::parse;

    #[test]
    fn defaults_make_the_full_matrix() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.repeats, o.kernel.as_str(), o.topo.as_str()),
            (3, "7", "2llc-smt")
        );
        let p = Plan::from_opts(&o).unwrap();
        assert_eq!(p.configs.len(), 9);
        assert_eq!(p.workloads, workload::DEFAULT);
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
        assert_eq!(p.workloads, [Workload::Hackbench, Workload::WakelatLow]);
        assert!(p.meta(vec![]).traced.is_empty());
        // The plan survives the trip through the VM's environment.
        let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
