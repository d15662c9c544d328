//! Where the bench finds what it runs, at run time: the scx_sis binary, the project's VM
//! harness (scripts/vm/run.sh, the guest library scripts/guest/lib.sh and the bench's guest
//! script `GUEST_SCRIPT` in the source tree), and tools in PATH.
//! Nothing here is fixed at build time, so a binary copied elsewhere looks around itself.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The scheduler binary's name, as it is built beside this one and installed in the guest.
pub const SCHEDULER: &str = "scx_sis";
/// Overrides where the scx_sis binary is looked for (like --bin).
pub const BIN_ENV: &str = "SCX_SIS_BIN";
/// Overrides where the source tree is looked for (like --repo).
pub const REPO_ENV: &str = "SCX_SIS_REPO";
/// The VM harness's entry, relative to the source tree.
pub const VM_RUN: &str = "scripts/vm/run.sh";
/// The guest side of `--vm`, relative to the source tree. It lives with the demos' guest scripts,
/// apart from the VM tests', so that the bench's image holds no test script.
pub const GUEST_SCRIPT: &str = "scripts/guest/bench.sh";

/// This binary (scx_sis_lab), which the workloads run as `<it> wakelat`.
pub fn this_binary() -> Result<PathBuf> {
    std::env::current_exe().context("cannot find the scx_sis_lab binary itself")
}

/// The scx_sis binary: `explicit` (--bin), else $SCX_SIS_BIN, else scx_sis beside this binary
/// (cargo builds both into target/release; the VM puts both in /bin).
pub fn scheduler_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = given(explicit, BIN_ENV) {
        if !is_executable(&path) {
            bail!(
                "{}: no such executable (from --bin or ${BIN_ENV})",
                path.display()
            );
        }
        return Ok(path);
    }
    let me = this_binary()?;
    let beside = me.with_file_name(SCHEDULER);
    if is_executable(&beside) {
        return Ok(beside);
    }
    bail!(
        "no {SCHEDULER} binary beside {}: build it (cargo build --release) or name it with \
         --bin PATH or ${BIN_ENV}",
        me.display()
    )
}

/// The source tree holding the VM harness: `explicit` (--repo), else $SCX_SIS_REPO, else the
/// nearest directory above this binary that holds it (a build in target/release sits two
/// levels below its tree), else the current directory.
pub fn repo(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = given(explicit, REPO_ENV) {
        if !is_repo(&dir) {
            bail!(
                "{} holds no {VM_RUN} and {GUEST_SCRIPT} (from --repo or ${REPO_ENV})",
                dir.display()
            );
        }
        return Ok(dir);
    }
    let me = this_binary()?;
    let cwd = std::env::current_dir().unwrap_or_default();
    find_repo(&me, &cwd).with_context(|| {
        format!(
            "--vm needs the scx_sis source tree ({VM_RUN}, {GUEST_SCRIPT}): none above {} nor \
             in {}; name it with --repo DIR or ${REPO_ENV}",
            me.display(),
            cwd.display()
        )
    })
}

/// The path a flag gave, else the one in the environment variable `var`.
fn given(flag: Option<&Path>, var: &str) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(var).map(PathBuf::from))
}

/// The nearest ancestor of `exe`'s directory that is a source tree, else `cwd` if it is one.
fn find_repo(exe: &Path, cwd: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .chain(std::iter::once(cwd))
        .find(|d| is_repo(d))
        .map(Path::to_path_buf)
}

fn is_repo(dir: &Path) -> bool {
    dir.join(VM_RUN).is_file() && dir.join(GUEST_SCRIPT).is_file()
}

pub fn is_executable(path: &Path) -> bool {
    path.is_file() && fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Is `tool` an executable in one of PATH's directories?
pub fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(tool))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory named after the test, removed first.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scx_sis-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn make_repo(dir: &Path) {
        for file in [VM_RUN, GUEST_SCRIPT] {
            fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
            fs::write(dir.join(file), "").unwrap();
        }
    }

    #[test]
    fn this_source_tree_holds_what_vm_runs() {
        let tree = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert!(
            is_repo(tree),
            "{} lacks {VM_RUN} or {GUEST_SCRIPT}",
            tree.display()
        );
    }

    #[test]
    fn the_tree_above_the_binary_comes_before_the_current_directory() {
        let root = scratch("find-repo");
        let (tree, other) = (root.join("tree"), root.join("other"));
        make_repo(&tree);
        make_repo(&other);
        let exe = tree.join("target/release/scx_sis_lab");
        assert_eq!(find_repo(&exe, &other), Some(tree.clone()));
        let installed = root.join("usr/bin/scx_sis_lab");
        assert_eq!(find_repo(&installed, &other), Some(other.clone()));
        assert_eq!(find_repo(&installed, &root), None);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_explicit_path_must_be_what_it_claims() {
        let root = scratch("explicit");
        assert!(repo(Some(&root)).is_err());
        make_repo(&root);
        assert_eq!(repo(Some(&root)).unwrap(), root);
        let file = root.join(VM_RUN);
        let e = scheduler_binary(Some(&file)).unwrap_err();
        assert!(e.to_string().contains("no such executable"), "{e}");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(scheduler_binary(Some(&file)).unwrap(), file);
        fs::remove_dir_all(&root).unwrap();
    }
}
