//! The pinned maps, through which other processes reach the running scheduler: the daemon pins
//! the tunables map (for `scx_sis tune`) and the trace ring buffer (for `scx_sis trace`) in a
//! directory that must be root's alone, `open_live` opens the live tunables from their pin, and
//! an flock on that directory keeps the writers of the tunables to one at a time.
//!
//! Invariants: root unlinks or trusts nothing in a directory that is not root's alone
//! (`check_root_dir`; `Cause::UnsafePinDir` otherwise); the pins go when their `Pin` is dropped.
//! This module opens the tunables map but never reads or writes it (`policy::tunables` does),
//! and it imports nothing from `ab`: `lock_exclusive`'s caller says which holder is not worth
//! waiting for.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use libbpf_rs::MapHandle;

use crate::process::{exit::Cause, instance, kernel};

pub const PIN_DIR: &str = "/sys/fs/bpf/scx_sis";
pub const TUNABLES_PIN: &str = "/sys/fs/bpf/scx_sis/tunables";
pub const TRACE_RING_PIN: &str = "/sys/fs/bpf/scx_sis/trace_ring";
const PINS: [&str; 2] = [TUNABLES_PIN, TRACE_RING_PIN];

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
    check_root_dir(dir, owner, PIN_DIR_ROLE)
}

/// What a pin directory is and holds, for check_root_dir's refusal.
const PIN_DIR_ROLE: (&str, &str) = (
    "pin directory",
    "the scheduler's pins, which root replaces and trusts",
);

/// `check_pin_dir` for any directory root keeps its own files in; `role` names the directory
/// and what it holds, for the refusal.
pub fn check_root_dir(dir: &Path, owner: u32, role: (&str, &str)) -> Result<bool> {
    let (name, holds) = role;
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
            "refusing the {name} {}: {what}; it holds {holds}, so it must be root's alone \
             (remove it: rm -r {0})",
            dir.display()
        ))),
    }
}

/// `dir` as a pin directory root can trust (check_pin_dir), created 0700 when missing.
fn ensure_pin_dir(dir: &Path, owner: u32) -> Result<()> {
    ensure_root_dir(dir, owner, PIN_DIR_ROLE)
}

/// `dir` as a directory root can trust (check_root_dir), created 0700 when missing.
pub fn ensure_root_dir(dir: &Path, owner: u32, role: (&str, &str)) -> Result<()> {
    if check_root_dir(dir, owner, role)? {
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
    if check_root_dir(dir, owner, role)? {
        Ok(())
    } else {
        bail!("{} vanished as it was created", dir.display())
    }
}

/// The running instance's tunables map, or a clear error if none runs or if this user may not
/// reach it (instance::unreachable).
pub fn open_live() -> Result<MapHandle> {
    let running = kernel::sis_loaded();
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

/// The identity of what is pinned at `path` (bpffs gives every pin its own inode), None when
/// nothing is: a scheduler that reloaded (CPU hotplug, suspend) pins a new map at the same path.
pub fn pin_identity(path: &str) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// How long `lock_exclusive` waits for another `tune` or `trace` to let go of the lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// An exclusive flock on `dir`, held until the returned file is dropped. Another `tune` or
/// `trace` holds it for milliseconds; one held longer is held by something else (a stuck or
/// stopped process), so this waits at most `wait`, says so once it has waited a moment, and
/// then fails naming the directory. `give_up` runs each time the lock is found held: its error
/// (a holder known to keep the lock for minutes, such as `ab::marker::refuse_while_running`'s)
/// ends the wait at once.
pub fn lock_exclusive(
    dir: &str,
    wait: Duration,
    give_up: impl Fn() -> Result<()>,
) -> Result<fs::File> {
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
        give_up()?;
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

    /// A `give_up` that never does: the lock's own wait is under test.
    fn wait_on() -> Result<()> {
        Ok(())
    }

    #[test]
    fn the_lock_waits_a_bounded_time_then_names_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let held = lock_exclusive(path, LOCK_WAIT, wait_on).unwrap();
        let started = std::time::Instant::now();
        let e = lock_exclusive(path, Duration::from_millis(300), wait_on).unwrap_err();
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert!(format!("{e:#}").contains(path), "{e:#}");
        drop(held);
        // Let go while another waits: it gets the lock then.
        let held = lock_exclusive(path, LOCK_WAIT, wait_on).unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        lock_exclusive(path, LOCK_WAIT, wait_on).unwrap();
        releaser.join().unwrap();
    }

    #[test]
    fn give_up_ends_the_wait_at_once_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let _held = lock_exclusive(path, LOCK_WAIT, wait_on).unwrap();
        let started = std::time::Instant::now();
        let e = lock_exclusive(path, LOCK_WAIT, || bail!("held for minutes")).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(format!("{e:#}"), "held for minutes");
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
    fn lock_excludes_a_second_holder_until_dropped() {
        let dir = std::env::temp_dir().join(format!("scx_sis-lock-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.to_str().unwrap();
        let held = lock_exclusive(path, LOCK_WAIT, wait_on).unwrap();
        let other = fs::File::open(&dir).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        assert!(other.try_lock().is_ok());
        drop(other);
        fs::remove_dir(&dir).unwrap();
        assert!(lock_exclusive(path, LOCK_WAIT, wait_on).is_err());
    }
}
