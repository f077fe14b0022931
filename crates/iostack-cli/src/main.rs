//! `iostack`: the command line. The only crate that touches files and the
//! environment; everything below it is a pure function of its inputs.

mod args;
mod commands;
mod fio_out;
mod sinks;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match commands::dispatch(&argv) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("iostack: {e}");
            ExitCode::from(2)
        }
    }
}
