//! What both of the crate's programs, scx_sis and scx_sis_lab, do at their edges: read the
//! command line, where a usage error is one line, and end a failure with one error line.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

/// The parsed command line; on a usage error print "NAME: <clap's first line>" and exit 2.
/// --help, --version and the help shown for a missing subcommand print as clap prints them.
pub fn parse_args<P: Parser>(name: &str) -> P {
    match P::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if e.use_stderr()
                && e.kind() != ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("{name}: {first}");
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    }
}

/// The exit status of a run; a failure is printed as "NAME: error: <the whole chain>".
pub fn exit_code(name: &str, result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
