//! scx_sis's exit status by cause: one table, which `--help`, the README and the systemd unit's
//! `RestartPreventExitStatus=` follow, so that a service manager can tell a failure worth a
//! restart (a BPF error, a stall) from one a restart would only repeat (no root, another
//! scheduler loaded) or undo (an administrator's sysrq-S).

use std::fmt;

/// Why scx_sis ended. An error carries its cause in its chain (`Cause::of`); an error without
/// one is a `Failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Stopped by SIGINT or SIGTERM, or the command did what it was asked.
    Success,
    /// Anything below does not name it (an I/O error, a lost stats socket).
    Failure,
    /// The command line: clap's own status for a usage error.
    Usage,
    /// Not root, no sched_ext, no kernel config for libbpf, or the kernel (or libbpf) refused
    /// the BPF program.
    Unsupported,
    /// Another sched_ext scheduler, or another scx_sis, is loaded or loading.
    Busy,
    /// The kernel or an administrator ended the scheduler (sysrq-S, the kernel unregistered it).
    Ended,
    /// The scheduler failed in BPF: scx_bpf_error() or a task stalled past the watchdog.
    SchedulerError,
    /// The kernel asked for a restart (CPU hotplug) and the reload failed.
    RestartFailed,
    /// The pin directory is not root's alone (another owner, writable by others, a symlink), so
    /// whoever controls it could steer root's unlinks and the pins `tune` and `trace` trust.
    UnsafePinDir,
}

/// One row of the table.
pub struct Row {
    pub cause: Cause,
    pub code: u8,
    pub meaning: &'static str,
    /// Whether the service may restart after it: false for a cause a restart repeats or undoes.
    pub restart: bool,
}

/// The exit status of every cause: the contract with scripts and with the unit.
pub const TABLE: [Row; 9] = [
    Row {
        cause: Cause::Success,
        code: 0,
        meaning: "stopped by SIGINT or SIGTERM, or the command did what it was asked",
        restart: false,
    },
    Row {
        cause: Cause::Failure,
        code: 1,
        meaning: "any other failure (the message says which)",
        restart: true,
    },
    Row {
        cause: Cause::Usage,
        code: 2,
        meaning: "usage: a flag or value the command line does not take",
        restart: false,
    },
    Row {
        cause: Cause::Unsupported,
        code: 3,
        meaning: "not root, no sched_ext or kernel config, or the kernel refused the BPF program",
        restart: false,
    },
    Row {
        cause: Cause::Busy,
        code: 4,
        meaning: "another sched_ext scheduler (or scx_sis) is loaded",
        restart: false,
    },
    Row {
        cause: Cause::Ended,
        code: 5,
        meaning: "the kernel or an administrator ended the scheduler (sysrq-S)",
        restart: false,
    },
    Row {
        cause: Cause::SchedulerError,
        code: 6,
        meaning: "the scheduler failed: a BPF error (scx_bpf_error) or a stalled task",
        restart: true,
    },
    Row {
        cause: Cause::RestartFailed,
        code: 7,
        meaning: "the kernel asked for a restart (CPU hotplug) and the reload failed",
        restart: true,
    },
    Row {
        cause: Cause::UnsafePinDir,
        code: 8,
        meaning: "the pin directory /sys/fs/bpf/scx_sis is not root's alone: nothing was touched",
        restart: false,
    },
];

impl Cause {
    pub fn code(self) -> u8 {
        TABLE.iter().find(|r| r.cause == self).map_or(1, |r| r.code)
    }

    /// The cause an error carries (the outermost one tagged), else `Failure`.
    pub fn of(e: &anyhow::Error) -> Cause {
        e.chain()
            .find_map(|e| e.downcast_ref::<Tagged>())
            .map_or(Cause::Failure, |t| t.cause)
    }

    /// `e` tagged with this cause; its message and chain print as before.
    pub fn tag(self, e: anyhow::Error) -> anyhow::Error {
        anyhow::Error::new(Tagged {
            cause: self,
            error: e,
        })
    }

    /// A new error of this cause.
    pub fn error(self, msg: impl fmt::Display) -> anyhow::Error {
        self.tag(anyhow::anyhow!("{msg}"))
    }
}

/// Tag the error of a Result with a cause.
pub trait WithCause<T> {
    fn cause(self, cause: Cause) -> anyhow::Result<T>;
}

impl<T> WithCause<T> for anyhow::Result<T> {
    fn cause(self, cause: Cause) -> anyhow::Result<T> {
        self.map_err(|e| cause.tag(e))
    }
}

/// An error and its cause. It prints as the error's own message, and its source is the error's,
/// so `{:#}` shows the same chain as the untagged error.
#[derive(Debug)]
struct Tagged {
    cause: Cause,
    error: anyhow::Error,
}

impl fmt::Display for Tagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)
    }
}

impl std::error::Error for Tagged {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// The table as `scx_sis --help` ends: the codes a service does not restart after are marked
/// at the start of their line, where clap's wrapping at the terminal's width cannot split the
/// mark (scripts/check-package.sh reads it).
pub fn help() -> String {
    let mut s = String::from("Exit status:\n");
    for r in &TABLE {
        let mark = if r.code != 0 && !r.restart {
            "[no restart] "
        } else {
            ""
        };
        s.push_str(&format!("  {}  {mark}{}\n", r.code, r.meaning));
    }
    s
}

/// The codes the unit's RestartPreventExitStatus= lists: every failure a restart would repeat
/// or undo.
pub fn no_restart_codes() -> Vec<u8> {
    TABLE
        .iter()
        .filter(|r| r.code != 0 && !r.restart)
        .map(|r| r.code)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn every_cause_has_one_code_and_codes_are_distinct() {
        let mut codes: Vec<u8> = TABLE.iter().map(|r| r.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), TABLE.len());
        for r in &TABLE {
            assert_eq!(r.cause.code(), r.code);
        }
        assert_eq!(Cause::Success.code(), 0);
        assert_eq!(Cause::Failure.code(), 1);
    }

    #[test]
    fn usage_is_clap_own_status() {
        use clap::Parser;
        #[derive(Parser, Debug)]
        struct P {
            #[arg(long)]
            n: u32,
        }
        let e = P::try_parse_from(["p", "--n", "x"]).unwrap_err();
        assert_eq!(e.exit_code(), i32::from(Cause::Usage.code()));
    }

    #[test]
    fn a_cause_survives_context_and_keeps_the_message() {
        let e = Cause::Busy.error("another sched_ext scheduler is already loaded: scx_rusty");
        let e = Err::<(), _>(e).context("failed to start").unwrap_err();
        assert_eq!(Cause::of(&e), Cause::Busy);
        assert_eq!(
            format!("{e:#}"),
            "failed to start: another sched_ext scheduler is already loaded: scx_rusty"
        );
        let inner = anyhow::anyhow!("EACCES").context("failed to open the pin");
        let e = Cause::Unsupported.tag(inner);
        assert_eq!(format!("{e:#}"), "failed to open the pin: EACCES");
        assert_eq!(Cause::of(&anyhow::anyhow!("plain")), Cause::Failure);
    }

    #[test]
    fn help_marks_exactly_the_codes_the_unit_does_not_restart() {
        let help = help();
        for r in &TABLE {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{}  ", r.code)))
                .unwrap_or_else(|| panic!("--help lacks code {}", r.code));
            assert_eq!(
                line.contains("no restart"),
                no_restart_codes().contains(&r.code),
                "{line}"
            );
        }
        assert_eq!(no_restart_codes(), vec![2, 3, 4, 5, 8]);
    }

    #[test]
    fn the_readme_and_the_unit_follow_the_table() {
        let readme = include_str!("../../README.md");
        for r in &TABLE {
            let row = format!("| {} | {} |", r.code, r.meaning);
            assert!(readme.contains(&row), "README lacks the row: {row}");
        }
        let unit = include_str!("../../packaging/scx_sis.service");
        let prevent: Vec<u8> = unit
            .lines()
            .find_map(|l| l.strip_prefix("RestartPreventExitStatus="))
            .expect("the unit has RestartPreventExitStatus=")
            .split_whitespace()
            .map(|c| c.parse().expect("a numeric exit status"))
            .collect();
        assert_eq!(prevent, no_restart_codes());
    }
}
