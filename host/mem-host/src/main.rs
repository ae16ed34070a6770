//! mem-host: a local-first memory host for AI agents.
//!
//! The binary is thin: [`cli`] parses and renders, [`workspace`] opens the
//! folder and wires concrete backends into the one service layer.

mod cli;
mod client;
mod workspace;

use clap::Parser;
use clap::error::ErrorKind;
use cli::Format;
use cli::output::render_error;
use std::process::ExitCode;

/// glibc's allocator took about a tenth of a served search's CPU
/// (consolidating and splitting chunks as tantivy's scorers and the JSON
/// answers come and go across threads); mimalloc's thread-local pages do
/// the same work for less.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Data files `0600`, folders `0700`: everything this process creates is
/// private to the user, whichever library creates it.
#[allow(unsafe_code)]
fn restrict_umask() {
    // SAFETY: umask only swaps the process's file-mode mask; it cannot fail
    // and touches no memory.
    unsafe {
        libc::umask(0o077);
    }
}

/// `--format json` as written on the command line, for errors raised
/// before clap has parsed it.
fn format_from_args() -> Format {
    let args: Vec<String> = std::env::args().collect();
    let json = args
        .windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json")
        || std::env::var("MEM_FORMAT").is_ok_and(|v| v == "json");
    if json { Format::Json } else { Format::Human }
}

fn main() -> ExitCode {
    restrict_umask();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let err = mem_core::MemError::bad_request(e.kind().to_string())
                .with_hint("see `mem-host --help`")
                .with_details(serde_json::json!({ "usage": e.render().to_string() }));
            match format_from_args() {
                Format::Json => eprintln!("{}", render_error(Format::Json, &err)),
                Format::Human => {
                    let _ = e.print();
                }
            }
            return ExitCode::from(1);
        }
    };
    let format = cli.format;
    match cli::run(cli) {
        Ok(()) => ExitCode::from(cli::output::exit_status()),
        // The reader closed stdout: nothing to report, nobody to tell; the
        // status is the command's own (a BLOCK verdict still says so).
        Err(_) if cli::output::stdout_closed() => ExitCode::from(cli::output::exit_status()),
        Err(err) => {
            eprintln!("{}", render_error(format, &err));
            ExitCode::from(err.code.exit_code() as u8)
        }
    }
}
