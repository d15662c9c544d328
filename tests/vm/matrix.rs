//! The compatibility matrix, `scripts/test.sh --matrix`: on every series of SCX_SIS_MATRIX
//! (space or comma separated), one boot after another, foundation.sh (load, hackbench, nice,
//! stress, unload), runtime_control.sh, and fairness.sh's rt case alone (a busy loop whose CPU a
//! SCHED_FIFO hog takes, then hackbench beside such a hog; EEVDF then scx_sis in one boot). A
//! failed run (or a series that cannot be fetched) does not stop the others; a series that does
//! not load is not run further. Ends with a table per kernel (what loaded, what passed, the held-CPU
//! mechanism the daemon chose, whether every dmesg check was clean, minutes taken) and fails if
//! any run failed, except a series of `DOCUMENTED_NO_LOAD` refused as documented. Its test is
//! `#[ignore]`d, so the default run and CI leave it out; SCX_SIS_MATRIX unset, it boots
//! `ALL_SERIES`.

use std::panic::catch_unwind;
use std::time::Instant;

use crate::fairness;
use crate::harness::{no_judge, report, run_guest, series_list, skip_all, GuestRun, Judge};
use crate::records::say;
use crate::runtime_control;

/// Series whose Debian builds refuse the load, as README's Compatibility table records with the
/// evidence: some KF_IMPLICIT_ARGS kfuncs kept their implicit argument in the BTF and have no
/// `_impl` twin, so libbpf refuses our prototype as `DOCUMENTED_REFUSAL`. The matrix reports
/// them and does not fail on that refusal; it fails if one is refused otherwise or loads after
/// all (the table is then out of date).
const DOCUMENTED_NO_LOAD: [&str; 2] = ["7.1", "7.2"];
const DOCUMENTED_REFUSAL: &str = "incompatible with vmlinux";

/// Every series with a sched_ext build: our 6.12 and Debian's from 6.16 on (scripts/kernels.sh).
const ALL_SERIES: &str = "6.12 6.16 6.17 6.18 6.19 7.0 7.1 7.2 7.3";

/// The guest's SIS-TEST lines named `name` (PASS and FAIL).
fn named<'a>(run: &'a GuestRun, name: &str) -> (Vec<&'a String>, Vec<&'a String>) {
    let tag = format!(" {name} ");
    let pick = |v: &'a [String]| v.iter().filter(|l| l.contains(&tag)).collect();
    (pick(&run.passes), pick(&run.fails))
}

/// The held-CPU mechanism foundation.sh read from the daemon's `held CPUs: MECHANISM ...; ops
/// flags: ...` line: its first word, and the whole line.
fn held_mechanism(run: &GuestRun) -> Option<(String, String)> {
    let (passes, _) = named(run, "held_mechanism");
    let line = &passes.first()?[passes.first()?.find("held CPUs: ")?..];
    let word = line["held CPUs: ".len()..].split_whitespace().next()?;
    Some((word.trim_end_matches(';').to_string(), line.to_string()))
}

/// libbpf's line refusing a kfunc as `DOCUMENTED_REFUSAL`, and the kfunc it names.
fn documented_refusal(console: &str) -> Option<(String, String)> {
    let line = console.lines().find(|l| l.contains(DOCUMENTED_REFUSAL))?;
    let kfunc = line.split('\'').nth(1).unwrap_or("?");
    Some((kfunc.to_string(), line.trim().to_string()))
}

/// The `matrix` test (see the module doc).
pub(crate) fn run() {
    let list = std::env::var("SCX_SIS_MATRIX").unwrap_or_else(|_| ALL_SERIES.to_string());
    if skip_all() {
        say("vm: matrix: skipped (SCX_SIS_SKIP_VM=1)");
        return;
    }
    // The RT hog is fairness.sh's rt case (reliability.sh's rt_preempt runs only after two stress
    // loads): a busy loop displaced by the hog keeps running, and no wakeup goes to the CPU the
    // hog holds (counts); hackbench's slowdown beside the hog is left out (judge_counts), a
    // wall-time ratio on a host other VMs load swings too far for a verdict on the kernel.
    let scripts: [(&str, &[&str], Judge); 3] = [
        ("foundation.sh", &[], no_judge),
        ("runtime_control.sh", &[], runtime_control::judge),
        (
            "fairness.sh",
            &["SIS_FAIR_CASES=rt"],
            fairness::judge_counts,
        ),
    ];
    let mut rows = vec![
        "| series | kernel | loads | foundation | runtime_control | RT hog | held mechanism | dmesg clean | min |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---:|".to_string(),
    ];
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for series in series_list(&list) {
        let t0 = Instant::now();
        let documented = DOCUMENTED_NO_LOAD.contains(&series.as_str());
        let (mut release, mut loads) = ("?".to_string(), None::<String>);
        let (mut mech, mut cells) = ("–".to_string(), Vec::new());
        // Each script checks dmesg once, near its end: passed, failed, or never reached.
        let (mut dmesg_ok, mut dmesg_bad, mut dmesg_unrun) = (0, Vec::new(), Vec::new());
        for (script, env, judge) in scripts {
            if loads.as_deref().is_some_and(|l| l.starts_with("no")) {
                cells.push("not run".to_string());
                continue;
            }
            // run_guest panics when the kernel cannot be fetched: that series' row says so.
            let Ok(run) = catch_unwind(|| run_guest(&series, script, "2llc-smt", env)) else {
                cells.push("no kernel".to_string());
                failed.push(format!("{script} on {series}: no kernel"));
                continue;
            };
            release = run.release.clone();
            // Every script checks first that the scheduler came up (sched_enabled); the first
            // run decides whether the series loads.
            let up = !named(&run, "sched_enabled").0.is_empty();
            if loads.is_none() {
                let refusal = documented_refusal(&run.console);
                loads = Some(match (up, documented, refusal) {
                    (true, false, _) => "yes".to_string(),
                    (true, true, _) => {
                        failed.push(format!(
                            "{series} loaded ({release}), but README's Compatibility table says it does not: update it"
                        ));
                        "yes (README: no)".to_string()
                    }
                    (false, true, Some((kfunc, line))) => {
                        // The documented refusal: shown, not failed, and the console not dumped.
                        say(&format!(
                            "vm: matrix: {release} does not load, as documented: {line}"
                        ));
                        cells.push(format!(
                            "{} of {} passed",
                            run.passes.len(),
                            run.passes.len() + run.fails.len()
                        ));
                        format!("no, as documented (libbpf refuses `{kfunc}`)")
                    }
                    (false, _, _) => "no".to_string(),
                });
                if loads.as_deref().is_some_and(|l| l.starts_with("no, as")) {
                    continue;
                }
            }
            if script == "foundation.sh" {
                if let Some((word, line)) = held_mechanism(&run) {
                    mech = format!("`{word}`");
                    lines.push(format!("{release}: {line}"));
                }
            }
            let (p, f) = named(&run, "dmesg_clean");
            dmesg_ok += p.len();
            if p.is_empty() && f.is_empty() {
                dmesg_unrun.push(script.trim_end_matches(".sh"));
            }
            dmesg_bad.extend(
                f.iter()
                    .map(|l| format!("{script}: {}", l.chars().take(160).collect::<String>())),
            );
            let (passes, fails, err) = report(&run, judge);
            // run.sh's 124: the VM was killed at SCX_SIS_VM_TIMEOUT, so the checks after that
            // point never ran and their absence is not a pass.
            let rc = match run.rc {
                0 => String::new(),
                124 => ", then timed out".to_string(),
                rc => format!(", rc {rc}"),
            };
            let mut cell = format!("{passes} of {} passed{rc}", passes + fails);
            if let Some(rt) = fairness::rt_summary(&run.records) {
                cell += &format!(" ({rt})");
            }
            cells.push(cell);
            if let Some(msg) = err {
                say(&format!("vm: matrix: {msg}"));
                failed.push(format!("{script} on {release}"));
            }
        }
        let loads = loads.unwrap_or_else(|| "?".to_string());
        if loads == "no" {
            failed.push(format!("{series} ({release}) does not load"));
        }
        let unrun = if dmesg_unrun.is_empty() {
            String::new()
        } else {
            format!("; not reached in {}", dmesg_unrun.join(", "))
        };
        let dmesg = match (loads.starts_with("no"), dmesg_ok, dmesg_bad.is_empty()) {
            (true, _, _) => "–".to_string(),
            (_, _, false) => {
                lines.push(format!("{release}: dmesg: {}", dmesg_bad.join(" / ")));
                format!(
                    "no ({} of {} checks failed, below{unrun})",
                    dmesg_bad.len(),
                    dmesg_ok + dmesg_bad.len()
                )
            }
            (_, 0, true) => format!("not checked{unrun}"),
            (_, n, true) => format!("yes ({n} of {n} checks{unrun})"),
        };
        let mins = t0.elapsed().as_secs_f64() / 60.0;
        rows.push(format!(
            "| {series} | {release} | {loads} | {} | {mech} | {dmesg} | {mins:.1} |",
            cells.join(" | ")
        ));
    }
    say("vm: matrix:");
    for r in rows.iter().chain(&lines) {
        say(&format!("    {r}"));
    }
    assert!(failed.is_empty(), "matrix: failed: {failed:?}");
}
