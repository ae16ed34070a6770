//! Plugin runtime costs: `cargo bench -p mem-runtime --bench plugins`.
//!
//! Prints, per first-party plugin, cold compile (install) vs warm load
//! from the on-disk cache (a reopened runtime's first call minus a warm
//! call); the per-call overhead (fresh store + instantiate + a trivial
//! `accepts`); processing 1 KiB and 1 MiB of Markdown through `text`; and
//! the `conflicts` detector comparing a new memory with 100 candidates (the
//! write path's relation check, once per remember).
//! Targets (issue 3): warm load < 20 ms, call overhead < 50 µs, 1 MiB <
//! 0.5 ms plus the plugin's own work.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mem_core::plugin::{DetectItem, FileInput, InstallOptions, PluginHost, PluginsConfig, World};
use mem_runtime::WasmPluginHost;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn markdown(bytes: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < bytes {
        i += 1;
        s.push_str(&format!("## Section {i}\n\nSome prose about topic {i}, with enough words to look real.\nA second line.\n\n"));
    }
    s.truncate(bytes);
    s.into_bytes()
}

/// A claim of 8 to 17 words drawn from a small vocabulary, so that some
/// candidates share words with the subject and most do not.
fn claim(seed: &mut u64, i: usize) -> DetectItem {
    const WORDS: &[&str] = &[
        "staging", "database", "runs", "postgres", "deploy", "friday", "cache", "redis", "timeout",
        "seconds", "service", "api", "limit", "requests", "minute", "team", "prefers", "tabs",
        "spaces", "build", "uses", "cargo", "release", "branch", "main", "review", "needs",
        "approval", "owner", "alice", "bob", "logs", "rotate", "daily", "backup", "nightly",
        "region", "eu", "west", "cluster", "nodes", "memory", "gb", "disk", "ssd", "latency", "ms",
        "queue", "workers", "retry", "policy", "not",
    ];
    let mut next = || {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as usize
    };
    let n = 8 + next() % 10;
    let mut words: Vec<String> = (0..n)
        .map(|_| WORDS[next() % WORDS.len()].to_string())
        .collect();
    words.push(format!("{}", next() % 64));
    DetectItem {
        id: format!("m{i}"),
        kind: "fact".into(),
        role: Some("assertion".into()),
        text: words.join(" "),
        path: "/bench".into(),
        tags: Vec::new(),
    }
}

fn open(dir: &std::path::Path) -> WasmPluginHost {
    let store = mem_store::SledStore::open(&dir.join("store")).expect("open store");
    WasmPluginHost::open(
        dir.join("plugins"),
        Arc::new(store),
        PluginsConfig::recommended(),
        None,
    )
    .expect("open runtime")
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    println!(
        "{:<12} {:>14} {:>14}",
        "plugin", "cold compile", "warm load"
    );
    let mut cold = Vec::new();
    {
        let host = open(dir.path());
        for p in mem_bundled::first_party() {
            let manifest = p.manifest().expect("manifest");
            let t = Instant::now();
            host.install(p.wasm, &manifest, InstallOptions::default())
                .expect("install");
            cold.push((p.name, t.elapsed()));
        }
    }
    let host = open(dir.path());
    for (name, cold_time) in cold {
        let t = Instant::now();
        host.preload(name).expect("preload");
        let warm = t.elapsed();
        println!(
            "{name:<12} {:>11.1} ms {:>11.2} ms",
            cold_time.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3
        );
    }
    let stats = host.load_stats();
    assert_eq!(
        stats.compiled, 0,
        "warm loads come from the cache: {stats:?}"
    );

    // Per-call overhead: fresh store + instantiate + `accepts` on a new MIME
    // type each time (so the accepts cache does not answer), which asks
    // every enabled processor.
    let config = PluginsConfig::recommended();
    let processors = mem_bundled::first_party()
        .iter()
        .filter(|p| {
            p.manifest().expect("manifest").world == World::Processor
                && config.settings(p.name).enabled
        })
        .count()
        .max(1) as u32;
    let mut samples = Vec::new();
    for i in 0..2000 {
        let mime = format!("application/x-bench-{i}");
        let t = Instant::now();
        let _ = host.processors_for(&mime).expect("processors_for");
        samples.push(t.elapsed());
    }
    println!(
        "call overhead (fresh store + trivial call): {:.1} µs median ({processors} processors asked a call)",
        median(samples).as_secs_f64() * 1e6 / f64::from(processors)
    );

    for size in [1024usize, 1024 * 1024] {
        let file = FileInput {
            id: "f".into(),
            path: "/bench.md".into(),
            name: "bench.md".into(),
            mime: "text/markdown".into(),
            bytes: markdown(size),
        };
        let runs = if size < 4096 { 500 } else { 20 };
        let mut samples = Vec::new();
        let mut chunks = 0;
        for _ in 0..runs {
            let t = Instant::now();
            chunks = host.process("text", &file).expect("process").chunks.len();
            samples.push(t.elapsed());
        }
        println!(
            "text, {:>7} bytes: {:>9.3} ms median ({chunks} chunks)",
            size,
            median(samples).as_secs_f64() * 1e3
        );
    }

    let mut seed = 11;
    let subject = claim(&mut seed, 0);
    let candidates: Vec<DetectItem> = (1..=100).map(|i| claim(&mut seed, i)).collect();
    let mut samples = Vec::new();
    let mut found = 0;
    for _ in 0..300 {
        let t = Instant::now();
        found = host
            .detect("conflicts", &subject, &candidates)
            .expect("detect")
            .len();
        samples.push(t.elapsed());
    }
    println!(
        "conflicts, 1 memory vs 100 candidates: {:.3} ms median ({found} relations)",
        median(samples).as_secs_f64() * 1e3
    );
}
