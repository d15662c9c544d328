//! A workload as every stage names it, and how big its runs are: the bottom of the bench, with
//! the run record and the metrics. What a workload runs, and how its output becomes a record's
//! numbers, is its family's module in workloads/; this file knows no workload by name.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A name that lives as long as the process: a custom workload's or metric's name, made once and
/// shared by every record that carries it, so that `Workload` stays `Copy` like the built-ins.
/// Names are interned, so reading a long runs.jsonl back adds nothing per record.
pub fn intern(s: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// A workload, by its name: a built-in's (its family's module holds it as a constant) or a
/// custom one's (the plan's `Custom` says what it runs). `Copy`, so records and plans hold it
/// by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Workload(&'static str);

impl Workload {
    /// The workload named `name`, for a family's constants.
    pub const fn named(name: &'static str) -> Self {
        Workload(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;
    /// Any valid name: a built-in's, or a custom workload's, which the plan must define
    /// (`--workload` or a preset).
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if !valid_name(s) {
            return Err(format!(
                "'{s}' is not a workload name (letters, digits, '-', '_', '.')"
            ));
        }
        Ok(Workload(intern(s)))
    }
}

// As its name ("hackbench", "wakelat-low", ...), the form every runs.jsonl has, so that records
// written before custom workloads existed still read.
impl Serialize for Workload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// How big a run is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// CPUs of the machine the workload runs on.
    pub cpus: u32,
    /// Short runs (about a fifth).
    pub quick: bool,
    /// Multiplier of the loop counts: 1 is sized for QEMU TCG (5-15 s a run with 8 vCPUs; the
    /// total work stays the same whatever the CPU count, since TCG runs every vCPU on one
    /// host thread); native machines are ~100x faster and want ~30.
    pub work: f64,
}

impl Sizing {
    /// Groups of 40 threads (20 senders, 20 receivers): one per 4 CPUs, so ~10 runnable
    /// threads per CPU.
    pub fn groups(&self) -> u32 {
        (self.cpus / 4).max(1)
    }

    fn scaled(&self, base: u32) -> u32 {
        let q = if self.quick { 0.2 } else { 1.0 };
        ((base as f64 * q * self.work).round() as u32).max(1)
    }

    /// Loops per sender: 600 group-loops in total, split over the groups, then scaled.
    pub fn loops(&self) -> u32 {
        self.scaled(600 / self.groups()).max(5)
    }

    pub fn pipe_loops(&self) -> u32 {
        self.scaled(40_000).max(100)
    }

    /// (message threads, workers each, runtime s, warmup s).
    pub fn wakelat(&self, low: bool) -> (u32, u32, f64, f64) {
        let (runtime, warmup) = if self.quick { (2.0, 0.5) } else { (5.0, 1.0) };
        if low {
            (1, 2, runtime, warmup)
        } else {
            // ~cpus/2 workers spinning 100 us per request: about half the machine.
            ((self.cpus / 4).max(1), 2, runtime, warmup)
        }
    }
}

/// The programs a workload's command names besides itself: scx_sis_lab (wakelat and the
/// probes) and scx_sis (what the spawn probe starts).
pub struct Exes<'a> {
    pub lab: &'a str,
    pub sched: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_is_its_name() {
        assert_eq!("mine".parse::<Workload>(), Ok(Workload::named("mine")));
        assert_eq!(
            " wakelat-low ".parse::<Workload>().unwrap().name(),
            "wakelat-low"
        );
        assert!("a b".parse::<Workload>().is_err());
        let w: Workload = serde_json::from_str("\"mine\"").unwrap();
        assert_eq!(
            (w, serde_json::to_string(&w).unwrap()),
            (Workload::named("mine"), "\"mine\"".into())
        );
        assert_eq!(intern("mine"), intern(&String::from("mine")));
    }

    #[test]
    fn sizing_follows_the_cpu_count() {
        let s = |cpus, quick| Sizing {
            cpus,
            quick,
            work: 1.0,
        };
        assert_eq!((s(8, false).groups(), s(8, false).loops()), (2, 300));
        assert_eq!((s(32, false).groups(), s(32, false).loops()), (8, 75));
        assert_eq!((s(2, false).groups(), s(2, false).loops()), (1, 600));
        assert_eq!(s(8, true).loops(), 60);
        assert_eq!(s(8, false).wakelat(true).0, 1);
        assert_eq!(s(16, false).wakelat(false).0, 4);
    }
}
