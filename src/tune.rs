//! `scx_sis tune`: change the running scheduler's tunables through their pinned map, or show them.

use anyhow::{bail, Result};

use scx_sis::policy::PolicyOpts;
use scx_sis::tunables;

/// Validate, apply, bump the generation, report old -> new.
pub fn run(show: bool, p: &PolicyOpts) -> Result<()> {
    let map = tunables::open_live()?;
    // Two tunes at once would each write back what they read and lose the other's change.
    // flock on the pin directory (bpffs supports it) needs no lock file to create or leave.
    let _lock = tunables::lock_exclusive(tunables::PIN_DIR)?;
    let old = tunables::read(&map)?;
    if show {
        for (k, v) in tunables::fields(&old) {
            println!("{k:<20} {v}");
        }
        println!("{:<20} {}", "generation", old.generation);
        return Ok(());
    }
    let mut new = tunables::apply(&old, p);
    let diff = tunables::changes(&old, &new);
    if diff.is_empty() {
        bail!(
            "nothing to change: give at least one flag with a new value (see scx_sis tune --help)"
        );
    }
    new.generation = old.generation + 1;
    tunables::write(&map, &new)?;
    for line in diff {
        println!("{line}");
    }
    Ok(())
}
