//! The VM harness: fetch a kernel, take a VM slot, boot it with a guest script, and turn the
//! console into a `GuestRun` (its SIS-TEST lines and SIS-REC records) that `check` judges.
//!
//! VM runs share the host through `vm_slot`, a read-write lock: a run takes it shared, so as many
//! run at once as `--test-threads` lets; a script of `RUNS_ALONE`, a run with multi-threaded TCG
//! (`SIS_VM_ACCEL=multi`), or any run on a host with fewer than 2 cores, takes it exclusively and
//! runs with no other VM. Kernel fetches take `FETCH_LOCK`, one at a time.

use std::io::{BufRead, BufReader, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use crate::records::{say, Records, Verdicts};

/// Guest runs share the host two at a time (`--test-threads=2`): single-threaded TCG keeps one
/// host core busy per VM, so a second VM on a 2-core host nearly halves the suite's time. The
/// scripts in `RUNS_ALONE` judge latencies that a neighbour VM would stretch, so they take the
/// lock exclusively; so does every run on a host with fewer than 2 cores, and every run with
/// multi-threaded TCG, whose host thread per vCPU keeps both cores of a 2-core host busy (and
/// whose guest is faithful only while no other VM takes a core from its vCPUs). A script that
/// judges counts (migrations per switch, CPUs visited), shares of CPU ticks within its guest, or
/// wall times of runs interleaved in one boot (fairness.sh's work alone and beside an RT hog)
/// shares the host: a neighbour slows every vCPU of a single-threaded guest alike, and both sides
/// of an interleaved comparison alike.
static VM_SLOTS: RwLock<()> = RwLock::new(());
const RUNS_ALONE: [&str; 1] = ["latency.sh"];
/// One kernel fetch at a time: two runs of one series would unpack into the same cache.
static FETCH_LOCK: Mutex<()> = Mutex::new(());

#[allow(dead_code)] // held for its Drop only
pub(crate) enum VmSlot {
    Shared(RwLockReadGuard<'static, ()>),
    Alone(RwLockWriteGuard<'static, ()>),
}

/// The slot a guest run of `script` with TCG `accel` (scripts/vm/run.sh --accel) holds while its
/// VM runs.
pub(crate) fn vm_slot(script: &str, accel: &str) -> VmSlot {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if runs_alone(script, accel, cores) {
        VmSlot::Alone(VM_SLOTS.write().unwrap_or_else(|e| e.into_inner()))
    } else {
        VmSlot::Shared(VM_SLOTS.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Whether a run of `script` with `accel` on a host of `cores` cores takes the host alone.
fn runs_alone(script: &str, accel: &str, cores: usize) -> bool {
    RUNS_ALONE.contains(&script) || accel != SINGLE || cores < 2
}

/// scripts/vm/run.sh's default TCG mode: one host thread runs every vCPU in turn.
const SINGLE: &str = "single";

/// The TCG mode a test asks for in its guest environment, `SIS_VM_ACCEL=single|multi`
/// (scripts/vm/run.sh --accel), single when it names none.
pub(crate) fn accel_of<'a>(env: &[&'a str]) -> &'a str {
    match env.iter().find_map(|kv| kv.strip_prefix("SIS_VM_ACCEL=")) {
        None => SINGLE,
        Some(a @ ("single" | "multi")) => a,
        Some(a) => panic!("SIS_VM_ACCEL={a}: single or multi"),
    }
}

const DEFAULT_KERNELS: &str = "6.12 7";

/// Outcome of one guest script run.
pub struct GuestRun {
    /// The series asked for ("6.12") and the release it fetched.
    pub kernel: String,
    pub release: String,
    pub script: String,
    pub topo: String,
    /// The TCG mode it ran under (scripts/vm/run.sh --accel): single or multi.
    pub accel: String,
    /// scripts/vm/run.sh's exit status: the guest script's, or 124 when the VM timed out.
    pub rc: i32,
    /// How long the VM ran, boot to power-off.
    pub secs: u64,
    pub console: String,
    /// The guest's `SIS-TEST PASS ...` and `SIS-TEST FAIL ...` lines.
    pub passes: Vec<String>,
    pub fails: Vec<String>,
    pub records: Records,
}

/// A script's host-side checks: verdicts on the run's records.
pub(crate) type Judge = fn(&GuestRun, &mut Verdicts);

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The lab's binary, built now if it is missing or stale. It belongs to the workspace's other
/// crate, which cargo does not build for this package's tests, so without this a VM test could
/// boot a lab older than the tree. Built once per test process, with this test's profile, into
/// the directory cargo put scx_sis in.
pub(crate) fn lab_bin() -> &'static str {
    static LAB: OnceLock<String> = OnceLock::new();
    LAB.get_or_init(|| {
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args([
            "build",
            "--quiet",
            "-p",
            "scx_sis_lab",
            "--bin",
            "scx_sis_lab",
        ]);
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let status = cargo
            .current_dir(repo())
            .status()
            .expect("run cargo build -p scx_sis_lab");
        assert!(status.success(), "cargo build -p scx_sis_lab: {status}");
        let lab = Path::new(env!("CARGO_BIN_EXE_scx_sis")).with_file_name("scx_sis_lab");
        assert!(lab.is_file(), "{} was not built", lab.display());
        lab.to_string_lossy().into_owned()
    })
}

pub(crate) fn skip_all() -> bool {
    std::env::var("SCX_SIS_SKIP_VM")
        .map(|v| v == "1")
        .unwrap_or(false)
}

/// Kernel series selected by SCX_SIS_VM_KERNELS (space or comma separated).
pub(crate) fn selected_kernels() -> Vec<String> {
    let v = std::env::var("SCX_SIS_VM_KERNELS").unwrap_or_else(|_| DEFAULT_KERNELS.to_string());
    series_list(&v)
}

/// A list of kernel series, space or comma separated (SCX_SIS_VM_KERNELS, SCX_SIS_MATRIX).
pub(crate) fn series_list(v: &str) -> Vec<String> {
    v.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `scripts/kernels.sh fetch SERIES` -> (vmlinuz, config, release).
pub(crate) fn fetch_kernel(series: &str) -> (String, String, String) {
    let _guard = FETCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let k = scx_sis_lab::kernels::fetch(&repo(), series).unwrap_or_else(|e| panic!("{e:#}"));
    (k.vmlinuz, k.config, k.release)
}

/// The command line packaging/scx_sis.service starts: its ExecStart with the flags of
/// packaging/scx_sis.default (the unit's EnvironmentFile) substituted, as systemd would.
fn unit_exec() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(repo().join("packaging").join(f))
            .unwrap_or_else(|e| panic!("packaging/{f}: {e}"))
    };
    let value = |text: &str, key: &str| -> String {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} line in packaging/"))
            .trim()
            .trim_matches('"')
            .to_string()
    };
    let exec = value(&read("scx_sis.service"), "ExecStart=");
    let flags = value(&read("scx_sis.default"), "SCX_SIS_FLAGS=");
    exec.replace("${SCX_SIS_FLAGS}", &flags)
        .replace("$SCX_SIS_FLAGS", &flags)
}

/// Boot `series` with `topo`, run tests/vm/guest/`script` with /bin/scx_sis, /bin/scx_sis_lab and
/// `env` (K=V); the image holds the script (/guest/`script`), its helpers and no other test's.
/// Two of `env`'s variables are the harness's too: `SIS_VM_TIMEOUT=S` (below)
/// and `SIS_VM_ACCEL=multi`, which boots with multi-threaded TCG (`accel_of`) and so runs alone.
pub(crate) fn run_guest(series: &str, script: &str, topo: &str, env: &[&str]) -> GuestRun {
    // SCX_SIS_VM_TIMEOUT, else the test's own (SIS_VM_TIMEOUT=S in its env), else 900 s.
    let own = env.iter().find_map(|kv| kv.strip_prefix("SIS_VM_TIMEOUT="));
    let timeout =
        std::env::var("SCX_SIS_VM_TIMEOUT").unwrap_or_else(|_| own.unwrap_or("900").to_string());
    let run = run_guest_for(series, script, topo, env, &timeout);
    if !emulator_oops(&run) {
        return run;
    }
    say(&format!(
        "vm: {script} on {series}: the guest oopsed on an int3 under multi-threaded TCG (text \
         patching raced another vCPU, scripts/vm/run.sh); booting it once more"
    ));
    run_guest_for(series, script, topo, env, &timeout)
}

/// Whether a run with a host thread per vCPU died on the emulator's known fault: an int3 trap
/// the kernel did not place, left mid-patch where it rewrites its own text (a tracepoint that
/// scx_sis attaches) while another vCPU runs it. Such a guest never finishes its script, so its
/// run says nothing of scx_sis; any other failure is reported as it is.
fn emulator_oops(run: &GuestRun) -> bool {
    run.accel != SINGLE && run.rc == 125 && run.console.contains("Oops: int3")
}

/// `run_guest` with its own timeout in seconds.
fn run_guest_for(series: &str, script: &str, topo: &str, env: &[&str], timeout: &str) -> GuestRun {
    let accel = accel_of(env);
    let (vmlinuz, config, release) = fetch_kernel(series);
    let _slot = vm_slot(script, accel);
    // Built before the clock starts, so that `secs` is the VM's alone.
    let lab = lab_bin();
    let t0 = Instant::now();
    let log = std::env::temp_dir().join(format!(
        "scx_sis-vm-{}-{}-{}-{}-{}.log",
        series,
        script.trim_end_matches(".sh"),
        topo,
        accel,
        std::process::id()
    ));
    let guest = repo().join("tests/vm/guest").join(script);
    let mut cmd = Command::new(repo().join("scripts/vm/run.sh"));
    cmd.args(["--kernel", &vmlinuz, "--config", &config])
        .args(["--bin", env!("CARGO_BIN_EXE_scx_sis")])
        .args(["--extra", lab])
        .arg("--guest")
        .arg(&guest)
        .args(["--topo", topo, "--accel", accel])
        .args(["--timeout", timeout, "--quiet"])
        .arg("--log")
        .arg(&log);
    for kv in env {
        cmd.args(["--env", kv]);
    }
    cmd.args(["--env", &format!("SIS_UNIT_EXEC={}", unit_exec())]);
    say(&format!(
        "vm: {script} on {release} ({series}), topo {topo}, accel {accel}: running (console in {})",
        log.display()
    ));
    // run.sh's stderr is passed on line by line as before, and read for its initramfs build
    // time, which the console does not hold.
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run scripts/vm/run.sh");
    let mut initramfs_ms = None;
    for line in BufReader::new(child.stderr.take().expect("run.sh's stderr")).lines() {
        let Ok(line) = line else { break };
        initramfs_ms = initramfs_ms.or_else(|| initramfs_ms_of(&line));
        say(&line);
    }
    let status = child.wait().expect("wait for scripts/vm/run.sh");
    let rc = status.code().unwrap_or(-1);
    let secs = t0.elapsed().as_secs();
    let console = read_console(&log);
    let _ = std::fs::remove_file(&log);
    let pick = |tag: &str| -> Vec<String> {
        console
            .lines()
            .filter_map(|l| l.find(tag).map(|i| l[i..].trim_end().to_string()))
            .collect()
    };
    let run = GuestRun {
        kernel: series.to_string(),
        release,
        script: script.to_string(),
        topo: topo.to_string(),
        accel: accel.to_string(),
        rc,
        secs,
        passes: pick("SIS-TEST PASS "),
        fails: pick("SIS-TEST FAIL "),
        records: Records::parse(&console),
        console,
    };
    record_time(&vm_time(&run, initramfs_ms));
    run
}

/// run.sh's `run.sh: kernel ..., initramfs N KiB in M ms` line -> M.
fn initramfs_ms_of(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("run.sh: kernel ")?;
    let (_, built) = rest.rsplit_once(" KiB in ")?;
    built.strip_suffix(" ms")?.trim().parse().ok()
}

/// The guest's uptime in seconds when its script started, from scripts/vm/init's `SIS-INIT ...
/// uptime=S.SSs` line: the kernel's boot and the init's setup.
fn boot_secs_of(console: &str) -> Option<f64> {
    console
        .lines()
        .filter(|l| l.contains("SIS-INIT kernel="))
        .find_map(|l| l.split_once(" uptime=")?.1.split_once('s')?.0.parse().ok())
}

/// One line of where a run's time went: building the initramfs (run.sh), booting to the guest
/// script (its uptime then), and the rest, the script and power-off. A part the run did not
/// report (a boot that never reached the script) shows as `?` and counts as the script's.
fn vm_time(run: &GuestRun, initramfs_ms: Option<u64>) -> String {
    let initramfs = initramfs_ms.map(|ms| ms as f64 / 1000.0);
    let boot = boot_secs_of(&run.console);
    let script = (run.secs as f64 - initramfs.unwrap_or(0.0) - boot.unwrap_or(0.0)).max(0.0);
    let part = |s: Option<f64>| s.map_or("?".to_string(), |s| format!("{s:.0}"));
    let accel = if run.accel == SINGLE {
        String::new()
    } else {
        format!(" accel {}", run.accel)
    };
    format!(
        "vm-time: {} {} {}{accel}: {} s (boot {} s, initramfs {} s, script {script:.0} s)",
        run.script,
        run.kernel,
        run.topo,
        run.secs,
        part(boot),
        part(initramfs)
    )
}

/// Print `line` and append it to target/vm-times.txt (beside the build of scx_sis), so that a
/// run of the suite leaves its times behind. Each test process starts its block with a comment
/// line, so runs appended one after another stay apart.
fn record_time(line: &str) {
    say(line);
    static HEAD_WRITTEN: Mutex<bool> = Mutex::new(false);
    let mut written = HEAD_WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    let text = if *written {
        format!("{line}\n")
    } else {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!(
            "# test process {} (first run ended at unix time {since_epoch})\n{line}\n",
            std::process::id()
        )
    };
    let Some(target) = Path::new(env!("CARGO_BIN_EXE_scx_sis"))
        .parent()
        .and_then(Path::parent)
    else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target.join("vm-times.txt"));
    // A table not written loses no verdict: the line above was printed.
    if let Ok(mut f) = file {
        if f.write_all(text.as_bytes()).is_ok() {
            *written = true;
        }
    }
}

fn read_console(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes).replace('\r', "")
}

/// Judge the run's records, print the SIS-TEST lines and the verdicts; on any failure print the
/// whole console and panic.
pub(crate) fn check(run: &GuestRun, judge: Judge) {
    if let (_, _, Some(msg)) = report(run, judge) {
        panic!("{msg}");
    }
}

/// `check` without the panic: the verdicts passed and failed, and on any failure (after the
/// console was printed) the message `check` panics with.
pub(crate) fn report(run: &GuestRun, judge: Judge) -> (usize, usize, Option<String>) {
    let mut v = Verdicts::default();
    // A judge that panics (a record missing or malformed) is a failed verdict of its own.
    if let Err(e) = catch_unwind(AssertUnwindSafe(|| judge(run, &mut v))) {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        v.fail("judge", format!("could not rule on the records: {msg}"));
    }
    let passes = run.passes.len() + v.passes.len();
    let fails: Vec<&String> = run.fails.iter().chain(&v.fails).collect();
    say(&format!(
        "vm: {} on {} (topo {}, accel {}): rc={} after {} s, passed={} failed={} (host verdicts: {} passed, {} failed)",
        run.script,
        run.release,
        run.topo,
        run.accel,
        run.rc,
        run.secs,
        passes,
        fails.len(),
        v.passes.len(),
        v.fails.len()
    ));
    for l in run.console.lines().filter(|l| l.contains("SIS-TEST ")) {
        say(&format!("    {}", l.trim()));
    }
    for l in &v.lines {
        say(&format!("    {l}"));
    }
    let ok = run.rc == 0 && passes > 0 && fails.is_empty();
    if !ok {
        say(&format!(
            "===== guest console: {} on {} =====\n{}\n===== end of console =====",
            run.script, run.release, run.console
        ));
        let msg = format!(
            "{} on kernel {} ({}): rc={}, {} passed, {} failed: {:?}{}",
            run.script,
            run.kernel,
            run.release,
            run.rc,
            passes,
            fails.len(),
            fails,
            kernel_report(&run.console)
        );
        return (passes, fails.len(), Some(msg));
    }
    (passes, 0, None)
}

/// No host-side checks.
pub(crate) fn no_judge(_: &GuestRun, _: &mut Verdicts) {}

/// The kernel's own account of a stall or error (an RCU stall splat with its backtraces, say),
/// from its first line on, for the panic message: CI logs keep the message but may cut the
/// console printed before it.
fn kernel_report(console: &str) -> String {
    const FIRST: [&str; 5] = [
        "rcu: INFO:",
        "detected stall",
        "runnable task stall",
        "watchdog: BUG:",
        "Call Trace:",
    ];
    let lines: Vec<&str> = console.lines().collect();
    match lines
        .iter()
        .position(|l| FIRST.iter().any(|f| l.contains(f)))
    {
        Some(at) => format!(
            "\n----- kernel report (console from its first line, 60 lines) -----\n{}",
            lines[at..]
                .iter()
                .take(60)
                .copied()
                .collect::<Vec<_>>()
                .join("\n")
        ),
        None => String::new(),
    }
}

/// Whether a VM test of `what` runs on `series`; says why when it is skipped.
pub(crate) fn runs_on(series: &str, what: &str) -> bool {
    let why = if skip_all() {
        "SCX_SIS_SKIP_VM=1"
    } else if !selected_kernels().iter().any(|k| k == series) {
        "not in SCX_SIS_VM_KERNELS"
    } else {
        return true;
    };
    say(&format!("vm: {what} on {series}: skipped ({why})"));
    false
}

/// `SCX_SIS_VM_PHASE=alone|shared`: run only the VM tests that take the host alone, or only
/// those that share it, and say so of the others. scripts/test.sh runs the suite in these two
/// phases, the alone runs one after another and then the shared ones two at a time: in one run,
/// a run that waits for the host alone leaves the other test thread idle until every VM beside
/// it has ended. Unset: every test runs.
pub(crate) fn in_phase(script: &str, accel: &str) -> bool {
    let Ok(phase) = std::env::var("SCX_SIS_VM_PHASE") else {
        return true;
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let alone = runs_alone(script, accel, cores);
    let wanted = match phase.as_str() {
        "alone" => alone,
        "shared" => !alone,
        other => panic!("SCX_SIS_VM_PHASE={other}: alone or shared"),
    };
    if !wanted {
        say(&format!(
            "vm: {script}: skipped (SCX_SIS_VM_PHASE={phase}: it runs in the other phase)"
        ));
    }
    wanted
}

/// Run `script` on `series` if that series is selected and `check` it with `judge`; returns
/// false when skipped.
pub(crate) fn vm_case(series: &str, script: &str, topo: &str, env: &[&str], judge: Judge) -> bool {
    if !runs_on(series, script) || !in_phase(script, accel_of(env)) {
        return false;
    }
    let run = run_guest(series, script, topo, env);
    check(&run, judge);
    true
}

/// A long run of `script` on series 7 with its own `timeout` (seconds), judged by `judge`; its
/// test is `#[ignore]`d (`scripts/test.sh --long`), so the default suite stays short.
pub(crate) fn long_case(script: &str, env: &[&str], timeout: &str, judge: Judge) {
    let what = format!("{script} --long");
    if !runs_on("7", &what) {
        return;
    }
    check(&run_guest_for("7", script, "2llc-smt", env, timeout), judge);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_threaded_tcg_runs_alone() {
        assert_eq!(accel_of(&["SIS_QUICK=1"]), "single");
        assert_eq!(accel_of(&["SIS_QUICK=1", "SIS_VM_ACCEL=multi"]), "multi");
        assert!(std::panic::catch_unwind(|| accel_of(&["SIS_VM_ACCEL=mttcg"])).is_err());
        assert!(!runs_alone("harness.sh", "single", 2));
        assert!(runs_alone("harness.sh", "multi", 2));
        assert!(runs_alone("harness.sh", "single", 1));
        assert!(runs_alone("latency.sh", "single", 2));
    }

    #[test]
    fn vm_time_splits_boot_initramfs_and_script() {
        let line = "run.sh: kernel 7.3.4, topo 2cpu, accel single, initramfs 5120 KiB in 2140 ms";
        assert_eq!(initramfs_ms_of(line), Some(2140));
        assert_eq!(initramfs_ms_of("run.sh: guest rc=0 after 30 s"), None);
        let console = "[    0.0] Linux version\n\
                       SIS-INIT kernel=7.3.4 cpus=2 uptime=9.31s guest=/guest/latency.sh\n";
        let mut run = GuestRun {
            kernel: "7".into(),
            release: "7.3.4".into(),
            script: "latency.sh".into(),
            topo: "2cpu".into(),
            accel: "single".into(),
            rc: 0,
            secs: 312,
            console: console.into(),
            passes: vec![],
            fails: vec![],
            records: Records::parse(console),
        };
        assert_eq!(
            vm_time(&run, Some(2140)),
            "vm-time: latency.sh 7 2cpu: 312 s (boot 9 s, initramfs 2 s, script 301 s)"
        );
        run.console = "no init line".into();
        run.accel = "multi".into();
        assert_eq!(
            vm_time(&run, None),
            "vm-time: latency.sh 7 2cpu accel multi: 312 s (boot ? s, initramfs ? s, script 312 s)"
        );
    }
}
