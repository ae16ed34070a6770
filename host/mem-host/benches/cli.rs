//! End-to-end throughput and latency of the CLI on a real workspace.
//!
//! `cargo bench -p mem-host --bench cli` prints the figures the foundation
//! is judged by: bulk `remember --jsonl` throughput, recursive `put`
//! throughput, and `memory get` latency (whole process, as a user sees it).
//! Sizes can be changed with `MEM_BENCH_N` (default 10000).

mod common;

use common::{mem, percentile};
use std::io::Write;
use std::time::{Duration, Instant};

fn main() {
    let n: usize = std::env::var("MEM_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path().join("ws");
    mem(&ws, &["init", ws.to_str().expect("utf-8 path")]);

    // remember --jsonl
    let jsonl = tmp.path().join("memories.jsonl");
    let mut f = std::fs::File::create(&jsonl).expect("create jsonl");
    for i in 0..n {
        writeln!(
            f,
            r#"{{"content":"benchmark observation number {i} about project area {} and its owner","kind":"observation","path":"/bench/{}","idempotency_key":"bench-{i}"}}"#,
            i % 97,
            i % 10
        )
        .expect("write jsonl");
    }
    drop(f);
    let start = Instant::now();
    let out = mem(
        &ws,
        &["remember", "--jsonl", jsonl.to_str().expect("utf-8 path")],
    );
    let took = start.elapsed();
    let ids: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["memory"]["id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ids.len(), n, "every line landed");
    println!(
        "remember --jsonl: {n} memories in {:.2}s = {:.0} memories/s",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );

    // put --recursive of small files
    let tree = tmp.path().join("tree");
    for i in 0..n {
        let dir = tree.join(format!("d{}", i % 50));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join(format!("f{i}.txt")),
            format!("small file {i}\nline two\n"),
        )
        .expect("write file");
    }
    let start = Instant::now();
    mem(
        &ws,
        &[
            "put",
            tree.to_str().expect("utf-8 path"),
            "--recursive",
            "--to",
            "/tree",
        ],
    );
    let took = start.elapsed();
    println!(
        "put --recursive: {n} small files in {:.2}s = {:.0} files/s",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );

    // memory get latency, whole process
    let samples = 200.min(ids.len());
    let mut times: Vec<Duration> = Vec::with_capacity(samples);
    for id in ids
        .iter()
        .step_by((ids.len() / samples).max(1))
        .take(samples)
    {
        let start = Instant::now();
        mem(&ws, &["memory", "get", id]);
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "memory get (process start to exit, {} samples): p50 {:.1} ms, p99 {:.1} ms",
        times.len(),
        percentile(&times, 0.50).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3
    );
}
