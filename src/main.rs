//! The `retrysim` binary: parses the command line and hands over to the
//! library; maps errors to exit codes (2 invalid input, 1 anything else).

use std::process::ExitCode;

fn main() -> ExitCode {
    retrysim::cli::main()
}
