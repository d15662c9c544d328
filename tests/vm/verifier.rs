//! The verifier's cost per program against the baseline kept in the repository
//! (`tests/vm/verifier-baseline.txt`, as the scx schedulers keep veristat files): a program whose
//! processed instructions grew more than 10% past its row fails, so a change that multiplies what
//! the verifier walks is seen when it is made, not when a load takes minutes on an old kernel.
//! A program or kernel series without a row fails too, naming the rows to add: a figure without a
//! row would be shown and never judged.

use std::collections::BTreeMap;

use crate::harness::GuestRun;
use crate::records::Verdicts;

/// How far a program may grow past its baseline row.
const MAX_GROWTH: f64 = 1.10;

const BASELINE: &str = include_str!("verifier-baseline.txt");

/// The baseline rows of kernel series `series` ("6.12", "7.3"): program -> instructions.
fn baseline(series: &str) -> BTreeMap<String, u32> {
    BASELINE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (s, prog, n) = (f.next()?, f.next()?, f.next()?.parse().ok()?);
            (s == series).then(|| (prog.to_string(), n))
        })
        .collect()
}

/// The daemon's "verifier: processed instructions: select_cpu 1234, ... (total N)" line.
fn measured(console: &str) -> Option<BTreeMap<String, u32>> {
    let line = console
        .lines()
        .find_map(|l| l.split_once("verifier: processed instructions: "))?
        .1;
    let list = line.split(" (total").next()?;
    Some(
        list.split(", ")
            .filter_map(|e| {
                let (p, n) = e.trim().rsplit_once(' ')?;
                Some((p.to_string(), n.parse().ok()?))
            })
            .collect(),
    )
}

/// "7.3.4+deb13-amd64" -> "7.3".
fn series_of(release: &str) -> String {
    release.split('.').take(2).collect::<Vec<_>>().join(".")
}

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let series = series_of(&run.release);
    let Some(now) = measured(&run.console) else {
        v.fail("verifier_baseline", "no verifier line in the console");
        return;
    };
    let base = baseline(&series);
    let (mut grew, mut unlisted) = (Vec::new(), Vec::new());
    for (prog, &n) in &now {
        match base.get(prog) {
            Some(&b) if f64::from(n) > f64::from(b) * MAX_GROWTH => {
                grew.push(format!("{prog} {n} > {b} + 10%"))
            }
            Some(_) => {}
            None => unlisted.push(format!("{series} {prog} {n}")),
        }
    }
    let detail = now
        .iter()
        .filter_map(|(p, n)| Some(format!("{p} {n} (baseline {})", base.get(p)?)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut why = Vec::new();
    if !grew.is_empty() {
        why.push(format!("grew: {}", grew.join(", ")));
    }
    if !unlisted.is_empty() {
        why.push(format!(
            "no row in tests/vm/verifier-baseline.txt, add: {}",
            unlisted.join("; ")
        ));
    }
    let ok = why.is_empty();
    why.insert(0, format!("{series}: {detail}"));
    v.check("verifier_baseline", ok, why.join("; "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_daemons_line() {
        let c = "x\nverifier: processed instructions: dispatch 800, select_cpu 1200 (total 2000)\n";
        let m = measured(c).unwrap();
        assert_eq!(m["dispatch"], 800);
        assert_eq!(m["select_cpu"], 1200);
        assert_eq!(series_of("7.3.4+deb13-amd64"), "7.3");
        assert_eq!(series_of("6.12.117-scx"), "6.12");
    }

    fn run_on(release: &str, console: &str) -> GuestRun {
        GuestRun {
            kernel: "7".into(),
            release: release.into(),
            script: "foundation.sh".into(),
            topo: "2llc-smt".into(),
            accel: "single".into(),
            rc: 0,
            secs: 0,
            console: console.into(),
            passes: Vec::new(),
            fails: Vec::new(),
            records: crate::records::Records::parse(""),
        }
    }

    #[test]
    fn a_program_or_series_without_a_row_fails_naming_it() {
        let line = "verifier: processed instructions: enable 127, newprog 50 (total 177)\n";
        let mut v = Verdicts::default();
        judge(&run_on("7.3.4+deb13-amd64", line), &mut v);
        assert_eq!(v.fails.len(), 1, "{:?}", v.fails);
        assert!(v.fails[0].contains("add: 7.3 newprog 50"), "{}", v.fails[0]);
        let mut v = Verdicts::default();
        judge(&run_on("9.9.1-amd64", line), &mut v);
        assert!(
            v.fails[0].contains("add: 9.9 enable 127; 9.9 newprog 50"),
            "{}",
            v.fails[0]
        );
        let mut v = Verdicts::default();
        let within = "verifier: processed instructions: enable 130, exit 34 (total 164)\n";
        judge(&run_on("7.3.4+deb13-amd64", within), &mut v);
        assert_eq!((v.passes.len(), v.fails.len()), (1, 0), "{:?}", v.fails);
    }

    #[test]
    fn every_baseline_row_parses() {
        for l in BASELINE.lines().map(str::trim) {
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "{l}");
            assert!(f[2].parse::<u32>().is_ok(), "{l}");
        }
    }
}
