//! `policy_tunables!`: turns the table of tunables in policy.rs into everything a tunable needs
//! on the Rust side, so that a tunable is declared in one row: its default (`policy::defaults`),
//! its flag with help and range (`PolicyOpts`, shared by the scheduler, `scx_sis tune` and the
//! lab), the map's initial value (`initial_tunables()`), a flag's value written into the map
//! (`PolicyOpts::apply`), the map's values as flags spell them (`flag_values()`, which feeds
//! `tune --show`, describe() and the change log) and a descriptor of each row (`rows()`).
//!
//! The table opens with the fields of struct sis_tunables that no flag sets, with their initial
//! value; then one row per tunable, its keys in this order (those in brackets optional):
//!
//! ```text
//! /// doc of its `defaults` constant (optional)
//! "flag-name" opts_field: Type {
//!     [short: 'c',]                   one-letter flag
//!     [range: LO..=HI,]               accepted values (numbers), checked by the flag's parser
//!     default: CONST = value,         policy::defaults::CONST, in the flag's unit
//!     bpf: field [* SCALE],           its field in struct sis_tunables: the value times SCALE
//!     [zero: "text",]                 how a 0 in the map is shown (a 0 with a meaning of its own)
//!     [bpf_default: SIS_DFL_X,]       BPF keeps the default as SIS_DFL_X in tunables.bpf.h
//!     [hidden: true,]                 not in --help (tests only)
//!     help: "what it does",           the help; " [default: value]" is appended
//! }
//! ```
//!
//! Type is a `Value`: Switch, Curve, Preset, bool, u32 or u64. The BPF field is named in a
//! struct literal (`initial_tunables()`) that must list every field of sis_tunables once, so a
//! row naming no field, two rows naming one, or a field in intf.h that is neither a row nor among
//! the fields no flag sets is a compile error.

use std::fmt;

use crate::policy::curves;
use crate::policy::{Curve, Preset, Switch};

/// How a flag's value is stored in a field of struct sis_tunables, and shown back from it.
pub trait Value: Copy + fmt::Display {
    /// The field's value for this flag value (before the row's scale).
    fn to_raw(self) -> u64;
    /// A field's value (the row's scale undone) as the flag spells it.
    fn show(raw: u64) -> String;
}

/// On/off switches are 1 and 0 in the map; any non-zero reads as on.
impl Value for Switch {
    fn to_raw(self) -> u64 {
        self.is_on().into()
    }
    fn show(raw: u64) -> String {
        if raw != 0 { Switch::On } else { Switch::Off }.to_string()
    }
}

/// The preset is the map's `plain` switch.
impl Value for Preset {
    fn to_raw(self) -> u64 {
        (self == Preset::Plain).into()
    }
    fn show(raw: u64) -> String {
        if raw != 0 { Preset::Plain } else { Preset::Sis }.to_string()
    }
}

/// A curve is its enum sis_curve index; an index no curve has is shown as "#N".
impl Value for Curve {
    fn to_raw(self) -> u64 {
        curves::curve_index(self).into()
    }
    fn show(raw: u64) -> String {
        u32::try_from(raw)
            .ok()
            .and_then(curves::curve_from_index)
            .map_or_else(|| format!("#{raw}"), |c| c.to_string())
    }
}

/// A bool flag (`--flag true`) is a switch in the map, shown as one.
impl Value for bool {
    fn to_raw(self) -> u64 {
        self.into()
    }
    fn show(raw: u64) -> String {
        Switch::show(raw)
    }
}

impl Value for u32 {
    fn to_raw(self) -> u64 {
        self.into()
    }
    fn show(raw: u64) -> String {
        raw.to_string()
    }
}

impl Value for u64 {
    fn to_raw(self) -> u64 {
        self
    }
    fn show(raw: u64) -> String {
        raw.to_string()
    }
}

/// `v` as its map field holds it: times `scale`, in the field's type. A flag's parser checks its
/// range, and the table's tests put each range's ends through here, so the value always fits.
pub fn store<V: Value, F: TryFrom<u64>>(v: V, scale: u64) -> F
where
    F::Error: fmt::Debug,
{
    F::try_from(v.to_raw() * scale).expect("a flag's range fits its field")
}

/// A field's value as the flag spells it: `zero` for a 0 that has a name, else the value with
/// the scale undone.
pub fn shown<V: Value>(raw: u64, scale: u64, zero: Option<&str>) -> String {
    match zero {
        Some(name) if raw == 0 => name.to_string(),
        _ => V::show(raw / scale),
    }
}

/// A flag's help: what it does, then its default.
pub fn with_default(what: &str, default: impl fmt::Display) -> String {
    format!("{what} [default: {default}]")
}

/// One row of the table, for checks and listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The flag, without its dashes; also the name `tune --show` and describe() give the value.
    pub flag: &'static str,
    /// Its field in struct sis_tunables.
    pub field: &'static str,
    /// The values the flag accepts, in its unit (numbers only).
    pub range: Option<(u64, u64)>,
    /// The default as the flag spells it.
    pub default: String,
    /// The default as the map holds it.
    pub default_raw: u64,
    /// The map's unit per flag unit (1000 for a flag in us and a field in ns).
    pub scale: u64,
    /// The name of BPF's copy of the default (SIS_DFL_* in tunables.bpf.h), if it keeps one.
    pub bpf_default: Option<&'static str>,
    /// Left out of --help.
    pub hidden: bool,
}

macro_rules! policy_tunables {
    // Optional keys, as values.
    (@scale) => { 1 };
    (@scale $s:literal) => { $s };
    (@some) => { None };
    (@some $v:expr) => { Some($v) };
    (@range) => { None };
    (@range $lo:literal $hi:literal) => { Some(($lo, $hi)) };
    (@hidden) => { false };
    (@hidden $h:literal) => { $h };
    // A hidden flag's help is its text alone: no one reads a default there.
    (@help $what:expr, $default:expr) => {
        $crate::policy::table::with_default($what, $default)
    };
    (@help $what:expr, $default:expr, $h:literal) => { $what };

    (
        not_flags: $($other:ident = $other_init:expr),*;
        $(
            $(#[$meta:meta])*
            $flag:literal $opt:ident: $ty:ident {
                $(short: $short:literal,)?
                $(range: $lo:literal ..= $hi:literal,)?
                default: $dconst:ident = $dval:expr,
                bpf: $bpf:ident $(* $scale:literal)?,
                $(zero: $zero:literal,)?
                $(bpf_default: $bpf_dfl:ident,)?
                $(hidden: $hidden:literal,)?
                help: $help:expr $(,)?
            }
        )*
    ) => {
        /// Every tunable's default, in the unit of its flag (the table above).
        pub mod defaults {
            use super::*;
            $(
                $(#[$meta])*
                pub const $dconst: $ty = $dval;
            )*
        }

        /// The tunables' flags. At start an unset flag takes its default; `tune` changes only
        /// the flags given, which is why every field is an Option and no flag has a clap
        /// default_value.
        #[derive(Debug, Clone, Default, PartialEq, clap::Args)]
        pub struct PolicyOpts {
            $(
                #[arg(
                    long = $flag,
                    $(short = $short,)?
                    $(value_parser = clap::value_parser!($ty).range($lo..=$hi),)?
                    $(hide = $hidden,)?
                    help = policy_tunables!(@help $help, defaults::$dconst $(, $hidden)?),
                )]
                pub $opt: Option<$ty>,
            )*
        }

        impl PolicyOpts {
            /// Every flag at its default.
            pub fn all_defaults() -> Self {
                Self {
                    $($opt: Some(defaults::$dconst),)*
                }
            }

            /// `base` with every flag given here written into its field; the rest kept.
            pub fn apply(&self, base: &$crate::bpf_intf::sis_tunables) -> $crate::bpf_intf::sis_tunables {
                let mut t = *base;
                $(
                    if let Some(v) = self.$opt {
                        t.$bpf = $crate::policy::table::store(v, policy_tunables!(@scale $($scale)?));
                    }
                )*
                t
            }
        }

        /// What a scheduler starts with: every tunable at its default, the other fields at
        /// their initial value.
        pub fn initial_tunables() -> $crate::bpf_intf::sis_tunables {
            $crate::bpf_intf::sis_tunables {
                $($other: $other_init,)*
                $(
                    $bpf: $crate::policy::table::store(
                        defaults::$dconst,
                        policy_tunables!(@scale $($scale)?),
                    ),
                )*
            }
        }

        /// Every tunable's value in `t`, as (flag, value as the flag spells it), in table order.
        pub fn flag_values(t: &$crate::bpf_intf::sis_tunables) -> Vec<(&'static str, String)> {
            vec![
                $((
                    $flag,
                    $crate::policy::table::shown::<$ty>(
                        u64::from(t.$bpf),
                        policy_tunables!(@scale $($scale)?),
                        policy_tunables!(@some $($zero)?),
                    ),
                ),)*
            ]
        }

        /// The table's rows, in order.
        pub fn rows() -> Vec<$crate::policy::table::Row> {
            vec![
                $($crate::policy::table::Row {
                    flag: $flag,
                    field: stringify!($bpf),
                    range: policy_tunables!(@range $($lo $hi)?),
                    default: defaults::$dconst.to_string(),
                    default_raw: $crate::policy::table::store(
                        defaults::$dconst,
                        policy_tunables!(@scale $($scale)?),
                    ),
                    scale: policy_tunables!(@scale $($scale)?),
                    bpf_default: policy_tunables!(@some $(stringify!($bpf_dfl))?),
                    hidden: policy_tunables!(@hidden $($hidden)?),
                },)*
            ]
        }
    };
}

pub(super) use policy_tunables;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_as_their_flags_spell_them() {
        assert_eq!(shown::<Switch>(Switch::On.to_raw(), 1, None), "on");
        assert_eq!(shown::<Switch>(2, 1, None), "on", "any non-zero is on");
        assert_eq!(shown::<Preset>(Preset::Plain.to_raw(), 1, None), "plain");
        assert_eq!(shown::<Preset>(0, 1, None), "sis");
        assert_eq!(shown::<Curve>(Curve::Linear.to_raw(), 1, None), "linear");
        assert_eq!(shown::<Curve>(7, 1, None), "#7", "an index no curve has");
        assert_eq!(shown::<bool>(true.to_raw(), 1, None), "on");
        assert_eq!(
            shown::<u64>(store::<u64, u64>(3000, 1000), 1000, None),
            "3000"
        );
        assert_eq!(shown::<u32>(0, 1, Some("auto")), "auto");
        assert_eq!(shown::<u32>(0, 1, None), "0");
        assert_eq!(shown::<u32>(5, 1, Some("auto")), "5");
    }

    #[test]
    #[should_panic(expected = "a flag's range fits its field")]
    fn a_value_too_large_for_its_field_is_refused() {
        let _: u32 = store(u64::from(u32::MAX), 2);
    }

    #[test]
    fn help_ends_with_the_default() {
        assert_eq!(with_default("Slice", 3000), "Slice [default: 3000]");
    }
}
