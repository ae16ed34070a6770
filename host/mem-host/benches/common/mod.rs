//! Shared by the bench binaries: run the built CLI, take percentiles.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_mem-host");

/// Runs `mem-host --workspace WS --format json ARGS`; panics on failure.
pub fn mem(ws: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(BIN)
        .arg("--workspace")
        .arg(ws)
        .args(["--format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run mem-host");
    assert!(
        out.status.success(),
        "mem-host {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[allow(dead_code)] // not every bench binary takes percentiles
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}
