//! Durations as progress lines show them: 4m05s, or 1h02m past an hour.

use std::time::Duration;

pub fn hms(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_then_hours() {
        assert_eq!(hms(Duration::from_secs(0)), "0m00s");
        assert_eq!(hms(Duration::from_secs(245)), "4m05s");
        assert_eq!(hms(Duration::from_secs(3600 + 150)), "1h02m");
    }
}
