//! Reaching the running scx_sis from another process (`tune`, `monitor`, `trace`): its stats
//! socket and its pins, with errors that tell "none is running" from "not allowed to look", and
//! the instance lock the daemon holds for its whole life.
//! systemd mounts /sys/fs/bpf 0700 and the stats socket is root's, so to a user who is not
//! root a running instance looks absent unless permission errors are told apart.
//!
//! Every stats request has a deadline: a daemon that was stopped (SIGSTOP, a debugger) still
//! accepts connections through the kernel's backlog but never answers, and a reader without a
//! deadline would wait for it forever, deaf to Ctrl-C. A daemon that runs but is slow (it is a
//! task in the queues of the machine it schedules, and a loaded machine delays it) is waited for
//! longer, with a line that says so. The socket's path is shared by every scx scheduler, so an
//! answer that is not scx_sis's stats names whoever gave it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use scx_stats::prelude::StatsClient;
use serde::de::DeserializeOwned;

use crate::process::exit::Cause;
use crate::process::kernel;

/// Where scx_stats servers listen (scx's convention; StatsClient's default).
pub const STATS_SOCKET: &str = "/var/run/scx/root/stats";

/// How long one stats request waits before the daemon is looked at: one that is stopped fails
/// the request then (it is also looked at before the first, so a daemon already stopped fails it
/// at once). The daemon answers within its poll interval on an idle machine.
pub const STATS_ASK: Duration = Duration::from_secs(1);

/// How long in all a request waits for a daemon that runs. Its threads go ahead of the queues it
/// schedules while their runs are short (latency.bpf.h, served_first()); this is the margin for
/// an emulator, where scx_stats' proxy thread spins for the reply in runs too long to go first:
/// a `monitor --json --count 1` that takes 1.4 s on an idle 8-vCPU guest took 2-7 s under
/// hackbench there, and an `ab` read once took over 15 s with another guest on the host. Every
/// reader waits by this one rule: `monitor`, `trace`, `ab` and the lab.
pub const STATS_PATIENCE: Duration = Duration::from_secs(30);

/// Fails with status 3 unless this process runs as root: the pins and the stats socket are
/// root's, so a user who is not root can reach no instance, running or not.
pub fn require_root() -> Result<()> {
    kernel::require_root(&format!(
        "reach the running scheduler (try: sudo {})",
        invocation()
    ))
}

const INSTANCE_LOCK: &str = "/run/scx_sis.lock";

/// Held for the daemon's whole life. The sched_ext state only says "enabled"
/// once a scheduler is attached, a second or so after it starts loading; a
/// second instance started in that window would take the first one's pin.
pub struct InstanceLock(#[allow(dead_code)] File);

/// The instance lock, for the daemon about to load; fails at once if another holds it.
pub fn lock() -> Result<InstanceLock> {
    let file =
        File::create(INSTANCE_LOCK).with_context(|| format!("failed to open {INSTANCE_LOCK}"))?;
    // SAFETY: flock on a file descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(Cause::Busy.error(format!(
            "another scx_sis instance is already starting or running ({INSTANCE_LOCK} is locked)"
        )));
    }
    Ok(InstanceLock(file))
}

/// Whether a daemon holds the instance lock (one runs, or is loading or reloading).
pub fn running() -> bool {
    let Ok(file) = File::open(INSTANCE_LOCK) else {
        return false;
    };
    // SAFETY: flock on a file descriptor we own; a shared lock taken is dropped with the file.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// A connection to the running instance's stats server.
pub struct Stats {
    /// None after a request was given up on: its reply may still come on that connection, so
    /// the next request takes a new one.
    client: Option<StatsClient>,
    path: PathBuf,
    timeout: Duration,
    patience: Duration,
    stop: Option<Arc<AtomicBool>>,
}

/// A client of the running instance's stats server.
pub fn connect_stats() -> Result<Stats> {
    connect_stats_at(Path::new(STATS_SOCKET))
}

pub fn connect_stats_at(path: &Path) -> Result<Stats> {
    connect_stats_within(path, STATS_ASK, STATS_PATIENCE)
}

fn connect_stats_within(path: &Path, timeout: Duration, patience: Duration) -> Result<Stats> {
    Ok(Stats {
        client: Some(connect_client(path, patience)?),
        path: path.to_path_buf(),
        timeout,
        patience,
        stop: None,
    })
}

fn connect_client(path: &Path, timeout: Duration) -> Result<StatsClient> {
    let ms = timeout.as_millis() as u64;
    StatsClient::new()
        .set_path(path)
        .connect(Some(ms))
        .map_err(|e| match e.downcast_ref::<io::Error>() {
            Some(io) => unreachable(path, io),
            None => e.context(format!("failed to connect to {}", path.display())),
        })
}

impl Stats {
    /// Ends the wait for a slow daemon once `stop` is set (Ctrl-C), at the next timeout.
    pub fn stop_on(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// One stats request ("stats", scx_sis's Metrics or any type of its shape). A server that
    /// is stopped fails it at once, or at the first timeout once it stops; one that runs, at the
    /// patience's end; either is named, as is one that answers with something else.
    ///
    /// The request is asked once and its reply waited for on the same connection. scx_stats
    /// answers its clients one request at a time, so a request asked again on a new connection
    /// would queue behind the one it replaces: on a daemon slower than the timeout, every retry
    /// would add to a backlog that no reply could get ahead of.
    pub fn read<T: DeserializeOwned>(&mut self) -> Result<T> {
        let t0 = Instant::now();
        if let Some(s) = server(&self.path).filter(|s| s.stopped) {
            return Err(self.unanswered(t0, Some(&s)));
        }
        let mut client = match self.client.take() {
            Some(c) => c,
            None => connect_client(&self.path, self.patience)?,
        };
        // The request blocks on its socket (up to the patience); this thread looks at the
        // daemon and at `stop` meanwhile.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let reply = client.request::<serde_json::Value>("stats", vec![]);
            let _ = tx.send((client, reply));
        });
        let mut told = false;
        let v = loop {
            let looked = match rx.recv_timeout(self.timeout) {
                Ok((client, Ok(v))) => {
                    self.client = Some(client);
                    break v;
                }
                Ok((_, Err(e))) if e.to_string().contains("timed out") => {
                    return Err(self.unanswered(t0, server(&self.path).as_ref()))
                }
                Ok((_, Err(e))) => {
                    return Err(
                        e.context(format!("failed to read stats from {}", self.path.display()))
                    )
                }
                Err(_) => server(&self.path),
            };
            let stopping = self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed));
            let stopped = looked.as_ref().is_some_and(|s| s.stopped);
            if stopped || stopping || t0.elapsed() + self.timeout > self.patience {
                return Err(self.unanswered(t0, looked.as_ref()));
            }
            if !told {
                let name = looked.as_ref().map_or("the scheduler".into(), Server::name);
                eprintln!(
                    "scx_sis: {name} has not answered a stats request in {} s but is running; waiting up to {} s",
                    t0.elapsed().as_secs(),
                    self.patience.as_secs()
                );
                told = true;
            }
        };
        serde_json::from_value(v).map_err(|e| not_ours(&self.path, &e))
    }

    /// The error of a request given up on after what `t0` started, naming `looked`.
    fn unanswered(&self, t0: Instant, looked: Option<&Server>) -> anyhow::Error {
        let name = looked.map_or("the scheduler".into(), Server::name);
        let hint = match looked {
            Some(s) if s.stopped => format!(" (it is stopped: kill -CONT {} resumes it)", s.pid),
            _ => String::new(),
        };
        anyhow!(
            "{name} did not answer a stats request on {} within {} s{hint}",
            self.path.display(),
            t0.elapsed().as_secs(),
        )
    }
}

/// The process listening on a stats socket.
struct Server {
    pid: i32,
    comm: String,
    /// Stopped by a signal (SIGSTOP, a debugger): it accepts connections but answers none.
    stopped: bool,
}

impl Server {
    fn name(&self) -> String {
        format!("{} (pid {})", self.comm, self.pid)
    }
}

/// The process that listens on `path`, from a connection's peer credentials (the listener's: the
/// kernel completes the connection even for a stopped listener), with its comm and whether it is
/// stopped; None when it cannot be told.
fn server(path: &Path) -> Option<Server> {
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
    let pid = cred.pid;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the comm's closing parenthesis (the comm may hold spaces).
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    Some(Server {
        pid,
        comm: comm.trim_end().to_string(),
        stopped: matches!(state, Some('T' | 't')),
    })
}

/// An answer on `path` that is not scx_sis's stats: another scx scheduler's server (the path is
/// shared by convention), or an scx_sis of another version.
fn not_ours(path: &Path, err: &serde_json::Error) -> anyhow::Error {
    let Some(Server { pid, comm, .. }) = server(path) else {
        return anyhow!(
            "the stats server on {} answered with something other than scx_sis's stats ({err})",
            path.display()
        );
    };
    if comm == "scx_sis" {
        return anyhow!(
            "the scx_sis on {} (pid {pid}) answered with stats of another version ({err}); \
             run the scx_sis binary that it runs (/proc/{pid}/exe)",
            path.display()
        );
    }
    let ops = kernel::loaded_scheduler()
        .map(|ops| format!(", the loaded scheduler is {ops}"))
        .unwrap_or_default();
    Cause::Busy.error(format!(
        "{} is served by {comm} (pid {pid}), not scx_sis: another scx scheduler runs{ops}; \
         read its stats with `{comm} --monitor 1` (or scxtop), or stop it and start scx_sis",
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

    const SHORT: Duration = Duration::from_secs(1);

    #[test]
    fn a_running_server_that_never_answers_is_named_when_the_patience_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        // Listening, never accepting: the kernel's backlog completes each connection.
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let patience = 3 * SHORT;
        let p = path.clone();
        let t0 = Instant::now();
        let r = within(patience.as_secs() + 5, move || {
            connect_stats_within(&p, SHORT, patience)
                .and_then(|mut s| s.read::<serde_json::Value>())
        });
        let e = r.expect("the request was not given up").unwrap_err();
        let msg = format!("{e:#}");
        // Asked again at each timeout while the server runs, then given up within the patience.
        assert!(t0.elapsed() >= patience - SHORT, "{msg}");
        assert!(msg.contains("did not answer"), "{msg}");
        assert!(
            msg.contains(&format!("{} (pid {})", own_comm(), std::process::id())),
            "{msg}"
        );
    }

    /// An scx_stats server built as the daemon's is (a target whose open asks the main loop
    /// once, and each read once more), whose main loop takes longer than the timeout over each
    /// answer (a loaded machine): a connection's first request costs two answers, so the reply
    /// comes after twice the delay, and it must be waited for rather than asked again behind
    /// itself.
    #[test]
    fn a_running_server_slower_than_the_timeout_is_answered() {
        use scx_stats::prelude::{
            StatsOpener, StatsOps, StatsReader, StatsServer, StatsServerData,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let open: Box<dyn StatsOpener<(), u64>> = Box::new(|(req, res)| {
            req.send(())?;
            res.recv()?;
            let read: Box<dyn StatsReader<(), u64>> = Box::new(|_, (req, res)| {
                req.send(())?;
                Ok(serde_json::json!({ "answer": res.recv()? }))
            });
            Ok(read)
        });
        let data = StatsServerData::new().add_ops("top", StatsOps { open, close: None });
        let server = StatsServer::new(data).set_path(&path).launch().unwrap();
        let (res, req) = server.channels();
        let delay = SHORT * 7 / 10;
        std::thread::spawn(move || {
            let mut answers = 0u64;
            while req.recv().is_ok() {
                std::thread::sleep(delay);
                answers += 1;
                if res.send(answers).is_err() {
                    return;
                }
            }
        });
        let t0 = Instant::now();
        let p = path.clone();
        let r = within(15, move || {
            connect_stats_within(&p, SHORT, 10 * SHORT).and_then(|mut s| {
                let first = s.read::<serde_json::Value>()?;
                // The connection is kept: its next request is one answer.
                let t1 = Instant::now();
                let second = s.read::<serde_json::Value>()?;
                Ok((first, second, t1.elapsed()))
            })
        });
        let (first, second, took) = r.expect("the request was not answered").unwrap();
        assert!(t0.elapsed() >= 2 * delay);
        // The open's answer, then the read's: no request was asked twice.
        assert_eq!(
            (first["answer"].as_u64(), second["answer"].as_u64()),
            (Some(2), Some(3))
        );
        assert!(took < 2 * delay, "{took:?}");
        drop(server);
    }

    #[test]
    fn a_stop_ends_the_wait_at_the_next_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let stop = Arc::new(AtomicBool::new(true));
        let p = path.clone();
        let t0 = Instant::now();
        let r = within(15, move || {
            connect_stats_within(&p, SHORT, 10 * SHORT)
                .map(|s| s.stop_on(stop))
                .and_then(|mut s| s.read::<serde_json::Value>())
        });
        let e = r.expect("the request was not given up").unwrap_err();
        assert!(t0.elapsed() < 3 * SHORT, "{e:#}");
        assert!(format!("{e:#}").contains("did not answer"), "{e:#}");
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
