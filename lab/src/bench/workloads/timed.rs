//! The workloads scored by the time they report themselves: hackbench (groups of sender and
//! receiver threads over pipes) and perf bench's sched messaging and sched pipe (two tasks
//! ping-pong, the pure wakeup path).

use anyhow::{Context, Result};
use scx_sis::verdict::Better;

use super::family::Family;
use crate::bench::model::metric::Metric;
use crate::bench::model::run_record::RunRecord;
use crate::bench::model::workload::{Exes, Sizing, Workload};

/// hackbench -g G -f 20 --threads --pipe -l L -s 100.
pub const HACKBENCH: Workload = Workload::named("hackbench");
/// perf bench sched messaging -t -p (threads, pipes).
pub const MESSAGING: Workload = Workload::named("messaging");
/// perf bench sched pipe.
pub const PIPE: Workload = Workload::named("pipe");

/// The workload's own time (hackbench "Time:", perf bench "Total time:").
pub const TIME: Metric = Metric::field("time s", 2, |r| r.time_s, Better::Lower);

pub struct Timed;

impl Family for Timed {
    fn workloads(&self) -> &'static [Workload] {
        &[HACKBENCH, MESSAGING, PIPE]
    }

    fn tools(&self, w: Workload) -> &'static [&'static str] {
        if w == HACKBENCH {
            &["hackbench"]
        } else {
            &[]
        }
    }

    fn command(&self, w: Workload, s: &Sizing, _: &Exes) -> Vec<String> {
        let (g, l, p) = (
            s.groups().to_string(),
            s.loops().to_string(),
            s.pipe_loops().to_string(),
        );
        let args: Vec<&str> = match w {
            HACKBENCH => vec![
                "hackbench",
                "-g",
                &g,
                "-f",
                "20",
                "--threads",
                "--pipe",
                "-l",
                &l,
                "-s",
                "100",
            ],
            MESSAGING => vec![
                "perf",
                "bench",
                "sched",
                "messaging",
                "-t",
                "-p",
                "-g",
                &g,
                "-l",
                &l,
            ],
            _ => vec!["perf", "bench", "sched", "pipe", "-l", &p],
        };
        args.into_iter().map(String::from).collect()
    }

    fn expected_secs(&self, _: Workload, s: &Sizing) -> f64 {
        let q = if s.quick { 0.2 } else { 1.0 };
        10.0 * q * s.work
    }

    fn parse(&self, r: &mut RunRecord, stdout: &str) -> Result<()> {
        if r.workload == HACKBENCH {
            r.time_s = parse_hackbench(stdout);
            r.time_s
                .with_context(|| format!("no 'Time:' in hackbench's output: {}", stdout.trim()))?;
        } else {
            r.time_s = parse_perf_bench(stdout);
            r.time_s.with_context(|| {
                format!("no 'Total time:' in perf bench's output: {}", stdout.trim())
            })?;
        }
        Ok(())
    }

    fn scores(&self, _: Workload) -> Vec<Metric> {
        vec![TIME]
    }

    fn columns(&self, _: Workload) -> Vec<Metric> {
        vec![TIME]
    }
}

/// hackbench's "Time: 1.585".
fn parse_hackbench(out: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Time:"))
        .and_then(|v| v.trim().parse().ok())
}

/// perf bench's " Total time: 0.744 [sec]".
fn parse_perf_bench(out: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Total time:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hackbench_time() {
        let out = "Running in threaded mode with 2 groups using 40 file descriptors each \
                   (== 80 tasks)\nEach sender will pass 300 messages of 100 bytes\nTime: 9.585\n";
        assert_eq!(parse_hackbench(out), Some(9.585));
        assert_eq!(parse_hackbench("Time: soon\n"), None);
        assert_eq!(parse_hackbench(""), None);
    }

    #[test]
    fn perf_bench_total_time() {
        let messaging = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver threads \
                         per group\n# 2 groups == 80 threads run\n\n     Total time: 1.410 [sec]\n";
        assert_eq!(parse_perf_bench(messaging), Some(1.41));
        let pipe = "# Running 'sched/pipe' benchmark:\n# Executed 5000 pipe operations between \
                    two processes\n\n     Total time: 0.716 [sec]\n\n     143.320200 usecs/op\n\
                    \n        6977 ops/sec\n";
        assert_eq!(parse_perf_bench(pipe), Some(0.716));
        assert_eq!(parse_perf_bench("nothing"), None);
    }

    #[test]
    fn commands_follow_the_sizing() {
        let s = |cpus, quick| Sizing {
            cpus,
            quick,
            work: 1.0,
        };
        let exes = Exes { lab: "", sched: "" };
        let cmd = |w, s| Timed.command(w, &s, &exes).join(" ");
        assert_eq!(
            cmd(HACKBENCH, s(8, false)),
            "hackbench -g 2 -f 20 --threads --pipe -l 300 -s 100"
        );
        assert_eq!(
            cmd(MESSAGING, s(32, true)),
            "perf bench sched messaging -t -p -g 8 -l 15"
        );
        assert_eq!(cmd(PIPE, s(8, false)), "perf bench sched pipe -l 40000");
    }
}
