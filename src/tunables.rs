//! The runtime tunables: one struct shared with BPF (struct sis_tunables) in
//! a single-entry array map that BPF reads on every decision. The map is
//! pinned so that `scx_sis tune`, another process, can change it live; the
//! trace ring buffer is pinned beside it for `scx_sis trace`.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::bpf_intf::{self, sis_tunables};
use crate::exit::Cause;
use crate::policy::{defaults as dfl, PolicyOpts, Preset, Switch};
use crate::{curves, instance, preflight};

pub const PIN_DIR: &str = "/sys/fs/bpf/scx_sis";
pub const TUNABLES_PIN: &str = "/sys/fs/bpf/scx_sis/tunables";
pub const TRACE_RING_PIN: &str = "/sys/fs/bpf/scx_sis/trace_ring";
const PINS: [&str; 2] = [TUNABLES_PIN, TRACE_RING_PIN];

// SAFETY: a repr(C) struct of integers, valid for any bit pattern.
unsafe impl plain::Plain for sis_tunables {}

/// What a scheduler starts with when no flag says otherwise (policy::defaults in the map's units).
pub fn defaults() -> sis_tunables {
    let on = |s: Switch| s.is_on() as u32;
    sis_tunables {
        seq: 0,
        generation: 1,
        slice_ns: dfl::SLICE_US * 1000,
        prev_bias: on(dfl::PREV_BIAS),
        prev_bias_threshold_permille: dfl::PREV_BIAS_THRESHOLD,
        sis_util_curve: curves::curve_index(dfl::SIS_UTIL),
        sis_util_period_us: dfl::SIS_UTIL_PERIOD_US,
        idle_core: on(dfl::IDLE_CORE),
        wake_sync: on(dfl::WAKE_SYNC),
        cross_llc: on(dfl::CROSS_LLC),
        wakeq: on(dfl::WAKEQ),
        wakeq_shards: dfl::WAKEQ_SHARDS,
        test_inject_error: 0,
        plain: (dfl::PRESET == Preset::Plain) as u32,
        balance_lag_us: dfl::BALANCE_LAG_US,
        steal_min_us: dfl::STEAL_MIN_US,
        // The trace is `scx_sis trace`'s to switch, never on at start.
        trace: 0,
        trace_tgid: 0,
        trace_comm: [0; bpf_intf::sis_limits_SIS_COMM_LEN as usize],
    }
}

/// `base` with every flag given in `p` applied (the generation is left alone).
pub fn apply(base: &sis_tunables, p: &PolicyOpts) -> sis_tunables {
    let switch = |s: Option<Switch>, old: u32| s.map_or(old, |s| s.is_on() as u32);
    sis_tunables {
        slice_ns: p.slice_us.map_or(base.slice_ns, |us| us * 1000),
        prev_bias: switch(p.prev_bias, base.prev_bias),
        prev_bias_threshold_permille: p
            .prev_bias_threshold
            .unwrap_or(base.prev_bias_threshold_permille),
        sis_util_curve: p.sis_util.map_or(base.sis_util_curve, curves::curve_index),
        sis_util_period_us: p.sis_util_period_us.unwrap_or(base.sis_util_period_us),
        idle_core: switch(p.idle_core, base.idle_core),
        wake_sync: switch(p.wake_sync, base.wake_sync),
        cross_llc: switch(p.cross_llc, base.cross_llc),
        wakeq: switch(p.wakeq, base.wakeq),
        wakeq_shards: p.wakeq_shards.unwrap_or(base.wakeq_shards),
        test_inject_error: p
            .test_inject_error
            .map_or(base.test_inject_error, |v| v as u32),
        plain: p.preset.map_or(base.plain, |v| (v == Preset::Plain) as u32),
        balance_lag_us: p.balance_lag_us.unwrap_or(base.balance_lag_us),
        steal_min_us: p.steal_min_us.unwrap_or(base.steal_min_us),
        ..*base
    }
}

/// The tunables a reloaded instance starts with: the live ones, which `tune` may have changed,
/// without the trace (its reader drained the old instance's ring buffer and ends with it; on in
/// the new one, records would fill a buffer nobody reads and every later trace would need
/// --force) and without an injected error (a test's, which would end the new instance too).
pub fn for_reload(live: &sis_tunables) -> sis_tunables {
    sis_tunables {
        trace: 0,
        trace_tgid: 0,
        trace_comm: [0; bpf_intf::sis_limits_SIS_COMM_LEN as usize],
        test_inject_error: 0,
        ..*live
    }
}

/// Every tunable as (name, value as users write it).
pub fn fields(t: &sis_tunables) -> Vec<(&'static str, String)> {
    let onoff = |v: u32| if v != 0 { "on" } else { "off" }.to_string();
    let curve = curves::curve_from_index(t.sis_util_curve)
        .map_or_else(|| format!("#{}", t.sis_util_curve), |c| c.to_string());
    vec![
        (
            "preset",
            if t.plain != 0 { "plain" } else { "sis" }.to_string(),
        ),
        ("slice-us", (t.slice_ns / 1000).to_string()),
        ("prev-bias", onoff(t.prev_bias)),
        (
            "prev-bias-threshold",
            t.prev_bias_threshold_permille.to_string(),
        ),
        ("sis-util", curve),
        ("sis-util-period-us", t.sis_util_period_us.to_string()),
        ("idle-core", onoff(t.idle_core)),
        ("wake-sync", onoff(t.wake_sync)),
        ("cross-llc", onoff(t.cross_llc)),
        ("wakeq", onoff(t.wakeq)),
        (
            "wakeq-shards",
            match t.wakeq_shards {
                0 => "auto".to_string(),
                n => n.to_string(),
            },
        ),
        ("balance-lag-us", t.balance_lag_us.to_string()),
        ("steal-min-us", t.steal_min_us.to_string()),
        ("test-inject-error", onoff(t.test_inject_error)),
        ("trace", describe_trace(t)),
    ]
}

/// The trace's state: off, or on with its filter (set by `scx_sis trace`, not by flags).
fn describe_trace(t: &sis_tunables) -> String {
    if t.trace == 0 {
        return "off".to_string();
    }
    let comm = comm_of(&t.trace_comm);
    match (t.trace_tgid, comm.is_empty()) {
        (0, true) => "on".to_string(),
        (0, false) => format!("on(comm {comm})"),
        (tgid, true) => format!("on(pid {tgid})"),
        (tgid, false) => format!("on(pid {tgid} comm {comm})"),
    }
}

/// A NUL-padded comm as text.
pub fn comm_of(raw: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&c| c != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One line naming every tunable's value.
pub fn describe(t: &sis_tunables) -> String {
    fields(t)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// "name: old -> new" for every tunable that differs.
pub fn changes(old: &sis_tunables, new: &sis_tunables) -> Vec<String> {
    fields(old)
        .into_iter()
        .zip(fields(new))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((k, a), (_, b))| format!("{k}: {a} -> {b}"))
        .collect()
}

/// The map's two copies of the tunables (struct sis_tunables in intf.h): writers change copy 1,
/// then copy 0, so that one of them is whole at any moment.
const COPIES: [u32; 2] = [1, 0];

/// Set the live tunables to `t` (its `seq` is the writer's to choose). Each copy is changed in
/// three steps, so that a reader never takes a copy half written (BPF's tun_snapshot(), read()):
/// its count odd with the old values, the new values, its count even again. One writer at a
/// time: `tune` and `trace` hold the pin directory's lock, and the daemon writes before it pins.
pub fn write(map: &impl MapCore, t: &sis_tunables) -> Result<()> {
    let counts = [read_copy(map, 0)?.seq, read_copy(map, 1)?.seq];
    // Even and past both: a writer killed half way left its copy odd.
    let next = (counts[0].max(counts[1]) | 1) + 1;
    for key in COPIES {
        let old = read_copy(map, key)?;
        write_copy(
            map,
            key,
            &sis_tunables {
                seq: next - 1,
                ..old
            },
        )?;
        write_copy(
            map,
            key,
            &sis_tunables {
                seq: next - 1,
                ..*t
            },
        )?;
        write_copy(map, key, &sis_tunables { seq: next, ..*t })?;
    }
    Ok(())
}

fn write_copy(map: &impl MapCore, key: u32, t: &sis_tunables) -> Result<()> {
    // SAFETY: sis_tunables is plain old data generated by bindgen.
    let bytes = unsafe { plain::as_bytes(t) };
    map.update(&key.to_ne_bytes(), bytes, MapFlags::ANY)
        .context("failed to write the tunables map")
}

fn read_copy(map: &impl MapCore, key: u32) -> Result<sis_tunables> {
    let bytes = map
        .lookup(&key.to_ne_bytes(), MapFlags::ANY)
        .context("failed to read the tunables map")?
        .context("the tunables map is empty")?;
    // SAFETY: all-zero is a valid sis_tunables (integers only).
    let mut t: sis_tunables = unsafe { std::mem::zeroed() };
    plain::copy_from_bytes(&mut t, &bytes)
        .map_err(|e| anyhow::anyhow!("malformed tunables: {e:?}"))?;
    Ok(t)
}

/// How long read() waits for a whole copy before it gives up.
const READ_WAIT: Duration = Duration::from_secs(1);

/// The live tunables, from a whole copy: one read between two of the same copy whose counts
/// are even and equal, so that no writer changed it meanwhile (a map lookup copies the value
/// as BPF does, and races a writer the same way).
pub fn read(map: &impl MapCore) -> Result<sis_tunables> {
    let started = std::time::Instant::now();
    loop {
        for key in [0, 1] {
            let before = read_copy(map, key)?.seq;
            let t = read_copy(map, key)?;
            if before % 2 == 0 && read_copy(map, key)?.seq == before {
                return Ok(t);
            }
        }
        if started.elapsed() >= READ_WAIT {
            bail!(
                "the tunables map had no whole copy for {:.0} s (a writer stopped half way?)",
                READ_WAIT.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The tunables pin, removed when dropped. Its owner is the Scheduler; tying
/// the pin to a value rather than to Scheduler's Drop also removes it when
/// Scheduler::init fails after pinning, before there is a Scheduler to drop.
#[must_use = "dropping the Pin removes the pin"]
pub struct Pin(());

impl Drop for Pin {
    fn drop(&mut self) {
        unpin();
    }
}

/// Pin the live tunables for `tune` and the trace ring buffer for `trace`. Only called once
/// preflight found no scheduler loaded, so a pin already there was left by a killed instance:
/// replace it, once the directory proved to be root's alone (ensure_pin_dir).
pub fn pin(tunables: &mut libbpf_rs::MapMut, trace_ring: &mut libbpf_rs::MapMut) -> Result<Pin> {
    ensure_pin_dir(Path::new(PIN_DIR), 0)?;
    for path in PINS.into_iter().filter(|p| Path::new(p).exists()) {
        eprintln!("replacing the stale pin {path} of an instance that did not exit cleanly");
        fs::remove_file(path).with_context(|| format!("failed to remove {path}"))?;
    }
    // From here the Pin's Drop removes whatever got pinned, and the directory.
    let pin = Pin(());
    tunables
        .pin(TUNABLES_PIN)
        .with_context(|| format!("failed to pin the tunables at {TUNABLES_PIN}"))?;
    trace_ring
        .pin(TRACE_RING_PIN)
        .with_context(|| format!("failed to pin the trace ring buffer at {TRACE_RING_PIN}"))?;
    Ok(pin)
}

fn unpin() {
    // Only in a directory that is still root's alone: never unlink through someone else's.
    if !matches!(check_pin_dir(Path::new(PIN_DIR), 0), Ok(true)) {
        return;
    }
    for path in PINS {
        let _ = fs::remove_file(path);
    }
    let _ = fs::remove_dir(PIN_DIR);
}

/// Whether `dir` is a pin directory root can trust: Ok(false) when nothing is there, Ok(true)
/// when it is a real directory (not a symlink: lstat, never followed) owned by `owner` (root)
/// that no one else may write, in a parent where no one else can rename it away (not writable
/// by others, or sticky, as bpffs is when mounted without mode=). Anything else is an
/// UnsafePinDir error naming what is wrong: whoever controls the directory could make root
/// unlink files elsewhere through a symlink, hand `tune` and `trace` maps of their own, or hold
/// its lock.
pub fn check_pin_dir(dir: &Path, owner: u32) -> Result<bool> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("failed to look at {}", dir.display())),
    };
    let what = if meta.file_type().is_symlink() {
        let target = fs::read_link(dir).map_or_else(|_| "?".into(), |t| t.display().to_string());
        Some(format!("it is a symlink (to {target})"))
    } else if !meta.is_dir() {
        Some("it is not a directory".to_string())
    } else if meta.uid() != owner {
        Some(format!("it is owned by uid {}, not root", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "its mode {:o} lets others write into it",
            meta.mode() & 0o7777
        ))
    } else {
        let parent = dir.parent().unwrap_or(Path::new("/"));
        fs::metadata(parent).ok().and_then(|p| {
            let mode = p.mode();
            (mode & 0o022 != 0 && mode & 0o1000 == 0).then(|| {
                format!(
                    "{} (mode {:o}) lets others rename it away: its parent needs the sticky bit",
                    parent.display(),
                    mode & 0o7777
                )
            })
        })
    };
    match what {
        None => Ok(true),
        Some(what) => Err(Cause::UnsafePinDir.error(format!(
            "refusing the pin directory {}: {what}; it holds the scheduler's pins, which root \
             replaces and trusts, so it must be root's alone (remove it: rm -r {0})",
            dir.display()
        ))),
    }
}

/// `dir` as a pin directory root can trust (check_pin_dir), created 0700 when missing.
fn ensure_pin_dir(dir: &Path, owner: u32) -> Result<()> {
    if check_pin_dir(dir, owner)? {
        return Ok(());
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        // Someone made it between the look and the mkdir: it is checked below like any other.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("failed to create {} (is bpffs mounted?)", dir.display()))
        }
    }
    if check_pin_dir(dir, owner)? {
        Ok(())
    } else {
        bail!("{} vanished as it was created", dir.display())
    }
}

/// The running instance's tunables map, or a clear error if none runs or if this user may not
/// reach it (instance::unreachable).
pub fn open_live() -> Result<MapHandle> {
    let running = preflight::loaded_scheduler().is_some_and(|n| n.starts_with("scx_sis"));
    // try_exists, not exists: an unreadable /sys/fs/bpf (0700 under systemd) is no proof that
    // nothing is pinned.
    match Path::new(TUNABLES_PIN).try_exists() {
        Err(e) => return Err(instance::unreachable(Path::new(TUNABLES_PIN), &e)),
        Ok(false) => {
            return Err(instance::unreachable(
                Path::new(TUNABLES_PIN),
                &std::io::Error::from(std::io::ErrorKind::NotFound),
            ))
        }
        Ok(true) if !running => {
            bail!("no scx_sis instance is running (start one with: sudo scx_sis)")
        }
        Ok(true) => {}
    }
    check_pin_dir(Path::new(PIN_DIR), 0)?;
    MapHandle::from_pinned_path(TUNABLES_PIN).map_err(|e| {
        // BPF_OBJ_GET checks the pin's mode (0600, root's) like open(2) does.
        match e.kind() {
            libbpf_rs::ErrorKind::PermissionDenied => instance::unreachable(
                Path::new(TUNABLES_PIN),
                &std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            ),
            _ => anyhow::Error::new(e).context(format!("failed to open {TUNABLES_PIN}")),
        }
    })
}

/// How long `lock_exclusive` waits for another `tune` or `trace` to let go of the lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// An exclusive flock on `dir`, held until the returned file is dropped. Another `tune` or
/// `trace` holds it for milliseconds; one held longer is held by something else (a stuck or
/// stopped process), so this waits at most `wait`, says so once it has waited a moment, and
/// then fails naming the directory.
pub fn lock_exclusive(dir: &str, wait: Duration) -> Result<fs::File> {
    let file = fs::File::open(dir).with_context(|| format!("failed to open {dir} to lock it"))?;
    let started = std::time::Instant::now();
    let mut said = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("failed to lock {dir}"))
            }
        }
        let waited = started.elapsed();
        if waited >= wait {
            bail!(
                "{dir} stayed locked for {:.0} s: another scx_sis tune or trace holds it \
                 (fuser -v {dir} names the process)",
                waited.as_secs_f64()
            );
        }
        if !said && waited >= Duration::from_millis(200) {
            eprintln!(
                "waiting up to {:.0} s for the lock on {dir}: another scx_sis tune or trace is \
                 changing the tunables",
                wait.as_secs_f64()
            );
            said = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{help_defaults, parse_flags};

    fn policy(args: &[&str]) -> PolicyOpts {
        let flags: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_flags(&flags).unwrap()
    }

    #[test]
    fn the_lock_waits_a_bounded_time_then_names_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let held = lock_exclusive(path, LOCK_WAIT).unwrap();
        let started = std::time::Instant::now();
        let e = lock_exclusive(path, Duration::from_millis(300)).unwrap_err();
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert!(format!("{e:#}").contains(path), "{e:#}");
        drop(held);
        // Let go while another waits: it gets the lock then.
        let held = lock_exclusive(path, LOCK_WAIT).unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        lock_exclusive(path, LOCK_WAIT).unwrap();
        releaser.join().unwrap();
    }

    #[test]
    fn the_pin_directory_must_be_root_alone_and_is_made_0700() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        // /tmp's tempdir is ours and 0700; "root" here is whoever runs the test.
        let me = fs::metadata(base.path()).unwrap().uid();
        let dir = base.path().join("scx_sis");
        assert!(!check_pin_dir(&dir, me).unwrap(), "nothing there yet");
        ensure_pin_dir(&dir, me).unwrap();
        let meta = fs::symlink_metadata(&dir).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        assert!(check_pin_dir(&dir, me).unwrap());
        ensure_pin_dir(&dir, me).unwrap();

        let refused = |dir: &Path, owner: u32, what: &str| {
            let e = ensure_pin_dir(dir, owner).unwrap_err();
            assert_eq!(Cause::of(&e), Cause::UnsafePinDir, "{e:#}");
            let msg = format!("{e:#}");
            assert!(
                msg.contains(what) && msg.contains(&dir.display().to_string()),
                "{msg}"
            );
            assert_eq!(msg.lines().count(), 1, "{msg}");
        };
        // Another owner (as a user's mkdir on a bpffs mounted 01777).
        refused(&dir, me + 1, &format!("owned by uid {me}, not root"));
        // Writable by others.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        refused(&dir, me, "mode 777");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();

        // A symlink to a directory elsewhere: refused, and nothing there is unlinked.
        let elsewhere = base.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("tunables"), "precious").unwrap();
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        refused(&link, me, "symlink");
        assert_eq!(
            fs::read_to_string(elsewhere.join("tunables")).unwrap(),
            "precious"
        );

        // A parent others may write without the sticky bit: the directory could be swapped.
        let open_parent = base.path().join("open");
        fs::create_dir(&open_parent).unwrap();
        fs::set_permissions(&open_parent, fs::Permissions::from_mode(0o777)).unwrap();
        refused(&open_parent.join("scx_sis"), me, "sticky bit");
        fs::set_permissions(&open_parent, fs::Permissions::from_mode(0o1777)).unwrap();
        ensure_pin_dir(&open_parent.join("scx_sis"), me).unwrap();
    }

    #[test]
    fn a_reload_keeps_tuned_values_but_not_the_trace_or_an_injected_error() {
        let mut live = apply(
            &defaults(),
            &policy(&["--prev-bias", "off", "--test-inject-error", "true"]),
        );
        live.trace = 1;
        live.trace_tgid = 42;
        live.trace_comm[0] = b'x' as _;
        live.generation = 9;
        let next = for_reload(&live);
        assert_eq!(describe_trace(&next), "off");
        assert_eq!(next.trace_tgid, 0);
        assert_eq!(next.test_inject_error, 0);
        assert_eq!(next.prev_bias, 0, "a tuned value survives");
        let kept: Vec<_> = fields(&next)
            .into_iter()
            .filter(|(k, _)| !["trace", "test-inject-error"].contains(k))
            .collect();
        let live_fields: Vec<_> = fields(&live)
            .into_iter()
            .filter(|(k, _)| !["trace", "test-inject-error"].contains(k))
            .collect();
        assert_eq!(kept, live_fields);
    }

    #[test]
    fn every_help_names_the_default_the_scheduler_starts_with() {
        // Giving each flag the value its help calls the default must change nothing.
        for (flag, default) in help_defaults() {
            let given = policy(&[&format!("--{flag}"), &default]);
            let changed = changes(&defaults(), &apply(&defaults(), &given));
            assert!(changed.is_empty(), "--{flag} {default}: {changed:?}");
        }
    }

    #[test]
    fn bpf_fallbacks_match_the_defaults() {
        // BPF cannot read policy::defaults, so it keeps copies: "SIS_DFL_NAME = VALUE,".
        let header = include_str!("bpf/tunables.bpf.h");
        let value = |name: &str| {
            header.lines().find_map(|l| {
                let v = l.trim().strip_prefix(name)?.trim().strip_prefix('=')?;
                v.trim().trim_end_matches(',').parse::<u64>().ok()
            })
        };
        assert_eq!(value("SIS_DFL_SLICE_NS"), Some(dfl::SLICE_US * 1000));
        assert_eq!(
            value("SIS_DFL_BALANCE_LAG_US"),
            Some(dfl::BALANCE_LAG_US.into())
        );
        assert_eq!(
            value("SIS_DFL_STEAL_MIN_US"),
            Some(dfl::STEAL_MIN_US.into())
        );
        // Where the header names the SIS_UTIL period's fallback.
        if let Some(period) = value("SIS_DFL_SIS_UTIL_PERIOD_US") {
            assert_eq!(period, u64::from(dfl::SIS_UTIL_PERIOD_US));
        }
    }

    #[test]
    fn unset_flags_keep_the_base_value() {
        let t = apply(&defaults(), &policy(&["--prev-bias", "off", "-s", "2000"]));
        assert_eq!(t.prev_bias, 0);
        assert_eq!(t.slice_ns, 2_000_000);
        assert_eq!(t.idle_core, defaults().idle_core);
        assert_eq!(t.generation, defaults().generation);
    }

    #[test]
    fn changes_name_only_what_differs() {
        let old = defaults();
        let new = apply(
            &old,
            &policy(&["--prev-bias", "off", "--sis-util", "linear"]),
        );
        assert_eq!(
            changes(&old, &new),
            vec!["prev-bias: on -> off", "sis-util: quadratic -> linear"]
        );
        assert!(changes(&old, &old).is_empty());
    }

    #[test]
    fn preset_plain_switches_the_baseline_on_and_off() {
        let plain = apply(&defaults(), &policy(&["--preset", "plain"]));
        assert_eq!(plain.plain, 1);
        assert_eq!(apply(&plain, &policy(&["--preset", "sis"])).plain, 0);
        assert_eq!(apply(&plain, &policy(&["--wakeq", "on"])).plain, 1);
    }

    #[test]
    fn balance_lag_defaults_and_changes_alone() {
        assert_eq!(defaults().balance_lag_us, 12_000);
        let old = defaults();
        let new = apply(&old, &policy(&["--balance-lag-us", "3000"]));
        assert_eq!(new.balance_lag_us, 3000);
        assert_eq!(changes(&old, &new), vec!["balance-lag-us: 12000 -> 3000"]);
        assert_eq!(
            apply(&new, &policy(&["--wakeq", "on"])).balance_lag_us,
            3000
        );
        assert!(describe(&new).contains("balance-lag-us=3000"));
    }

    #[test]
    fn lock_excludes_a_second_holder_until_dropped() {
        let dir = std::env::temp_dir().join(format!("scx_sis-lock-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.to_str().unwrap();
        let held = lock_exclusive(path, LOCK_WAIT).unwrap();
        let other = fs::File::open(&dir).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        assert!(other.try_lock().is_ok());
        drop(other);
        fs::remove_dir(&dir).unwrap();
        assert!(lock_exclusive(path, LOCK_WAIT).is_err());
    }

    #[test]
    fn describe_uses_flag_spelling() {
        let text = describe(&defaults());
        assert!(
            text.contains("prev-bias=on") && text.contains("sis-util=quadratic"),
            "{text}"
        );
    }
}
