//! `iostack`: the command line. The only crate that touches files and the
//! environment; everything below it is a pure function of its inputs. The
//! commands live in the `iostack_cli` library.

use iostack_cli::{commands, out};
use std::process::ExitCode;

/// The status a shell shows for a process killed by SIGPIPE (128 + 13); used when
/// the reader of standard output went away, as `head` does.
const CLOSED_STDOUT: u8 = 141;

fn main() -> ExitCode {
    let argv: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect();
    let argv = match argv {
        Ok(v) => v,
        Err(bad) => {
            let bad = bad.to_string_lossy();
            out::stderr(&format!("iostack: argument '{bad}' is not valid UTF-8\n"));
            return ExitCode::from(2);
        }
    };
    match commands::dispatch(&argv) {
        Ok(code) => code,
        Err(out::CliError::ClosedStdout) => ExitCode::from(CLOSED_STDOUT),
        Err(e) => {
            out::stderr(&format!("iostack: {e}\n"));
            ExitCode::from(2)
        }
    }
}
