//! The scheduler's life: open -> configure -> load -> pin -> attach -> serve
//! stats and watch the tunables -> detach, and the kernel's exit reason at the end.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossbeam::channel::TryRecvError;
use libbpf_rs::{AsRawLibbpf, Link, OpenMapMut, OpenObject, PrintLevel};
use scx_stats::prelude::*;
use scx_utils::{
    build_id, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, ScxExitKind,
};

use crate::bpf_intf::sis_tunables;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder, OpenBpfSkel};
use crate::load::priority::LoadPriority;
use crate::load::topology::{self, Layout};
use crate::policy::Curve;
use crate::process::exit::Cause;
use crate::process::kernel::{self, OPS_NAME};
use crate::stats::{self, Metrics};
use crate::{
    load::kernel_ops, load::verifier, policy::curves, policy::tunables, process::pins,
    stats::counters,
};

/// The commit this binary was built from, as `git describe --always --dirty` named it at build
/// time (build.rs), a bare hash prefixed with "g" as scx's build ids have it ("g72aa95a",
/// "g72aa95a-dirty"); "" for a build made outside git without SCX_SIS_GIT_DESCRIBE.
pub fn commit() -> &'static str {
    static COMMIT: LazyLock<String> = LazyLock::new(|| {
        let describe = env!("SCX_SIS_GIT_DESCRIBE");
        let hash = describe.strip_suffix("-dirty").unwrap_or(describe);
        if !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            format!("g{describe}")
        } else {
            describe.to_string()
        }
    });
    &COMMIT
}

/// The crate's version with the commit: "0.1.0-g72aa95a-dirty" (the crate's alone without one).
fn semver() -> String {
    match commit() {
        "" => env!("CARGO_PKG_VERSION").to_string(),
        c => format!("{}-{c}", env!("CARGO_PKG_VERSION")),
    }
}

/// The build id: version, commit and target ("0.1.0-g72aa95a x86_64-unknown-linux-gnu"), as
/// scx's tools print theirs. `scx_sis --version` and the startup line print it, and the ops
/// name (ops_name()) carries it, so two builds can be told apart wherever one runs.
pub fn version() -> &'static str {
    static VERSION: LazyLock<String> = LazyLock::new(|| build_id::full_version(&semver()));
    &VERSION
}

/// The name the kernel shows in /sys/kernel/sched_ext/root/ops: OPS_NAME and the build id,
/// made a valid ops name ("scx_sis_0.1.0_g72aa95a_x86_64_unknown_linux_gnu"). scx_ops_open!
/// writes one from the crate's version alone, which every build shares; init() replaces it.
pub fn ops_name() -> String {
    format!("{OPS_NAME}{}", build_id::ops_version_suffix(&semver()))
}

/// libbpf's messages, kept so a verifier rejection can show the log's tail.
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
static LIBBPF_VERBOSE: AtomicBool = AtomicBool::new(false);
const LOG_TAIL_LINES: usize = 25;
/// How often the run loop looks for stats requests, tunable changes and the kernel's exit.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// A read that keeps failing is logged again every this many failures (10 s of polls).
const REPORT_FAILURES_EVERY: u64 = 100;

fn capture_libbpf(level: PrintLevel, msg: String) {
    // libbpf's info lines (e.g. struct_ops members this kernel lacks) are noise unless -v.
    if level == PrintLevel::Warn || LIBBPF_VERBOSE.load(Ordering::Relaxed) {
        eprint!("{msg}");
    }
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        log.extend(msg.lines().map(str::to_owned));
        let excess = log.len().saturating_sub(4 * LOG_TAIL_LINES);
        log.drain(..excess);
    }
}

fn libbpf_log_tail() -> String {
    let log = LIBBPF_LOG.lock().map(|l| l.clone()).unwrap_or_default();
    log[log.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Who refused the load, from libbpf's log: libbpf itself, before the kernel saw the program,
/// when it could not read the kernel's configuration (which the program's `__kconfig` externs
/// need; containers and some distributions have neither file) or when a kfunc's prototype in
/// this kernel's BTF differs from ours (Debian's 7.1 and 7.2 builds, README's Compatibility
/// table), else the kernel's verifier. With it, whether libbpf's log tail helps the reader: it
/// does not when the line already names what is missing.
fn load_refusal(release: &str, log: &str) -> (String, bool) {
    if log.contains("failed to open system Kconfig") {
        (format!("libbpf could not read the kernel's configuration, which it needs to load the BPF program (its __kconfig externs): neither /boot/config-{release} nor /proc/config.gz exists; install this kernel's config as /boot/config-{release} (Debian: from its linux-image or linux-base package) or boot a kernel built with CONFIG_IKCONFIG_PROC=y"), false)
    } else if log.contains("incompatible with vmlinux") {
        (format!("libbpf refused the BPF program before loading it: a kfunc's prototype in the kernel's ({release}) BTF differs from the one scx_sis was built against"), true)
    } else {
        (
            format!("the kernel ({release}) rejected the BPF program"),
            true,
        )
    }
}

fn monotonic_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// How to load and run the scheduler (its policy comes apart, as tunables).
#[derive(Debug, Clone)]
pub struct Options {
    /// Between two stats lines on stdout (Metrics::line); None: no periodic output.
    pub stats_interval: Option<Duration>,
    /// Bytes of the kernel's debug dump to print when the scheduler exits on an error.
    pub exit_dump_len: u32,
    /// Print libbpf's debug output, the verifier log included.
    pub verbose: bool,
    /// Set SCX_OPS_ALLOW_QUEUED_WAKEUP where the kernel knows it.
    pub queued_wakeup: bool,
    /// The trace ring buffer's size (a power of two, at least a page).
    pub trace_buffer_kib: u32,
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<Link>,
    /// As the kernel shows it: OPS_NAME and the build id.
    ops_name: String,
    layout: Layout,
    interval: Option<Duration>,
    stats_server: StatsServer<(), Metrics>,
    /// Last, so it is dropped (unpinned) after Drop has detached the scheduler.
    _pin: pins::Pin,
}

impl<'a> Scheduler<'a> {
    /// `initial`: the tunables to start with; after a kernel-requested restart, those of the
    /// instance this one replaces, so live changes survive a CPU hotplug. None when `stop` was
    /// set before the scheduler attached: a SIGTERM during the verifier's seconds must not
    /// switch every task to a scheduler that detaches at once.
    pub fn init(
        opts: &Options,
        open_object: &'a mut MaybeUninit<OpenObject>,
        initial: &sis_tunables,
        stop: &AtomicBool,
    ) -> Result<Option<Self>> {
        // Until the attach, which walks every task too: the topology's reads, the object's
        // open and the verifier all wait behind the load otherwise.
        let raised = LoadPriority::raise();
        let layout = Layout::detect().context("failed to read the CPU topology")?;
        // Our own printer (not ObjectBuilder::debug) so the verifier log is kept for errors.
        LIBBPF_VERBOSE.store(opts.verbose, Ordering::Relaxed);
        libbpf_rs::set_print(Some((PrintLevel::Debug, capture_libbpf)));

        let builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(
            builder,
            open_object,
            sis_ops,
            None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>
        )?;
        skel.struct_ops.sis_ops_mut().exit_dump_len = opts.exit_dump_len;
        set_ops_name(&mut skel.struct_ops.sis_ops_mut().name, &ops_name())?;
        let ops_name = read_ops_name(&skel.struct_ops.sis_ops().name);
        no_autoattach(&skel.maps.sis_ops)?;
        fill_rodata(&mut skel, &layout);
        eprintln!(
            "{}",
            kernel_ops::configure(&mut skel, opts.queued_wakeup)?.report()
        );
        skel.maps
            .trace_ring
            .set_max_entries(opts.trace_buffer_kib * 1024)
            .context("failed to size the trace ring buffer")?;
        // One key per LLC present, not SIS_MAX_LLCS: each CPU keeps a copy of every key.
        skel.maps
            .llc_stats
            .set_max_entries(layout.llcs.len() as u32)
            .context("failed to size the llc_stats map to the LLCs")?;

        // The verifier can take many seconds and says nothing meanwhile: say what is happening.
        eprintln!("loading the BPF program (the kernel's verifier checks it first)");
        let loading = Instant::now();
        let mut skel = scx_ops_load!(skel, sis_ops, uei).map_err(|e| {
            let log = libbpf_log_tail();
            match load_refusal(&kernel::kernel_release(), &log) {
                (why, true) => {
                    Cause::Unsupported.tag(e.context(format!("{why}; libbpf's log tail:\n{log}")))
                }
                // The line says it all: not the chain's "failed to load the BPF object" either.
                (why, false) => Cause::Unsupported.error(why),
            }
        })?;
        eprintln!("loaded in {:.1} s", loading.elapsed().as_secs_f64());
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        tunables::write(&skel.maps.tunables, initial)?;
        // Self does not exist yet, so its Drop cannot clean up: any error from here on returns
        // early and drops the locals, `link` (detach) before `pin` (unpin), leaving nothing behind.
        let pin = pins::pin(&mut skel.maps.tunables, &mut skel.maps.trace_ring)?;
        let link = scx_ops_attach!(skel, sis_ops).map_err(|e| {
            // The kernel refuses a second scheduler (EBUSY); one may have attached since the
            // preflight check.
            match kernel::loaded_scheduler() {
                Some(other) => Cause::Busy.tag(e.context(format!(
                    "another sched_ext scheduler attached first: {other}"
                ))),
                None => e,
            }
        })?;
        drop(raised);
        let stats_server = StatsServer::new(stats::server_data())
            .launch()
            .context("failed to start the stats server")?;
        Ok(Some(Self {
            skel,
            link: Some(link),
            ops_name,
            layout,
            interval: opts.stats_interval,
            stats_server,
            _pin: pin,
        }))
    }

    pub fn tunables(&self) -> Result<sis_tunables> {
        tunables::read(&self.skel.maps.tunables)
    }

    pub fn describe(&self) -> String {
        let policy = self
            .tunables()
            .map(|t| tunables::describe(&t))
            .unwrap_or_else(|e| format!("tunables unreadable: {e}"));
        let insns = verifier::describe(&verifier::struct_ops_insns("sis_"));
        format!(
            "{OPS_NAME} on kernel {}: {} CPUs in {} LLC(s), SMT {}\nversion: {} (ops {})\npolicy: {policy}\ntunables: {} (change live with: scx_sis tune)\nverifier: processed instructions: {}",
            kernel::kernel_release(),
            self.layout.llcs.iter().map(Vec::len).sum::<usize>(),
            self.layout.llcs.len(),
            if self.layout.smt { "on" } else { "off" },
            version(),
            self.ops_name,
            pins::TUNABLES_PIN,
            if insns.is_empty() { "unknown" } else { &insns },
        )
    }

    /// Cumulative counters of every LLC, as published to stats clients.
    fn snapshot(&self) -> Result<Metrics> {
        let llcs = counters::read(&self.skel, &self.layout.llcs)?;
        let generation = self.tunables().map(|t| t.generation).unwrap_or(0);
        Ok(Metrics::snapshot(monotonic_us(), generation, &llcs))
    }

    /// Serve stats, print the table every interval and log tunable changes,
    /// until `shutdown` or the kernel ends the scheduler. A failed map read is
    /// logged (see FailStreak) and retried at the next poll; it ends nothing. An end the
    /// kernel chose is an error with its cause (exit::Cause), unless it asks for a restart.
    pub fn run(&mut self, shutdown: Arc<AtomicBool>) -> Result<Outcome> {
        let (res_ch, req_ch) = self.stats_server.channels();
        let mut stats_reads = FailStreak::new("read the stats maps");
        let mut tunables_reads = FailStreak::new("read the tunables map");
        // Counters are zero at load, so an empty snapshot is a true base if the first read fails.
        let mut last_good = stats_reads
            .track(self.snapshot())
            .unwrap_or_else(|| Metrics {
                at_us: monotonic_us(),
                ..Default::default()
            });
        let mut last_printed = last_good.clone();
        let mut next_print = self.interval.map(|i| Instant::now() + i);
        // None until a read succeeds; changes are logged against the last value read.
        let mut seen = tunables_reads.track(self.tunables());
        let mut server_gone = false;

        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            // Poll and sleep rather than recv_timeout(): crossbeam spins (PAUSE, sched_yield)
            // before it parks, and under QEMU TCG every PAUSE hands the host thread to the
            // other vCPUs, so the spin can outlast the timeout and the daemon would never
            // sleep, taking a whole vCPU from a busy guest.
            match req_ch.try_recv() {
                Ok(()) => {
                    if let Some(now) = stats_reads.track(self.snapshot()) {
                        last_good = now;
                    }
                    // scx_stats' proxy waits for a reply and serves no other client until it
                    // gets one, so a failed read answers with the last good snapshot (no new
                    // counts). A failed send means the proxy is gone and nobody is waiting.
                    let _ = res_ch.send(last_good.clone());
                }
                Err(TryRecvError::Empty) => std::thread::sleep(POLL_INTERVAL),
                Err(TryRecvError::Disconnected) => {
                    // The stats server's threads ended: stats clients go unanswered, but the
                    // scheduler itself is fine, so keep it running.
                    if !server_gone {
                        eprintln!(
                            "scx_sis: warning: the stats server stopped; stats go unanswered"
                        );
                        server_gone = true;
                    }
                    std::thread::sleep(POLL_INTERVAL);
                }
            }

            if let Some(now_t) = tunables_reads.track(self.tunables()) {
                if let Some(old) = seen.filter(|old| old.generation != now_t.generation) {
                    for change in tunables::changes(&old, &now_t) {
                        println!("tunables generation {}: {change}", now_t.generation);
                    }
                }
                seen = Some(now_t);
            }

            if let (Some(due), Some(interval)) = (next_print, self.interval) {
                if Instant::now() >= due {
                    // On a failed read the line waits for the next poll, which covers the gap.
                    if let Some(now) = stats_reads.track(self.snapshot()) {
                        // While an `scx_sis ab` runs, the line names the side in force.
                        let ab = crate::ab::marker::stats_tag();
                        println!("{}{ab}", now.delta(&last_printed).line());
                        last_printed = now.clone();
                        last_good = now;
                        // After a long failing streak, restart the cadence rather than print a
                        // backlog.
                        let next = due + interval;
                        next_print = Some(if next <= Instant::now() {
                            Instant::now() + interval
                        } else {
                            next
                        });
                    }
                }
            }
        }

        // Detach before reading the exit info: unregistering is what fills it in.
        self.link.take();
        let bpf_uei = self
            .skel
            .maps
            .data_data
            .as_ref()
            .expect("data is mmapped")
            .uei;
        // SAFETY: a field of the mmapped data section, which the kernel writes.
        let kind = unsafe { std::ptr::read_volatile(&bpf_uei.kind as *const i32) };
        outcome(
            kind,
            uei_report!(&self.skel, uei).map(|u| u.should_restart()),
        )
    }
}

/// How an instance ended, when that is no error.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Detached on request (SIGINT, SIGTERM).
    Stopped,
    /// The kernel unregistered it and asks for a new instance (CPU hotplug).
    Restart,
}

/// The outcome of an exit of `kind` (scx_exit_kind), given what uei_report! made of it: whether
/// the kernel asks for a restart, or the error it reported (sysrq-S and the error kinds).
fn outcome(kind: i32, report: Result<bool>) -> Result<Outcome> {
    let error_kind = kind >= ScxExitKind::Error as i32;
    match report {
        Err(e) if error_kind => Err(Cause::SchedulerError.tag(e)),
        Err(e) => Err(Cause::Ended.tag(e)),
        Ok(true) => Ok(Outcome::Restart),
        Ok(false)
            if kind == ScxExitKind::UnregKern as i32 || kind == ScxExitKind::UnregBPF as i32 =>
        {
            Err(Cause::Ended.error(
                "the scheduler was unregistered without a restart request (by the kernel or BPF)",
            ))
        }
        Ok(false) => Ok(Outcome::Stopped),
    }
}

/// Consecutive failures of one periodic read, logged on stderr once per
/// streak: at the first failure, every REPORT_FAILURES_EVERY failures after
/// it, and when the read succeeds again, with the count each time.
struct FailStreak {
    what: &'static str,
    failures: u64,
}

impl FailStreak {
    fn new(what: &'static str) -> Self {
        Self { what, failures: 0 }
    }

    /// The value of a successful read; None (and the line logged, if it is due) for a failed one.
    fn track<T>(&mut self, read: Result<T>) -> Option<T> {
        let (value, line) = match read {
            Ok(v) => (Some(v), self.succeeded()),
            Err(e) => (None, self.failed(&e)),
        };
        if let Some(line) = line {
            eprintln!("{line}");
        }
        value
    }

    fn failed(&mut self, e: &anyhow::Error) -> Option<String> {
        self.failures += 1;
        let (what, n) = (self.what, self.failures);
        if n == 1 {
            Some(format!(
                "scx_sis: warning: failed to {what}: {e:#} (retrying at every poll)"
            ))
        } else if n % REPORT_FAILURES_EVERY == 0 {
            Some(format!(
                "scx_sis: warning: still failing to {what}, {n} times in a row: {e:#}"
            ))
        } else {
            None
        }
    }

    fn succeeded(&mut self) -> Option<String> {
        let n = std::mem::take(&mut self.failures);
        (n > 0).then(|| {
            format!(
                "scx_sis: could {} again after {n} failure(s) in a row",
                self.what
            )
        })
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        // Detach first; the fields, the pin among them, are dropped after this returns.
        self.link.take();
    }
}

/// Write `name` into the struct_ops map's name field, NUL-terminated. Refused rather than cut
/// when it does not fit: a cut name could drop the commit, the part that tells builds apart.
fn set_ops_name(field: &mut [std::ffi::c_char], name: &str) -> Result<()> {
    if name.len() >= field.len() {
        anyhow::bail!(
            "the ops name {name} is longer than the kernel's {} bytes",
            field.len() - 1
        );
    }
    field.fill(0);
    for (d, s) in field.iter_mut().zip(name.bytes()) {
        *d = s as std::ffi::c_char;
    }
    Ok(())
}

/// The ops name as it stands in the struct_ops map, which is what the kernel shows.
fn read_ops_name(field: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// scx_ops_attach! attaches the struct_ops map itself and keeps the link, after the skeleton's
/// attach. libbpf marks struct_ops maps auto-attach, and its skeleton attach then looks for the
/// map's link slot in the skeleton; libbpf-rs's skeleton fills only the programs' slots, so
/// libbpf would skip the map with "map 'sis_ops': BPF map skeleton link is uninitialized" at
/// every start. Unmarked, the skeleton's attach leaves the map to us without a word.
fn no_autoattach(map: &OpenMapMut<'_>) -> Result<()> {
    // SAFETY: a valid bpf_map of an object that is open and not yet loaded.
    let err = unsafe {
        libbpf_rs::libbpf_sys::bpf_map__set_autoattach(map.as_libbpf_object().as_ptr(), false)
    };
    if err != 0 {
        anyhow::bail!(
            "failed to turn off the auto-attach of the struct_ops map: {}",
            std::io::Error::from_raw_os_error(-err)
        );
    }
    Ok(())
}

/// This process's executable as the kernel names it: its inode number and its file system's
/// device number in the kernel's encoding (major << 20 | minor, `struct super_block`'s s_dev),
/// which is not stat's.
fn own_executable() -> Option<(u64, u32)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata("/proc/self/exe").ok()?;
    let dev = meta.dev() as libc::dev_t;
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    Some((meta.ino(), (major << 20) | minor))
}

fn fill_rodata(skel: &mut OpenBpfSkel<'_>, layout: &Layout) {
    let rodata = skel
        .maps
        .rodata_data
        .as_mut()
        .expect("rodata is mmapped before load");
    rodata.nr_cpus = layout.nr_cpu_ids as u32;
    rodata.nr_llcs = layout.llcs.len() as u32;
    rodata.smt_enabled = layout.smt;
    // BPF serves root's processes of this executable (the daemon and its clients) ahead of the
    // queues while they use under half a CPU, so a request answers under the load it schedules
    // (latency.bpf.h, served_first()). Without the file's identity, nothing is served so.
    if let Some((ino, dev)) = own_executable() {
        rodata.daemon_exe_ino = ino;
        rodata.daemon_exe_dev = dev;
    }
    for (cpu, (llc, pos)) in layout
        .cpu_llc()
        .into_iter()
        .zip(layout.cpu_pos())
        .enumerate()
    {
        rodata.cpu_llc[cpu] = llc as u32;
        rodata.cpu_llc_pos[cpu] = pos as u32;
    }
    for (llc, cpus) in layout.llcs.iter().enumerate() {
        rodata.llc_nr_cpus[llc] = cpus.len() as u32;
        rodata.llc_auto_shards[llc] = topology::default_shards(cpus.len());
        for (i, &cpu) in cpus.iter().enumerate() {
            rodata.llc_cpus[llc][i] = cpu as u16;
        }
        for curve in [Curve::Off, Curve::Linear, Curve::Quadratic] {
            rodata.nr_scan_table[curves::curve_index(curve) as usize][llc] =
                curves::table_row(curve, cpus.len() as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_read_is_logged_once_per_streak_with_its_count() {
        let mut s = FailStreak::new("read the stats maps");
        assert_eq!(s.succeeded(), None, "no streak, nothing to say");
        let e = anyhow::anyhow!("EAGAIN");
        let first = s.failed(&e).unwrap();
        assert!(
            first.contains("failed to read the stats maps: EAGAIN"),
            "{first}"
        );
        for _ in 2..REPORT_FAILURES_EVERY {
            assert_eq!(s.failed(&e), None);
        }
        let again = s.failed(&e).unwrap();
        assert!(
            again.contains(&format!("{REPORT_FAILURES_EVERY} times in a row")),
            "{again}"
        );
        s.failed(&e);
        let back = s.succeeded().unwrap();
        assert!(
            back.contains(&format!(
                "could read the stats maps again after {} failure(s)",
                REPORT_FAILURES_EVERY + 1
            )),
            "{back}"
        );
        assert_eq!(s.succeeded(), None);
        assert!(s.failed(&e).is_some(), "a new streak is logged again");
    }

    #[test]
    fn a_refusal_names_libbpf_when_a_kfunc_prototype_differs() {
        let libbpf = "libbpf: extern (func ksym) 'scx_bpf_get_idle_cpumask': func_proto [87] incompatible with vmlinux [93610]";
        let (msg, tail) = load_refusal("7.1.13+deb13-amd64", libbpf);
        assert!(msg.starts_with("libbpf refused") && tail, "{msg}");
        let (msg, tail) = load_refusal("6.12.117", "R1 invalid mem access 'scalar'");
        assert_eq!(msg, "the kernel (6.12.117) rejected the BPF program");
        assert!(tail);
    }

    #[test]
    fn a_refusal_for_want_of_a_kernel_config_names_the_files() {
        let log = "libbpf: failed to open system Kconfig\nlibbpf: failed to load object 'bpf_bpf'";
        let (msg, tail) = load_refusal("7.3.4+deb13-amd64", log);
        assert!(!tail, "one line: {msg}");
        assert!(!msg.contains('\n'), "{msg}");
        for want in [
            "/boot/config-7.3.4+deb13-amd64",
            "/proc/config.gz",
            "CONFIG_IKCONFIG_PROC",
        ] {
            assert!(msg.contains(want), "{want}: {msg}");
        }
        assert!(!msg.contains("rejected"), "{msg}");
    }

    #[test]
    fn the_version_and_the_ops_name_name_the_commit() {
        let describe = env!("SCX_SIS_GIT_DESCRIBE");
        if describe.is_empty() {
            // Built outside git: the crate's version alone, as before there were commits.
            assert_eq!(commit(), "");
            assert!(version().starts_with(&format!("{} ", env!("CARGO_PKG_VERSION"))));
            return;
        }
        assert!(commit().ends_with(describe), "{} vs {describe}", commit());
        assert!(
            version().starts_with(&format!("{}-{}", env!("CARGO_PKG_VERSION"), commit())),
            "{}",
            version()
        );
        let name = ops_name();
        let hash = commit().trim_end_matches("-dirty");
        assert!(name.starts_with(&format!("{OPS_NAME}_")), "{name}");
        assert!(name.contains(hash), "{name} lacks {hash}");
        // What the kernel accepts in an ops name (bpf_obj_name_cpy): alnum, '_' and '.'.
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
            "{name}"
        );
        let mut field = [0 as std::ffi::c_char; 128];
        field[..4].copy_from_slice(&[b'o' as _, b'l' as _, b'd' as _, b'x' as _]);
        set_ops_name(&mut field, &name).unwrap();
        assert_eq!(read_ops_name(&field), name);
        set_ops_name(&mut field, "ab").unwrap();
        assert_eq!(
            read_ops_name(&field),
            "ab",
            "nothing of the old name is left"
        );
        assert!(set_ops_name(&mut field[..8], "scx_sis_0.1.0").is_err());
    }

    #[test]
    fn each_way_the_kernel_ends_the_scheduler_has_its_cause() {
        let k = |k: ScxExitKind| k as i32;
        let cause = |r: Result<Outcome>| Cause::of(&r.unwrap_err());
        assert_eq!(
            outcome(k(ScxExitKind::Unreg), Ok(false)).unwrap(),
            Outcome::Stopped
        );
        assert_eq!(
            outcome(k(ScxExitKind::None), Ok(false)).unwrap(),
            Outcome::Stopped
        );
        assert_eq!(
            outcome(k(ScxExitKind::UnregKern), Ok(true)).unwrap(),
            Outcome::Restart
        );
        let sysrq = anyhow::anyhow!("EXIT: disabled by sysrq-S");
        assert_eq!(
            cause(outcome(k(ScxExitKind::SysRq), Err(sysrq))),
            Cause::Ended
        );
        assert_eq!(
            cause(outcome(k(ScxExitKind::UnregKern), Ok(false))),
            Cause::Ended
        );
        for kind in [
            ScxExitKind::Error,
            ScxExitKind::ErrorBPF,
            ScxExitKind::ErrorStall,
        ] {
            let e = anyhow::anyhow!("EXIT: runnable task stall");
            assert_eq!(cause(outcome(k(kind), Err(e))), Cause::SchedulerError);
        }
    }

    #[test]
    fn track_passes_values_through() {
        let mut s = FailStreak::new("read");
        assert_eq!(s.track(Ok::<_, anyhow::Error>(7)), Some(7));
        assert_eq!(s.track::<u32>(Err(anyhow::anyhow!("gone"))), None);
        assert_eq!(s.failures, 1);
        assert_eq!(s.track(Ok::<_, anyhow::Error>(8)), Some(8));
        assert_eq!(s.failures, 0);
    }
}
