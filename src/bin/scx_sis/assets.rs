//! `scx_sis generate-assets DIR` (hidden; scripts/package.sh runs it): the man pages and the
//! shell completions, generated from the same clap definitions the binary parses with, so they
//! cannot drift from its flags.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// Writes scx_sis.1 and scx_sis-<subcommand>.1 for each visible subcommand, and the bash, zsh
/// and fish completions (scx_sis.bash, _scx_sis, scx_sis.fish), into `dir`.
pub fn generate(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let mut cmd = Cli::command();
    // One page per visible command, named as man expects (scx_sis-tune.1), hidden ones left out.
    clap_mangen::generate_to(cmd.clone(), dir).context("failed to write the man pages")?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd, "scx_sis", dir)
            .with_context(|| format!("failed to write the {shell} completions"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_and_completions_cover_every_flag() {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path()).unwrap();
        let man = fs::read_to_string(dir.path().join("scx_sis.1")).unwrap();
        assert!(man.contains("sis\\-util"), "the run flags are in scx_sis.1");
        assert!(
            man.contains("Exit status"),
            "scx_sis.1 has the exit statuses"
        );
        for sub in ["tune", "monitor", "trace"] {
            let page = fs::read_to_string(dir.path().join(format!("scx_sis-{sub}.1"))).unwrap();
            assert!(page.contains(&format!("scx_sis\\-{sub}")), "{sub}");
        }
        assert!(!dir.path().join("scx_sis-generate-assets.1").exists());
        let bash = fs::read_to_string(dir.path().join("scx_sis.bash")).unwrap();
        for flag in ["--sis-util", "--max-records", "--prev-bias"] {
            assert!(bash.contains(flag), "bash completion lacks {flag}");
        }
        assert!(dir.path().join("_scx_sis").exists());
        assert!(dir.path().join("scx_sis.fish").exists());
    }
}
