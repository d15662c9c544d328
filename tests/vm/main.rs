//! VM tests: boot sched_ext kernels under QEMU (TCG) and run guest scripts from tests/vm/guest/
//! against the binaries built by cargo: /bin/scx_sis (the scheduler) and /bin/scx_sis_lab (the
//! wakelat workload and the bench's guest side). This file is the list of tests; harness.rs boots
//! and runs the guests, records.rs decodes what they print, matrix.rs is the compatibility matrix,
//! bench.rs the lab's bench end to end, and one judge module per guest script rules on its records.
//!
//! The guest scripts: this file is their one list. Each script of tests/vm/guest/ has its test
//! line below, with a comment on what it checks (`every_guest_script_has_a_test` holds that);
//! reliability_lib.sh is reliability.sh's own helpers. Every guest script sources the guest
//! library scripts/guest/lib.sh (/sis/lib.sh in the guest). The guest scripts that are not tests
//! live in scripts/guest/: bench.sh (`scx_sis_lab bench --vm`, run end to end by `bench_quick_7`),
//! demo.sh (`scripts/run.sh --vm`) and trace_demo.sh (`scripts/trace-demo.sh`). An image holds the
//! one script it boots, at /guest/NAME, with the helpers that script sources from /guest/ (a line
//! `. /guest/NAME_lib.sh`, the helper beside the script), and no other
//! (scripts/vm/mkinitramfs.sh; `images_hold_only_their_guest_files` holds it).
//!
//! Environment:
//! - `SCX_SIS_SKIP_VM=1`        skip every VM test (they print "skipped").
//! - `SCX_SIS_VM_KERNELS`       kernel series to test, default "6.12 7" (see scripts/kernels.sh).
//!   Series other than 6.12 and 7 are run by `foundation_other_kernels` (ignored, below).
//! - `SCX_SIS_MATRIX`           series for the `matrix` test (matrix.rs, `scripts/test.sh
//!   --matrix`); default every series with sched_ext.
//! - `SCX_SIS_VM_TIMEOUT`       seconds per VM run, default 900.
//! - `SCX_SIS_VM_PHASE`         `alone` or `shared`: only the tests that take the host alone, or
//!   only the others (harness.rs, `in_phase`; scripts/test.sh runs the two phases in turn).
//! - `SCX_SIS_PREBUILT_KERNELS` directory with vmlinuz-6.12*-scx; defaults to ../shared/kernels
//!   beside the repository when that exists.
//!
//! The long runs (`reliability_long_7`, `chaos_long_7`), the `matrix` and
//! `foundation_other_kernels` are `#[ignore]`d: the default run leaves them out and lists them as
//! ignored, and `-- --ignored` runs them (`scripts/test.sh --help` names the options that do).
//!
//! No global lock: VM runs share the host, as many at once as `--test-threads` lets (each keeps a
//! host core busy under TCG, so 2 suits a 2-core host). latency.sh, which judges latencies, runs
//! alone, with no other VM beside it, and so does every run on a host with fewer than 2 cores
//! (harness.rs, `vm_slot`). Kernel fetches run one at a time.
//!
//! A test boots with multi-threaded TCG (scripts/vm/run.sh `--accel multi`, a host thread per
//! vCPU) when its guest environment holds `SIS_VM_ACCEL=multi`; such a run also runs alone. With
//! topology `2cpu` on a 2-core host its guest is faithful: a time it reads holds no other vCPU's
//! turn on a shared host thread.
//!
//! Guest scripts run the workloads and print two kinds of lines: `SIS-TEST PASS|FAIL` for the
//! checks only the guest can make live (the scheduler started, unloaded, refused bad input), and
//! `SIS-REC` records (monitor objects, workload results, counts from /proc) that a judge here
//! decodes with the library's types and rules on (records.rs; one module per script).
//!
//! Adding a VM test (two files, one line):
//! 1. tests/vm/guest/NAME.sh: `. /sis/lib.sh` (scripts/guest/lib.sh); `guest_open`; `guest_start ARGS`; the checks
//!    as `pass`/`fail` lines and `rec` records; `guest_close` (or the closing checks it names);
//!    `finish`.
//! 2. tests/vm/NAME.rs, the judge of its records: `pub fn judge(run: &GuestRun, v: &mut
//!    Verdicts)` (crate::harness::GuestRun, crate::records::Verdicts).
//! 3. One line below: `vm_script!(mod NAME, NAME_6_12, NAME_7, "2llc-smt", &[]);` declares the
//!    judge module and a test on each default series. Without a judge (the guest's own SIS-TEST
//!    lines only), step 2 goes and `vm_test!` lines name the script instead.

// The judge modules of the scripts listed with `vm_script!` are declared by that line.
mod bench;
mod harness;
mod matrix;
mod policy;
mod records;
mod reliability;
mod verifier;

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::{
    check, in_phase, long_case, no_judge, run_guest, runs_on, selected_kernels, skip_all, vm_case,
};

/// One #[test] per (kernel series, guest script, topology).
macro_rules! vm_test {
    ($name:ident, $series:expr, $script:expr, $topo:expr) => {
        vm_test!($name, $series, $script, $topo, &[]);
    };
    ($name:ident, $series:expr, $script:expr, $topo:expr, $env:expr) => {
        vm_test!($name, $series, $script, $topo, $env, then no_judge);
    };
    ($name:ident, $series:expr, $script:expr, $topo:expr, $env:expr, then $judge:expr) => {
        #[test]
        fn $name() {
            vm_case($series, $script, $topo, $env, $judge);
        }
    };
}

/// The tests of guest script NAME.sh judged by its module tests/vm/NAME.rs, which this declares:
/// one on 6.12 and one on 7, with topology `$topo` and guest environment `$env`.
macro_rules! vm_script {
    (mod $m:ident, $on_6_12:ident, $on_7:ident, $topo:expr, $env:expr) => {
        mod $m;
        vm_test!($on_6_12, "6.12", concat!(stringify!($m), ".sh"), $topo, $env, then $m::judge);
        vm_test!($on_7, "7", concat!(stringify!($m), ".sh"), $topo, $env, then $m::judge);
    };
}

// Harness self-check (boot, sched_ext present, promised topology): seconds, no scheduler needed.
vm_test!(
    harness_6_12,
    "6.12",
    "harness.sh",
    "2llc-smt",
    &["SIS_QUICK=1"]
);
vm_test!(harness_7, "7", "harness.sh", "2llc-smt", &["SIS_QUICK=1"]);

// Load, hackbench, nice fairness, stress-ng mix, clean SIGINT unload (~2 min each under TCG).
vm_test!(foundation_6_12, "6.12", "foundation.sh", "2llc-smt", &[], then verifier::judge);
vm_test!(foundation_7, "7", "foundation.sh", "2llc-smt", &[], then verifier::judge);

// Live tune + monitor --json, invalid tunes, second instance, SIGKILL and stale pin (~30 s each).
vm_script!(mod runtime_control, runtime_control_6_12, runtime_control_7, "2llc-smt", &[]);

// scx_sis ab under hackbench: an A/A, the wakequeue against the defaults with a user metric,
// Ctrl-C and kill -9 in a B window, a CPU hotplug reload in a B window (~5 min each).
vm_script!(mod ab, ab_6_12, ab_7, "2llc-smt", &[]);

// Wakequeue off / 1 shard / N shards: every task completes, shard books balance, affinity holds,
// 20 live toggles under hackbench (~2 min each).
vm_script!(mod wakeq, wakeq_6_12, wakeq_7, "2llc-smt", &[]);

// Safe as root: trace -o on devices, FIFOs, stdout, directories and /proc; monitor and trace
// against a stopped daemon end within the stats timeout, and Ctrl-C ends them (~2 min each).
vm_script!(mod safety, safety_6_12, safety_7, "2llc-smt", &[]);

// Placement policies (~3-5 min each): prev-bias cuts migrations per context switch under a
// wakeup-heavy load (medians of alternating on/off runs, one boot); SIS_UTIL curves at idle and
// under hogs on two LLCs of 4; the affinity corner case (hogs bound to every CPU of an LLC but
// one) needs one LLC of 8.
vm_test!(
    policy_6_12,
    "6.12",
    "policy.sh",
    "2llc-smt",
    &["SIS_POL_CHECKS=prevbias curves", "SIS_POL_REPS=7"],
    then policy::judge
);
vm_test!(
    policy_7,
    "7",
    "policy.sh",
    "2llc-smt",
    &["SIS_POL_CHECKS=prevbias curves", "SIS_POL_REPS=7"],
    then policy::judge
);
vm_test!(
    policy_1llc_6_12,
    "6.12",
    "policy.sh",
    "1llc",
    // The curves are our BPF's own arithmetic: 6.12 runs them on two LLCs, 7 on one.
    &["SIS_POL_CHECKS=affinity"],
    then policy::judge
);
vm_test!(
    policy_1llc_7,
    "7",
    "policy.sh",
    "1llc",
    &["SIS_POL_CHECKS=curves affinity"],
    then policy::judge
);

// Reliability: stress-ng mixes at 2x the CPUs (all stages on, then the wakequeue), hackbench 8x,
// affinity, hotplug, sysrq-S, SIGKILL, an injected scx_bpf_error, bad input, not root, RSS.
// 1-minute loads on 7 (~5 min), 45-second loads on 6.12 (~6 min); `scripts/test.sh --long` runs
// 10-minute loads.
vm_test!(
    reliability_6_12,
    "6.12",
    "reliability.sh",
    "2llc-smt",
    // 6.12's verifier walks about three times the instructions 7's does, for up to minutes under
    // TCG with the load running (well under a second on hardware), and the run restarts the
    // scheduler several times: a longer start timeout, and a VM timeout above the default 900 s.
    &[
        "SIS_REL_SECS=45",
        "SIS_REL_ENABLE_SECS=150",
        "SIS_START_TIMEOUT=240",
        "SIS_VM_TIMEOUT=1500"
    ],
    then reliability::judge
);
vm_test!(
    reliability_7,
    "7",
    "reliability.sh",
    "2llc-smt",
    &["SIS_REL_SECS=60"],
    then reliability::judge
);

/// `scripts/test.sh --long`: the same with 10-minute loads (~30 min).
#[test]
#[ignore = "long run (~30 min): scripts/test.sh --long"]
fn reliability_long_7() {
    long_case(
        "reliability.sh",
        &["SIS_REL_SECS=600"],
        "3600",
        reliability::judge,
    );
}

// Fairness across CPUs (~4 min each): n+1 busy loops on 2 and on 8 CPUs, nice 0/5 across 2 CPUs,
// hackbench beside a SCHED_FIFO hog (no wakeup placed on the CPU it holds; EEVDF measured first in
// the same boot), wakeups counted under the LLC of the wakee's prev.
vm_script!(mod fairness, fairness_6_12, fairness_7, "2llc-smt", &[]);

// Latency for the woken and the new, EEVDF in the same boot, on two vCPUs under a long hackbench
// and a restarting one: a light task's wait per run (cyclictest's thread, a forking shell), ten
// 50 ms sleeps, a new command, per-CPU kthreads' wait, a stats request against its idle time, a
// fork storm, the wait histogram in monitor (tests/vm/latency.rs). Both series boot the faithful
// guest (a host thread per vCPU), whose times hold no other vCPU's turn: 6.12 under both
// backgrounds, 7.x under the restarting hackbench only (under which a light task's wait grew round
// after round). Multi-threaded TCG has oopsed at a scheduler enable, where the kernel patches the
// sched_switch tracepoint scx_sis attaches (7.3.4 in 1 of 49 enables and unloads, 6.12.117 once);
// harness.rs boots such a run once more. Two rounds, each enabling scx_sis once, 200 cyclictest
// loops and 50 forked sleeps a probe (about 150 runs of each probed thread a round).
mod latency;
vm_test!(
    latency_6_12,
    "6.12",
    "latency.sh",
    "2cpu",
    &[
        "SIS_VM_ACCEL=multi",
        "SIS_LAT_ROUNDS=2",
        "SIS_LAT_LOOPS=200",
        "SIS_LAT_FORKS=50",
        "SIS_VM_TIMEOUT=1500"
    ],
    then latency::judge
);
vm_test!(
    latency_7,
    "7",
    "latency.sh",
    "2cpu",
    &[
        "SIS_VM_ACCEL=multi",
        "SIS_LAT_BGS=loop",
        "SIS_LAT_ROUNDS=2",
        "SIS_LAT_LOOPS=200",
        "SIS_LAT_FORKS=50",
        "SIS_VM_TIMEOUT=1500"
    ],
    then latency::judge
);

// Stealing on expected wait (~2 min each): idle dispatches look at almost no CPU, steal-min
// leaves young heads in place and is live, a kicked stealer takes the kicker's work.
vm_script!(mod steal, steal_6_12, steal_7, "2llc-smt", &[]);

// The placement trace (~3 min each): pipe and hackbench traces against the counters, filters,
// off costs no record, drops reported with a small ring buffer.
vm_script!(mod trace, trace_6_12, trace_7, "2llc-smt", &[]);

// A fleet's view (~3 min each): exit status by cause (bad flag, second instance, sysrq-S,
// scx_bpf_error), SIGTERM in the verifier attaches nothing, the build id in the ops name, tune
// idempotent, users who are not root told so, trace outputs checked first, a trace and a
// monitor across a reload and an exit, a tune storm without a torn snapshot (fleet.rs), a suspend
// and resume, a pin directory that is not root's, no kernel config for libbpf.
vm_script!(mod fleet, fleet_6_12, fleet_7, "2llc-smt", &[]);

// Chaos: a random tunable changed ten times a second for 40 s (past the sched_ext watchdog's 30 s)
// under the stress-ng mix at 2x the CPUs, then two concurrent tuners; never ejected, no task waits
// 5 s, the wakequeue's books balance once drained (~90 s each).
vm_script!(mod chaos, chaos_6_12, chaos_7, "2llc-smt", &["SIS_CHAOS_SECS=40"]);

/// `scripts/test.sh --long`: the chaos run for 10 minutes (~13 min).
#[test]
#[ignore = "long run (~13 min): scripts/test.sh --long"]
fn chaos_long_7() {
    long_case("chaos.sh", &["SIS_CHAOS_SECS=600"], "1800", chaos::judge);
}

/// Debian's own 6.12, built without sched_ext (`scripts/kernels.sh fetch debian-6.12`): scx_sis
/// refuses with one line naming CONFIG_SCHED_CLASS_EXT (no_scx.sh, ~15 s). Runs when 6.12 is
/// selected.
#[test]
fn no_sched_ext_6_12() {
    if !runs_on("6.12", "no_scx.sh (debian-6.12)") || !in_phase("no_scx.sh", "single") {
        return;
    }
    check(
        &run_guest("debian-6.12", "no_scx.sh", "2llc-smt", &[]),
        no_judge,
    );
}

// `scx_sis_lab bench --vm --quick --work 0.5` end to end, one boot (~4-5 min): bench.rs.
#[test]
fn bench_quick_7() {
    bench::quick_7();
}

/// foundation.sh on the series in SCX_SIS_VM_KERNELS that have no test of their own above (e.g.
/// "6.18 7.2"); with none there, a failure that says so.
#[test]
#[ignore = "series of SCX_SIS_VM_KERNELS other than 6.12 and 7: -- --ignored foundation_other_kernels"]
fn foundation_other_kernels() {
    if skip_all() {
        return;
    }
    let others: Vec<String> = selected_kernels()
        .into_iter()
        .filter(|k| k != "6.12" && k != "7")
        .collect();
    assert!(
        !others.is_empty(),
        "foundation_other_kernels: SCX_SIS_VM_KERNELS names no series other than 6.12 and 7"
    );
    let mut failed = Vec::new();
    for k in &others {
        let run = run_guest(k, "foundation.sh", "2llc-smt", &[]);
        if std::panic::catch_unwind(|| check(&run, no_judge)).is_err() {
            failed.push(k.clone());
        }
    }
    assert!(failed.is_empty(), "foundation.sh failed on {failed:?}");
}

/// `scripts/test.sh --matrix`: the compatibility matrix over SCX_SIS_MATRIX (matrix.rs).
#[test]
#[ignore = "every kernel series (~10 min each): scripts/test.sh --matrix"]
fn matrix() {
    matrix::run();
}

/// The guest files scripts/vm/mkinitramfs.sh puts in the image it builds for `script`, as
/// (source, path in the guest), from its `--list-guest`, which builds nothing.
fn image_guest_files(script: &Path) -> Vec<(PathBuf, String)> {
    let out = Command::new(harness::repo().join("scripts/vm/mkinitramfs.sh"))
        .arg("--guest")
        .arg(script)
        .arg("--list-guest")
        .output()
        .expect("run scripts/vm/mkinitramfs.sh --list-guest");
    assert!(
        out.status.success(),
        "mkinitramfs.sh --guest {} --list-guest: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 file list")
        .lines()
        .map(|l| {
            let (src, dest) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("bad line {l:?}"));
            let src = std::fs::canonicalize(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            (src, dest.to_string())
        })
        .collect()
}

/// The `.sh` files of `dir` (in the repository) that are guest scripts, not a script's helpers.
fn guest_scripts(dir: &str) -> Vec<PathBuf> {
    let dir = harness::repo().join(dir);
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".sh") && !n.ends_with("_lib.sh") && n != "lib.sh"
        })
        .collect();
    scripts.sort();
    scripts
}

/// An image carries the guest library, the one script it boots and that script's own helpers,
/// nothing else of the tree: one built for a product's script (the demos, the bench) holds no
/// file of tests/, and one built for a test holds no other test's script.
#[test]
fn images_hold_only_their_guest_files() {
    let repo = std::fs::canonicalize(harness::repo()).expect("the repository");
    let lib = repo.join("scripts/guest/lib.sh");
    let products = guest_scripts("scripts/guest");
    assert!(
        products
            .iter()
            .any(|p| p.ends_with("scripts/guest/bench.sh")),
        "no bench.sh in scripts/guest: {products:?}"
    );
    for script in &products {
        let name = script.file_name().unwrap().to_str().unwrap();
        let want = vec![
            (lib.clone(), "/sis/lib.sh".to_string()),
            (
                std::fs::canonicalize(script).unwrap(),
                format!("/guest/{name}"),
            ),
        ];
        let files = image_guest_files(script);
        assert!(
            !files
                .iter()
                .any(|(src, _)| src.starts_with(repo.join("tests"))),
            "the image for {name} holds a file of tests/: {files:?}"
        );
        assert_eq!(files, want, "the image for {name}");
    }
    let tests = guest_scripts("tests/vm/guest");
    let mut helpers = Vec::new();
    for script in &tests {
        let script = std::fs::canonicalize(script).unwrap();
        let name = script.file_name().unwrap().to_str().unwrap();
        for (src, dest) in image_guest_files(&script) {
            let file = src.file_name().unwrap().to_str().unwrap().to_string();
            if src == lib {
                assert_eq!(dest, "/sis/lib.sh");
            } else {
                assert!(
                    src == script || (file.ends_with("_lib.sh") && src.parent() == script.parent()),
                    "the image for {name} holds {}, neither it nor its helper",
                    src.display()
                );
                assert_eq!(dest, format!("/guest/{file}"), "the image for {name}");
                if src != script {
                    helpers.push(file);
                }
            }
        }
    }
    assert!(
        helpers.iter().any(|h| h == "reliability_lib.sh"),
        "no image holds reliability.sh's helpers: {helpers:?}"
    );
}

/// Every guest script of tests/vm/guest/ but the helpers another sources (`*_lib.sh`) has its
/// test in this file, so that this file stays the one list of them.
#[test]
fn every_guest_script_has_a_test() {
    let this = include_str!("main.rs");
    let dir = harness::repo().join("tests/vm/guest");
    let mut missing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sh") && !n.ends_with("_lib.sh"))
        .filter(|n| {
            let module = format!("mod {},", n.trim_end_matches(".sh"));
            !this.contains(&format!("\"{n}\"")) && !this.contains(&module)
        })
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "guest scripts without a test in tests/vm/main.rs: {missing:?}"
    );
}
