//! `--vm`: boot the project's VM (scripts/kernels.sh + scripts/vm/run.sh) with
//! tests/vm/guest/bench.sh, hand it the plan through the environment, follow the console for
//! progress and `SIS-BENCH` records, and render on the host.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::config::Target;
use super::record::RunRecord;
use super::workload::{expected_secs, Sizing};
use super::{in_path, save_plan, write_results, BenchOpts, Jsonl, Plan};

/// Guest progress lines on the console.
pub const PROGRESS: &str = "SIS-BENCH-PROGRESS";
/// Guest record lines: "SIS-BENCH {json}".
pub const RECORD: &str = "SIS-BENCH";

/// The record on a console line, if it has one.
pub fn parse_record(line: &str) -> Option<Result<RunRecord, serde_json::Error>> {
    let tag = format!("{RECORD} {{");
    let i = line.find(&tag)?;
    Some(serde_json::from_str(
        line[i + RECORD.len() + 1..].trim_end(),
    ))
}

/// The source tree (for scripts/): where this binary was built from, else the current directory.
fn repo_dir() -> Result<PathBuf> {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in [built, std::env::current_dir().unwrap_or_default()] {
        if dir.join("scripts/vm/run.sh").is_file() && dir.join("tests/vm/guest/bench.sh").is_file()
        {
            return Ok(dir);
        }
    }
    bail!("--vm needs the scx_sis source tree (scripts/vm/run.sh): run it from the repository")
}

/// scripts/kernels.sh fetch SERIES -> (vmlinuz, config).
fn fetch_kernel(repo: &Path, series: &str) -> Result<(String, String)> {
    let mut cmd = Command::new(repo.join("scripts/kernels.sh"));
    cmd.args(["fetch", series]).stderr(Stdio::inherit());
    if std::env::var_os("SCX_SIS_PREBUILT_KERNELS").is_none() {
        let shared = repo.join("../shared/kernels");
        if shared.is_dir() {
            cmd.env("SCX_SIS_PREBUILT_KERNELS", shared);
        }
    }
    let out = cmd.output().context("failed to run scripts/kernels.sh")?;
    if !out.status.success() {
        bail!("scripts/kernels.sh fetch {series} failed ({})", out.status);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = stdout
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    if f.len() != 3 {
        bail!("unexpected scripts/kernels.sh output: {stdout:?}");
    }
    Ok((f[0].to_string(), f[1].to_string()))
}

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
            Target::Sis { .. } => 4.0,
            Target::Peer { .. } => 20.0,
        })
        .sum::<f64>()
        + 20.0;
    let run = plan.repeats as f64 * (plan.configs.len() as f64 * per_config + starts);
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

pub fn run(opts: &BenchOpts, plan: &Plan) -> Result<()> {
    let repo = repo_dir()?;
    if !in_path("qemu-system-x86_64") {
        bail!("qemu-system-x86_64 not found: install the VM's tools with scripts/setup.sh");
    }
    // Peers go into the initramfs as /bin/<name>.
    let mut guest_plan = plan.clone();
    let mut extras: Vec<String> = Vec::new();
    for c in &mut guest_plan.configs {
        if let Target::Peer { path } = &mut c.target {
            if !Path::new(path.as_str()).is_file() {
                bail!("--peer {path}: no such file");
            }
            let base = Path::new(path.as_str())
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if extras
                .iter()
                .any(|e| Path::new(e).file_name() == Some(base.as_ref()))
            {
                bail!(
                    "two --peer binaries are named {base}: they would share /bin/{base} in the VM"
                );
            }
            extras.push(path.clone());
            *path = format!("/bin/{base}");
        }
    }
    let plan_json = serde_json::to_string(&guest_plan)?;
    let stop = super::stop_flag()?;
    let (vmlinuz, kconfig) = fetch_kernel(&repo, &opts.kernel)?;
    let exe = super::self_exe()?;

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
        let runs = plan.repeats as usize * plan.configs.len() * plan.workloads.len();
        eprintln!(
            "bench: VM kernel {} topology {topo}: {runs} runs, timeout {timeout} s, console in {}",
            opts.kernel,
            log.display()
        );
        let mut cmd = Command::new(repo.join("scripts/vm/run.sh"));
        cmd.args(["--kernel", &vmlinuz, "--config", &kconfig, "--bin", &exe])
            .arg("--guest")
            .arg(repo.join("tests/vm/guest/bench.sh"))
            .args(["--topo", topo, "--timeout", &timeout.to_string(), "--quiet"])
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
            } else if line.contains("SIS-TEST FAIL") || line.contains("scx_sis: error") {
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

    write_results(
        &opts.out,
        plan,
        &records,
        "QEMU TCG VM, so absolute times are ~100x native",
        t0,
    )?;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workload::Workload;

    #[test]
    fn records_are_found_on_console_lines() {
        let mut r = RunRecord::new("all-on", "sis", Workload::Pipe, 2);
        r.ok = true;
        let line = format!(
            "[   12.3] {RECORD} {}\r",
            serde_json::to_string(&r).unwrap()
        );
        assert_eq!(parse_record(&line).unwrap().unwrap(), r);
        assert!(parse_record("SIS-BENCH-PROGRESS [1/2] repeat 1/1").is_none());
        assert!(parse_record("SIS-BENCH {broken").unwrap().is_err());
    }

    #[test]
    fn timeout_grows_with_the_matrix() {
        let mut p = Plan {
            repeats: 1,
            configs: crate::bench::config::resolve(None, &[], &[], false).unwrap(),
            workloads: vec![Workload::Hackbench],
            quick: true,
            work: 1.0,
        };
        let small = estimate_timeout(&p, 8);
        p.repeats = 3;
        p.quick = false;
        assert!(estimate_timeout(&p, 8) > 3 * small / 2);
        assert!(estimate_timeout(&p, 32) > estimate_timeout(&p, 8));
    }
}
