//! The guest's records and the host's verdicts on them.
//!
//! A guest script prints one console line per record, `SIS-REC <kind> <name> <payload>`
//! (scripts/guest/lib.sh: `rec`, `rec_mon`, `rec_lines`):
//! - `mon`: a `scx_sis monitor --json` object as it came out, decoded as `scx_sis::stats::Metrics`;
//! - `kv`: `key=value` words; a value that starts with `[` runs to its `]` and may hold spaces;
//! - `json`: other JSON (`scx_sis_lab wakelat --json`);
//! - `text`: a raw line (hackbench's output, perf's CSV, a tail of a log).
//!
//! Several records may share a name (a monitor's lines, a file's lines); `mon`, `kv` and `json`
//! return the last one, the plural forms all of them in order.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::io::Write;
use std::str::FromStr;

use scx_sis::stats::{LlcMetrics, Metrics};

struct Record {
    kind: String,
    name: String,
    payload: String,
}

/// Every record of one guest run, in console order.
#[derive(Default)]
pub struct Records(Vec<Record>);

impl Records {
    pub fn parse(console: &str) -> Self {
        const TAG: &str = "SIS-REC ";
        Records(
            console
                .lines()
                .filter_map(|l| {
                    // A kernel message may precede the record on its console line.
                    let rest = &l[l.find(TAG)? + TAG.len()..];
                    let mut it = rest.splitn(3, ' ');
                    Some(Record {
                        kind: it.next()?.to_string(),
                        name: it.next()?.to_string(),
                        payload: it.next().unwrap_or("").trim_end().to_string(),
                    })
                })
                .collect(),
        )
    }

    fn of(&self, kind: &str, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|r| r.kind == kind && r.name == name)
            .map(|r| r.payload.as_str())
            .collect()
    }

    /// The names of the records of `kind`, in console order, each once.
    pub fn names(&self, kind: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in self.0.iter().filter(|r| r.kind == kind) {
            if !out.contains(&r.name.as_str()) {
                out.push(&r.name);
            }
        }
        out
    }

    pub fn has(&self, kind: &str, name: &str) -> bool {
        !self.of(kind, name).is_empty()
    }

    /// Every `mon` record called `name`; a record that is not a Metrics object panics, naming it.
    pub fn mons(&self, name: &str) -> Vec<Metrics> {
        self.of("mon", name)
            .into_iter()
            .map(|p| {
                serde_json::from_str(p).unwrap_or_else(|e| {
                    panic!("record mon {name}: not a Metrics object ({e}): {p}")
                })
            })
            .collect()
    }

    pub fn mon(&self, name: &str) -> Option<Metrics> {
        self.mons(name).pop()
    }

    /// Why there is no `mon` record `name`: what the monitor printed instead (its `text` records
    /// of that name, where rec_mon puts its error lines), cut to 200 characters.
    pub fn no_mon(&self, name: &str) -> String {
        let out: String = self.text(name).chars().take(200).collect();
        format!("no monitor --json object in record {name}: '{out}'")
    }

    /// The last `mon` record `name`; when there is none, fails verdict `check` with `no_mon`.
    pub fn mon_or_fail(&self, name: &str, v: &mut Verdicts, check: &str) -> Option<Metrics> {
        let m = self.mon(name);
        if m.is_none() {
            v.fail(check, self.no_mon(name));
        }
        m
    }

    pub fn kvs(&self, name: &str) -> Vec<Kv> {
        self.of("kv", name)
            .into_iter()
            .map(|p| Kv::parse(name, p))
            .collect()
    }

    pub fn kv(&self, name: &str) -> Option<Kv> {
        self.kvs(name).pop()
    }

    /// The last `kv` record called `name`; panics when there is none.
    pub fn need_kv(&self, name: &str) -> Kv {
        self.kv(name)
            .unwrap_or_else(|| panic!("no record kv {name}"))
    }

    pub fn texts(&self, name: &str) -> Vec<&str> {
        self.of("text", name)
    }

    /// The `text` records called `name` joined by " | ", or "" (for failure details).
    pub fn text(&self, name: &str) -> String {
        self.texts(name).join(" | ")
    }

    pub fn json(&self, name: &str) -> Option<serde_json::Value> {
        self.of("json", name)
            .into_iter()
            .rev()
            .find_map(|p| serde_json::from_str(p).ok())
    }
}

/// One `kv` record.
pub struct Kv {
    name: String,
    raw: String,
    map: BTreeMap<String, String>,
}

impl Kv {
    fn parse(name: &str, payload: &str) -> Kv {
        let mut map = BTreeMap::new();
        let mut rest = payload.trim_start();
        while !rest.is_empty() {
            let (word, after) = match rest.find('=') {
                Some(eq) if rest[eq + 1..].starts_with('[') => {
                    let end = rest[eq..].find(']').map_or(rest.len(), |i| eq + i + 1);
                    (&rest[..end], &rest[end..])
                }
                _ => rest.split_at(rest.find(' ').unwrap_or(rest.len())),
            };
            if let Some((k, v)) = word.split_once('=') {
                let v = v
                    .strip_prefix('[')
                    .and_then(|v| v.strip_suffix(']'))
                    .unwrap_or(v);
                map.insert(k.to_string(), v.to_string());
            }
            rest = after.trim_start();
        }
        Kv {
            name: name.to_string(),
            raw: payload.to_string(),
            map,
        }
    }

    /// The record as the guest printed it.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The value of `key`, "" when absent.
    pub fn s(&self, key: &str) -> &str {
        self.map.get(key).map_or("", String::as_str)
    }

    pub fn opt<T: FromStr>(&self, key: &str) -> Option<T> {
        self.map.get(key)?.parse().ok()
    }

    /// The number at `key`; panics naming the record when it is absent or not a number.
    pub fn n<T: FromStr>(&self, key: &str) -> T {
        self.opt(key).unwrap_or_else(|| {
            panic!(
                "record kv {}: {key} missing or not a number: {:?}",
                self.name, self.map
            )
        })
    }

    /// Whitespace-separated numbers at `key` (a `[..]` list).
    pub fn list(&self, key: &str) -> Vec<i64> {
        self.s(key)
            .split_whitespace()
            .map(|w| {
                w.parse().unwrap_or_else(|_| {
                    panic!("record kv {}: {key}: {w:?} is not a number", self.name)
                })
            })
            .collect()
    }
}

/// `f` summed over the LLCs of a report.
pub fn llc_sum(m: &Metrics, f: impl Fn(&LlcMetrics) -> u64) -> u64 {
    m.llc_sum(f)
}

/// Wakeups of placement path `name`, summed over the LLCs.
pub fn path_sum(m: &Metrics, name: &str) -> u64 {
    llc_sum(m, |l| l.path(name))
}

/// Centiseconds as seconds with 2 decimals, like the guest's fmt_cs.
pub fn cs(v: i64) -> String {
    format!("{}.{:02}", v / 100, v % 100)
}

/// `a / b` rounded to `dec` decimals (awk's printf "%.Nf"), or `none` when b is not positive.
pub fn ratio(a: f64, b: f64, dec: i32, none: f64) -> f64 {
    if b > 0.0 {
        round(a / b, dec)
    } else {
        none
    }
}

pub fn round(v: f64, dec: i32) -> f64 {
    let p = 10f64.powi(dec);
    (v * p).round() / p
}

/// The verdicts of one run's host-side checks, and its lines (verdicts, measurements) in the order
/// they were made, for the log.
#[derive(Default)]
pub struct Verdicts {
    pub passes: Vec<String>,
    pub fails: Vec<String>,
    pub lines: Vec<String>,
}

impl Verdicts {
    /// Record `name` as passed when `ok`, else failed; returns `ok`.
    pub fn check(&mut self, name: &str, ok: bool, detail: impl Display) -> bool {
        let line = format!("{} {name} {detail}", if ok { "PASS" } else { "FAIL" });
        self.lines.push(format!("verdict {line}"));
        if ok {
            self.passes.push(line);
        } else {
            self.fails.push(line);
        }
        ok
    }

    pub fn pass(&mut self, name: &str, detail: impl Display) {
        self.check(name, true, detail);
    }

    pub fn fail(&mut self, name: &str, detail: impl Display) {
        self.check(name, false, detail);
    }

    /// A measurement for the log, not a check.
    pub fn info(&mut self, msg: impl Display) {
        self.lines.push(format!("info {msg}"));
    }
}

/// Write to the real stderr, bypassing libtest's output capture, so progress shows up in CI logs.
pub fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decode_by_kind_and_name() {
        let console = "junk\n[ 1.0] x SIS-REC kv a n=3 l=[1 2 3] s=x\nSIS-REC text t Time: 1.5\n\
                       SIS-REC mon m {\"at_us\":1,\"secs\":2.0,\"generation\":3,\"llcs\":{}}\n";
        let r = Records::parse(console);
        let kv = r.need_kv("a");
        assert_eq!(kv.n::<u64>("n"), 3);
        assert_eq!(kv.list("l"), [1, 2, 3]);
        assert_eq!(kv.s("s"), "x");
        assert_eq!(r.texts("t"), ["Time: 1.5"]);
        assert_eq!(r.mon("m").unwrap().generation, 3);
        assert!(r.mon("none").is_none());
    }
}
