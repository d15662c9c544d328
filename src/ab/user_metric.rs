//! The user's metric: a command run at the end of each window (`--metric-cmd`) and a regex
//! (`--metric 'LABEL[:higher]=REGEX'`) whose last match in its output scores the window: an
//! application's p99 from its own endpoint, a counter file, anything that prints a number.

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use regex::Regex;

use crate::verdict::Better;

pub struct UserMetric {
    pub command: String,
    pub label: String,
    pub better: Better,
    regex: Regex,
}

/// The number `re` finds in `out`: its last match's first group if it has one, else the whole
/// match, with thousands separators dropped.
pub fn last_number(re: &Regex, out: &str) -> Option<f64> {
    let c = re.captures_iter(out).last()?;
    let text = c.get(1).or_else(|| c.get(0))?.as_str();
    text.trim().replace(',', "").parse().ok()
}

/// Labels the scheduler's measures take: a user metric may not shadow one.
fn reserved(label: &str) -> bool {
    super::window::MEASURES.iter().any(|m| m.key == label)
}

impl UserMetric {
    /// `spec` is `LABEL[:higher|:lower]=REGEX` (lower is better unless it says higher).
    pub fn new(command: &str, spec: &str) -> Result<Self> {
        let usage = || format!("--metric '{spec}': expected 'LABEL[:higher|:lower]=REGEX'");
        let (left, regex) = spec.split_once('=').with_context(usage)?;
        let (label, better) = match left.rsplit_once(':') {
            Some((l, "higher")) => (l, Better::Higher),
            Some((l, "lower")) => (l, Better::Lower),
            Some(_) => bail!(usage()),
            None => (left, Better::Lower),
        };
        let label = label.trim();
        if label.is_empty() || label.contains(char::is_whitespace) || reserved(label) {
            bail!(
                "--metric '{spec}': the label must be one word, and not one of the scheduler's \
                 measures"
            );
        }
        let regex = Regex::new(regex).with_context(|| format!("--metric {label}: not a regex"))?;
        if command.trim().is_empty() {
            bail!("--metric-cmd: no command");
        }
        Ok(UserMetric {
            command: command.to_string(),
            label: label.to_string(),
            better,
            regex,
        })
    }

    pub fn extract(&self, out: &str) -> Option<f64> {
        last_number(&self.regex, out)
    }

    /// Run the command (`sh -c`, stdout then stderr searched) and score its output. A command
    /// that outlasts `limit`, or a stop asked for meanwhile, is killed with its process group
    /// and scores nothing, as does output without a match.
    pub fn score(&self, limit: Duration, stop: &AtomicBool) -> Result<Option<f64>> {
        let mut out = tempfile::tempfile()?;
        let mut err = tempfile::tempfile()?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(err.try_clone()?)
            // Its own group, so that a command stopped for taking too long takes its children.
            .process_group(0)
            .spawn()
            .with_context(|| format!("failed to run --metric-cmd '{}'", self.command))?;
        let started = Instant::now();
        let done = loop {
            if child.try_wait()?.is_some() {
                break true;
            }
            if started.elapsed() >= limit || stop.load(Ordering::Relaxed) {
                // SAFETY: kill(2) on the process group this process just created.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !done {
            return Ok(None);
        }
        let mut text = String::new();
        for f in [&mut out, &mut err] {
            use std::io::Seek as _;
            f.rewind()?;
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        Ok(self.extract(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_names_a_label_a_direction_and_a_regex() {
        let m = UserMetric::new("true", "p99_ms=p99: ([0-9.]+)").unwrap();
        assert_eq!((m.label.as_str(), m.better), ("p99_ms", Better::Lower));
        let m = UserMetric::new("true", "ops:higher=([0-9,]+) ops").unwrap();
        assert_eq!((m.label.as_str(), m.better), ("ops", Better::Higher));
        assert_eq!(m.extract("1,000 ops\n2,500 ops\n"), Some(2500.0));
        assert_eq!(m.extract("nothing"), None);
        let whole = UserMetric::new("true", "n=[0-9]+").unwrap();
        assert_eq!(whole.extract("a 1 b 22"), Some(22.0));
        for bad in [
            "no-equals",
            "x:sideways=1",
            "=1",
            "two words=1",
            "migrations=1",
            "x=(unclosed",
        ] {
            assert!(UserMetric::new("true", bad).is_err(), "{bad}");
        }
        assert!(UserMetric::new(" ", "x=1").is_err());
    }

    #[test]
    fn the_command_scores_by_its_last_match_and_a_slow_one_by_nothing() {
        let stop = AtomicBool::new(false);
        let m = UserMetric::new("echo 'lat 5'; echo 'lat 7' >&2", "lat=lat ([0-9]+)").unwrap();
        assert_eq!(m.score(Duration::from_secs(10), &stop).unwrap(), Some(7.0));
        let slow = UserMetric::new("sleep 30; echo 1", "x=[0-9]+").unwrap();
        let t0 = Instant::now();
        assert_eq!(slow.score(Duration::from_millis(200), &stop).unwrap(), None);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }
}
