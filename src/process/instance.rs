//! Reaching the running scx_sis from another process (`tune`, `monitor`, `trace`): its stats
//! socket and its pins, with errors that tell "none is running" from "not allowed to look".
//! systemd mounts /sys/fs/bpf 0700 and the stats socket is root's, so to a user who is not
//! root a running instance looks absent unless permission errors are told apart.

use std::io;
use std::path::Path;

use anyhow::{anyhow, Result};
use scx_stats::prelude::StatsClient;

use crate::process::exit::Cause;

/// Where scx_stats servers listen (scx's convention; StatsClient's default).
pub const STATS_SOCKET: &str = "/var/run/scx/root/stats";

/// A client of the running instance's stats server.
pub fn connect_stats() -> Result<StatsClient> {
    connect_stats_at(Path::new(STATS_SOCKET))
}

pub fn connect_stats_at(path: &Path) -> Result<StatsClient> {
    StatsClient::new()
        .set_path(path)
        .connect(None)
        .map_err(|e| match e.downcast_ref::<io::Error>() {
            Some(io) => unreachable(path, io),
            None => e.context(format!("failed to connect to {}", path.display())),
        })
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
}
