//! The sched_ext kernels the project's VM boots, as `scripts/kernels.sh fetch SERIES` provides
//! them: used by the lab's `bench --vm` and by the VM tests.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Where scripts/kernels.sh takes prebuilt kernels from instead of building them.
pub const PREBUILT_ENV: &str = "SCX_SIS_PREBUILT_KERNELS";

/// A kernel ready to boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub vmlinuz: String,
    /// Its build config, which the guest's libbpf reads for __kconfig externs.
    pub config: String,
    pub release: String,
}

/// `scripts/kernels.sh fetch SERIES` in the source tree `repo` (its progress goes to stderr).
/// Unless $SCX_SIS_PREBUILT_KERNELS says otherwise, prebuilt kernels come from
/// ../shared/kernels beside the tree when it exists (where CI keeps them).
pub fn fetch(repo: &Path, series: &str) -> Result<Kernel> {
    let script = repo.join("scripts/kernels.sh");
    let mut cmd = Command::new(&script);
    cmd.args(["fetch", series]).stderr(Stdio::inherit());
    if std::env::var_os(PREBUILT_ENV).is_none() {
        let shared = repo.join("../shared/kernels");
        if shared.is_dir() {
            cmd.env(PREBUILT_ENV, shared);
        }
    }
    let out = cmd
        .output()
        .with_context(|| format!("failed to run {}", script.display()))?;
    if !out.status.success() {
        bail!("scripts/kernels.sh fetch {series} failed ({})", out.status);
    }
    parse_fetched(&String::from_utf8_lossy(&out.stdout))
}

/// The last line of kernels.sh's output: "VMLINUZ CONFIG RELEASE".
fn parse_fetched(stdout: &str) -> Result<Kernel> {
    let fields: Vec<&str> = stdout
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    match fields[..] {
        [vmlinuz, config, release] => Ok(Kernel {
            vmlinuz: vmlinuz.into(),
            config: config.into(),
            release: release.into(),
        }),
        _ => bail!("unexpected scripts/kernels.sh output: {stdout:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_names_the_kernel() {
        let k = parse_fetched("building...\n/c/vmlinuz /c/config 7.0.1-scx\n").unwrap();
        assert_eq!(
            (k.vmlinuz.as_str(), k.config.as_str(), k.release.as_str()),
            ("/c/vmlinuz", "/c/config", "7.0.1-scx")
        );
        assert!(parse_fetched("").is_err());
        assert!(parse_fetched("/c/vmlinuz /c/config\n").is_err());
    }
}
