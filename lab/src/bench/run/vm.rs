//! `--vm`: boot the project's VM (scripts/kernels.sh + scripts/vm/run.sh) with
//! scripts/guest/bench.sh, scx_sis and this binary in its /bin, hand it the plan through the
//! environment, follow the console for progress and `SIS-BENCH` records, and hand them to the
//! driver, which renders them on the host.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use scx_sis::process::shutdown;
use scx_sis_lab::kernels;

use super::native::{Ran, INTERRUPTED};
use crate::bench::model::run_record::{parse_record, RunRecord, PROGRESS};
use crate::bench::model::workload::Sizing;
use crate::bench::plan::config::Target;
use crate::bench::plan::locate;
use crate::bench::plan::BenchOpts;
use crate::bench::plan::Plan;
use crate::bench::record::saved::{save_plan, Jsonl};
use crate::bench::workloads::expected_secs;

/// A generous bound on one VM's run time.
fn estimate_timeout(plan: &Plan, cpus: u32) -> u64 {
    let s = Sizing {
        cpus,
        quick: plan.quick,
        work: plan.work,
    };
    let per_config: f64 = plan
        .workloads
        .iter()
        .map(|&w| expected_secs(w, &s) + 4.0)
        .sum();
    let starts: f64 = plan
        .configs
        .iter()
        .map(|c| match c.target {
            Target::Eevdf => 2.0,
            Target::Sis { trace: false, .. } => 4.0,
            // The trace reader's start, and after the runs its JSON and summary, which grow with
            // the records a run writes: a bound with room for long runs.
            Target::Sis { trace: true, .. } => 30.0,
            Target::Peer { .. } => 20.0,
        })
        .sum::<f64>()
        + 20.0;
    let run = plan.max_rounds() as f64 * (plan.configs.len() as f64 * per_config + starts);
    let slow = 1.0 + cpus as f64 / 16.0;
    (300.0 + 2.5 * slow * run) as u64
}

/// New complete lines of a growing file.
struct Follower {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl Follower {
    fn lines(&mut self) -> Vec<String> {
        let Ok(mut f) = File::open(&self.path) else {
            return vec![];
        };
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return vec![];
        }
        self.offset += buf.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        let Some(end) = self.partial.rfind('\n') else {
            return vec![];
        };
        let done: String = self.partial.drain(..=end).collect();
        done.lines().map(|l| l.replace('\r', "")).collect()
    }

    fn rest(&mut self) -> Vec<String> {
        let mut v = self.lines();
        if !self.partial.is_empty() {
            v.push(std::mem::take(&mut self.partial).replace('\r', ""));
        }
        v
    }
}

/// The guest's /bin beside /bin/scx_sis: this binary (the guest runs bench.sh, which runs
/// `scx_sis_lab bench --native-guest`) and every peer; `plan` with the peers' paths as the
/// guest sees them.
fn guest_binaries(plan: &Plan) -> Result<(Plan, Vec<String>)> {
    let lab = locate::this_binary()?.to_string_lossy().into_owned();
    let mut guest_plan = plan.clone();
    let mut extras: Vec<String> = vec![lab];
    for c in &mut guest_plan.configs {
        if let Target::Peer { path, .. } = &mut c.target {
            if !Path::new(path.as_str()).is_file() {
                bail!("--peer {path}: no such file");
            }
            let base = Path::new(path.as_str())
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let taken = base == locate::SCHEDULER
                || extras
                    .iter()
                    .any(|e| Path::new(e).file_name() == Some(base.as_ref()));
            if taken {
                bail!(
                    "--peer {path}: another binary for the VM (scx_sis, scx_sis_lab or a peer) \
                     is named {base} too, and they would share /bin/{base}"
                );
            }
            extras.push(path.clone());
            *path = format!("/bin/{base}");
        }
    }
    Ok((guest_plan, extras))
}

pub fn run(opts: &BenchOpts, plan: &Plan) -> Result<Ran> {
    let repo = locate::repo(opts.repo.as_deref())?;
    let sched = locate::scheduler_binary(opts.bin.as_deref())?;
    if !locate::in_path("qemu-system-x86_64") {
        bail!("qemu-system-x86_64 not found: install the VM's tools with scripts/setup.sh");
    }
    let (guest_plan, extras) = guest_binaries(plan)?;
    let plan_json = serde_json::to_string(&guest_plan)?;
    let stop = shutdown::flag_then_exit(INTERRUPTED)?;
    let kernel = kernels::fetch(&repo, &opts.kernel)?;

    let boots: Vec<(String, Option<u32>)> = if opts.cpus.is_empty() {
        vec![(opts.topo.clone(), None)]
    } else {
        opts.cpus
            .iter()
            .map(|n| (format!("1llc-{n}"), Some(*n)))
            .collect()
    };
    let mut jsonl = Jsonl::create(&opts.out)?;
    save_plan(&opts.out, plan, &[])?;
    let mut records: Vec<RunRecord> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let t0 = Instant::now();
    for (topo, n) in &boots {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let log = opts.out.join(match n {
            Some(n) => format!("console-{n}cpus.log"),
            None => "console.log".into(),
        });
        let _ = fs::remove_file(&log);
        let timeout = opts
            .timeout
            .unwrap_or_else(|| estimate_timeout(plan, n.unwrap_or(8)));
        let runs = plan.max_rounds() as usize * plan.runs_per_round();
        eprintln!(
            "bench: VM kernel {} topology {topo} accel {}: {runs} runs, timeout {timeout} s, console in {}",
            opts.kernel,
            opts.accel,
            log.display()
        );
        let mut cmd = Command::new(repo.join(locate::VM_RUN));
        cmd.args(["--kernel", &kernel.vmlinuz, "--config", &kernel.config])
            .arg("--bin")
            .arg(&sched)
            .arg("--guest")
            .arg(repo.join(locate::GUEST_SCRIPT))
            .args(["--topo", topo, "--accel", &opts.accel])
            .args(["--timeout", &timeout.to_string(), "--quiet"])
            .arg("--log")
            .arg(&log)
            .arg("--env")
            .arg(format!("SIS_BENCH_PLAN={plan_json}"));
        for x in &extras {
            cmd.args(["--extra", x]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .spawn()
            .context("failed to start scripts/vm/run.sh")?;
        let mut follow = Follower {
            path: log.clone(),
            offset: 0,
            partial: String::new(),
        };
        let tag = n.map_or_else(|| "vm".to_string(), |n| format!("vm {n} CPUs"));
        let mut handle = |line: &str, records: &mut Vec<RunRecord>| -> Result<()> {
            if let Some(i) = line.find(PROGRESS) {
                eprintln!("bench ({tag}):{}", &line[i + PROGRESS.len()..]);
            } else if let Some(r) = parse_record(line) {
                match r {
                    Ok(r) => {
                        jsonl.push(&r)?;
                        records.push(r);
                    }
                    Err(e) => eprintln!("bench ({tag}): unreadable record ({e}): {line}"),
                }
            } else if ["SIS-TEST FAIL", "scx_sis: error", "scx_sis_lab: error"]
                .iter()
                .any(|s| line.contains(s))
            {
                eprintln!("bench ({tag}): {}", line.trim());
            }
            Ok(())
        };
        let status = loop {
            let exited = child.try_wait()?;
            for l in follow.lines() {
                handle(&l, &mut records)?;
            }
            if let Some(st) = exited {
                break st;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        for l in follow.rest() {
            handle(&l, &mut records)?;
        }
        if !status.success() {
            failures.push(format!(
                "the VM ({topo}) ended with {status}: see {}",
                log.display()
            ));
        }
    }

    let end = move |records: &[RunRecord]| {
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        if records.is_empty() {
            failures.push("no run reported a result".into());
        }
        if !failures.is_empty() {
            bail!("{}", failures.join("; "));
        }
        Ok(())
    };
    Ok(Ran {
        records,
        // The accel goes into the report's header and plan.json's notes: it decides whether a
        // guest's times hold other vCPUs' turns, so two runs compare only under the same one.
        how: format!(
            "QEMU TCG VM, accel {}, so absolute times are ~100x native",
            opts.accel
        ),
        t0,
        end: Box::new(end),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::timed::HACKBENCH;

    /// One quick hackbench of every default configuration, plus these peers.
    fn plan(peers: &[String]) -> Plan {
        Plan {
            repeats: 1,
            configs: crate::bench::plan::config::resolve(None, &[], peers, false).unwrap(),
            workloads: vec![HACKBENCH],
            quick: true,
            work: 1.0,
            custom: vec![],
            until_ci: None,
            max_repeats: None,
            baseline: "eevdf".into(),
        }
    }

    #[test]
    fn the_guest_gets_this_binary_and_every_peer_under_its_name() {
        let lab = locate::this_binary()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let (guest, extras) = guest_binaries(&plan(&[])).unwrap();
        assert_eq!((guest, extras), (plan(&[]), vec![lab.clone()]));

        let (guest, extras) = guest_binaries(&plan(&["/bin/sh".into()])).unwrap();
        assert_eq!(extras, [lab.clone(), "/bin/sh".into()]);
        let peer = guest.configs.iter().find(|c| c.kind() == "peer").unwrap();
        assert_eq!(
            peer.target,
            Target::Peer {
                path: "/bin/sh".into(),
                args: vec![]
            }
        );

        let e = guest_binaries(&plan(&[lab])).unwrap_err();
        assert!(e.to_string().contains("would share /bin/"), "{e}");
    }

    #[test]
    fn timeout_grows_with_the_matrix() {
        let mut p = plan(&[]);
        let small = estimate_timeout(&p, 8);
        p.repeats = 3;
        p.quick = false;
        assert!(estimate_timeout(&p, 8) > 3 * small / 2);
        assert!(estimate_timeout(&p, 32) > estimate_timeout(&p, 8));
    }
}
