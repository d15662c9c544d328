//! The runtime tunables: one struct shared with BPF (struct sis_tunables), held twice in an array
//! map of two entries (keys 0 and 1), so that while a writer changes one copy the other is whole
//! (the protocol is stated on struct sis_tunables in intf.h); each BPF callback decides from one
//! snapshot of them. The map is pinned so that `scx_sis tune`, another process, can change it
//! live; the trace ring buffer is pinned beside it for `scx_sis trace`.
//!
//! Here: the values a scheduler starts with and how flags change them. Submodules: how values
//! are shown (show.rs) and reading and writing the shared map without a torn copy (seqlock.rs).
//! Callers use this module's paths. The pins, their directory and the writers' lock are
//! `process::pins`: this module takes any map handle and depends on nothing above `policy`.

mod seqlock;
mod show;

pub use seqlock::{read, write};
pub use show::{changes, comm_of, describe, fields};

use crate::bpf_intf::{self, sis_tunables};
use crate::policy::{self, PolicyOpts};

/// What a scheduler starts with when no flag says otherwise (the policy table's defaults).
pub fn defaults() -> sis_tunables {
    policy::initial_tunables()
}

/// `base` with every flag given in `p` applied (the generation is left alone).
pub fn apply(base: &sis_tunables, p: &PolicyOpts) -> sis_tunables {
    p.apply(base)
}

/// The tunables a reloaded instance starts with: the live ones, which `tune` may have changed,
/// without the trace (its reader drained the old instance's ring buffer and ends with it; on in
/// the new one, records would fill a buffer nobody reads and every later trace would need
/// --force) and without an injected error (a test's, which would end the new instance too).
pub fn for_reload(live: &sis_tunables) -> sis_tunables {
    sis_tunables {
        trace: 0,
        trace_tgid: 0,
        trace_comm: [0; bpf_intf::sis_limits_SIS_COMM_LEN as usize],
        test_inject_error: 0,
        ..*live
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{help_defaults, parse_flags};

    pub(super) fn policy(args: &[&str]) -> PolicyOpts {
        let flags: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_flags(&flags).unwrap()
    }

    #[test]
    fn a_reload_keeps_tuned_values_but_not_the_trace_or_an_injected_error() {
        let mut live = apply(&defaults(), &policy(&["--prev-bias", "off"]));
        live.test_inject_error = 1;
        live.trace = 1;
        live.trace_tgid = 42;
        live.trace_comm[0] = b'x' as _;
        live.generation = 9;
        let next = for_reload(&live);
        assert_eq!(show::describe_trace(&next), "off");
        assert_eq!(next.trace_tgid, 0);
        assert_eq!(next.test_inject_error, 0);
        assert_eq!(next.prev_bias, 0, "a tuned value survives");
        let kept: Vec<_> = fields(&next)
            .into_iter()
            .filter(|(k, _)| *k != "trace")
            .collect();
        let live_fields: Vec<_> = fields(&live)
            .into_iter()
            .filter(|(k, _)| *k != "trace")
            .collect();
        assert_eq!(kept, live_fields);
    }

    #[test]
    fn every_help_names_the_default_the_scheduler_starts_with() {
        // Giving each flag the value its help calls the default must change nothing.
        for (flag, default) in help_defaults() {
            let given = policy(&[&format!("--{flag}"), &default]);
            let changed = changes(&defaults(), &apply(&defaults(), &given));
            assert!(changed.is_empty(), "--{flag} {default}: {changed:?}");
        }
    }

    #[test]
    fn bpf_fallbacks_match_the_defaults() {
        // BPF cannot read the policy table, so it keeps copies of some defaults,
        // "SIS_DFL_NAME = VALUE," in the map's unit, each in sis_fallback_tunables as
        // ".field = SIS_DFL_NAME,". A row names its copy (`bpf_default`); every copy has a row.
        let header = include_str!("../bpf/tunables.bpf.h");
        let value = |name: &str| {
            header.lines().find_map(|l| {
                let v = l.trim().strip_prefix(name)?.trim().strip_prefix('=')?;
                v.trim().trim_end_matches(',').parse::<u64>().ok()
            })
        };
        let fallback = &header[header
            .find("sis_fallback_tunables = {")
            .expect("tunables.bpf.h has sis_fallback_tunables")..];
        let fallback = &fallback[..fallback.find("};").expect("its initializer ends")];
        let mut copies = 0;
        for row in policy::rows() {
            let Some(name) = row.bpf_default else {
                continue;
            };
            copies += 1;
            assert_eq!(
                value(name),
                Some(row.default_raw),
                "{name} (--{})",
                row.flag
            );
            let init = format!(".{} = {name},", row.field);
            assert!(
                fallback.contains(&init),
                "sis_fallback_tunables lacks {init}"
            );
        }
        assert_eq!(
            fallback.matches("SIS_DFL_").count(),
            copies,
            "a SIS_DFL_* in sis_fallback_tunables whose row names no bpf_default: {fallback}"
        );
    }

    #[test]
    fn unset_flags_keep_the_base_value() {
        let t = apply(&defaults(), &policy(&["--prev-bias", "off", "-s", "2000"]));
        assert_eq!(t.prev_bias, 0);
        assert_eq!(t.slice_ns, 2_000_000);
        assert_eq!(t.idle_core, defaults().idle_core);
        assert_eq!(t.generation, defaults().generation);
    }

    #[test]
    fn preset_plain_switches_the_baseline_on_and_off() {
        let plain = apply(&defaults(), &policy(&["--preset", "plain"]));
        assert_eq!(plain.plain, 1);
        assert_eq!(apply(&plain, &policy(&["--preset", "sis"])).plain, 0);
        assert_eq!(apply(&plain, &policy(&["--wakeq", "on"])).plain, 1);
    }

    #[test]
    fn balance_lag_defaults_and_changes_alone() {
        assert_eq!(defaults().balance_lag_us, 12_000);
        let old = defaults();
        let new = apply(&old, &policy(&["--balance-lag-us", "3000"]));
        assert_eq!(new.balance_lag_us, 3000);
        assert_eq!(changes(&old, &new), vec!["balance-lag-us: 12000 -> 3000"]);
        assert_eq!(
            apply(&new, &policy(&["--wakeq", "on"])).balance_lag_us,
            3000
        );
        assert!(describe(&new).contains("balance-lag-us=3000"));
    }
}
