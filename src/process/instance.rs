//! Reaching the running scx_sis from another process (`tune`, `monitor`, `trace`): its stats
//! socket and its pins, with errors that tell "none is running" from "not allowed to look".
//! systemd mounts /sys/fs/bpf 0700 and the stats socket is root's, so to a user who is not
//! root a running instance looks absent unless permission errors are told apart.
//!
//! Every stats request has a deadline: a daemon that was stopped (SIGSTOP, a debugger) still
//! accepts connections through the kernel's backlog but never answers, and a reader without a
//! deadline would wait for it forever, deaf to Ctrl-C. The socket's path is shared by every scx
//! scheduler, so an answer that is not scx_sis's stats names whoever gave it.

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Result};
use scx_stats::prelude::StatsClient;
use serde::de::DeserializeOwned;

use crate::load::preflight;
use crate::process::exit::Cause;

/// Where scx_stats servers listen (scx's convention; StatsClient's default).
pub const STATS_SOCKET: &str = "/var/run/scx/root/stats";

/// How long a stats request may take before the daemon is taken as not answering. The daemon
/// answers within its poll interval; seconds leave room for a loaded (or emulated) machine.
pub const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// Fails with status 3 unless this process runs as root: the pins and the stats socket are
/// root's, so a user who is not root can reach no instance, running or not.
pub fn require_root() -> Result<()> {
    preflight::require_root(&format!(
        "reach the running scheduler (try: sudo {})",
        invocation()
    ))
}

/// A connection to the running instance's stats server.
pub struct Stats {
    client: StatsClient,
    path: PathBuf,
    timeout: Duration,
}

/// A client of the running instance's stats server.
pub fn connect_stats() -> Result<Stats> {
    connect_stats_at(Path::new(STATS_SOCKET))
}

/// A client whose requests wait up to `timeout`: for a reader that would rather have a late
/// answer than none (a delta carries its own interval, so a late one is still right).
pub fn connect_stats_waiting(timeout: Duration) -> Result<Stats> {
    connect_stats_within(Path::new(STATS_SOCKET), timeout)
}

pub fn connect_stats_at(path: &Path) -> Result<Stats> {
    connect_stats_within(path, STATS_TIMEOUT)
}

fn connect_stats_within(path: &Path, timeout: Duration) -> Result<Stats> {
    let ms = timeout.as_millis() as u64;
    let client = StatsClient::new()
        .set_path(path)
        .connect(Some(ms))
        .map_err(|e| match e.downcast_ref::<io::Error>() {
            Some(io) => unreachable(path, io),
            None => e.context(format!("failed to connect to {}", path.display())),
        })?;
    Ok(Stats {
        client,
        path: path.to_path_buf(),
        timeout,
    })
}

impl Stats {
    /// One stats request ("stats", scx_sis's Metrics or any type of its shape), within the
    /// client's timeout (STATS_TIMEOUT unless connect_stats_waiting said otherwise). A server that does not answer in time, or answers with something else,
    /// is named.
    pub fn read<T: DeserializeOwned>(&mut self) -> Result<T> {
        let v: serde_json::Value = self.client.request("stats", vec![]).map_err(|e| {
            if e.to_string().contains("timed out") {
                anyhow!(
                    "{} did not answer a stats request on {} within {} s{}",
                    server_name(&self.path),
                    self.path.display(),
                    self.timeout.as_secs(),
                    stopped_hint(&self.path)
                )
            } else {
                e.context(format!("failed to read stats from {}", self.path.display()))
            }
        })?;
        serde_json::from_value(v).map_err(|e| not_ours(&self.path, &e))
    }
}

/// The process listening on `path` (its comm and pid, from the socket's peer credentials), or
/// "the scheduler" when it cannot be told.
fn server_name(path: &Path) -> String {
    match server(path) {
        Some((pid, comm)) => format!("{comm} (pid {pid})"),
        None => "the scheduler".into(),
    }
}

/// The pid and comm of the process that listens on `path`: a connection's peer credentials are
/// the listener's, and the kernel completes the connection even for a stopped listener.
fn server(path: &Path) -> Option<(i32, String)> {
    let stream = std::os::unix::net::UnixStream::connect(path).ok()?;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a ucred.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 || cred.pid <= 0 {
        return None;
    }
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", cred.pid)).ok()?;
    Some((cred.pid, comm.trim_end().to_string()))
}

/// "; it is stopped: kill -CONT PID" for a server stopped by a signal, else nothing.
fn stopped_hint(path: &Path) -> String {
    let Some((pid, _)) = server(path) else {
        return String::new();
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the comm's closing parenthesis (the comm may hold spaces).
    match stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
    {
        Some('T') | Some('t') => format!(" (it is stopped: kill -CONT {pid} resumes it)"),
        _ => String::new(),
    }
}

/// An answer on `path` that is not scx_sis's stats: another scx scheduler's server (the path is
/// shared by convention), or an scx_sis of another version.
fn not_ours(path: &Path, err: &serde_json::Error) -> anyhow::Error {
    let Some((pid, comm)) = server(path) else {
        return anyhow!(
            "the stats server on {} answered with something other than scx_sis's stats ({err})",
            path.display()
        );
    };
    if comm == "scx_sis" {
        return anyhow!(
            "the scx_sis on {} (pid {pid}) answered with stats of another version ({err});              run the scx_sis binary that it runs (/proc/{pid}/exe)",
            path.display()
        );
    }
    let ops = preflight::loaded_scheduler()
        .map(|ops| format!(", the loaded scheduler is {ops}"))
        .unwrap_or_default();
    Cause::Busy.error(format!(
        "{} is served by {comm} (pid {pid}), not scx_sis: another scx scheduler runs{ops};          read its stats with `{comm} --monitor 1` (or scxtop), or stop it and start scx_sis",
        path.display()
    ))
}

/// Why `path`, a way into the running instance, could not be used: root is needed, none runs,
/// or the error itself.
pub fn unreachable(path: &Path, err: &io::Error) -> anyhow::Error {
    match err.kind() {
        io::ErrorKind::PermissionDenied => Cause::Unsupported.error(format!(
            "must run as root to reach the running scheduler ({}: {err}; try: sudo {})",
            path.display(),
            invocation()
        )),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => anyhow!(
            "no scx_sis instance is running ({}: {err}; start one with: sudo scx_sis)",
            path.display()
        ),
        _ => anyhow!("failed to reach {}: {err}", path.display()),
    }
}

/// The command as it was run, for a "try: sudo ..." hint.
fn invocation() -> String {
    let args: Vec<String> = std::env::args().collect();
    if args.is_empty() {
        "scx_sis".into()
    } else {
        args.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_denied_says_root_is_needed_not_that_none_runs() {
        let p = Path::new("/sys/fs/bpf/scx_sis/tunables");
        let e = unreachable(p, &io::Error::from(io::ErrorKind::PermissionDenied));
        let msg = format!("{e:#}");
        assert!(msg.contains("must run as root"), "{msg}");
        assert!(!msg.contains("no scx_sis instance"), "{msg}");
        assert_eq!(Cause::of(&e), Cause::Unsupported);
        let e = unreachable(p, &io::Error::from(io::ErrorKind::NotFound));
        assert!(format!("{e:#}").contains("no scx_sis instance is running"));
        assert_eq!(Cause::of(&e), Cause::Failure);
    }

    #[test]
    fn a_socket_nobody_listens_on_is_no_instance() {
        let dir = tempfile::tempdir().unwrap();
        let e = connect_stats_at(&dir.path().join("stats")).err().unwrap();
        assert!(
            format!("{e:#}").contains("no scx_sis instance is running"),
            "{e:#}"
        );
        // A socket left by a daemon that died: the file is there, nobody listens.
        let path = dir.path().join("dead");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let e = connect_stats_at(&path).err().unwrap();
        assert!(
            format!("{e:#}").contains("no scx_sis instance is running"),
            "{e:#}"
        );
    }

    /// Runs `f` on its own thread: None if it has not returned within `secs`.
    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(secs)).ok()
    }

    fn own_comm() -> String {
        std::fs::read_to_string("/proc/self/comm")
            .unwrap()
            .trim_end()
            .to_string()
    }

    #[test]
    fn a_server_that_never_answers_is_named_within_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        // Listening, never accepting: what a stopped daemon's socket looks like.
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let p = path.clone();
        let t0 = std::time::Instant::now();
        let r = within(STATS_TIMEOUT.as_secs() + 5, move || {
            connect_stats_at(&p).and_then(|mut s| s.read::<serde_json::Value>())
        });
        let e = r.expect("the request did not time out").unwrap_err();
        let msg = format!("{e:#}");
        assert!(t0.elapsed() >= STATS_TIMEOUT, "{msg}");
        assert!(msg.contains("did not answer"), "{msg}");
        assert!(
            msg.contains(&format!("{} (pid {})", own_comm(), std::process::id())),
            "{msg}"
        );
    }

    #[test]
    fn another_scheduler_on_the_socket_is_named_with_what_to_run() {
        use std::io::{BufRead, BufReader, Write};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        // Another scx scheduler's stats: scx_stats' framing, fields of its own.
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let mut w = conn.try_clone().unwrap();
                let mut line = String::new();
                if BufReader::new(conn).read_line(&mut line).unwrap_or(0) > 0 {
                    let _ = w.write_all(b"{\"errno\":0,\"args\":{\"resp\":{\"nr_running\":3}}}\n");
                }
            }
        });
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Ours {
            at_us: u64,
        }
        let e = connect_stats_at(&path)
            .and_then(|mut s| s.read::<Ours>())
            .unwrap_err();
        let msg = format!("{e:#}");
        let comm = own_comm();
        assert!(msg.contains(&format!("served by {comm} (pid")), "{msg}");
        assert!(msg.contains(&format!("{comm} --monitor")), "{msg}");
        assert!(!msg.contains("missing field"), "{msg}");
        assert_eq!(Cause::of(&e), Cause::Busy);
    }
}
