//! `scx_sis trace`: record the running scheduler's placement for a while, then write the
//! Chrome trace-event file (for ui.perfetto.dev), print the summary (text or JSON) and draw the picture if asked.
//!
//! The output files are opened before recording starts, so that a path that cannot be written
//! fails before the trace costs anything; each is written to a new file in the target's
//! directory and renamed over the target at the end, so that a symlink there is replaced, not
//! followed, and a failure leaves no partial file.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::TraceOpts;
use scx_sis::load::topology::Layout;
use scx_sis::stats::Metrics;
use scx_sis::trace::session::{self, Capture, End, Filter};
use scx_sis::trace::{chrome_trace, summary, svg};

/// `--json`: the summary, the session and the scheduler's own counters over the same window.
#[derive(Serialize)]
struct Report<'a> {
    records: usize,
    duration_s: f64,
    filter: &'a Filter,
    /// Records BPF wrote and lost over the window, by its counters.
    written: u64,
    dropped: u64,
    /// Why recording stopped.
    end: End,
    /// The processes and task names the records are about (a filter's result, at a glance).
    tgids: BTreeSet<u32>,
    comms: BTreeSet<&'a str>,
    summary: &'a summary::Summary,
    /// None when the scheduler went away before its counters could be read.
    counters: Option<&'a Metrics>,
}

pub fn run(opts: &TraceOpts, shutdown: Arc<AtomicBool>) -> Result<()> {
    let filter = Filter {
        tgid: opts.pid,
        comm: opts.comm.clone(),
    };
    let session_opts = session::Options {
        duration: Duration::from_secs_f64(opts.duration),
        filter: filter.clone(),
        force: opts.force,
        max_records: opts.max_records as usize,
    };
    let layout = Layout::detect().context("failed to read the CPU topology")?;
    let cpu_llc = cpu_llcs(&layout);
    let owner = invoking_user();
    let trace_out = Output::create(&opts.output, owner)?;
    let svg_out = opts
        .svg
        .as_deref()
        .map(|p| Output::create(p, owner))
        .transpose()?;
    let cap = session::capture(&session_opts, shutdown, || {
        eprintln!(
            "trace: recording for {} s{}",
            opts.duration,
            describe(&filter)
        )
    })?;
    let counted = cap.counters.as_ref();
    let written = counted.map_or(0, |c| c.llc_sum(|l| l.trace_events));
    let dropped = counted.map_or(0, |c| c.llc_sum(|l| l.trace_drops));
    match counted {
        Some(_) => eprintln!(
            "trace: {} records in {:.1} s ({written} written, {dropped} dropped); ended: {}",
            cap.events.len(),
            cap.duration_s,
            cap.end
        ),
        None => eprintln!(
            "trace: {} records in {:.1} s (the scheduler's counts are unavailable); ended: {}",
            cap.events.len(),
            cap.duration_s,
            cap.end
        ),
    }
    if cap.end == End::RecordLimit {
        eprintln!(
            "trace: kept the first {} records; --max-records keeps more, --pid or --comm records fewer",
            opts.max_records
        );
    }
    if dropped > 0 {
        eprintln!(
            "trace: {dropped} records were lost because the ring buffer was full: \
             --pid or --comm record fewer, or load the scheduler with a larger --trace-buffer-kib"
        );
    }

    let meta = chrome_trace::Meta {
        nr_cpu_ids: layout.nr_cpu_ids,
        cpu_llc: cpu_llc.clone(),
        drops: dropped,
        duration_s: cap.duration_s,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        filters: describe(&filter).trim_start_matches(", ").to_string(),
    };
    trace_out.write(|w| chrome_trace::write(&cap.events, &meta, w))?;
    eprintln!(
        "trace: wrote {} (open it in ui.perfetto.dev or chrome://tracing)",
        opts.output.display()
    );
    if let Some(out) = svg_out {
        let path = out.path.clone();
        out.write(|w| svg::draw(&cap.events, &cpu_llc, None, w))?;
        eprintln!("trace: drew {}", path.display());
    }

    let summary = summary::summarize(&cap.events, &cpu_llc, cap.balance_lag_ns);
    if opts.json {
        let report = Report {
            records: cap.events.len(),
            duration_s: cap.duration_s,
            filter: &filter,
            written,
            dropped,
            end: cap.end,
            // pid 0: a kick's record, about a CPU rather than a task.
            tgids: cap
                .events
                .iter()
                .filter(|e| e.pid != 0)
                .map(|e| e.tgid)
                .collect(),
            comms: cap
                .events
                .iter()
                .filter(|e| e.pid != 0)
                .map(|e| e.comm.as_str())
                .collect(),
            summary: &summary,
            counters: counted,
        };
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{summary}");
        print_crosscheck(&cap, &summary);
    }
    Ok(())
}

/// The trace's counts beside the scheduler's counters for the same window: they differ by the
/// drops (and, with a filter, by the tasks left out).
fn print_crosscheck(cap: &Capture, summary: &summary::Summary) {
    let Some(counters) = &cap.counters else {
        return;
    };
    println!(
        "counters over the same window: {} wakeups ({} decisions traced), {} migrations ({} traced)",
        counters.llc_sum(|l| l.wakeups),
        summary.decisions,
        counters.llc_sum(|l| l.migrations),
        summary.migrations
    );
}

fn describe(f: &Filter) -> String {
    match (f.tgid, &f.comm) {
        (Some(p), _) => format!(", pid {p} only"),
        (None, Some(c)) => format!(", comm {c} only"),
        (None, None) => String::new(),
    }
}

/// The LLC index of every CPU id (0 for ids the topology does not list).
fn cpu_llcs(layout: &Layout) -> Vec<u32> {
    let mut v = vec![0; layout.nr_cpu_ids];
    for (llc, cpus) in layout.llcs.iter().enumerate() {
        for &cpu in cpus {
            if let Some(slot) = v.get_mut(cpu) {
                *slot = llc as u32;
            }
        }
    }
    v
}

/// The user who ran `sudo scx_sis trace` (SUDO_UID, SUDO_GID), when root runs it so: the files
/// are theirs, as if they had written them.
fn invoking_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |var: &str| std::env::var(var).ok()?.parse::<u32>().ok();
    Some((id("SUDO_UID")?, id("SUDO_GID")?))
}

/// An output file, created before recording as a new file beside its target and renamed over
/// the target once written. Dropped unwritten, it leaves nothing behind.
struct Output {
    path: PathBuf,
    tmp: tempfile::NamedTempFile,
}

impl Output {
    /// Fails now if `path`'s directory is missing or not writable, or `path` is a directory.
    /// The new file is opened O_CREAT|O_EXCL (never through an existing name, so no symlink
    /// is followed), and handed to `owner` if given.
    fn create(path: &Path, owner: Option<(u32, u32)>) -> Result<Self> {
        if path.is_dir() {
            anyhow::bail!("{} is a directory; -o takes a file name", path.display());
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .with_context(|| format!("{} names no file", path.display()))?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        if !dir.is_dir() {
            anyhow::bail!(
                "cannot write {}: the directory {} does not exist",
                path.display(),
                dir.display()
            );
        }
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(dir)
            .map_err(|e| match e.raw_os_error() {
                // The errno alone: the temporary name it adds means nothing to the user.
                Some(errno) => std::io::Error::from_raw_os_error(errno),
                None => e,
            })
            .with_context(|| format!("cannot write {}", path.display()))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(tmp.as_file(), Some(uid), Some(gid)).with_context(|| {
                format!("failed to give {} to uid {uid} gid {gid}", path.display())
            })?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
        })
    }

    /// Write through a buffer, then rename over the target. A failure names the file and
    /// removes the new one; the target is untouched.
    fn write(mut self, f: impl FnOnce(&mut BufWriter<&mut File>) -> Result<()>) -> Result<()> {
        let failed = |path: &Path| format!("failed to write {}", path.display());
        {
            let mut w = BufWriter::new(self.tmp.as_file_mut());
            f(&mut w).with_context(|| failed(&self.path))?;
            w.flush().with_context(|| failed(&self.path))?;
        }
        self.tmp
            .persist(&self.path)
            .map_err(|e| anyhow::Error::new(e.error))
            .with_context(|| failed(&self.path))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_missing_directory_fails_before_anything_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let e = Output::create(&dir.path().join("nonexistent/x.json"), None)
            .err()
            .expect("a missing directory is refused at once");
        let msg = format!("{e:#}");
        assert!(msg.contains("nonexistent/x.json"), "{msg}");
        assert!(
            msg.contains("does not exist") && !msg.contains(".x.json."),
            "{msg}"
        );
        assert!(Output::create(dir.path(), None).is_err(), "a directory");
    }

    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("scx_sis-trace.json");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        let out = Output::create(&target, None).unwrap();
        out.write(|w| Ok(w.write_all(b"{}")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
        assert_eq!(entries(dir.path()), ["scx_sis-trace.json", "victim"]);
    }

    #[test]
    fn a_failure_leaves_no_partial_file_and_the_old_one_intact() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        std::fs::write(&target, "old").unwrap();
        let out = Output::create(&target, None).unwrap();
        let e = out
            .write(|w| {
                w.write_all(b"half")?;
                anyhow::bail!("the encoder failed")
            })
            .unwrap_err();
        assert!(format!("{e:#}").contains("failed to write"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(entries(dir.path()), ["t.json"]);
        // Created and never written (the session failed): nothing is left either.
        drop(Output::create(&dir.path().join("u.json"), None).unwrap());
        assert_eq!(entries(dir.path()), ["t.json"]);
    }

    #[test]
    fn under_sudo_the_file_belongs_to_the_invoking_user() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("not root: cannot give a file away");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        Output::create(&target, Some((65534, 65534)))
            .unwrap()
            .write(|w| Ok(w.write_all(b"{}")?))
            .unwrap();
        let m = std::fs::metadata(&target).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534));
        assert_eq!(m.mode() & 0o777, 0o644 & !umask());
    }

    /// The process's umask, read without changing it (tests run in parallel threads).
    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
    }
}
