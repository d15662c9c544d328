//! `scx_sis generate-assets DIR` (scripts/package.sh runs it): the man pages and the shell
//! completions, generated from the same clap definitions the binary parses with, so they cannot
//! drift from its flags. It is no subcommand of those definitions, so that no completion, man
//! page or --help offers users a step of packaging.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use clap_complete::Shell;

use crate::cli;

/// The directory of `scx_sis generate-assets DIR`, when that is the command line; any other
/// command line is the user's (None).
pub fn requested() -> Option<Result<std::path::PathBuf>> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != "generate-assets" {
        return None;
    }
    Some(match (args.next(), args.next()) {
        (Some(dir), None) => Ok(dir.into()),
        _ => Err(scx_sis::process::exit::Cause::Usage.error("usage: scx_sis generate-assets DIR")),
    })
}

/// Writes scx_sis.1 and scx_sis-<subcommand>.1 for each visible subcommand, and the bash, zsh
/// and fish completions (scx_sis.bash, _scx_sis, scx_sis.fish), into `dir`.
pub fn generate(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let mut cmd = cli::command();
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

    fn entries(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

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
        // Nothing for tests or packaging only: no completion, man page or help offers it.
        for f in entries(dir.path()) {
            let text = fs::read_to_string(dir.path().join(&f)).unwrap();
            for hidden in ["inject", "generate-assets", "generate\\-assets"] {
                assert!(!text.contains(hidden), "{f} offers {hidden}");
            }
        }
        assert!(dir.path().join("scx_sis.fish").exists());
    }
}
