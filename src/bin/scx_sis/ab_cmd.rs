//! `scx_sis ab`: check the command line (nothing changes on a bad flag), run the session, print
//! the table or the JSON, and end with the one line that says what became of the tunables.

use std::time::Duration;

use anyhow::{anyhow, Result};

use crate::cli::AbOpts;
use scx_sis::ab::report::End;
use scx_sis::ab::session::{self, Options};
use scx_sis::ab::user_metric::UserMetric;
use scx_sis::ab::window::MEASURES;
use scx_sis::policy::{parse_flags, PolicyOpts};
use scx_sis::process::exit::Cause;
use scx_sis::process::{instance, shutdown};

pub fn run(o: &AbOpts) -> Result<()> {
    // A bad flag is a usage error for anyone, before root is asked for.
    let opts = options(o)?;
    instance::require_root()?;
    let stop = shutdown::flag_then_exit(
        "ab: stopping: restoring the tunables from before it (a second Ctrl-C leaves that to the \
         next ab or tune)",
    )?;
    let report = session::run(&opts, stop)?;
    if o.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.table());
    }
    match report.end {
        End::Done | End::Interrupted if o.json => eprintln!("{}", report.outcome),
        End::Done | End::Interrupted => println!("{}", report.outcome),
        End::Reloaded | End::Stopped => return Err(anyhow!("{}", report.outcome)),
    }
    Ok(())
}

/// The session's options from the command line; any bad flag is one usage line (status 2),
/// before anything is opened or changed.
fn options(o: &AbOpts) -> Result<Options> {
    let usage = |e: anyhow::Error| Cause::Usage.tag(e);
    let user = match (&o.metric_cmd, &o.metric) {
        (Some(cmd), Some(spec)) => Some(UserMetric::new(cmd, spec).map_err(usage)?),
        _ => None,
    };
    let adopt = o
        .adopt
        .as_deref()
        .map(|key| adopt_key(key, user.as_ref()))
        .transpose()
        .map_err(usage)?;
    Ok(Options {
        a: side(&o.a, "--a").map_err(usage)?,
        a_flags: o.a.clone(),
        b: side(&o.b, "--b").map_err(usage)?,
        b_flags: o.b.clone(),
        window: Duration::from_secs_f64(o.window),
        settle: Duration::from_secs_f64(o.settle),
        rounds: o.rounds as usize,
        user,
        adopt,
    })
}

/// One side's flags, split on white space (no policy value holds a space).
fn side(flags: &str, which: &str) -> Result<PolicyOpts> {
    let words: Vec<String> = flags.split_whitespace().map(String::from).collect();
    parse_flags(&words).map_err(|e| {
        let e = format!("{e:#}");
        let what = e.strip_prefix("error: ").unwrap_or(&e);
        anyhow!("{which} '{flags}': {what}")
    })
}

/// The measure --adopt names: --metric's label when it names none, else a measure with a
/// direction (a rate judged only higher or lower cannot be better).
fn adopt_key(key: &str, user: Option<&UserMetric>) -> Result<String> {
    if key.is_empty() {
        return user
            .map(|u| u.label.clone())
            .ok_or_else(|| anyhow!("--adopt without a METRIC needs --metric (its label)"));
    }
    let judged = MEASURES.iter().any(|m| m.key == key && m.better.is_some());
    if judged || user.is_some_and(|u| u.label == key) {
        return Ok(key.to_string());
    }
    let keys: Vec<&str> = MEASURES
        .iter()
        .filter(|m| m.better.is_some())
        .map(|m| m.key)
        .collect();
    Err(anyhow!(
        "--adopt {key}: not a measure with a better side ({}, or --metric's label)",
        keys.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_sis::policy::Switch;

    #[test]
    fn a_bad_flag_on_either_side_is_one_usage_line() {
        let e = side("--prev-bias maybe", "--b").unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.starts_with("--b '--prev-bias maybe': "), "{msg}");
        assert!(msg.contains("maybe") && !msg.contains("error"), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
        assert!(side("--no-such-flag 1", "--a").is_err());
        assert_eq!(
            side("  --prev-bias   off ", "--b").unwrap().prev_bias,
            Some(Switch::Off)
        );
        assert_eq!(side("", "--b").unwrap(), PolicyOpts::default());
    }

    #[test]
    fn adopt_names_a_measure_with_a_better_side() {
        let user = UserMetric::new("true", "p99=([0-9]+)").unwrap();
        assert_eq!(adopt_key("", Some(&user)).unwrap(), "p99");
        assert!(adopt_key("", None).is_err());
        assert_eq!(adopt_key("migrations", None).unwrap(), "migrations");
        assert!(
            adopt_key("wakeups", None).is_err(),
            "higher or lower, never better"
        );
        assert!(adopt_key("nonsense", Some(&user)).is_err());
    }
}
