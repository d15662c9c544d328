//! `llc_metrics!`: turns the table of LlcMetrics fields in stats.rs into the struct, the read of
//! a fresh set of counters into it (`counted`) and the delta between two reads (`delta`), so
//! that a counter is named in one place.
//!
//! Each entry is `KIND FIELD [: TYPE] [= SOURCE], "description";`, in JSON order:
//! - `gauge FIELD: TYPE`: a current value the caller fills in; a delta keeps the later one.
//! - `count FIELD = SIS_CNT_CONSTANT`: a u64 from enum sis_counter; a delta subtracts.
//! - `hist FIELD = COUNTERS_FIELD`: a log2 histogram (Vec<u64>) of Counters; subtracted by bucket.
//! - `paths FIELD`: wakeups by placement path, by name; subtracted by name.
//! - `shards FIELD`: the wakequeue shards (ShardMetrics by index), filled in by the caller.
//!
//! The expansion uses BTreeMap, Counters, ShardMetrics and the Delta trait as stats.rs imports
//! them. The struct's field types are spelled out by the `@fields` arms rather than produced by
//! a macro in type position, because scx_stats' derive reads each field's type as written.

macro_rules! llc_metrics {
    (@fields [$($done:tt)*]) => {
        #[stat_doc]
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
        #[stat(desc = "Statistics of one LLC")]
        pub struct LlcMetrics {
            $($done)*
        }
    };
    (@fields [$($done:tt)*] gauge $f:ident: $ty:ident, $desc:tt; $($rest:tt)*) => {
        llc_metrics!(@fields [$($done)* #[stat(desc = $desc)] pub $f: $ty,] $($rest)*);
    };
    (@fields [$($done:tt)*] count $f:ident = $src:ident, $desc:tt; $($rest:tt)*) => {
        llc_metrics!(@fields [$($done)* #[stat(desc = $desc)] pub $f: u64,] $($rest)*);
    };
    (@fields [$($done:tt)*] hist $f:ident = $src:ident, $desc:tt; $($rest:tt)*) => {
        llc_metrics!(@fields [$($done)* #[stat(desc = $desc)] pub $f: Vec<u64>,] $($rest)*);
    };
    (@fields [$($done:tt)*] paths $f:ident, $desc:tt; $($rest:tt)*) => {
        llc_metrics!(
            @fields [$($done)* #[stat(desc = $desc)] pub $f: BTreeMap<String, u64>,] $($rest)*
        );
    };
    (@fields [$($done:tt)*] shards $f:ident, $desc:tt; $($rest:tt)*) => {
        llc_metrics!(
            @fields [$($done)* #[stat(desc = $desc)] pub $f: BTreeMap<u32, ShardMetrics>,]
            $($rest)*
        );
    };

    // A field's value in a fresh read of the counters `$c`.
    (@read gauge $c:ident) => { Default::default() };
    (@read count $c:ident $src:ident) => { $c.get($crate::bpf_intf::$src) };
    (@read hist $c:ident $src:ident) => { $c.$src.to_vec() };
    (@read paths $c:ident) => { $c.paths_by_name() };
    (@read shards $c:ident) => { BTreeMap::new() };

    // A field of the delta between two reads.
    (@delta gauge $now:expr, $then:expr) => { $now };
    (@delta $kind:ident $now:expr, $then:expr) => { Delta::delta(&$now, &$then) };

    // The sis_counter a field comes from, if any.
    (@source count $src:ident) => { Some($crate::bpf_intf::$src) };
    (@source $kind:ident $($src:ident)?) => { None };

    ($($kind:ident $f:ident $(: $ty:ident)? $(= $src:ident)?, $desc:tt;)*) => {
        llc_metrics!(@fields [] $($kind $f $(: $ty)? $(= $src)?, $desc;)*);

        impl LlcMetrics {
            /// Every counted field from `c`; the gauges and the shards are left for the caller.
            fn counted(c: &Counters) -> Self {
                Self {
                    $($f: llc_metrics!(@read $kind c $($src)?),)*
                }
            }

            /// Counted fields become the growth since `e`; gauges stay current.
            fn delta(&self, e: &Self) -> Self {
                Self {
                    $($f: llc_metrics!(@delta $kind self.$f, e.$f),)*
                }
            }

            /// The sis_counter of every `count` field, in table order.
            #[cfg(test)]
            fn counter_sources() -> Vec<$crate::bpf_intf::sis_counter> {
                [$(llc_metrics!(@source $kind $($src)?)),*].into_iter().flatten().collect()
            }
        }
    };
}

pub(super) use llc_metrics;
