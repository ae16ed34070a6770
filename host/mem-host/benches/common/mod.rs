//! Shared by the bench binaries: run the built CLI, start and stop its
//! server, a deterministic corpus, percentiles and the resources a process
//! uses. Each bench binary uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
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

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub const WORDS: &[&str] = &[
    "deploy",
    "rollback",
    "database",
    "migration",
    "schema",
    "index",
    "latency",
    "budget",
    "review",
    "release",
    "tuesday",
    "friday",
    "customer",
    "invoice",
    "payroll",
    "vendor",
    "kubernetes",
    "cluster",
    "node",
    "pod",
    "cache",
    "redis",
    "postgres",
    "backup",
    "restore",
    "incident",
    "pager",
    "oncall",
    "alert",
    "dashboard",
    "metric",
    "trace",
    "log",
    "token",
    "secret",
    "rotation",
    "certificate",
    "expiry",
    "domain",
    "dns",
    "proxy",
    "gateway",
    "queue",
    "worker",
    "retry",
    "timeout",
    "deadline",
    "sprint",
    "planning",
    "roadmap",
    "design",
    "api",
    "endpoint",
    "client",
    "server",
    "mobile",
    "android",
    "ios",
    "frontend",
    "backend",
    "test",
    "flaky",
    "coverage",
    "benchmark",
    "profile",
    "memory",
    "leak",
    "thread",
    "lock",
    "mutex",
    "owner",
    "team",
    "alice",
    "bob",
    "carol",
    "dave",
    "berlin",
    "london",
    "tokyo",
    "europe",
    "pricing",
    "discount",
    "contract",
    "renewal",
    "legal",
    "privacy",
    "gdpr",
    "audit",
    "policy",
];

/// Deterministic pseudo-random words (no dependency, same corpus each run).
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
    pub fn sentence(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[self.next() % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub fn env_usize(k: &str, default: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `VmHWM` (peak) and `VmRSS` (current) of a running process, in MiB.
pub fn rss_of(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// CPU time (user and system) a process has used so far, in seconds.
#[allow(unsafe_code)]
pub fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command (which may hold spaces) and its `)`:
    // utime and stime are the 14th and 15th fields, in clock ticks.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks as f64 / per_second
}

/// Runs `mem-host --workspace WS ARGS` to success, sampling its peak
/// resident set (`VmHWM`) while it runs; returns that peak in MiB.
pub fn mem_watching_rss(ws: &Path, args: &[&str]) -> f64 {
    let mut child = Command::new(BIN)
        .arg("--workspace")
        .arg(ws)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run mem-host");
    let mut peak = 0f64;
    loop {
        peak = peak.max(rss_of(child.id()).0);
        if let Some(status) = child.try_wait().expect("wait for mem-host") {
            assert!(status.success(), "mem-host {args:?} failed");
            return peak;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Bytes under `dir`, recursively.
pub fn du(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => du(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.len()),
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Stops `serve` as an owner would (SIGTERM: it finishes and flushes).
pub fn stop_server(mut server: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let _ = server.wait();
}

/// `mem-host serve` on a loopback port of its choosing, and its base URL.
pub fn start_server(ws: &Path) -> (std::process::Child, String) {
    let mut server = Command::new(BIN)
        .arg("--workspace")
        .arg(ws)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("MEM_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start serve");
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("listening on ").map(str::to_string))
        .expect("serve printed its address");
    std::thread::spawn(move || lines.for_each(drop));
    (server, base)
}

/// The `i`th memory of the benches' corpus (a remember request without its
/// idempotency key): 8–17 words, four kinds, twenty folders, seven agents.
pub fn corpus_memory(rng: &mut Lcg, i: usize) -> serde_json::Value {
    let words = 8 + rng.next() % 10;
    let kind = ["observation", "decision", "fact", "note"][i % 4];
    serde_json::json!({
        "content": format!("{} (note {i})", rng.sentence(words)),
        "kind": kind,
        "path": format!("/bench/{}", i % 20),
        "agent_id": format!("agent-{}", i % 7),
    })
}

/// Creates a token named `name` with `scopes` in `ws`; returns its secret.
pub fn token_secret(ws: &Path, name: &str, scopes: &str) -> String {
    let out = mem(ws, &["token", "create", "--name", name, "--scope", scopes]);
    serde_json::from_slice::<serde_json::Value>(&out).expect("token json")["secret"]
        .as_str()
        .expect("secret")
        .to_string()
}

/// An HTTP client that returns error statuses as answers.
pub fn http_agent() -> ureq::Agent {
    http_agent_waiting(Duration::from_secs(30))
}

/// An HTTP client that returns error statuses as answers and waits up to
/// `timeout` for each.
pub fn http_agent_waiting(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .into()
}
