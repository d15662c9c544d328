//! The scheduler's life: open -> configure -> load -> attach -> report every
//! interval -> detach, and the kernel's exit reason at the end.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use libbpf_rs::{Link, OpenObject, PrintLevel};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, UserExitInfo};

use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::cli::{Curve, RunOpts};
use crate::stats::{self, Counters, LlcReport};
use crate::topology::Layout;
use crate::{curves, preflight, tunables};

/// libbpf's messages, kept so a verifier rejection can show the log's tail.
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
const LOG_TAIL_LINES: usize = 25;

static LIBBPF_VERBOSE: AtomicBool = AtomicBool::new(false);

fn capture_libbpf(level: PrintLevel, msg: String) {
    if level != PrintLevel::Debug || LIBBPF_VERBOSE.load(Ordering::Relaxed) {
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

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<Link>,
    layout: Layout,
    interval: Duration,
}

impl<'a> Scheduler<'a> {
    pub fn init(opts: &RunOpts, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
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
        fill_rodata(&mut skel, &layout);

        let skel = scx_ops_load!(skel, sis_ops, uei).map_err(|e| {
            e.context(format!(
                "the kernel ({}) rejected the BPF program; verifier log tail:\n{}",
                preflight::kernel_release(),
                libbpf_log_tail()
            ))
        })?;
        tunables::write(&skel.maps.tunables, &tunables::from_opts(opts))?;

        let mut skel = skel;
        let link = scx_ops_attach!(skel, sis_ops)?;
        Ok(Self {
            skel,
            link: Some(link),
            layout,
            interval: Duration::from_secs_f64(opts.stats_interval),
        })
    }

    pub fn ops_name() -> &'static str {
        "scx_sis"
    }

    pub fn describe(&self) -> String {
        let policy = tunables::read(&self.skel.maps.tunables)
            .map(|t| tunables::describe(&t))
            .unwrap_or_else(|e| format!("tunables unreadable: {e}"));
        format!(
            "{} on kernel {}: {} CPUs in {} LLC(s), SMT {}\npolicy: {policy}",
            Self::ops_name(),
            preflight::kernel_release(),
            self.layout.llcs.iter().map(Vec::len).sum::<usize>(),
            self.layout.llcs.len(),
            if self.layout.smt { "on" } else { "off" }
        )
    }

    /// Print per-LLC stats every interval until `shutdown` or the kernel ends us.
    pub fn run(&mut self, shutdown: Arc<AtomicBool>) -> Result<UserExitInfo> {
        let cpu_llc = self.layout.cpu_llc();
        let mut last = self.read_llcs(&cpu_llc)?;
        let mut last_at = Instant::now();

        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            std::thread::sleep(Duration::from_millis(100));
            if last_at.elapsed() < self.interval {
                continue;
            }
            let now = self.read_llcs(&cpu_llc)?;
            let secs = last_at.elapsed().as_secs_f64();
            for report in self.reports(&now, &last, secs) {
                println!("{}", report.line());
            }
            last = now;
            last_at = Instant::now();
        }

        // Detach before reading the exit info: unregistering is what fills it in.
        self.link.take();
        uei_report!(&self.skel, uei)
    }

    fn read_llcs(&self, cpu_llc: &[usize]) -> Result<Vec<Counters>> {
        let per_cpu = stats::read_per_cpu(&self.skel.maps.cpu_stats)?;
        Ok(stats::per_llc(&per_cpu, cpu_llc, self.layout.llcs.len()))
    }

    fn reports(&self, now: &[Counters], last: &[Counters], secs: f64) -> Vec<LlcReport> {
        let bss = self.skel.maps.bss_data.as_ref();
        now.iter()
            .zip(last)
            .enumerate()
            .map(|(llc, (n, l))| {
                let cpus = self.layout.llcs[llc].len();
                let util = bss.map_or(0, |b| b.llc_util[llc]);
                LlcReport {
                    llc,
                    cpus,
                    util_pct: util as f64 * 100.0 / (cpus as f64 * 1024.0),
                    nr_scan: bss.map_or(0, |b| b.llc_nr_scan[llc]),
                    delta: n.delta(l),
                    secs,
                }
            })
            .collect()
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        self.link.take();
    }
}

fn fill_rodata(skel: &mut crate::bpf_skel::OpenBpfSkel<'_>, layout: &Layout) {
    let rodata = skel
        .maps
        .rodata_data
        .as_mut()
        .expect("rodata is mmapped before load");
    rodata.nr_cpus = layout.nr_cpu_ids as u32;
    rodata.nr_llcs = layout.llcs.len() as u32;
    rodata.smt_enabled = layout.smt;
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
        for (i, &cpu) in cpus.iter().enumerate() {
            rodata.llc_cpus[llc][i] = cpu as u16;
        }
        for curve in [Curve::Off, Curve::Linear, Curve::Quadratic] {
            rodata.nr_scan_table[curves::curve_index(curve) as usize][llc] =
                curves::table_row(curve, cpus.len() as u32);
        }
    }
}
