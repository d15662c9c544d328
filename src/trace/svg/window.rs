//! Which part of a trace the picture shows when none is asked for: the densest stretch of
//! migrations, short enough for its arrows to be told apart.

use crate::trace::event::{Event, Kind};

/// The default window's length, halved (down to MIN_WINDOW_NS) while its densest stretch holds
/// more than MAX_ARROWS migrations.
const WINDOW_NS: u64 = 20_000_000;
const MIN_WINDOW_NS: u64 = 500_000;
/// About 15 px between arrows on the plot's ~900 px, where each can still be told apart.
const MAX_ARROWS: usize = 60;

/// The window drawn when none is given: the densest stretch of migrations, of WINDOW_NS or
/// shorter until it holds at most MAX_ARROWS (a picture of a few hundred crossing arrows shows
/// nothing), starting a little before its first migration; without migrations, the trace's
/// first WINDOW_NS. None for an empty trace. (start, end) in the events' clock, ns.
pub fn default_window(events: &[Event]) -> Option<(u64, u64)> {
    let first = events.iter().map(|e| e.ts).min()?;
    let last = events.iter().map(|e| e.ts).max()? + 1;
    let mut migrations: Vec<u64> = events
        .iter()
        .filter(|e| e.kind == Kind::Run && e.migrated)
        .map(|e| e.ts)
        .collect();
    migrations.sort_unstable();
    if migrations.is_empty() {
        return Some((first, last.min(first + WINDOW_NS)));
    }
    let mut len = WINDOW_NS;
    let start = loop {
        // The migration that starts the stretch of `len` holding the most.
        let (mut best, mut best_n, mut j) = (0, 0, 0);
        for (i, &t) in migrations.iter().enumerate() {
            while j < migrations.len() && migrations[j] < t + len {
                j += 1;
            }
            if j - i > best_n {
                (best, best_n) = (i, j - i);
            }
        }
        if best_n <= MAX_ARROWS || len / 2 < MIN_WINDOW_NS {
            break migrations[best];
        }
        len /= 2;
    };
    let start = start.saturating_sub(len / 20).max(first);
    let end = (start + len).min(last);
    Some((end.saturating_sub(len).max(first), end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::chrome_trace::synth::*;
    use crate::trace::event::Cause;

    #[test]
    fn the_default_window_finds_the_densest_migrations() {
        // A lone migration at 1 ms, then 5 within 2 ms around 100 ms.
        let mut events = vec![run(1_000_000, 1, 1, 0, Cause::None, 0)];
        for i in 0..5 {
            events.push(run(
                100_000_000 + i * 400_000,
                2,
                i as i32 % 2,
                2,
                Cause::None,
                0,
            ));
        }
        events.push(stop(200_000_000, 2, 0));
        let (a, b) = default_window(&events).unwrap();
        assert_eq!(b - a, WINDOW_NS);
        assert!(a <= 100_000_000 && b > 101_600_000, "{a} {b}");

        // Too many to tell apart: the window shrinks until it holds at most MAX_ARROWS.
        let dense: Vec<Event> = (0..400u64)
            .map(|i| {
                run(
                    i * 20_000,
                    3,
                    (i % 2) as i32,
                    ((i + 1) % 2) as i32,
                    Cause::None,
                    0,
                )
            })
            .collect();
        let (a, b) = default_window(&dense).unwrap();
        let held = dense.iter().filter(|e| e.ts >= a && e.ts < b).count();
        assert!(
            held <= MAX_ARROWS && b - a < WINDOW_NS,
            "{held} in {a}..{b}"
        );

        // No migrations: the first WINDOW_NS.
        let calm = vec![run(5, 1, 0, 0, Cause::None, 0), stop(50_000_000, 1, 0)];
        assert_eq!(default_window(&calm), Some((5, 5 + WINDOW_NS)));
    }
}
