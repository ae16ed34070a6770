//! Peak memory and throughput of storing one large file.
//!
//! `cargo bench -p mem-host --bench large_put` stores a 1 GiB file of
//! non-compressible bytes by path and another from stdin (a pipe) and
//! prints each process's peak RSS (from `wait4`'s rusage, exact rather
//! than sampled) beside the target: at most 100 MiB above an idle process
//! (`mem-host status`). `MEM_BENCH_PUT_MIB` changes the size (default 1024).

mod common;

use common::{BIN, mem};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;
/// The target: a large put costs at most this much above idle.
const TARGET_ABOVE_IDLE_MIB: f64 = 100.0;

/// Writes `mib` MiB of xorshift noise to `out`, one MiB at a time.
fn noise(out: &mut dyn Write, mib: u64, seed: u64) -> std::io::Result<()> {
    let mut x = seed | 1;
    let mut buf = vec![0u8; MIB as usize];
    for _ in 0..mib {
        for word in buf.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            word.copy_from_slice(&x.to_le_bytes());
        }
        out.write_all(&buf)?;
    }
    out.flush()
}

/// What one measured process did.
struct Run {
    took: Duration,
    peak_mib: f64,
    stdout: Vec<u8>,
}

/// Runs `mem-host --workspace WS --format json ARGS` to success and reaps
/// it with `wait4`, whose rusage holds that one process's peak RSS.
/// `feed` (if any) streams into its stdin from another thread.
#[allow(clippy::zombie_processes)] // reaped by `wait4`, which also reads its rusage
fn run(ws: &Path, args: &[&str], feed: Option<(u64, u64)>) -> Run {
    let out = tempfile::NamedTempFile::new().expect("stdout file");
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .arg("--workspace")
        .arg(ws)
        .args(["--format", "json"])
        .args(args)
        .stdin(if feed.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(out.reopen().expect("reopen stdout file"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run mem-host");
    let writer = child.stdin.take().zip(feed).map(|(stdin, (mib, seed))| {
        std::thread::spawn(move || noise(&mut BufWriter::new(stdin), mib, seed))
    });
    let (status, peak_kib) = wait4(child.id());
    let took = start.elapsed();
    if let Some(w) = writer {
        w.join().expect("feeder thread").expect("feed stdin");
    }
    assert!(
        status == 0,
        "mem-host {args:?} failed (wait status {status})"
    );
    Run {
        took,
        peak_mib: peak_kib as f64 / 1024.0,
        stdout: std::fs::read(out.path()).expect("read stdout"),
    }
}

/// Reaps `pid`: its wait status and peak RSS in KiB.
#[allow(unsafe_code)]
fn wait4(pid: u32) -> (i32, i64) {
    let pid = libc::pid_t::try_from(pid).expect("pid fits pid_t");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live, writable locals; the child is
        // ours and has not been waited for (std's `Child` is never waited).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return (status, usage.ru_maxrss);
        }
        let err = std::io::Error::last_os_error();
        assert!(
            err.kind() == std::io::ErrorKind::Interrupted,
            "wait4: {err}"
        );
    }
}

/// The stored file's size from `put`'s JSON output.
fn stored_size(stdout: &[u8]) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("put prints JSON");
    v["file"]["size"].as_u64().expect("put reports the size")
}

fn report(what: &str, r: &Run, mib: u64, idle: f64) {
    let above = r.peak_mib - idle;
    println!(
        "{what}: {mib} MiB in {:.2}s = {:.0} MiB/s; peak RSS {:.1} MiB, above idle: {above:.1} MiB (target < {TARGET_ABOVE_IDLE_MIB:.0} MiB){}",
        r.took.as_secs_f64(),
        mib as f64 / r.took.as_secs_f64(),
        r.peak_mib,
        if above < TARGET_ABOVE_IDLE_MIB {
            ""
        } else {
            " MISSED"
        }
    );
}

fn main() {
    let mib: u64 = std::env::var("MEM_BENCH_PUT_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&m| m > 0)
        .unwrap_or(1024);
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path().join("ws");
    mem(&ws, &["init", ws.to_str().expect("utf-8 path")]);
    // The default file size limit (256 MiB) is below what we store.
    let config = ws.join("mem.toml");
    let text = std::fs::read_to_string(&config).expect("read mem.toml");
    let limit = format!("max_file_bytes = {}", (mib + 1) * MIB);
    let text: Vec<String> = text
        .lines()
        .map(|l| match l.starts_with("max_file_bytes") {
            true => limit.clone(),
            false => l.to_string(),
        })
        .collect();
    std::fs::write(&config, text.join("\n") + "\n").expect("write mem.toml");

    let big = tmp.path().join("big.bin");
    let mut f = BufWriter::new(File::create(&big).expect("create big.bin"));
    noise(&mut f, mib, 0x9e37_79b9_7f4a_7c15).expect("write big.bin");
    drop(f);

    let idle = run(&ws, &["status"], None).peak_mib;
    println!("idle (`mem-host status`) peak RSS: {idle:.1} MiB");

    let big_arg = big.to_str().expect("utf-8 path");
    let by_path = run(&ws, &["put", big_arg, "--name", "big.bin"], None);
    assert_eq!(stored_size(&by_path.stdout), mib * MIB);
    report("put by path", &by_path, mib, idle);

    // Other bytes, so the store writes them rather than finding a duplicate.
    let from_stdin = run(&ws, &["put", "-", "--name", "piped.bin"], Some((mib, 42)));
    assert_eq!(stored_size(&from_stdin.stdout), mib * MIB);
    report("put from stdin", &from_stdin, mib, idle);
}
