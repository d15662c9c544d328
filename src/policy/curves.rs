//! SIS_UTIL scan-depth curves: how many CPUs a wakeup may scan for an idle
//! one, given the LLC's summed utilization. The BPF side looks the answer up
//! in tables built here, so this file is the curves' only implementation.

use crate::bpf_intf;
use crate::policy::Curve;

/// Utilization resolution of the tables: util is looked up in 1/STEPS steps.
pub const STEPS: usize = bpf_intf::sis_limits_SIS_UTIL_STEPS as usize;

/// The scan depth for an LLC of `llc` CPUs whose utilization is `util_num/util_den`
/// of its total capacity.
pub fn nr_scan(curve: Curve, llc: u32, util_num: u64, util_den: u64) -> u32 {
    let llc64 = llc as u64;
    let util_num = util_num.min(util_den);
    match curve {
        Curve::Off => llc,
        // v2 of the RFC: nr = llc - (llc - 4) * 2 * util, floor 4 (or the LLC if smaller).
        Curve::Linear => {
            let floor = llc64.min(4);
            let cut = (llc64.saturating_sub(4) * 2 * util_num) / util_den;
            llc64.saturating_sub(cut).max(floor) as u32
        }
        // As merged in v6.0: nr = llc * (1 - (x / 0.85)^2), none at or above 85%.
        // In integers: x/0.85 = 100*num / (85*den). Rounded to nearest, not down:
        // the kernel scans nr_idle_scan + 1, so a nearly idle LLC is scanned whole.
        Curve::Quadratic => {
            let full = (85 * util_den as u128).pow(2);
            let used = (100 * util_num as u128).pow(2);
            if used >= full {
                0
            } else {
                ((llc64 as u128 * (full - used) + full / 2) / full) as u32
            }
        }
    }
}

/// One row of the BPF lookup table: nr_scan at util = step/STEPS, step = 0..=STEPS.
pub fn table_row(curve: Curve, llc: u32) -> [u16; STEPS + 1] {
    let mut row = [0u16; STEPS + 1];
    for (step, slot) in row.iter_mut().enumerate() {
        *slot = nr_scan(curve, llc, step as u64, STEPS as u64) as u16;
    }
    row
}

/// The curve's index in the BPF tables (enum sis_curve).
pub fn curve_index(curve: Curve) -> u32 {
    match curve {
        Curve::Off => bpf_intf::sis_curve_SIS_CURVE_OFF,
        Curve::Linear => bpf_intf::sis_curve_SIS_CURVE_LINEAR,
        Curve::Quadratic => bpf_intf::sis_curve_SIS_CURVE_QUADRATIC,
    }
}

pub fn curve_from_index(idx: u32) -> Option<Curve> {
    [Curve::Off, Curve::Linear, Curve::Quadratic]
        .into_iter()
        .find(|c| curve_index(*c) == idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PCTS: [u64; 5] = [0, 25, 50, 85, 100];
    const SIZES: [u32; 3] = [4, 8, 64];

    fn at(curve: Curve, llc: u32, pct: u64) -> u32 {
        nr_scan(curve, llc, pct, 100)
    }

    #[test]
    fn off_always_scans_the_whole_llc() {
        for llc in SIZES {
            for pct in PCTS {
                assert_eq!(at(Curve::Off, llc, pct), llc);
            }
        }
    }

    #[test]
    fn linear_matches_the_rfc_formula() {
        // llc 4: (llc-4) = 0, so always 4.
        assert_eq!(PCTS.map(|p| at(Curve::Linear, 4, p)), [4, 4, 4, 4, 4]);
        // llc 8: 8 - 4*2*u -> 8, 6, 4, then the floor of 4.
        assert_eq!(PCTS.map(|p| at(Curve::Linear, 8, p)), [8, 6, 4, 4, 4]);
        // llc 64: 64 - 60*2*u -> 64, 34, 4, floor 4.
        assert_eq!(PCTS.map(|p| at(Curve::Linear, 64, p)), [64, 34, 4, 4, 4]);
    }

    #[test]
    fn quadratic_matches_the_merged_formula() {
        // nr = round(llc * (1 - (u/0.85)^2)): u=25% -> 0.9135, u=50% -> 0.6540, u>=85% -> 0.
        assert_eq!(PCTS.map(|p| at(Curve::Quadratic, 4, p)), [4, 4, 3, 0, 0]);
        assert_eq!(PCTS.map(|p| at(Curve::Quadratic, 8, p)), [8, 7, 5, 0, 0]);
        assert_eq!(
            PCTS.map(|p| at(Curve::Quadratic, 64, p)),
            [64, 58, 42, 0, 0]
        );
    }

    #[test]
    fn curves_never_grow_with_load() {
        for curve in [Curve::Off, Curve::Linear, Curve::Quadratic] {
            for llc in SIZES {
                let row = table_row(curve, llc);
                assert!(row.windows(2).all(|w| w[0] >= w[1]), "{curve:?} llc {llc}");
                assert_eq!(row[0] as u32, llc);
            }
        }
    }

    #[test]
    fn linear_never_goes_below_four() {
        for llc in SIZES {
            assert!(table_row(Curve::Linear, llc).iter().all(|&n| n >= 4));
        }
    }

    #[test]
    fn index_round_trips() {
        for curve in [Curve::Off, Curve::Linear, Curve::Quadratic] {
            assert_eq!(curve_from_index(curve_index(curve)), Some(curve));
        }
    }
}
