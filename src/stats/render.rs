//! The stats as text for a terminal and a log: the one line per interval the daemon prints
//! (every LLC summed), the per-LLC table `monitor` prints, and the select_cpu cost histogram
//! drawn like bpftrace's hist().

use std::fmt::Write as _;

use super::{LlcMetrics, Metrics};
use crate::stats::counters::PATHS;
use crate::stats::quantile::log2_hist_quantile;

impl Metrics {
    fn rate(&self, v: u64) -> f64 {
        v as f64 / if self.secs > 0.0 { self.secs } else { 1.0 }
    }

    /// Every LLC summed in one line for a log, prefixed as the scx schedulers prefix theirs:
    /// wakeups and migrations per second, utilization, SIS_UTIL's scan limits (lowest-highest
    /// LLC), the share of wakeups per path in percent, the wait from wakeup (or fork) to
    /// running (p50 and p99, us), select_cpu's cost (average and p99 bucket, ns), dispatches per
    /// second from the own DSQ, stolen in the LLC and from another, lag pulls, and the
    /// wakequeue (queued per second, average wait in us).
    pub fn line(&self) -> String {
        let sum = |f: fn(&LlcMetrics) -> u64| self.llc_sum(f);
        let cpus = sum(|m| m.cpus);
        let util = self
            .llcs
            .values()
            .map(|m| m.util_pct * m.cpus as f64)
            .sum::<f64>()
            / cpus.max(1) as f64;
        let scan_lo = self.llcs.values().map(|m| m.nr_scan).min().unwrap_or(0);
        let scan_hi = self.llcs.values().map(|m| m.nr_scan).max().unwrap_or(0);
        let wakeups = sum(|m| m.wakeups);
        let mut out = format!(
            "[scx_sis] wake/s {:.0} migr/s {:.0} util {util:.0}% nr_scan {} paths%",
            self.rate(wakeups),
            self.rate(sum(|m| m.migrations)),
            if scan_lo == scan_hi {
                scan_lo.to_string()
            } else {
                format!("{scan_lo}-{scan_hi}")
            },
        );
        for p in &PATHS {
            let n: u64 = self.llcs.values().map(|m| m.path(p.name)).sum();
            let _ = write!(out, " {} {}", p.column, share(pct(n, wakeups)));
        }
        let hist = self.summed_hist(|m| &m.select_ns_hist);
        let waits = self.summed_hist(|m| &m.wake_wait_hist);
        let _ = write!(
            out,
            " wait_us p50 {} p99 {}",
            compact(log2_hist_quantile(&waits, 0.5) / 1000.0),
            compact(log2_hist_quantile(&waits, 0.99) / 1000.0),
        );
        let _ = write!(
            out,
            " sel_ns {:.0} p99 {} local/s {:.0} steal/s {:.0}+{:.0} pull/s {:.0} wq/s {:.0} wq_us {:.1}",
            avg(sum(|m| m.select_ns), sum(|m| m.select_timed)),
            pow2_label(log2_quantile(&hist, 0.99)),
            self.rate(sum(|m| m.dispatch_local)),
            self.rate(sum(|m| m.dispatch_llc_steal)),
            self.rate(sum(|m| m.dispatch_remote_steal)),
            self.rate(sum(|m| m.pulls + m.pulls_remote)),
            self.rate(sum(|m| m.wakeq_enqueued)),
            avg(sum(|m| m.wakeq_wait_ns), sum(|m| m.wakeq_waits)) / 1000.0,
        );
        out
    }

    /// A histogram summed bucket by bucket over the LLCs.
    pub(super) fn summed_hist(&self, f: impl Fn(&LlcMetrics) -> &Vec<u64>) -> Vec<u64> {
        let mut hist: Vec<u64> = Vec::new();
        for m in self.llcs.values() {
            let h = f(m);
            hist.resize(hist.len().max(h.len()), 0);
            hist.iter_mut().zip(h).for_each(|(a, b)| *a += b);
        }
        hist
    }

    /// The per-LLC table, one row per LLC, at most TABLE_WIDTH columns: a header line, then
    /// a line per LLC, both drawn from table_columns().
    pub fn table(&self) -> String {
        let groups = table_columns();
        let line = |cell: &dyn Fn(&Column) -> String| -> String {
            let groups: Vec<String> = groups
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|c| c.pad(cell(c)))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            groups.join("|") + "\n"
        };
        let mut out = line(&|c| c.header.to_string());
        for (&llc, m) in &self.llcs {
            let row = Row {
                llc,
                m,
                report: self,
            };
            out += &line(&|c| (c.cell)(&row));
        }
        out
    }

    /// select_cpu cost per LLC, drawn like bpftrace's hist().
    pub fn histogram(&self) -> String {
        let mut out = String::new();
        for (llc, m) in &self.llcs {
            let _ = writeln!(out, "@select_cpu_ns[llc{llc}]:");
            out.push_str(&bpftrace_hist(&m.select_ns_hist));
            out.push('\n');
        }
        out
    }
}

/// What one row's cells are computed from: an LLC's metrics over the report's interval.
struct Row<'a> {
    llc: u32,
    m: &'a LlcMetrics,
    report: &'a Metrics,
}

impl Row<'_> {
    /// Per second over the report's interval, no decimals.
    fn rate(&self, v: u64) -> String {
        format!("{:.0}", self.report.rate(v))
    }
}

/// One column of the per-LLC table: its header, its width (the header's and every cell's,
/// right-aligned unless `left`) and how a row's cell reads.
struct Column {
    header: &'static str,
    width: usize,
    left: bool,
    cell: Box<dyn Fn(&Row) -> String>,
}

impl Column {
    fn new(header: &'static str, width: usize, cell: impl Fn(&Row) -> String + 'static) -> Self {
        Column {
            header,
            width,
            left: false,
            cell: Box::new(cell),
        }
    }

    fn pad(&self, s: String) -> String {
        let w = self.width;
        if self.left {
            format!("{s:<w$}")
        } else {
            format!("{s:>w$}")
        }
    }
}

/// The per-LLC table's columns in groups, drawn with '|' between groups and ' ' within one:
/// the LLC, the wakeups' placement paths (share in percent), the llc_scan stage, select_cpu's
/// cost, the dispatches, the wakequeue.
fn table_columns() -> Vec<Vec<Column>> {
    let llc = Column {
        left: true,
        ..Column::new("llc", 3, |r| r.llc.to_string())
    };
    vec![
        vec![
            llc,
            Column::new("cpus", 4, |r| r.m.cpus.to_string()),
            Column::new("util%", 5, |r| format!("{:.0}", r.m.util_pct)),
            Column::new("scan", 4, |r| r.m.nr_scan.to_string()),
            Column::new("wake/s", 7, |r| r.rate(r.m.wakeups)),
            Column::new("migr/s", 6, |r| r.rate(r.m.migrations)),
        ],
        PATHS
            .iter()
            .map(|p| {
                let name = p.name;
                Column::new(p.column, 4, move |r| {
                    share(pct(r.m.path(name), r.m.wakeups))
                })
            })
            .collect(),
        vec![
            Column::new("dep", 4, |r| {
                format!("{:.1}", avg(r.m.scan_depth, r.m.scan_runs))
            }),
            Column::new("test", 4, |r| {
                format!("{:.1}", avg(r.m.scan_visited, r.m.scan_runs))
            }),
            Column::new("hit%", 4, |r| {
                format!("{:.0}", pct(r.m.scan_found, r.m.scan_runs))
            }),
        ],
        // The wait from wakeup (or fork) to running, as the JSON's wait_p50_us and wait_p99_us.
        vec![
            Column::new("w50us", 5, |r| compact(r.m.wait_p50_us)),
            Column::new("w99us", 5, |r| compact(r.m.wait_p99_us)),
        ],
        vec![
            Column::new("sel_ns", 6, |r| {
                compact(avg(r.m.select_ns, r.m.select_timed))
            }),
            Column::new("p99", 4, |r| pow2_label(r.m.select_ns_quantile(0.99))),
        ],
        vec![
            Column::new("local/s", 7, |r| r.rate(r.m.dispatch_local)),
            Column::new("llc/s", 6, |r| r.rate(r.m.dispatch_llc_steal)),
            Column::new("rem/s", 5, |r| r.rate(r.m.dispatch_remote_steal)),
            // Lag pulls from the LLC and from other LLCs in one column; JSON has them apart.
            Column::new("pull/s", 6, |r| r.rate(r.m.pulls + r.m.pulls_remote)),
        ],
        vec![
            Column::new("wq/s", 6, |r| r.rate(r.m.wakeq_enqueued)),
            Column::new("wq_q", 4, |r| r.m.wakeq_depth().to_string()),
            // The wakequeue's wait as its p99 only (the JSON has its sum and count too).
            Column::new("wq_p99", 6, |r| {
                compact(log2_hist_quantile(&r.m.wakeq_wait_hist, 0.99) / 1000.0)
            }),
        ],
    ]
}

impl LlcMetrics {
    /// Upper bound (ns) of the bucket holding the given quantile of select_cpu calls.
    pub fn select_ns_quantile(&self, q: f64) -> u64 {
        log2_quantile(&self.select_ns_hist, q)
    }
}

/// Upper bound of the log2 bucket (i counts [2^i, 2^(i+1))) holding quantile `q`; 0 if empty.
fn log2_quantile(hist: &[u64], q: f64) -> u64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0;
    }
    let want = (total as f64 * q).ceil() as u64;
    let mut seen = 0;
    for (i, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= want {
            return 1u64 << (i + 1);
        }
    }
    1u64 << hist.len()
}

fn avg(total: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        total as f64 / n as f64
    }
}

/// A count in at most 6 characters: as it is below 100,000, else in K, M or G (1000s).
fn compact(v: f64) -> String {
    match v {
        v if v < 99_999.5 => format!("{v:.0}"),
        v if v < 999_500.0 => format!("{:.0}K", v / 1e3),
        v if v < 999_950_000.0 => format!("{:.1}M", v / 1e6),
        v => format!("{:.1}G", v / 1e9),
    }
}

/// A share in percent in at most 4 characters: one decimal below 100.
fn share(p: f64) -> String {
    if p >= 99.95 {
        "100".to_string()
    } else {
        format!("{p:.1}")
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// bpftrace's power-of-two units: 1K = 1024.
fn pow2_label(v: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut unit = 0;
    let mut v = v;
    while v >= 1024 && v.is_multiple_of(1024) && unit < UNITS.len() - 1 {
        v /= 1024;
        unit += 1;
    }
    format!("{v}{}", UNITS[unit])
}

/// Rows "[lo, hi)   count |@@@@   |" from the first to the last non-empty bucket.
fn bpftrace_hist(buckets: &[u64]) -> String {
    const WIDTH: u64 = 52;
    let Some(first) = buckets.iter().position(|&n| n > 0) else {
        return "(no samples)\n".into();
    };
    let last = buckets.iter().rposition(|&n| n > 0).unwrap_or(first);
    let max = buckets.iter().copied().max().unwrap_or(1).max(1);
    let mut out = String::new();
    for (i, &n) in buckets.iter().enumerate().take(last + 1).skip(first) {
        let range = format!("[{}, {})", pow2_label(1 << i), pow2_label(1 << (i + 1)));
        let bar = "@".repeat((n * WIDTH / max) as usize);
        let _ = writeln!(out, "{range:<16}{n:>8} |{bar:<52}|");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::tests::llc;

    /// The widest a table line may be: it must fit a 160-column terminal.
    const TABLE_WIDTH: usize = 160;

    #[test]
    fn table_has_a_row_per_llc_with_rates() {
        let mut m = Metrics {
            secs: 2.0,
            ..Default::default()
        };
        m.llcs.insert(0, llc(200, 100, vec![]));
        m.llcs.insert(1, llc(0, 0, vec![]));
        let table = m.table();
        let rows: Vec<_> = table.lines().collect();
        assert_eq!(rows.len(), 3, "{table}");
        let words = |l: &str| -> Vec<String> {
            l.split(['|', ' '])
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        };
        let row0 = words(rows[1]);
        assert_eq!(row0[0], "0");
        assert_eq!(row0[4], "100", "wakeups/s of 200 over 2 s: {table}");
        assert_eq!(row0[7], "50.0", "prev_idle share: {table}");
        let header = words(rows[0]);
        assert_eq!(header.len(), row0.len(), "{table}");
    }

    /// Two LLCs at rates beyond what 8 vCPUs reach (a big host's), every path used.
    fn busy() -> Metrics {
        let mut m = Metrics {
            secs: 1.0,
            ..Default::default()
        };
        for i in 0..2 {
            let mut l = llc(9_999_999, 4_000_000, vec![1; 32]);
            l.cpus = 128;
            l.util_pct = 100.0;
            l.nr_scan = 128;
            for p in &PATHS {
                l.paths.insert(p.name.into(), 750_000);
            }
            l.migrations = 999_999;
            (l.scan_runs, l.scan_depth, l.scan_visited, l.scan_found) = (1, 99, 99, 1);
            // An average over a millisecond: a vCPU descheduled in select_cpu under emulation.
            (l.select_timed, l.select_ns) = (1, 1_661_616 + i as u64 * 999_000_000_000);
            (l.dispatch_local, l.dispatch_llc_steal) = (9_999_999, 999_999);
            (l.dispatch_remote_steal, l.pulls) = (99_999, 999_999);
            (l.wakeq_enqueued, l.wakeq_waits, l.wakeq_wait_ns) = (999_999, 1, 99_999_000);
            l.wakeq_wait_hist = vec![1; 32];
            m.llcs.insert(i, l);
        }
        m
    }

    #[test]
    fn the_table_fits_160_columns() {
        let table = busy().table();
        for row in table.lines() {
            assert!(row.len() <= TABLE_WIDTH, "{} columns: {row}", row.len());
        }
        let rows: Vec<Vec<_>> = table
            .lines()
            .map(|l| l.split(['|', ' ']).filter(|w| !w.is_empty()).collect())
            .collect();
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{table}");
    }

    #[test]
    fn compact_counts_keep_to_six_characters() {
        assert_eq!(compact(99_999.0), "99999");
        assert_eq!(compact(123_456.0), "123K");
        assert_eq!(compact(1_661_616.0), "1.7M");
        assert_eq!(compact(999_000_000_000.0), "999.0G");
    }

    #[test]
    fn the_log_line_sums_the_llcs() {
        let mut m = Metrics {
            secs: 2.0,
            ..Default::default()
        };
        let mut a = llc(200, 100, vec![]);
        (a.util_pct, a.nr_scan, a.migrations) = (50.0, 2, 10);
        let mut b = llc(600, 0, vec![]);
        (b.util_pct, b.nr_scan, b.migrations) = (100.0, 8, 30);
        b.paths.insert("fallback".into(), 600);
        m.llcs.insert(0, a);
        m.llcs.insert(1, b);
        let line = m.line();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.starts_with("[scx_sis] wake/s 400 migr/s 20 util 75% nr_scan 2-8 "),
            "{line}"
        );
        // 100 of 800 wakeups by prev_idle, 600 by fallback.
        assert!(
            line.contains(" prev 12.5 ") && line.contains(" fall 75.0 "),
            "{line}"
        );
    }

    #[test]
    fn quantile_reports_the_bucket_upper_bound() {
        // 98 calls in [256, 512), 2 in [4K, 8K): p50 <= 512, p99 <= 8K.
        let mut hist = vec![0; 32];
        hist[8] = 98;
        hist[12] = 2;
        let m = llc(100, 0, hist);
        assert_eq!(m.select_ns_quantile(0.5), 512);
        assert_eq!(m.select_ns_quantile(0.99), 8192);
        assert_eq!(llc(0, 0, vec![0; 32]).select_ns_quantile(0.99), 0);
    }

    #[test]
    fn histogram_looks_like_bpftrace() {
        let mut hist = vec![0; 32];
        hist[9] = 10;
        hist[10] = 5;
        let out = bpftrace_hist(&hist);
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("[512, 1K)"), "{out}");
        assert!(lines[1].starts_with("[1K, 2K)"), "{out}");
        assert_eq!(lines[0].matches('@').count(), 52);
        assert_eq!(lines[1].matches('@').count(), 26);
        assert_eq!(bpftrace_hist(&[0; 4]), "(no samples)\n");
    }
}
