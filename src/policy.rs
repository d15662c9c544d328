//! The policy a user chooses: its value types (Switch, Curve, Preset), the default of every
//! tunable, written once here, and PolicyOpts, the flags that set them, shared by the
//! scheduler's command line, `scx_sis tune` and the lab's bench configurations.

use std::fmt;

use anyhow::Result;
use clap::{Args, Parser, ValueEnum};

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

/// Every tunable's default, in the units of its flag. tunables::defaults() builds the map's
/// initial value from these and each flag's help shows them. BPF keeps copies of three (the
/// SIS_DFL_* values in src/bpf/tunables.bpf.h) as fallbacks for a zero field or a failed map
/// lookup; a test in tunables.rs holds them equal.
pub mod defaults {
    use super::{Curve, Preset, Switch};

    pub const PRESET: Preset = Preset::Sis;
    pub const SLICE_US: u64 = 3000;
    pub const PREV_BIAS: Switch = Switch::On;
    pub const PREV_BIAS_THRESHOLD: u32 = 1;
    pub const SIS_UTIL: Curve = Curve::Quadratic;
    pub const SIS_UTIL_PERIOD_US: u32 = 4000;
    pub const IDLE_CORE: Switch = Switch::On;
    pub const WAKE_SYNC: Switch = Switch::On;
    pub const CROSS_LLC: Switch = Switch::On;
    pub const WAKEQ: Switch = Switch::Off;
    /// 0: one shard per 4 CPUs of the LLC (topology::default_shards).
    pub const WAKEQ_SHARDS: u32 = 0;
    pub const BALANCE_LAG_US: u32 = 12_000;
    /// About the kernel's sysctl_sched_migration_cost.
    pub const STEAL_MIN_US: u32 = 500;
}

/// A flag's help: what it does, then its default.
fn with_default(what: &str, default: impl fmt::Display) -> String {
    format!("{what} [default: {default}]")
}

/// The tunables. At start an unset flag takes its default; `tune` changes only the flags given,
/// which is why every field is an Option and no flag has a clap default_value.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct PolicyOpts {
    #[arg(long, value_enum, help = with_default(
        "Policy preset; `plain` is the baseline to compare against",
        defaults::PRESET,
    ))]
    pub preset: Option<Preset>,

    #[arg(
        short = 's',
        long,
        value_parser = clap::value_parser!(u64).range(100..=1_000_000),
        help = with_default("Time slice in microseconds", defaults::SLICE_US),
    )]
    pub slice_us: Option<u64>,

    #[arg(long, value_enum, help = with_default(
        "Keep a wakee on its previous CPU when that CPU is almost idle",
        defaults::PREV_BIAS,
    ))]
    pub prev_bias: Option<Switch>,

    #[arg(
        long,
        value_parser = clap::value_parser!(u32).range(0..=1000),
        help = with_default(
            "\"Almost idle\": prev's utilization without the task, per-mille of capacity",
            defaults::PREV_BIAS_THRESHOLD,
        ),
    )]
    pub prev_bias_threshold: Option<u32>,

    #[arg(long, value_enum, help = with_default(
        "Curve bounding the idle-CPU scan by LLC utilization",
        defaults::SIS_UTIL,
    ))]
    pub sis_util: Option<Curve>,

    #[arg(
        long,
        value_parser = clap::value_parser!(u32).range(100..=1_000_000),
        help = with_default(
            "Period of the LLC utilization update, in microseconds",
            defaults::SIS_UTIL_PERIOD_US,
        ),
    )]
    pub sis_util_period_us: Option<u32>,

    #[arg(long, value_enum, help = with_default(
        "Prefer a fully idle SMT core in prev's LLC",
        defaults::IDLE_CORE,
    ))]
    pub idle_core: Option<Switch>,

    #[arg(long, value_enum, help = with_default(
        "On a synchronous wakeup, run the wakee on the waker's CPU (same LLC)",
        defaults::WAKE_SYNC,
    ))]
    pub wake_sync: Option<Switch>,

    #[arg(long, value_enum, help = with_default(
        "Look for an idle CPU in other LLCs when prev's LLC has none",
        defaults::CROSS_LLC,
    ))]
    pub cross_llc: Option<Switch>,

    #[arg(long, value_enum, help = with_default(
        "Queue wakeups that found no idle CPU in a queue shared by the LLC",
        defaults::WAKEQ,
    ))]
    pub wakeq: Option<Switch>,

    #[arg(
        long,
        value_parser = clap::value_parser!(u32).range(0..=16),
        help = with_default(
            "Wakequeue shards per LLC, 0 = one per 4 CPUs of the LLC",
            defaults::WAKEQ_SHARDS,
        ),
    )]
    pub wakeq_shards: Option<u32>,

    #[arg(
        long,
        value_parser = clap::value_parser!(u32).range(500..=1_000_000),
        help = with_default(
            "vtime lag, in microseconds of nice-0 run time, by which a CPU's next task must lead \
             another CPU's waiting task before the busy CPU pulls that task over; larger = fewer \
             migrations, slower fairness",
            defaults::BALANCE_LAG_US,
        ),
    )]
    pub balance_lag_us: Option<u32>,

    #[arg(
        long,
        value_parser = clap::value_parser!(u32).range(0..=1_000_000),
        help = with_default(
            "An idle CPU steals a queued task (and busy CPUs kick one to) only when the task \
             would otherwise wait this long, in microseconds as on hardware: on a slower machine \
             (an emulator) it is scaled by the measured pace (monitor: switch_ns / switches over \
             2 us), and a wait estimated from run lengths by at most half a slice; 0 steals \
             whatever waits",
            defaults::STEAL_MIN_US,
        ),
    )]
    pub steal_min_us: Option<u32>,

    /// Test only: make the BPF scheduler fail with scx_bpf_error().
    #[arg(long, hide = true)]
    pub test_inject_error: Option<bool>,
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

/// Every flag users see (not the hidden test flag), with the value its help calls the default.
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

    #[test]
    fn every_flag_names_its_default() {
        let names: Vec<String> = help_defaults().into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            names.len(),
            13,
            "a policy flag was added or lost: {names:?}"
        );
        assert_eq!(help_defaults()[1], ("slice-us".into(), "3000".into()));
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
