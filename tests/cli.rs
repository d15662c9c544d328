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
