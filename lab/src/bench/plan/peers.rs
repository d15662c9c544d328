//! `--peers cosmos,bpfland`: sched_ext schedulers of the scx project as peers, installed from
//! crates.io with `cargo install --locked` into the lab's cache the first time they are named,
//! then run exactly like `--peer NAME=PATH`. Nothing of theirs is kept in this tree.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use scx_sis_lab::elapsed::hms;

use super::locate;

/// The crate (and binary) a `--peers` name stands for: `cosmos` and `scx_cosmos` are both
/// scx_cosmos.
pub fn crate_name(name: &str) -> Result<String> {
    let n = name.trim();
    let valid = !n.is_empty()
        && n.len() <= 40
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !valid {
        bail!("--peers '{n}': expected an scx scheduler's name, e.g. cosmos or scx_bpfland");
    }
    Ok(if n.starts_with("scx_") {
        n.to_string()
    } else {
        format!("scx_{n}")
    })
}

/// The lab's cache of installed peers: `$SCX_SIS_CACHE/peers`, else `~/.cache/scx_sis/peers`
/// (where scripts/kernels.sh keeps the kernels). `cargo install --root` puts each binary in
/// its bin/.
pub fn cache_dir(cache_env: Option<OsString>, home: Option<OsString>) -> Result<PathBuf> {
    let root = match cache_env.filter(|c| !c.is_empty()) {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(home.filter(|h| !h.is_empty()).context(
            "--peers: neither $SCX_SIS_CACHE nor $HOME is set: no cache to install the peers into",
        )?)
        .join(".cache/scx_sis"),
    };
    Ok(root.join("peers"))
}

/// Where `cargo install --root dir` puts `krate`'s binary.
pub fn binary(dir: &Path, krate: &str) -> PathBuf {
    dir.join("bin").join(krate)
}

/// The `--peer NAME=PATH` entries of `names`, each installed by `install(crate, dir)` unless
/// its binary is in `dir` already. A name given twice (cosmos, scx_cosmos) is one peer.
pub fn resolve(
    names: &[String],
    dir: &Path,
    install: &mut dyn FnMut(&str, &Path) -> Result<()>,
) -> Result<Vec<String>> {
    let mut crates: Vec<String> = Vec::new();
    for n in names.iter().filter(|n| !n.trim().is_empty()) {
        let c = crate_name(n)?;
        if !crates.contains(&c) {
            crates.push(c);
        }
    }
    if dir.to_string_lossy().contains(char::is_whitespace) {
        // --peer splits its value on whitespace: such a path would not read back.
        bail!(
            "--peers: the cache {} has a space in its path; set SCX_SIS_CACHE to one without",
            dir.display()
        );
    }
    let mut out = Vec::new();
    for c in &crates {
        let bin = binary(dir, c);
        if locate::is_executable(&bin) {
            eprintln!("bench: --peers: {c} from the cache, {}", bin.display());
        } else {
            install(c, dir)?;
            if !locate::is_executable(&bin) {
                bail!(
                    "--peers: cargo install {c} succeeded but left no {}",
                    bin.display()
                );
            }
        }
        out.push(format!("{c}={}", bin.display()));
    }
    Ok(out)
}

/// The clang for the scx crates' BPF build when BPF_CLANG is unset and there is no plain
/// `clang` (Debian ships only clang-NN): the newest clang-NN on the PATH.
fn bpf_clang() -> Option<String> {
    if std::env::var_os("BPF_CLANG").is_some() || locate::in_path("clang") {
        return None;
    }
    (16..=25)
        .rev()
        .map(|v| format!("clang-{v}"))
        .find(|c| locate::in_path(c))
}

/// The line of cargo's output that says why it failed: its first `error`, else its last line.
pub fn failure_line(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.starts_with("error"))
        .or(lines.last())
        .map_or_else(|| "no output".to_string(), |l| l.to_string())
}

/// The version cargo says it installed (`Installed package `scx_cosmos v1.0.5` ...`).
pub fn installed_version(log: &str) -> Option<String> {
    log.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Installed package `")?;
        Some(rest.split('`').next()?.to_string())
    })
}

/// `cargo install --locked --root DIR KRATE`, its output in DIR/install-KRATE.log and a
/// progress line every 30 s; the build directory stays in DIR/target, so that the next peer
/// reuses what they share (libbpf, scx_utils). One line on failure.
pub fn cargo_install(krate: &str, dir: &Path) -> Result<()> {
    if !locate::in_path("cargo") {
        bail!("--peers: cargo not found in PATH: it installs {krate} from crates.io (install Rust's toolchain)");
    }
    fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let log_path = dir.join(format!("install-{krate}.log"));
    let mut log = File::create(&log_path)
        .with_context(|| format!("failed to create {}", log_path.display()))?;
    eprintln!(
        "bench: --peers: installing {krate} from crates.io into {} (cargo install --locked: \
         it compiles Rust and BPF, several minutes on a small machine; log in {})",
        dir.display(),
        log_path.display()
    );
    let mut cmd = Command::new("cargo");
    cmd.args(["install", "--locked", "--root"])
        .arg(dir)
        .arg("--target-dir")
        .arg(dir.join("target"))
        .arg(krate)
        // Outside any project, so that no project's cargo configuration applies.
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(clang) = bpf_clang() {
        cmd.env("BPF_CLANG", clang);
    }
    let mut child = cmd.spawn().context("--peers: failed to start cargo")?;
    let (tx, rx) = mpsc::channel::<String>();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|r| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        })
    })
    .collect();
    drop(tx);
    let t0 = Instant::now();
    let (mut text, mut compiled, mut last) = (String::new(), 0, String::new());
    let mut next = Duration::from_secs(30);
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(l) => {
                let _ = writeln!(log, "{l}");
                let t = l.trim();
                if t.starts_with("Compiling") {
                    compiled += 1;
                    last = t.to_string();
                }
                text.push_str(&l);
                text.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if t0.elapsed() >= next {
            next += Duration::from_secs(30);
            eprintln!(
                "bench: --peers: installing {krate}: {}, {compiled} crates compiled ({last})",
                hms(t0.elapsed())
            );
        }
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait().context("--peers: cargo install")?;
    if !status.success() {
        bail!(
            "--peers: cargo install --locked {krate} failed ({status}): {} (log: {})",
            failure_line(&text),
            log_path.display()
        );
    }
    eprintln!(
        "bench: --peers: installed {} in {}",
        installed_version(&text).unwrap_or_else(|| krate.to_string()),
        hms(t0.elapsed())
    );
    Ok(())
}

/// The `--peer` entries of `--peers`, installing what the cache lacks.
pub fn install_all(names: &[String]) -> Result<Vec<String>> {
    if names.is_empty() {
        return Ok(vec![]);
    }
    let dir = cache_dir(std::env::var_os("SCX_SIS_CACHE"), std::env::var_os("HOME"))?;
    resolve(names, &dir, &mut cargo_install)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_are_scx_crates() {
        assert_eq!(crate_name("cosmos").unwrap(), "scx_cosmos");
        assert_eq!(crate_name(" scx_bpfland ").unwrap(), "scx_bpfland");
        for bad in ["", "Cosmos", "../x", "a b", "scx/lavd"] {
            let e = crate_name(bad).unwrap_err().to_string();
            assert!(e.contains("expected an scx scheduler's name"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_cache_is_the_labs() {
        let d = cache_dir(Some("/c".into()), Some("/home/u".into())).unwrap();
        assert_eq!(d, Path::new("/c/peers"));
        let d = cache_dir(Some("".into()), Some("/home/u".into())).unwrap();
        assert_eq!(d, Path::new("/home/u/.cache/scx_sis/peers"));
        assert!(cache_dir(None, None).is_err());
        assert_eq!(
            binary(&d, "scx_cosmos"),
            Path::new("/home/u/.cache/scx_sis/peers/bin/scx_cosmos")
        );
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scx_sis-peers-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("bin")).unwrap();
        dir
    }

    fn fake_binary(dir: &Path, krate: &str) {
        let p = binary(dir, krate);
        fs::write(&p, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_cached_peer_is_not_installed_again() {
        let dir = scratch("cached");
        fake_binary(&dir, "scx_cosmos");
        let mut installed = Vec::new();
        let names = ["cosmos".to_string(), "bpfland".into(), "scx_cosmos".into()];
        let peers = resolve(&names, &dir, &mut |c, d| {
            installed.push(c.to_string());
            fake_binary(d, c);
            Ok(())
        })
        .unwrap();
        assert_eq!(installed, ["scx_bpfland"], "only the one the cache lacked");
        assert_eq!(
            peers,
            [
                format!("scx_cosmos={}/bin/scx_cosmos", dir.display()),
                format!("scx_bpfland={}/bin/scx_bpfland", dir.display())
            ]
        );
        // The second run installs nothing.
        let again = resolve(&names, &dir, &mut |c, _| panic!("installed {c} again")).unwrap();
        assert_eq!(again, peers);
        // And the entries read as --peer's.
        let configs = super::super::config::resolve(Some(&[]), &[], &peers, false).unwrap();
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["eevdf", "scx_cosmos", "scx_bpfland"]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_install_is_one_line_and_stops_the_bench() {
        let dir = scratch("failed");
        let e = resolve(&["lavd".into()], &dir, &mut |c, _| {
            bail!("--peers: cargo install --locked {c} failed (exit status: 101): error: could not find `{c}` in registry")
        })
        .unwrap_err();
        assert!(!format!("{e:#}").contains('\n'), "{e:#}");
        // cargo said it worked but left nothing where --root puts binaries.
        let e = resolve(&["lavd".into()], &dir, &mut |_, _| Ok(())).unwrap_err();
        assert!(e.to_string().contains("left no"), "{e}");
        let spaced = dir.join("a b");
        let e = resolve(&["lavd".into()], &spaced, &mut |_, _| Ok(())).unwrap_err();
        assert!(e.to_string().contains("SCX_SIS_CACHE"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn cargos_output_gives_the_reason_and_the_version() {
        let failed = "    Updating crates.io index\n\
                      error: could not find `scx_nope` in registry `crates-io` with version `*`\n\
                      \n";
        assert_eq!(
            failure_line(failed),
            "error: could not find `scx_nope` in registry `crates-io` with version `*`"
        );
        assert_eq!(failure_line("a\nlast words\n\n"), "last words");
        assert_eq!(failure_line(""), "no output");
        let ok = "   Compiling scx_cosmos v1.0.9\n    Finished `release` profile [optimized] \
                  target(s) in 7m 02s\n  Installing /c/peers/bin/scx_cosmos\n   Installed \
                  package `scx_cosmos v1.0.9` (executable `scx_cosmos`)\n";
        assert_eq!(installed_version(ok).as_deref(), Some("scx_cosmos v1.0.9"));
        assert_eq!(installed_version(failed), None);
    }
}
