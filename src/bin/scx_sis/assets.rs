//! `scx_sis generate-assets DIR` (scripts/package.sh runs it): the man pages and the shell
//! completions, generated from the same clap definitions the binary parses with, so they cannot
//! drift from its flags. `scx_sis generate-assets --docs FILE` rewrites, from the same
//! definitions and the exit table, the sections of a markdown page between
//! `<!-- generated: NAME -->` and `<!-- end generated -->` (docs/usage.md's flag and exit
//! tables; a unit test fails when they differ from what it makes now). It is no subcommand of
//! those definitions, so that no completion, man page or --help offers users a step of packaging.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap_complete::Shell;

use scx_sis::process::exit;

use crate::cli;

/// What `scx_sis generate-assets` was asked to write.
pub enum Request {
    /// The man pages and completions, into this directory.
    Assets(PathBuf),
    /// The generated sections of this markdown page, rewritten in place.
    Docs(PathBuf),
}

/// The request of `scx_sis generate-assets DIR` or `generate-assets --docs FILE`, when that is
/// the command line; any other command line is the user's (None).
pub fn requested() -> Option<Result<Request>> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != "generate-assets" {
        return None;
    }
    Some(match (args.next(), args.next(), args.next()) {
        (Some(flag), Some(page), None) if flag == "--docs" => Ok(Request::Docs(page.into())),
        (Some(dir), None, None) if dir != "--docs" => Ok(Request::Assets(dir.into())),
        _ => Err(exit::Cause::Usage
            .error("usage: scx_sis generate-assets DIR | scx_sis generate-assets --docs FILE")),
    })
}

pub fn run(request: Request) -> Result<()> {
    match request {
        Request::Assets(dir) => generate(&dir),
        Request::Docs(page) => {
            let text = fs::read_to_string(&page)
                .with_context(|| format!("failed to read {}", page.display()))?;
            let new = refresh(&text).with_context(|| format!("in {}", page.display()))?;
            if new != text {
                fs::write(&page, new)
                    .with_context(|| format!("failed to write {}", page.display()))?;
            }
            Ok(())
        }
    }
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

const BEGIN: &str = "<!-- generated: ";
const END: &str = "<!-- end generated -->";

/// Every markdown fragment a page may hold, by the name its `<!-- generated: NAME -->` marker
/// gives: the exit table and a flag table per command, each ending in a newline.
pub fn fragments() -> Vec<(&'static str, String)> {
    let root = cli::command();
    let sub = |name: &str| {
        root.find_subcommand(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"))
            .clone()
    };
    vec![
        ("exit-table", exit_table()),
        ("run-flags", flag_table(&root, |a| !is_policy(a))),
        ("policy-flags", flag_table(&root, is_policy)),
        ("monitor-flags", flag_table(&sub("monitor"), |_| true)),
        ("trace-flags", flag_table(&sub("trace"), |_| true)),
        ("ab-flags", flag_table(&sub("ab"), |_| true)),
    ]
}

/// `page` with each generated section replaced by its fragment as made now. Fails on a marker
/// with no end or an unknown name, so a typo cannot leave a section unchecked.
pub fn refresh(page: &str) -> Result<String> {
    let fragments = fragments();
    let mut out = String::with_capacity(page.len());
    let mut lines = page.split_inclusive('\n');
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(name) = line
            .trim_end()
            .strip_prefix(BEGIN)
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let Some((_, text)) = fragments.iter().find(|(n, _)| *n == name) else {
            bail!("no generated fragment is named {name:?}");
        };
        let Some(end) = lines.find(|l| l.trim_end() == END) else {
            bail!("the generated section {name:?} has no {END}");
        };
        out.push_str(text);
        out.push_str(end);
    }
    Ok(out)
}

/// Every exit status, its meaning and whether the unit restarts after it (exit.rs's table).
fn exit_table() -> String {
    let mut s =
        String::from("| status | meaning | the service restarts after it |\n|---|---|---|\n");
    for r in &exit::TABLE {
        let restart = if r.restart { "yes" } else { "no" };
        s.push_str(&format!(
            "| {} | {} | {restart} |\n",
            r.code,
            cell(r.meaning)
        ));
    }
    s
}

/// Whether `arg` is a tunable: a row of the policy table (src/policy.rs).
fn is_policy(arg: &clap::Arg) -> bool {
    scx_sis::policy::rows()
        .iter()
        .any(|r| Some(r.flag) == arg.get_long())
}

/// A table of `cmd`'s visible flags that `keep` selects, in their order of definition: the flag
/// and its value as --help spells them, the default (or "required"), and the help with its range.
fn flag_table(cmd: &clap::Command, keep: impl Fn(&clap::Arg) -> bool) -> String {
    let mut s = String::from("| flag | default | meaning |\n|---|---|---|\n");
    let builtin = |a: &clap::Arg| ["help", "version"].contains(&a.get_id().as_str());
    for arg in cmd.get_arguments() {
        if arg.is_hide_set() || builtin(arg) || arg.is_positional() || !keep(arg) {
            continue;
        }
        let (meaning, default) = meaning_and_default(arg);
        s.push_str(&format!(
            "| `{}` | {default} | {} |\n",
            cell(&spelling(arg)),
            cell(&meaning)
        ));
    }
    s
}

/// `--flag VALUE` as --help writes it: its short form, and the value's name, or its values
/// (`on|off`), in brackets when it may be left out (`--adopt [METRIC]`).
fn spelling(arg: &clap::Arg) -> String {
    let mut flag = String::new();
    if let Some(short) = arg.get_short() {
        flag.push_str(&format!("-{short}, "));
    }
    flag.push_str(&format!("--{}", arg.get_long().unwrap_or_default()));
    if !arg.get_action().takes_values() {
        return flag;
    }
    let values = visible_values(arg);
    let value = if !values.is_empty() {
        let names: Vec<&str> = values.iter().map(|v| v.get_name()).collect();
        names.join("|")
    } else {
        match arg.get_value_names() {
            Some(names) => {
                let names: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
                names.join(" ")
            }
            None => arg.get_id().as_str().to_uppercase(),
        }
    };
    if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
        format!("{flag} [{value}]")
    } else {
        format!("{flag} {value}")
    }
}

/// The flag's help on one line, each value's own help after it (a curve, a preset), and its
/// default as a table cell: a policy flag's help ends with it (policy::table::with_default), the
/// others' is clap's; none for a switch without a value, `''` for an empty one.
fn meaning_and_default(arg: &clap::Arg) -> (String, String) {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut meaning, default) = match help.rsplit_once(" [default: ") {
        Some((what, default)) => (what.to_string(), Some(default.trim_end_matches(']').into())),
        None => {
            let defaults: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            (
                help.clone(),
                (!defaults.is_empty()).then(|| defaults.join(" ")),
            )
        }
    };
    let described: Vec<String> = visible_values(arg)
        .iter()
        .filter_map(|v| Some(format!("`{}`: {}", v.get_name(), v.get_help()?)))
        .collect();
    if !described.is_empty() {
        meaning = format!("{meaning}; {}", described.join("; "));
    }
    let default = match default {
        _ if arg.is_required_set() => "required".to_string(),
        _ if !arg.get_action().takes_values() => String::new(),
        None => String::new(),
        Some(d) if d.is_empty() => "`''`".to_string(),
        Some(d) => format!("`{d}`"),
    };
    (meaning, default)
}

fn visible_values(arg: &clap::Arg) -> Vec<clap::builder::PossibleValue> {
    let mut values = arg.get_possible_values();
    values.retain(|v| !v.is_hide_set());
    values
}

/// `text` as a table cell: a `|` would end the cell, even inside a code span.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command that rewrites docs/usage.md's generated sections (docs/testing.md names it).
    const REFRESH: &str =
        "cargo run --release --bin scx_sis -- generate-assets --docs docs/usage.md";

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

    /// docs/usage.md, as the tree holds it now.
    fn usage_md() -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/usage.md");
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn usage_md_holds_every_fragment_as_generated_now() {
        let page = usage_md();
        for (name, _) in fragments() {
            let marker = format!("{BEGIN}{name} -->");
            assert_eq!(
                page.matches(&marker).count(),
                1,
                "docs/usage.md should hold {marker} once"
            );
        }
        let fresh = refresh(&page).unwrap();
        if fresh != page {
            let (old, new) = page
                .lines()
                .zip(fresh.lines())
                .find(|(a, b)| a != b)
                .unwrap_or(("(end of page)", "(end of page)"));
            panic!(
                "docs/usage.md's generated sections differ from what the command line and the exit \
                 table make now; refresh them with\n  {REFRESH}\nfirst difference:\n  page: \
                 {old}\n  now:  {new}"
            );
        }
    }

    #[test]
    fn refresh_replaces_only_between_the_markers_and_refuses_what_it_cannot_check() {
        let page = format!("intro\n{BEGIN}exit-table -->\nstale\n{END}\noutro\n");
        let fresh = refresh(&page).unwrap();
        let table = &fragments()[0].1;
        assert_eq!(
            fresh,
            format!("intro\n{BEGIN}exit-table -->\n{table}{END}\noutro\n")
        );
        assert_eq!(
            refresh(&fresh).unwrap(),
            fresh,
            "a fresh page stays as it is"
        );
        assert!(refresh(&format!("{BEGIN}no-such -->\n{END}\n")).is_err());
        assert!(refresh(&format!("{BEGIN}exit-table -->\nrest\n")).is_err());
    }

    #[test]
    fn the_tables_name_every_visible_flag_and_exit_status() {
        let all: String = fragments().into_iter().map(|(_, t)| t).collect();
        for row in scx_sis::policy::rows().iter().filter(|r| !r.hidden) {
            assert!(all.contains(&format!("--{}", row.flag)), "{}", row.flag);
        }
        for flag in [
            "--stats-interval",
            "--trace-buffer-kib",
            "--max-records",
            "--adopt [METRIC]",
        ] {
            assert!(all.contains(flag), "{flag}");
        }
        assert!(all.contains("| `--prev-bias on\\|off` | `on` |"), "{all}");
        for r in &exit::TABLE {
            assert!(all.contains(&format!("| {} | {} |", r.code, r.meaning)));
        }
        for hidden in ["inject", "generate-assets", "--help`", "--version`"] {
            assert!(!all.contains(hidden), "{hidden}");
        }
    }
}
