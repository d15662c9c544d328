//! safety.sh's verdicts: `trace -o` leaves a device, a FIFO and stdout what they were (and
//! writes through them), refuses a directory and /proc with status 2, and removes a killed
//! run's temp file; with the daemon stopped, `monitor` and `trace` end within the stats
//! request's timeout naming the daemon, and a Ctrl-C ends a monitor that waits on it. In the
//! unit's file-system sandbox (read-only system directories, /sys and /proc/sys; /sys/fs/bpf
//! and /run writable) the daemon loads, serves monitor and tune, and reloads.

use crate::harness::GuestRun;
use crate::records::Verdicts;

/// A stopped daemon fails a request at once (instance::STATS_ASK, 1 s, at the most) and the
/// start of the command under TCG, which runs the guest about 100 times slower than the host:
/// in centiseconds.
const STOPPED_BOUND_CS: i64 = 2500;

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    // (case, type before and after, rc, whether output must reach the target).
    for (case, kind, rc) in [
        ("devnull", "chardev", 0),
        ("mknod", "chardev", 0),
        ("fifo", "fifo", 0),
        ("dir", "dir", 2),
        ("proc", "file", 2),
    ] {
        let name = format!("out_{case}");
        let Some(k) = r.kv(&name) else {
            v.fail(&name, "no record");
            continue;
        };
        let ok = k.s("before") == kind && k.s("after") == kind && k.opt::<i32>("rc") == Some(rc);
        v.check(&name, ok, format!("want {kind} kept, rc={rc}: {}", k.raw()));
    }
    if let Some(k) = r.kv("out_stdout") {
        let ok = k.s("before") == k.s("after")
            && k.opt::<i32>("rc") == Some(0)
            && k.opt::<u64>("stdout").unwrap_or(0) > 0;
        v.check("out_stdout", ok, format!("want /dev/stdout kept and the trace on stdout: {}", k.raw()));
    } else {
        v.fail("out_stdout", "no record");
    }
    if let Some(k) = r.kv("out_fifo_read") {
        let ok = k.opt::<u64>("bytes").unwrap_or(0) > 0 && k.s("json") == "1";
        v.check("fifo_reader_got_the_trace", ok, k.raw());
    } else {
        v.fail("fifo_reader_got_the_trace", "no record");
    }
    match (r.kv("out_stale"), r.kv("stale_left")) {
        (Some(run), Some(left)) => {
            let ok = run.opt::<i32>("rc") == Some(0) && left.opt::<u32>("n") == Some(0);
            v.check("stale_temp_removed", ok, format!("{}; {}", run.raw(), left.raw()));
        }
        _ => v.fail("stale_temp_removed", "no record"),
    }
    for case in ["monitor", "trace", "ctrlc"] {
        let name = format!("stopped_{case}");
        let Some(k) = r.kv(&name) else {
            v.fail(&name, "no record");
            continue;
        };
        let rc: i32 = k.n("rc");
        let cs: i64 = k.n("cs");
        // Ctrl-C ends the monitor (130 at the second signal, 0 at the first); the others fail
        // with the daemon named.
        let rc_ok = if case == "ctrlc" { rc == 0 || rc == 130 } else { rc == 1 };
        let ok = rc_ok && cs <= STOPPED_BOUND_CS && k.s("named") == "1";
        v.check(&name, ok, format!("within {STOPPED_BOUND_CS} cs, named: {}", k.raw()));
    }
    if let Some(k) = r.kv("stopped_trace_file") {
        v.check("stopped_trace_wrote_nothing", k.s("exists") == "0", k.raw());
    }
    match r.kv("sandbox") {
        Some(k) => {
            let mounts = k.s("mounts");
            let ok = k.s("loaded") == "1"
                && ["/bin:ro", "/sys:ro", "/proc/sys:ro", "/sys/fs/bpf:rw"]
                    .iter()
                    .all(|m| mounts.split(' ').any(|x| x == *m))
                && k.s("bin_writable") == "no"
                && k.s("monitor_rc") == "0"
                && k.s("monitor_lines") == "1"
                && k.s("tune_rc") == "0"
                && k.s("reloaded") == "1"
                && k.s("alive_after_reload") == "1"
                && k.s("unload_rc") == "0";
            v.check("sandboxed_load_monitor_tune_reload", ok, k.raw());
        }
        None => v.fail("sandboxed_load_monitor_tune_reload", "no record"),
    }
    syscalls_allowed(r.kv("sandbox_syscalls"), v);
}

/// The system calls the sandboxed daemon made (perf trace, the reload's load included) against
/// the unit's SystemCallFilter=, expanded by the host's systemd-analyze.
fn syscalls_allowed(k: Option<crate::records::Kv>, v: &mut Verdicts) {
    let Some(k) = k else {
        return v.fail("syscalls_in_the_unit_filter", "no record");
    };
    let used: Vec<&str> = k.s("syscalls").split_whitespace().collect();
    if used.is_empty() {
        return v.info(format!("perf trace saw no system calls: {}", k.raw()));
    }
    let unit = include_str!("../../packaging/scx_sis.service");
    let sets: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("SystemCallFilter="))
        .flat_map(str::split_whitespace)
        .collect();
    let Ok(out) = std::process::Command::new("systemd-analyze")
        .arg("syscall-filter")
        .output()
    else {
        return v.info("no systemd-analyze on this host: the filter is not checked");
    };
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let allowed = expand(&table, &sets);
    let denied: Vec<&&str> = used.iter().filter(|s| !allowed.contains(**s)).collect();
    v.check(
        "syscalls_in_the_unit_filter",
        denied.is_empty(),
        format!("{} system calls, outside SystemCallFilter={}: {denied:?}", used.len(), sets.join(" ")),
    );
}

/// The system calls `names` (groups "@x" and calls) stand for, by systemd-analyze's table.
fn expand(table: &str, names: &[&str]) -> std::collections::BTreeSet<String> {
    let mut groups: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    let mut current = None;
    for line in table.lines() {
        if let Some(g) = line.strip_prefix('@') {
            current = Some(line[..g.split_whitespace().next().map_or(0, str::len) + 1].trim());
            groups.entry(current.unwrap()).or_default();
        } else if let (Some(g), Some(w)) = (current, line.split_whitespace().next()) {
            if !w.starts_with('#') {
                groups.entry(g).or_default().push(w);
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    let mut todo: Vec<&str> = names.to_vec();
    let mut seen = std::collections::BTreeSet::new();
    while let Some(n) = todo.pop() {
        if !seen.insert(n) {
            continue;
        }
        match groups.get(n) {
            Some(members) => todo.extend(members),
            None => {
                out.insert(n.to_string());
            }
        }
    }
    out
}
