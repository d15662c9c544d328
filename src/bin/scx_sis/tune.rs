//! `scx_sis tune`: change the running scheduler's tunables through their pinned map, or show them.

use std::path::Path;

use anyhow::Result;

use scx_sis::ab::marker;
use scx_sis::bpf_intf::sis_tunables;
use scx_sis::policy::tunables;
use scx_sis::policy::PolicyOpts;
use scx_sis::process::pins;

/// Validate, apply, bump the generation, report old -> new. Values the scheduler already has
/// change nothing and succeed, so that configuration management can run the same tune again.
pub fn run(show: bool, p: &PolicyOpts) -> Result<()> {
    let map = pins::open_live()?;
    // Two tunes at once would each write back what they read and lose the other's change.
    // flock on the pin directory (bpffs supports it) needs no lock file to create or leave.
    let _lock = pins::lock_exclusive(pins::PIN_DIR, pins::LOCK_WAIT, marker::refuse_while_running)?;
    // An `scx_sis ab` killed mid-run left B's tunables live and its marker: put back A's first.
    if let Some(line) = marker::repair(&map, Path::new(marker::DIR), 0)? {
        eprintln!("{line}");
    }
    let old = tunables::read(&map)?;
    if show {
        for (k, v) in tunables::fields(&old) {
            println!("{k:<20} {v}");
        }
        println!("{:<20} {}", "generation", old.generation);
        return Ok(());
    }
    match plan(&old, p) {
        Plan::Unchanged(msg) => eprintln!("{msg}"),
        Plan::Write(new, diff) => {
            tunables::write(&map, &new)?;
            for line in diff {
                println!("{line}");
            }
        }
    }
    Ok(())
}

enum Plan {
    /// Nothing to write; the line says why.
    Unchanged(String),
    /// The new tunables (generation bumped) and the changes, one line each.
    Write(sis_tunables, Vec<String>),
}

fn plan(old: &sis_tunables, p: &PolicyOpts) -> Plan {
    let mut new = tunables::apply(old, p);
    let diff = tunables::changes(old, &new);
    if diff.is_empty() {
        let msg = if *p == PolicyOpts::default() {
            "nothing changed: no flag given (scx_sis tune --help lists them; --show prints the values)"
        } else {
            "nothing changed: the scheduler already has these values"
        };
        return Plan::Unchanged(msg.to_string());
    }
    new.generation = old.generation + 1;
    Plan::Write(new, diff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_sis::policy::parse_flags;

    fn flags(args: &[&str]) -> PolicyOpts {
        parse_flags(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn a_value_already_set_changes_nothing_and_says_so() {
        let live = tunables::apply(&tunables::defaults(), &flags(&["--prev-bias", "off"]));
        let Plan::Unchanged(msg) = plan(&live, &flags(&["--prev-bias", "off"])) else {
            panic!("a value the scheduler has is written again")
        };
        assert!(msg.contains("already has these values"), "{msg}");
        let Plan::Unchanged(msg) = plan(&live, &flags(&[])) else {
            panic!("no flag, yet something is written")
        };
        assert!(msg.contains("no flag given"), "{msg}");
        let Plan::Write(new, diff) = plan(&live, &flags(&["--prev-bias", "on"])) else {
            panic!("a new value is not written")
        };
        assert_eq!(new.generation, live.generation + 1);
        assert_eq!(diff.len(), 1, "{diff:?}");
    }
}
