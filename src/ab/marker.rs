//! The marker a running `scx_sis ab` keeps in /run/scx_sis/ab.json: its pid, the side in force,
//! and the tunables from before it began, to be restored. It is how a `tune` (or a second `ab`)
//! tells that ab holds the tunables' lock and fails at once, how the daemon's stats line names
//! the side, how the daemon reloads (CPU hotplug) with the tunables from before ab rather than
//! B's, and, when ab was killed (kill -9, no chance to restore), what the next `ab` or `tune`
//! restores.
//!
//! Root writes the marker and root trusts it, so it lives in a directory that is root's alone
//! (created 0700, checked like the pin directory), is written to a new file then renamed over
//! the old one (a reader never sees half of it), and is opened without following a symlink.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::order::Side;
use crate::bpf_intf::sis_tunables;
use crate::policy::tunables;
use crate::process::pins;

/// Where the marker lives.
pub const DIR: &str = "/run/scx_sis";
const FILE: &str = "ab.json";
const ROLE: (&str, &str) = (
    "ab marker directory",
    "the tunables scx_sis ab restores, which root trusts",
);

/// What the marker holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    pub pid: u32,
    /// The process's start time (/proc/PID/stat, clock ticks since boot): a pid the kernel gave
    /// to another process since is not this ab.
    pub start_ticks: u64,
    /// The side in force, and whether its settle period is still running.
    pub side: Side,
    pub settling: bool,
    /// The tunables from before ab, as the map held them (struct sis_tunables, hex).
    pub before: String,
    /// The same as flags, for a reader.
    pub before_flags: String,
    pub b_flags: String,
}

impl Marker {
    pub fn new(before: &sis_tunables, b_flags: &str) -> Result<Self> {
        let pid = std::process::id();
        Ok(Marker {
            pid,
            start_ticks: start_ticks(pid).context("failed to read this process's start time")?,
            side: Side::A,
            settling: true,
            before: hex(before),
            before_flags: tunables::describe(before),
            b_flags: b_flags.to_string(),
        })
    }

    /// The tunables from before ab.
    pub fn before(&self) -> Result<sis_tunables> {
        unhex(&self.before)
    }

    /// Whether the ab that wrote it still runs.
    pub fn alive(&self) -> bool {
        start_ticks(self.pid) == Some(self.start_ticks)
    }
}

/// The marker in `dir`, None when there is none. A directory or file root cannot trust is an
/// error (pins::check_root_dir), and so is a marker of another version.
pub fn read(dir: &Path, owner: u32) -> Result<Option<Marker>> {
    if !pins::check_root_dir(dir, owner, ROLE)? {
        return Ok(None);
    }
    let path = dir.join(FILE);
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("failed to open {}", path.display())),
    };
    let m: Marker = serde_json::from_reader(file)
        .with_context(|| format!("{} is not an scx_sis ab marker", path.display()))?;
    m.before()
        .with_context(|| format!("{} was left by another version", path.display()))?;
    Ok(Some(m))
}

/// Write `m` as the marker in `dir` (made 0700 if missing): a new file, then renamed over the
/// marker, so that a reader (the daemon, a `tune`) finds the old one or the new one.
pub fn write(dir: &Path, owner: u32, m: &Marker) -> Result<()> {
    pins::ensure_root_dir(dir, owner, ROLE)?;
    let tmp = dir.join(format!(".{FILE}.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .with_context(|| format!("failed to create {}", tmp.display()))?;
    serde_json::to_writer(&mut file, m)?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    fs::rename(&tmp, dir.join(FILE)).with_context(|| format!("failed to write {}", path(dir)))
}

/// Remove the marker; nothing there is fine.
pub fn remove(dir: &Path, owner: u32) -> Result<()> {
    if !pins::check_root_dir(dir, owner, ROLE)? {
        return Ok(());
    }
    match fs::remove_file(dir.join(FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("failed to remove {}", path(dir)))
        }
        _ => Ok(()),
    }
}

pub fn path(dir: &Path) -> String {
    dir.join(FILE).display().to_string()
}

/// The running ab's marker (root's, in DIR), if an ab runs.
pub fn running() -> Option<Marker> {
    read(Path::new(DIR), 0).ok().flatten().filter(Marker::alive)
}

/// An error naming the running ab when one other than this process runs, else Ok: the
/// `give_up` every taker of the tunables' lock passes to `pins::lock_exclusive`. An ab holds the
/// lock for its whole run, minutes perhaps: no use waiting for it.
pub fn refuse_while_running() -> Result<()> {
    if let Some(ab) = running().filter(|m| m.pid != std::process::id()) {
        bail!(
            "the tunables are held by scx_sis ab (pid {}), which A/B tests them until it \
             ends; wait for it, or stop it with kill -INT {} (it restores the tunables from \
             before it)",
            ab.pid,
            ab.pid
        );
    }
    Ok(())
}

/// " ab=A" or " ab=B" (with "(settle)" while the switch settles) for the daemon's stats line
/// while an ab runs, else nothing.
pub fn stats_tag() -> String {
    match running() {
        Some(m) if m.settling => format!(" ab={}(settle)", m.side),
        Some(m) => format!(" ab={}", m.side),
        None => String::new(),
    }
}

/// A marker left by an ab that no longer runs (killed): restore its tunables on `map` if they
/// differ from the live ones, remove it, and say what was done in one line. None when there is
/// no such marker. The caller holds the tunables' lock.
pub fn repair(map: &impl libbpf_rs::MapCore, dir: &Path, owner: u32) -> Result<Option<String>> {
    let Some(m) = read(dir, owner)? else {
        return Ok(None);
    };
    if m.alive() {
        bail!(
            "scx_sis ab (pid {}) is running and holds the tunables; stop it first (kill -INT {})",
            m.pid,
            m.pid
        );
    }
    let before = m.before()?;
    let live = tunables::read(map)?;
    let changed = tunables::changes(&live, &before);
    let line = if changed.is_empty() {
        format!(
            "scx_sis ab (pid {}) was killed before it finished; the tunables are already those \
             from before it; removed its marker {}",
            m.pid,
            path(dir)
        )
    } else {
        tunables::write(
            map,
            &sis_tunables {
                generation: live.generation + 1,
                ..before
            },
        )?;
        format!(
            "scx_sis ab (pid {}) was killed before it finished, leaving B ({}) live; restored \
             the tunables from before it: {}",
            m.pid,
            m.b_flags.trim(),
            changed.join(", ")
        )
    };
    remove(dir, owner)?;
    Ok(Some(line))
}

/// The start time of process `pid` in clock ticks since boot (field 22 of /proc/PID/stat).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the comm, whose closing parenthesis is the last one: state is field 3.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

fn hex(t: &sis_tunables) -> String {
    // SAFETY: sis_tunables is plain old data generated by bindgen.
    let bytes = unsafe { plain::as_bytes(t) };
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Result<sis_tunables> {
    let size = std::mem::size_of::<sis_tunables>();
    if s.len() != 2 * size || !s.is_ascii() {
        bail!(
            "its tunables are {} bytes, this scx_sis's {size}",
            s.len() / 2
        );
    }
    let bytes = (0..size)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .context("its tunables are not hex")?;
    // SAFETY: all-zero is a valid sis_tunables (integers only).
    let mut t: sis_tunables = unsafe { std::mem::zeroed() };
    plain::copy_from_bytes(&mut t, &bytes).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_flags;
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;

    /// A marker directory of the test's own, owned by whoever runs it.
    fn test_dir() -> (tempfile::TempDir, PathBuf, u32) {
        let base = tempfile::tempdir().unwrap();
        let me = fs::metadata(base.path()).unwrap().uid();
        let dir = base.path().join("scx_sis");
        (base, dir, me)
    }

    fn tuned(flags: &[&str]) -> sis_tunables {
        let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        tunables::apply(&tunables::defaults(), &parse_flags(&flags).unwrap())
    }

    #[test]
    fn the_marker_round_trips_in_a_private_directory() {
        let (_base, dir, me) = test_dir();
        assert_eq!(read(&dir, me).unwrap(), None, "nothing there yet");
        let before = tuned(&["--prev-bias", "off"]);
        let mut m = Marker::new(&before, "--wakeq on").unwrap();
        write(&dir, me, &m).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert_eq!(fs::metadata(dir.join(FILE)).unwrap().mode() & 0o777, 0o600);
        let back = read(&dir, me).unwrap().unwrap();
        assert_eq!(back, m);
        assert!(back.alive(), "this process wrote it");
        assert_eq!(
            tunables::fields(&back.before().unwrap()),
            tunables::fields(&before)
        );
        m.side = Side::B;
        m.settling = false;
        write(&dir, me, &m).unwrap();
        assert_eq!(read(&dir, me).unwrap().unwrap().side, Side::B);
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
        remove(&dir, me).unwrap();
        assert_eq!(read(&dir, me).unwrap(), None);
        remove(&dir, me).unwrap();
    }

    #[test]
    fn a_marker_of_a_process_that_is_gone_is_not_alive() {
        let mut m = Marker::new(&tunables::defaults(), "").unwrap();
        m.start_ticks += 1;
        assert!(!m.alive(), "the pid's start time differs: another process");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        m.pid = pid;
        assert!(!m.alive(), "a pid no process has");
    }

    #[test]
    fn a_symlink_is_never_followed_nor_written_through() {
        let (base, dir, me) = test_dir();
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let precious = base.path().join("precious");
        fs::write(&precious, "keep").unwrap();
        std::os::unix::fs::symlink(&precious, dir.join(FILE)).unwrap();
        assert!(read(&dir, me).is_err(), "a symlinked marker is refused");
        write(&dir, me, &Marker::new(&tunables::defaults(), "").unwrap()).unwrap();
        assert_eq!(fs::read_to_string(&precious).unwrap(), "keep");
        assert!(!fs::symlink_metadata(dir.join(FILE))
            .unwrap()
            .file_type()
            .is_symlink());

        // The directory itself a symlink, or open to others: refused, nothing written.
        let link = base.path().join("link");
        std::os::unix::fs::symlink(base.path(), &link).unwrap();
        assert!(write(&link, me, &Marker::new(&tunables::defaults(), "").unwrap()).is_err());
        fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let e = read(&dir, me).unwrap_err();
        assert!(format!("{e:#}").contains("ab marker directory"), "{e:#}");
    }

    #[test]
    fn a_marker_of_another_layout_is_refused() {
        let (_base, dir, me) = test_dir();
        let mut m = Marker::new(&tunables::defaults(), "").unwrap();
        m.before.push_str("00");
        write(&dir, me, &m).unwrap();
        let e = read(&dir, me).unwrap_err();
        assert!(format!("{e:#}").contains("another version"), "{e:#}");
    }
}
