//! Write and search throughput of the shared backend with one host and
//! with two `mem-host serve` processes on the same database.
//!
//! Needs PostgreSQL and an S3-compatible server (what `scripts/test`
//! starts): `eval "$(scripts/shared-backend start DIR)"`, then
//! `cargo bench -p mem-host --bench shared_hosts`, then
//! `scripts/shared-backend stop DIR`. `MEM_BENCH_WRITES` (default 2000)
//! remembers and `MEM_BENCH_SEARCHES` (default 2000) lexical searches are
//! spread over `MEM_BENCH_CLIENTS` (default 8) loopback clients, which
//! split evenly between the hosts.

mod common;

use common::{BIN, mem};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        eprintln!("{name} is not set: start the servers with `scripts/shared-backend start DIR` and eval its output");
        std::process::exit(2)
    })
}

fn run(ws: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&mem(ws, args)).to_string()
}

/// A host folder of the shared workspace in `schema`.
fn host_folder(root: &Path, n: usize, schema: &str) -> PathBuf {
    let dir = root.join(format!("host{n}"));
    std::fs::create_dir_all(&dir).expect("host folder");
    let text = format!(
        "[workspace]\nname = \"bench\"\n\n[store]\nbackend = \"postgres\"\nurl_env = \"MEM_TEST_PG_URL\"\nschema = \"{schema}\"\n\n\
         [blobs]\nbackend = \"s3\"\nbucket = \"{}\"\nendpoint = \"{}\"\nprefix = \"{schema}\"\n\
         access_key_env = \"MEM_TEST_S3_ACCESS_KEY_ID\"\nsecret_key_env = \"MEM_TEST_S3_SECRET_ACCESS_KEY\"\n",
        var("MEM_TEST_S3_BUCKET"),
        var("MEM_TEST_S3_ENDPOINT"),
    );
    std::fs::write(dir.join("mem.toml"), text).expect("mem.toml");
    run(&dir, &["init"]);
    dir
}

struct Host {
    child: Child,
    base: String,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Host {
    let mut child = Command::new(BIN)
        .env("MEM_HOME", dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("listening on ")
                .map(|a| a.trim().to_string())
        })
        .expect("serve did not start");
    std::thread::spawn(move || for _ in lines {});
    Host { child, base }
}

fn post(agent: &ureq::Agent, url: &str, secret: &str, key: Option<&str>, body: &str) -> u16 {
    let mut b = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("authorization", format!("Bearer {secret}"))
        .header("content-type", "application/json");
    if let Some(k) = key {
        b = b.header("idempotency-key", k);
    }
    match agent.run(b.body(body.as_bytes().to_vec()).expect("request")) {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

/// Request `n` against a host's base URL: (URL, idempotency key, body).
type MakeRequest = Arc<dyn Fn(usize, &str) -> (String, Option<String>, String) + Send + Sync>;

/// Runs `total` requests from `clients` threads spread over `bases`;
/// requests per second and how many failed.
fn drive(
    bases: &[String],
    clients: usize,
    total: usize,
    make: MakeRequest,
    secret: &str,
) -> (f64, usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let base = bases[c % bases.len()].clone();
            let (next, failed, make, secret) = (
                next.clone(),
                failed.clone(),
                make.clone(),
                secret.to_string(),
            );
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(60)))
                    .build()
                    .into();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        return;
                    }
                    let (path, key, body) = make(n, &base);
                    let status = post(&agent, &path, &secret, key.as_deref(), &body);
                    if !(200..300).contains(&status) {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    (
        total as f64 / t.elapsed().as_secs_f64(),
        failed.load(Ordering::Relaxed),
    )
}

fn main() {
    let writes = env_or("MEM_BENCH_WRITES", 2000);
    let searches = env_or("MEM_BENCH_SEARCHES", 2000);
    let clients = env_or("MEM_BENCH_CLIENTS", 8);
    let _ = var("MEM_TEST_PG_URL");
    let root = tempfile::tempdir().expect("temp dir");
    println!("shared backend: {writes} remembers, {searches} lexical searches, {clients} clients");
    println!(
        "{:>6} {:>12} {:>8} {:>12} {:>8}",
        "hosts", "writes/s", "failed", "searches/s", "failed"
    );
    for hosts in [1usize, 2] {
        let schema = format!("bench_{}_{hosts}", std::process::id());
        let dirs: Vec<PathBuf> = (0..hosts)
            .map(|n| host_folder(root.path(), n, &schema))
            .collect();
        let created = run(
            &dirs[0],
            &["token", "create", "--name", "bench", "--scope", "admin"],
        );
        let secret = serde_json::from_str::<serde_json::Value>(&created).expect("token")["secret"]
            .as_str()
            .expect("secret")
            .to_string();
        let running: Vec<Host> = dirs.iter().map(|d| serve(d)).collect();
        let bases: Vec<String> = running.iter().map(|h| h.base.clone()).collect();
        let (w, wf) = drive(
            &bases,
            clients,
            writes,
            Arc::new(move |n, base| {
                (
                    format!("{base}/v1/memories"),
                    Some(format!("bench-{n}")),
                    format!(
                        r#"{{"content":"benchmark note {n} about deploy window {}","kind":"fact","path":"/bench/{}"}}"#,
                        n % 97,
                        n % 13
                    ),
                )
            }),
            &secret,
        );
        let (s, sf) = drive(
            &bases,
            clients,
            searches,
            Arc::new(|n, base| {
                (
                    format!("{base}/v1/search"),
                    None,
                    format!(
                        r#"{{"query":"deploy window {}","lexical_only":true}}"#,
                        n % 97
                    ),
                )
            }),
            &secret,
        );
        println!("{hosts:>6} {w:>12.1} {wf:>8} {s:>12.1} {sf:>8}");
        drop(running);
    }
}
