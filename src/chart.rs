//! Arithmetic shared by the SVG pictures (the trace's, the bench's): coordinates rounded for
//! the file and axis tick steps that are round numbers.

/// A coordinate rounded to 0.1 px, which keeps the file small.
pub fn px(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The smallest of `mantissas` (each in [1, 10)) times a power of ten that cuts `span` into at
/// most `ticks` steps: with [1, 2, 5], a span of 20 in 8 ticks steps by 5. 1.0 for a span that
/// is not a positive number.
pub fn tick_step(span: f64, ticks: f64, mantissas: &[f64]) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / ticks;
    let pow = 10f64.powi(raw.log10().floor() as i32);
    mantissas
        .iter()
        .map(|m| m * pow)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * pow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_the_first_round_number_that_fits() {
        assert_eq!(tick_step(20.0, 8.0, &[1.0, 2.0, 5.0]), 5.0);
        assert_eq!(tick_step(80.0, 8.0, &[1.0, 2.0, 5.0]), 10.0);
        assert_eq!(tick_step(1.2, 5.0, &[1.0, 2.0, 2.5, 5.0]), 0.25);
        assert_eq!(tick_step(0.0, 5.0, &[1.0]), 1.0);
        assert_eq!(tick_step(f64::NAN, 5.0, &[1.0]), 1.0);
    }
}
