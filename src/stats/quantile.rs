//! Quantiles of the log2 histograms BPF keeps (bucket i counts values in [2^i, 2^(i+1)) ns).

/// The value below which a share `q` of the histogram's samples fall, interpolated linearly
/// inside the bucket that holds it (a log2 bucket alone would only say "between 1 and 2 ms");
/// 0 for an empty histogram.
pub fn log2_hist_quantile(hist: &[u64], q: f64) -> f64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let want = (total as f64 * q.clamp(0.0, 1.0)).max(1.0);
    let mut seen = 0.0;
    for (i, &n) in hist.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let n = n as f64;
        if seen + n >= want {
            let lo = if i == 0 { 0.0 } else { (1u64 << i) as f64 };
            let hi = (1u64 << (i + 1)) as f64;
            return lo + (hi - lo) * (want - seen) / n;
        }
        seen += n;
    }
    (1u64 << hist.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_zero() {
        assert_eq!(log2_hist_quantile(&[0; 32], 0.5), 0.0);
    }

    #[test]
    fn interpolates_inside_the_bucket() {
        // 100 samples in [1024, 2048): the median is halfway through the bucket.
        let mut h = vec![0; 32];
        h[10] = 100;
        assert_eq!(log2_hist_quantile(&h, 0.5), 1536.0);
        assert_eq!(log2_hist_quantile(&h, 1.0), 2048.0);
    }

    #[test]
    fn p99_finds_the_tail_bucket() {
        let mut h = vec![0; 32];
        h[10] = 98;
        h[20] = 2;
        assert!(log2_hist_quantile(&h, 0.5) < 2048.0);
        let p99 = log2_hist_quantile(&h, 0.99);
        assert!((1048576.0..=2097152.0).contains(&p99), "{p99}");
    }
}
