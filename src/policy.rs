//! The policy a user chooses: its value types (Switch, Curve, Preset) and the table of every
//! tunable, declared once here, from which policy/table.rs makes the defaults, PolicyOpts (the
//! flags, shared by the scheduler's command line, `scx_sis tune` and the lab's bench
//! configurations) and the mapping of each flag to its field of the BPF tunables. Its
//! submodules carry the policy to BPF: the live tunables map (tunables.rs) and the SIS_UTIL
//! scan-depth curves (curves.rs).

pub mod curves;
pub mod table;
pub mod tunables;

use std::fmt;

use anyhow::Result;
use clap::{Parser, ValueEnum};

use table::policy_tunables;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    pub fn is_on(self) -> bool {
        self == Switch::On
    }
}

/// How the SIS_UTIL scan depth follows the LLC's utilization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Curve {
    /// Unbounded: scan the whole LLC.
    Off,
    /// The RFC's v2: nr = llc - (llc-4)*2*util, never below 4.
    Linear,
    /// As merged in v6.0: nr = llc*(1-(util/0.85)^2), nothing above 85%.
    Quadratic,
}

/// A whole policy at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// The placement stages (and their own flags).
    Sis,
    /// What the kernel's scx_simple does: the kernel's default idle pick, one global FIFO.
    Plain,
}

/// A value as users write it on the command line ("on", "quadratic", "plain").
fn flag_spelling(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

impl fmt::Display for Switch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&flag_spelling(*self))
    }
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&flag_spelling(*self))
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&flag_spelling(*self))
    }
}

// The tunables, one row each: flag, default, range, help and field of struct sis_tunables
// (policy/table.rs says what each key does and what the table generates). A new tunable is a
// row here, its field in intf.h and its use in BPF; BPF's copies of defaults (`bpf_default`, the
// SIS_DFL_* values in src/bpf/tunables.bpf.h, fallbacks for a zero field or a failed map lookup)
// are held equal to these by a test in tunables.rs.
policy_tunables! {
    // The fields no flag sets: the copy's count and generation (tunables::write()'s and its
    // callers'), and the trace (`scx_sis trace`'s to switch, never on at start).
    not_flags: seq = 0, generation = 1, trace = 0, trace_tgid = 0,
        trace_comm = [0; crate::bpf_intf::sis_limits_SIS_COMM_LEN as usize],
        // Set only by the tests' fault injection (scx_sis's SCX_SIS_TEST_INJECT_ERROR).
        test_inject_error = 0;

    "preset" preset: Preset {
        default: PRESET = Preset::Sis,
        bpf: plain,
        help: "Policy preset; `plain` is the baseline to compare against",
    }
    "slice-us" slice_us: u64 {
        short: 's',
        range: 100..=1_000_000,
        default: SLICE_US = 3000,
        bpf: slice_ns * 1000,
        bpf_default: SIS_DFL_SLICE_NS,
        help: "Time slice in microseconds",
    }
    "prev-bias" prev_bias: Switch {
        default: PREV_BIAS = Switch::On,
        bpf: prev_bias,
        help: "Keep a wakee on its previous CPU when that CPU is almost idle",
    }
    "prev-bias-threshold" prev_bias_threshold: u32 {
        range: 0..=1000,
        default: PREV_BIAS_THRESHOLD = 1,
        bpf: prev_bias_threshold_permille,
        help: "\"Almost idle\": prev's utilization without the task, per-mille of capacity",
    }
    "sis-util" sis_util: Curve {
        default: SIS_UTIL = Curve::Quadratic,
        bpf: sis_util_curve,
        help: "Curve bounding the idle-CPU scan by LLC utilization",
    }
    "sis-util-period-us" sis_util_period_us: u32 {
        range: 100..=1_000_000,
        default: SIS_UTIL_PERIOD_US = 4000,
        bpf: sis_util_period_us,
        bpf_default: SIS_DFL_SIS_UTIL_PERIOD_US,
        help: "Period of the LLC utilization update, in microseconds",
    }
    "idle-core" idle_core: Switch {
        default: IDLE_CORE = Switch::On,
        bpf: idle_core,
        help: "Prefer a fully idle SMT core in prev's LLC",
    }
    "wake-sync" wake_sync: Switch {
        default: WAKE_SYNC = Switch::On,
        bpf: wake_sync,
        help: "On a synchronous wakeup, run the wakee on the waker's CPU (same LLC)",
    }
    "cross-llc" cross_llc: Switch {
        default: CROSS_LLC = Switch::On,
        bpf: cross_llc,
        help: "Look for an idle CPU in other LLCs when prev's LLC has none",
    }
    "wakeup-preempt" wakeup_preempt: Switch {
        default: WAKEUP_PREEMPT = Switch::On,
        bpf: wakeup_preempt,
        help: "A wakee whose virtual deadline (vtime plus its expected run) is earlier than the \
               vtime the running task has reached preempts it, once that task has run as long as \
               the wakee is expected to (at most steal-min)",
    }
    "wakeq" wakeq: Switch {
        default: WAKEQ = Switch::Off,
        bpf: wakeq,
        help: "Queue wakeups that found no idle CPU in a queue shared by the LLC",
    }
    /// 0: one shard per 4 CPUs of the LLC (topology::default_shards).
    "wakeq-shards" wakeq_shards: u32 {
        range: 0..=16,
        default: WAKEQ_SHARDS = 0,
        bpf: wakeq_shards,
        zero: "auto",
        help: "Wakequeue shards per LLC, 0 = one per 4 CPUs of the LLC",
    }
    "balance-lag-us" balance_lag_us: u32 {
        range: 500..=1_000_000,
        default: BALANCE_LAG_US = 12_000,
        bpf: balance_lag_us,
        bpf_default: SIS_DFL_BALANCE_LAG_US,
        help: "vtime lag, in microseconds of nice-0 run time, by which a CPU's next task must lead \
               another CPU's waiting task before the busy CPU pulls that task over; larger = fewer \
               migrations, slower fairness",
    }
    /// About the kernel's sysctl_sched_migration_cost.
    "steal-min-us" steal_min_us: u32 {
        range: 0..=1_000_000,
        default: STEAL_MIN_US = 500,
        bpf: steal_min_us,
        bpf_default: SIS_DFL_STEAL_MIN_US,
        help: "An idle CPU steals a queued task (and busy CPUs kick one to) only when the task \
               would otherwise wait this long, in microseconds as on hardware: on a slower machine \
               (an emulator) it is scaled by the measured pace (monitor: switch_ns / switches over \
               2 us), and a wait estimated from run lengths by at most half a slice; 0 steals \
               whatever waits",
    }
}

/// Only the policy flags: what `scx_sis tune` accepts, parsed from a list.
#[derive(Debug, Parser)]
#[command(name = "policy", no_binary_name = true)]
struct PolicyOnly {
    #[command(flatten)]
    policy: PolicyOpts,
}

/// Parse and validate policy flags ("--prev-bias off --sis-util linear"); a bad flag is one line.
pub fn parse_flags(flags: &[String]) -> Result<PolicyOpts> {
    PolicyOnly::try_parse_from(flags)
        .map(|p| p.policy)
        .map_err(|e| {
            let text = e.to_string();
            anyhow::anyhow!("{}", text.lines().next().unwrap_or("invalid flags").trim())
        })
}

/// Every flag users see (not a hidden one), with the value its help calls the default.
#[cfg(test)]
pub(crate) fn help_defaults() -> Vec<(String, String)> {
    use clap::CommandFactory;
    PolicyOnly::command()
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .map(|arg| {
            let flag = arg.get_long().expect("policy flags are long flags");
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            let default = help
                .strip_suffix(']')
                .and_then(|h| h.rsplit_once("[default: "))
                .map(|(_, v)| v.to_string())
                .unwrap_or_else(|| panic!("--{flag}: no [default: ...] in {help:?}"));
            (flag.to_string(), default)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Result<PolicyOpts> {
        parse_flags(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn every_flag_names_its_default() {
        // --help lists the table's rows (but the hidden ones), in its order, each with its default.
        let listed = help_defaults();
        let rows: Vec<(String, String)> = rows()
            .into_iter()
            .filter(|r| !r.hidden)
            .map(|r| (r.flag.to_string(), r.default))
            .collect();
        assert_eq!(listed, rows);
        assert_eq!(listed[1], ("slice-us".into(), "3000".into()));
    }

    #[test]
    fn rows_are_unique_and_defaults_within_range() {
        let rows = rows();
        for (i, r) in rows.iter().enumerate() {
            for other in &rows[..i] {
                assert_ne!(r.flag, other.flag, "two rows with one flag");
                assert_ne!(
                    r.field, other.field,
                    "--{} and --{}: one field",
                    r.flag, other.flag
                );
            }
            if let Some((lo, hi)) = r.range {
                let default = r.default_raw / r.scale;
                assert!(
                    (lo..=hi).contains(&default),
                    "--{}: default {default} outside {lo}..={hi}",
                    r.flag
                );
            }
        }
    }

    #[test]
    fn ranges_hold_at_both_ends_and_fit_their_field() {
        for r in rows() {
            let Some((lo, hi)) = r.range else { continue };
            let flag = format!("--{}", r.flag);
            for ok in [lo, hi] {
                let t = flags(&[&flag, &ok.to_string()])
                    .unwrap_or_else(|e| panic!("{flag} {ok}: {e}"))
                    .apply(&initial_tunables());
                let shown = flag_values(&t).into_iter().find(|(f, _)| *f == r.flag);
                assert!(
                    shown
                        .as_ref()
                        .is_some_and(|(_, v)| *v == ok.to_string() || ok == 0),
                    "{flag} {ok} reads back as {shown:?}"
                );
            }
            assert!(
                flags(&[&flag, &(hi + 1).to_string()]).is_err(),
                "{flag} {}",
                hi + 1
            );
            if lo > 0 {
                assert!(
                    flags(&[&flag, &(lo - 1).to_string()]).is_err(),
                    "{flag} {}",
                    lo - 1
                );
            }
        }
    }

    #[test]
    fn each_flag_sets_its_own_field_alone() {
        use clap::CommandFactory;
        let command = PolicyOnly::command();
        let base = initial_tunables();
        let before = flag_values(&base);
        for r in rows() {
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == Some(r.flag))
                .unwrap_or_else(|| panic!("--{}: no such flag", r.flag));
            // Another value than the default: one the flag lists, or an end of its range.
            let mut values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            values.extend(
                r.range
                    .into_iter()
                    .flat_map(|(lo, hi)| [lo, hi])
                    .map(|v| v.to_string()),
            );
            let value = values
                .into_iter()
                .find(|v| *v != r.default)
                .unwrap_or_else(|| panic!("--{}: no value but the default", r.flag));
            let flag = format!("--{}", r.flag);
            let after = flag_values(&flags(&[&flag, &value]).unwrap().apply(&base));
            let changed: Vec<&str> = before
                .iter()
                .zip(&after)
                .filter(|(a, b)| a != b)
                .map(|(a, _)| a.0)
                .collect();
            assert_eq!(changed, [r.flag], "{flag} {value}");
        }
    }

    #[test]
    fn values_display_as_flags_spell_them() {
        assert_eq!(Switch::On.to_string(), "on");
        assert_eq!(Curve::Quadratic.to_string(), "quadratic");
        assert_eq!(Preset::Plain.to_string(), "plain");
    }

    #[test]
    fn bad_flags_are_one_line() {
        let e = parse_flags(&["--prev-bias".into(), "maybe".into()]).unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(parse_flags(&["--stats-interval".into(), "2".into()]).is_err());
        assert!(parse_flags(&[]).is_ok());
    }
}
