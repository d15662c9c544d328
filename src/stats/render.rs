//! The stats as text for a terminal: the per-LLC table the daemon and `monitor` print, and the
//! select_cpu cost histogram drawn like bpftrace's hist().

use std::fmt::Write as _;

use super::{LlcMetrics, Metrics};

impl Metrics {
    /// The per-LLC table, one row per LLC.
    pub fn table(&self) -> String {
        let secs = if self.secs > 0.0 { self.secs } else { 1.0 };
        let rate = |v: u64| v as f64 / secs;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<4} {:>4} {:>5} {:>4} {:>9} {:>7} | {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} | {:>6} {:>6} {:>5} | {:>6} {:>6} | {:>7} {:>6} {:>6} {:>6} | {:>6} {:>5} {:>7} {:>6}",
            "llc", "cpus", "util%", "scan", "wakeup/s", "migr/s",
            "sync", "prev", "almst", "core", "scan", "xllc", "fallb", "dfl",
            "depth", "tested", "hit%", "sel_ns", "p99",
            "local/s", "llc/s", "rem/s", "pull/s",
            "wq/s", "wq_q", "wait_us", "p99"
        );
        for (llc, m) in &self.llcs {
            let share = |name: &str| pct(m.path(name), m.wakeups);
            let avg = |total: u64, n: u64| if n == 0 { 0.0 } else { total as f64 / n as f64 };
            let _ = writeln!(
                out,
                "{:<4} {:>4} {:>5.0} {:>4} {:>9.0} {:>7.0} | {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>5.1} | {:>6.1} {:>6.1} {:>5.0} | {:>6.0} {:>6} | {:>7.0} {:>6.0} {:>6.0} {:>6.0} | {:>6.0} {:>5} {:>7.1} {:>6}",
                llc,
                m.cpus,
                m.util_pct,
                m.nr_scan,
                rate(m.wakeups),
                rate(m.migrations),
                share("sync"),
                share("prev_idle"),
                share("prev_almost_idle"),
                share("idle_core"),
                share("llc_scan"),
                share("cross_llc"),
                share("fallback"),
                share("kernel_dfl"),
                avg(m.scan_depth, m.scan_runs),
                avg(m.scan_visited, m.scan_runs),
                pct(m.scan_found, m.scan_runs),
                avg(m.select_ns, m.select_timed),
                pow2_label(m.select_ns_quantile(0.99)),
                rate(m.dispatch_local),
                rate(m.dispatch_llc_steal),
                rate(m.dispatch_remote_steal),
                // Lag pulls from the LLC and from other LLCs in one column; JSON has them apart.
                rate(m.pulls + m.pulls_remote),
                rate(m.wakeq_enqueued),
                m.wakeq_depth(),
                avg(m.wakeq_wait_ns, m.wakeq_waits) / 1000.0,
                pow2_label(log2_quantile(&m.wakeq_wait_hist, 0.99) / 1000),
            );
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
        let row0: Vec<_> = rows[1].split_whitespace().collect();
        assert_eq!(row0[0], "0");
        assert_eq!(row0[4], "100", "wakeups/s of 200 over 2 s: {table}");
        assert_eq!(row0[8], "50.0", "prev_idle share: {table}");
        let header: Vec<_> = rows[0].split_whitespace().collect();
        assert_eq!(header.len(), row0.len(), "{table}");
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
