//! What both of the crate's programs, scx_sis and scx_sis_lab, do at their edges: read the
//! command line, and end a failure with one error line and the exit status of its cause.

use std::process::ExitCode;

use clap::Parser;

use crate::process::exit::Cause;

/// The parsed command line. A usage error prints clap's whole message (the possible values, a
/// similar flag's name, the usage line) and exits with clap's status, 2 (exit::Cause::Usage);
/// --help and --version print as clap prints them.
pub fn parse_args<P: Parser>() -> P {
    P::parse()
}

/// The exit status of a run, by its cause (exit::TABLE); a failure is printed as
/// "NAME: error: <the whole chain>".
pub fn exit_code(name: &str, result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}{name}: error: {e:#}", ERR.prefix());
            ExitCode::from(Cause::of(&e).code())
        }
    }
}

/// A line's priority as the journal reads it (sd-daemon(3)'s "<N>" prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority(u8);

pub const ERR: Priority = Priority(3);
pub const WARNING: Priority = Priority(4);

impl Priority {
    /// "<N>" when stderr is the journal, so that `journalctl -p err` finds errors and `-p
    /// warning` warnings; nothing on a terminal or in a file, where it would be noise.
    pub fn prefix(self) -> String {
        if stderr_is_journal() {
            format!("<{}>", self.0)
        } else {
            String::new()
        }
    }
}

/// Whether stderr is the stream systemd connected to the journal: $JOURNAL_STREAM names its
/// device and inode ("DEV:INO"), and a child that inherited the variable with stderr redirected
/// elsewhere must not prefix (systemd.exec(5)).
fn stderr_is_journal() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(stream) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() else {
        return false;
    };
    let Ok(m) = std::fs::File::from(fd).metadata() else {
        return false;
    };
    journal_stream_is(&stream, m.dev(), m.ino())
}

use std::os::fd::AsFd;

fn journal_stream_is(var: &str, dev: u64, ino: u64) -> bool {
    var.split_once(':')
        .and_then(|(d, i)| Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?)))
        == Some((dev, ino))
}

/// SIGPIPE back to its default, for commands whose output may go to a reader that stops early
/// (`| head`): the process ends quietly, as other Unix tools do, instead of failing a write with
/// EPIPE. Not for the scheduler (its stderr may be a journal that restarts) nor for a trace
/// (which must switch the trace off before it ends).
pub fn die_on_broken_pipe() {
    // SAFETY: resetting a signal's disposition to its default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_stream_journal_stream_names_is_the_journal() {
        assert!(journal_stream_is("8:12345", 8, 12345));
        assert!(!journal_stream_is("8:12345", 8, 12346));
        assert!(!journal_stream_is("", 8, 12345));
        assert!(!journal_stream_is("8", 8, 12345));
    }
}
