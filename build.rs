use std::process::Command;

/// `git <args>` in the source tree, trimmed; None without git, outside a repository or on error.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The commit this build is made from, as `git describe --always --dirty` names it, for the
/// build id (scheduler::version()). SCX_SIS_GIT_DESCRIBE set by whoever builds overrides it (a
/// source tarball has no .git); with neither, the id is empty and the version is the crate's.
fn record_commit() {
    println!("cargo:rerun-if-env-changed=SCX_SIS_GIT_DESCRIBE");
    let describe = std::env::var("SCX_SIS_GIT_DESCRIBE")
        .ok()
        .or_else(|| git(&["describe", "--always", "--dirty"]))
        .unwrap_or_default();
    println!("cargo:rustc-env=SCX_SIS_GIT_DESCRIBE={describe}");
    // A commit moves HEAD or its branch; `git add` and `git status` rewrite the index, which is
    // when a dirty tree is seen. Paths from git itself, as a worktree keeps them apart.
    let mut watched = vec!["HEAD", "index", "packed-refs"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

fn main() {
    record_commit();
    // The whole BPF directory, not only the files scx_cargo lists: it names the headers present
    // when it last ran, so a header added later would not trigger a rebuild.
    println!("cargo:rerun-if-changed=src/bpf");
    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .unwrap();
}
