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
            eprintln!("{name}: error: {e:#}");
            ExitCode::from(Cause::of(&e).code())
        }
    }
}
