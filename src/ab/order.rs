//! Which side each window runs: A and B in ABBA order (A B B A A B B A ...), so that a drift
//! of the load over the run (a warming cache, a growing backlog) falls on both sides alike: over
//! every four windows, the two sides' mean positions are the same.

use serde::{Deserialize, Serialize};

/// One of the two configurations under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    A,
    B,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// The side of window `i` (from 0): A, then B twice, then A twice, and so on.
pub fn side(i: usize) -> Side {
    // Windows pair up from the second: (1, 2) are B, (3, 4) A, (5, 6) B, ...
    if i.div_ceil(2).is_multiple_of(2) {
        Side::A
    } else {
        Side::B
    }
}

/// The sides of `rounds` rounds of one window a side: 2 x `rounds` windows.
pub fn windows(rounds: usize) -> impl Iterator<Item = Side> {
    (0..2 * rounds).map(side)
}

/// Whether window `i` begins with a switch of the tunables (and so with a settle): the first
/// window, and every window whose side differs from the one before.
pub fn switches_before(i: usize) -> bool {
    i == 0 || side(i) != side(i - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Side::{A, B};

    #[test]
    fn the_order_is_abba() {
        assert_eq!(windows(4).collect::<Vec<_>>(), [A, B, B, A, A, B, B, A]);
        let switches: Vec<usize> = (0..8).filter(|&i| switches_before(i)).collect();
        assert_eq!(
            switches,
            [0, 1, 3, 5, 7],
            "a switch only where the side changes"
        );
    }

    #[test]
    fn both_sides_run_as_often_and_a_linear_drift_falls_on_both_alike() {
        for rounds in 1..=20 {
            let sides: Vec<Side> = windows(rounds).collect();
            let count = |s: Side| sides.iter().filter(|&&x| x == s).count();
            assert_eq!((count(A), count(B)), (rounds, rounds), "{rounds} rounds");
            // Even rounds: the sums of the positions of each side are equal, so a load that
            // grows by the same amount every window adds the same to both sides' means.
            if rounds % 2 == 0 {
                let at = |s: Side| -> usize {
                    (0..)
                        .zip(&sides)
                        .filter(|(_, &x)| x == s)
                        .map(|(i, _)| i)
                        .sum()
                };
                assert_eq!(at(A), at(B), "{rounds} rounds");
            }
        }
    }
}
