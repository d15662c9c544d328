//! An output file a program writes once, at the end of its work, opened at the start: a path
//! that cannot be written fails before the work costs anything. A regular file (or a new name) is
//! written to a new file in the target's directory and renamed over the target at the end, so a
//! symlink there is replaced, not followed, and a failure leaves no partial file; a FIFO, a
//! character device and stdout are written in place.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::process::exit::Cause;

/// The user who ran this program through sudo (SUDO_UID, SUDO_GID), when root runs it so: the
/// owner to hand an output to, so that the file is theirs, as if they had written it.
pub fn invoking_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |var: &str| std::env::var(var).ok()?.parse::<u32>().ok();
    Some((id("SUDO_UID")?, id("SUDO_GID")?))
}

/// An output: a file replaced once written, or a stream written in place.
///
/// A regular file or a new name gets a new file beside it, renamed over it once written, so a
/// symlink there is replaced rather than followed and a failure leaves no partial file. A FIFO,
/// a character device (`/dev/null`) and stdout (`-`, `/dev/stdout`) are written in place: a
/// rename would put a regular file where the device or pipe was. Anything else (a directory, a
/// socket, a block device, a file of /proc or /sys) is refused at `create`, as a usage error.
pub struct Output {
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    /// The new file, renamed over `path` once written. Dropped unwritten, it leaves nothing.
    Replace(tempfile::NamedTempFile),
    /// A FIFO or character device, opened now, or at the end for a FIFO nobody reads yet.
    InPlace(Option<File>),
    Stdout,
}

/// procfs and sysfs (statfs f_type): their files are the kernel's settings, never an output.
const PROC_SUPER_MAGIC: i64 = 0x9fa0;
const SYSFS_MAGIC: i64 = 0x6265_6572;

impl Output {
    /// Fails now if `path` may not be written (see `Output`) or its directory is missing or not
    /// writable; a refusal names `flag`, the option the user gave `path` with. The new file is
    /// opened O_CREAT|O_EXCL (never through an existing name, so no symlink is followed), and
    /// handed to `owner` if given.
    pub fn create(path: &Path, flag: &str, owner: Option<(u32, u32)>) -> Result<Self> {
        let out = |sink| {
            Ok(Self {
                path: path.to_path_buf(),
                sink,
            })
        };
        if is_stdout(path) {
            return out(Sink::Stdout);
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let refuse = |what: &str| {
            Err(Cause::Usage.error(format!(
                "refusing {flag} {}: it is {what}; {flag} takes a file name, a FIFO, a character \
                 device or - for stdout",
                path.display()
            )))
        };
        if let Some(fs) = kernel_fs(path).or_else(|| kernel_fs(dir)) {
            return refuse(&format!("a file of {fs}"));
        }
        use std::os::unix::fs::FileTypeExt;
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return refuse("a directory"),
            Ok(m) if m.file_type().is_socket() => return refuse("a socket"),
            Ok(m) if m.file_type().is_block_device() => return refuse("a block device"),
            Ok(m) if m.file_type().is_char_device() || m.file_type().is_fifo() => {
                return out(Sink::InPlace(open_in_place(path, m.file_type().is_fifo())?));
            }
            // A regular file, a new name, or a symlink to either: replaced.
            _ => {}
        }
        let name = path
            .file_name()
            .with_context(|| format!("{} names no file", path.display()))?;
        if !dir.is_dir() {
            anyhow::bail!(
                "cannot write {}: the directory {} does not exist",
                path.display(),
                dir.display()
            );
        }
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        remove_stale(dir, &prefix);
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(TMP_SUFFIX)
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(dir)
            .map_err(without_temp_path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        // Held while it is written: a temp file nobody holds was left by a run that was killed
        // (remove_stale).
        tmp.as_file()
            .try_lock()
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(tmp.as_file(), Some(uid), Some(gid)).with_context(|| {
                format!("failed to give {} to uid {uid} gid {gid}", path.display())
            })?;
        }
        out(Sink::Replace(tmp))
    }

    /// The target, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this output is the process's stdout (what else the program prints then goes to
    /// stderr).
    pub fn is_stdout(&self) -> bool {
        matches!(self.sink, Sink::Stdout)
    }

    /// Write through a buffer, then, for a file, rename over the target. A failure names the
    /// target and removes the new file; the target is untouched.
    pub fn write(self, f: impl FnOnce(&mut BufWriter<&mut File>) -> Result<()>) -> Result<()> {
        let failed = || format!("failed to write {}", self.path.display());
        let emit = |file: &mut File| -> Result<()> {
            let mut w = BufWriter::new(file);
            f(&mut w).with_context(failed)?;
            w.flush().with_context(failed)
        };
        match self.sink {
            Sink::Replace(mut tmp) => {
                emit(tmp.as_file_mut())?;
                tmp.persist(&self.path)
                    .map_err(|e| anyhow::Error::new(e.error))
                    .with_context(failed)?;
            }
            Sink::InPlace(file) => {
                let mut file = match file {
                    Some(file) => file,
                    // A FIFO nobody read when recording began: wait for its reader now.
                    None => std::fs::OpenOptions::new()
                        .write(true)
                        .open(&self.path)
                        .with_context(failed)?,
                };
                emit(&mut file)?;
            }
            Sink::Stdout => {
                // A second handle on fd 1: dropped, it leaves fd 1 open.
                let fd = std::io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .with_context(failed)?;
                emit(&mut File::from(fd))?;
            }
        }
        Ok(())
    }
}

/// The suffix of the new files (after tempfile's six random characters).
const TMP_SUFFIX: &str = ".tmp";

/// `-` and the names of fd 1.
fn is_stdout(path: &Path) -> bool {
    ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
        .iter()
        .any(|s| path == Path::new(s))
}

/// "/proc" or "/sys" when `path` (followed) lies on procfs or sysfs.
fn kernel_fs(path: &Path) -> Option<&'static str> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: a NUL-terminated path and a statfs buffer statfs fills on success.
    if unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // f_type is i64 here, a narrower type on other architectures.
    // SAFETY: statfs succeeded, so the buffer is initialized.
    #[allow(clippy::unnecessary_cast)]
    let f_type = unsafe { st.assume_init() }.f_type as i64;
    match f_type {
        PROC_SUPER_MAGIC => Some("/proc"),
        SYSFS_MAGIC => Some("/sys"),
        _ => None,
    }
}

/// A FIFO or character device opened for writing, without creating or truncating anything. A
/// FIFO nobody reads yet (ENXIO without blocking) is opened at the end instead (None), so that
/// recording does not wait for its reader.
fn open_in_place(path: &Path, fifo: bool) -> Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).custom_flags(libc::O_NOCTTY);
    if fifo {
        o.custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK);
    }
    match o.open(path) {
        Ok(f) => {
            if fifo {
                // Blocking again, so that a slow reader slows the writer rather than failing it.
                // SAFETY: fcntl on a descriptor we own.
                unsafe {
                    let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
                    libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
                }
            }
            Ok(Some(f))
        }
        Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}

/// Removes the temp files `.NAME.XXXXXX.tmp` in `dir` that no run is writing: one being written
/// is locked by its run (Output::create), so one that can be locked was left by a run that was
/// killed. Only regular files of that exact shape are looked at, never through a symlink.
fn remove_stale(dir: &Path, prefix: &std::ffi::OsStr) {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = prefix.as_encoded_bytes();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let b = name.as_encoded_bytes();
        let shaped = b.len() == prefix.len() + 6 + TMP_SUFFIX.len()
            && b.starts_with(prefix)
            && b.ends_with(TMP_SUFFIX.as_bytes())
            && b[prefix.len()..prefix.len() + 6]
                .iter()
                .all(u8::is_ascii_alphanumeric);
        if !shaped || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        if f.try_lock().is_ok() {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// `e` without the temp file's name, which tempfile appends (" at path ...") and which means
/// nothing to the user; the caller names the target.
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    let msg = e.to_string();
    match msg.rfind(" at path \"") {
        Some(i) => std::io::Error::new(e.kind(), msg[..i].to_string()),
        None => e,
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
    fn a_missing_directory_fails_at_create() {
        let dir = tempfile::tempdir().unwrap();
        let e = Output::create(&dir.path().join("nonexistent/x.json"), "-o", None)
            .err()
            .expect("a missing directory is refused at once");
        let msg = format!("{e:#}");
        assert!(msg.contains("nonexistent/x.json"), "{msg}");
        assert!(
            msg.contains("does not exist") && !msg.contains(".x.json."),
            "{msg}"
        );
        assert!(
            Output::create(dir.path(), "-o", None).is_err(),
            "a directory"
        );
    }

    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("scx_sis-trace.json");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        let out = Output::create(&target, "-o", None).unwrap();
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
        let out = Output::create(&target, "-o", None).unwrap();
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
        drop(Output::create(&dir.path().join("u.json"), "-o", None).unwrap());
        assert_eq!(entries(dir.path()), ["t.json"]);
    }

    /// A FIFO with a reader: what the reader got, once the writer closes it.
    fn read_fifo(path: &Path) -> std::thread::JoinHandle<String> {
        let path = path.to_path_buf();
        std::thread::spawn(move || std::fs::read_to_string(path).unwrap())
    }

    #[test]
    fn a_fifo_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = read_fifo(&fifo);
        Output::create(&fifo, "-o", None)
            .unwrap()
            .write(|w| Ok(w.write_all(b"{\"traceEvents\":[]}")?))
            .unwrap();
        assert_eq!(reader.join().unwrap(), "{\"traceEvents\":[]}");
        let m = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(m.file_type().is_fifo(), "the FIFO was replaced: {m:?}");
        assert_eq!(entries(dir.path()), ["pipe"]);
    }

    #[test]
    fn a_character_device_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("not root: cannot mknod a character device");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        let c = std::ffi::CString::new(null.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; 1:3 is /dev/null's device number.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
        Output::create(&null, "-o", None)
            .unwrap()
            .write(|w| Ok(w.write_all(b"{}")?))
            .unwrap();
        let m = std::fs::symlink_metadata(&null).unwrap();
        assert!(
            m.file_type().is_char_device(),
            "the device was replaced: {m:?}"
        );
        assert_eq!(m.rdev(), libc::makedev(1, 3));
        assert_eq!(entries(dir.path()), ["null"]);
    }

    #[test]
    fn stdout_is_written_in_place() {
        for name in ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
            let out = Output::create(Path::new(name), "-o", None).unwrap();
            assert!(out.is_stdout(), "{name} is not taken as stdout");
        }
    }

    /// The one line and the usage status of a refused -o.
    fn refused(path: &Path, why: &str) {
        let e = Output::create(path, "-o", None)
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", path.display()));
        let msg = format!("{e:#}");
        assert_eq!(Cause::of(&e), Cause::Usage, "{msg}");
        assert!(
            msg.contains(&format!("refusing -o {}", path.display())),
            "{msg}"
        );
        assert!(msg.contains(why), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }

    #[test]
    fn a_directory_a_socket_and_proc_or_sys_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        refused(dir.path(), "a directory");
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        refused(&sock, "a socket");
        refused(Path::new("/proc/self/status"), "/proc");
        refused(Path::new("/proc/sys/kernel/trace.json"), "/proc");
        refused(Path::new("/sys/kernel/trace.json"), "/sys");
        assert_eq!(entries(dir.path()), ["sock"]);
    }

    #[test]
    fn a_temp_file_left_by_a_killed_run_is_removed_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        // What a SIGKILLed run leaves: its temp file, written by nobody now.
        std::fs::write(dir.path().join(".t.json.Ab12Cd.tmp"), "").unwrap();
        // Another run's, still being written: kept.
        let running = Output::create(&target, "-o", None).unwrap();
        // Not a temp file of ours: kept.
        std::fs::write(dir.path().join(".t.json.notours"), "").unwrap();
        std::fs::write(dir.path().join(".u.json.Ab12Cd.tmp"), "").unwrap();
        Output::create(&target, "-o", None)
            .unwrap()
            .write(|w| Ok(w.write_all(b"{}")?))
            .unwrap();
        let left = entries(dir.path());
        assert!(
            !left.contains(&".t.json.Ab12Cd.tmp".to_string()),
            "{left:?}"
        );
        assert_eq!(left.len(), 4, "{left:?}");
        drop(running);
        assert_eq!(
            entries(dir.path()),
            [".t.json.notours", ".u.json.Ab12Cd.tmp", "t.json"]
        );
    }

    #[test]
    fn an_error_names_the_target_not_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // A name that fits, whose temp name (".NAME.XXXXXX.tmp") does not.
        let target = dir.path().join("x".repeat(250));
        let e = Output::create(&target, "-o", None)
            .err()
            .expect("the temp name is too long");
        let msg = format!("{e:#}");
        assert!(msg.contains(&target.display().to_string()), "{msg}");
        assert!(!msg.contains(&format!(".{}.", "x".repeat(250))), "{msg}");
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
        Output::create(&target, "-o", Some((65534, 65534)))
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
