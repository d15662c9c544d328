//! The scx_sis binary as a user or a service manager meets it on any host, without sched_ext:
//! what `--version` names, what a usage error says and the exit status of each.

use std::process::{Command, Output};

fn scx_sis(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scx_sis"))
        .args(args)
        .output()
        .expect("failed to run scx_sis")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = scx_sis(&["--version"]);
    assert!(out.status.success());
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(head) = git(&["rev-parse", "--short=7", "HEAD"]) else {
        eprintln!("not a git checkout: nothing to compare the build id with");
        return;
    };
    // cargo builds the binary for this test run, so it is HEAD's (build.rs reruns on a commit).
    let named = version
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|w| w.strip_prefix('g'))
        .find(|h| h.len() >= 7 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let Some(hash) = named else {
        panic!("--version names no commit: {version}");
    };
    assert!(
        hash.starts_with(&head) || head.starts_with(hash),
        "--version names {hash}, HEAD is {head}: {version}"
    );
}

#[test]
fn a_usage_error_keeps_clap_whole_message_and_exits_2() {
    let out = scx_sis(&["--sis-util", "cubic"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("'cubic'"), "{err}");
    assert!(
        err.contains("possible values: off, linear, quadratic"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let out = scx_sis(&["--prev-bais", "off"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a similar argument exists: '--prev-bias'"),
        "{}",
        stderr(&out)
    );

    let out = scx_sis(&["tune", "--wake-sync", "maybe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("possible values"), "{}", stderr(&out));
}

#[test]
fn help_lists_every_exit_status() {
    let out = scx_sis(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let table = &help[help
        .find("Exit status:")
        .expect("--help has the exit statuses")..];
    for code in scx_sis::process::exit::TABLE.iter().map(|r| r.code) {
        assert!(
            table
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{code}  "))),
            "--help lacks exit status {code}:\n{table}"
        );
    }
}

#[test]
fn trace_filters_that_cannot_match_are_usage_errors() {
    for args in [
        &["trace", "--comm", ""][..],
        &["trace", "--comm", "nineteen-bytes-long"],
        &["trace", "--pid", "0"],
    ] {
        let out = scx_sis(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// A copy of the binary that any user may run (the build tree may not be reachable to them).
fn runnable_by_anyone() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("scx_sis");
    std::fs::copy(env!("CARGO_BIN_EXE_scx_sis"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

#[test]
fn a_user_who_is_not_root_is_told_so_whether_or_not_one_runs() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (_dir, bin) = runnable_by_anyone();
    for args in [
        &["monitor"][..],
        &["tune", "--show"],
        &["trace"],
        &["--monitor", "1"],
    ] {
        let mut cmd = Command::new(&bin);
        cmd.args(args).current_dir("/");
        if root {
            cmd.uid(65534).gid(65534);
        }
        // The copy may still be open for writing in a child another test thread forks.
        let out = (0..50)
            .find_map(|_| match cmd.output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    None
                }
                r => Some(r.unwrap()),
            })
            .expect("the copy stayed busy");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("must run as root"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_reader_that_stops_reading_ends_help_stats_quietly() {
    use std::os::unix::process::ExitStatusExt;
    // A pipe whose reader is gone: the first write fails with EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_scx_sis"))
        .arg("--help-stats")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.code() == Some(0),
        "{:?}",
        out.status
    );
}

#[test]
fn under_the_journal_an_error_line_carries_priority_err() {
    use std::os::unix::fs::MetadataExt;
    let run = |journal: bool| {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_scx_sis"));
        // A usage error of our own (not clap's): one line through program::exit_code.
        cmd.args(["generate-assets"]).env_remove("JOURNAL_STREAM");
        if journal {
            let m = std::fs::File::from(std::os::fd::OwnedFd::from(writer.try_clone().unwrap()))
                .metadata()
                .unwrap();
            cmd.env("JOURNAL_STREAM", format!("{}:{}", m.dev(), m.ino()));
        }
        let mut child = cmd.stderr(writer).spawn().unwrap();
        drop(cmd);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut reader, &mut err).unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(2), "{err}");
        err
    };
    let err = run(true);
    assert!(err.starts_with("<3>scx_sis: error: "), "{err}");
    let err = run(false);
    assert!(err.starts_with("scx_sis: error: "), "{err}");
}

#[test]
fn ab_names_a_bad_flag_in_one_line_and_without_a_scheduler_changes_nothing() {
    let marker = std::path::Path::new("/run/scx_sis/ab.json");
    let before = marker.exists();
    let out = scx_sis(&["ab", "--b", "--prev-bias maybe", "--rounds", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--b '--prev-bias maybe'") && err.contains("'maybe'"),
        "{err}"
    );
    // Good flags, but no scx_sis runs here: one line saying so (or that root is needed), and no
    // marker left behind.
    let out = scx_sis(&[
        "ab",
        "--b",
        "--prev-bias off",
        "--window",
        "1",
        "--rounds",
        "2",
    ]);
    assert!(
        matches!(out.status.code(), Some(1) | Some(3)),
        "{}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no scx_sis instance is running") || err.contains("must run as root"),
        "{err}"
    );
    assert_eq!(
        marker.exists(),
        before,
        "ab left {} behind",
        marker.display()
    );
}
