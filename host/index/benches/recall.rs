//! Recall benchmark: builds a synthetic workspace index (deterministic,
//! realistic-looking memories), then prints ingest rate, size on disk, RSS
//! and p50/p99 latency of lexical-only and hybrid search over 1,000 queries,
//! plus raw embedding throughput.
//!
//! `cargo bench -p mem-index --bench recall` (MEM_BENCH_DOCS=100000 for the
//! issue's full size). Uses the active embedding model when installed
//! (`mem-host model install`); without one only the lexical lane is timed.

use mem_core::index::{Embedder, IndexDoc, SearchFilters, SearchIndex, SearchRequest, SourceKind};
use mem_index::{LazyEmbedder, NativeIndex};
use mem_models as models;
use std::sync::Arc;
use std::time::Instant;

const SUBJECTS: &[&str] = &[
    "the deploy pipeline",
    "our staging cluster",
    "the billing service",
    "Melanie's garden",
    "the quarterly review",
    "the onboarding doc",
    "Caroline's painting class",
    "the database migration",
    "the mobile app",
    "the hiring plan",
    "the offsite in Lisbon",
    "the search index",
    "the customer escalation",
    "the marathon training",
    "the book club",
];
const VERBS: &[&str] = &[
    "was moved to",
    "needs a review before",
    "failed twice during",
    "should be finished by",
    "was discussed at",
    "depends on",
    "got much faster after",
    "is blocked by",
    "was approved during",
    "will be revisited after",
];
const OBJECTS: &[&str] = &[
    "the Friday release",
    "the team retro",
    "the security audit",
    "a long weekend",
    "the vendor call",
    "the new rollback plan",
    "the design sync",
    "Tuesday's standup",
    "the budget meeting",
    "the summer holidays",
];
const DETAILS: &[&str] = &[
    "according to the notes",
    "and nobody objected",
    "because of the outage",
    "with two reviewers",
    "as agreed with the client",
    "pending legal sign-off",
    "after a long debate",
    "which surprised everyone",
];

/// xorshift: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.next() % xs.len()]
    }
}

fn sentence(r: &mut Rng) -> String {
    format!(
        "{} {} {} {}.",
        r.pick(SUBJECTS),
        r.pick(VERBS),
        r.pick(OBJECTS),
        r.pick(DETAILS)
    )
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let n: usize = std::env::var("MEM_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let embedder: Option<Arc<dyn Embedder>> = match models::active_files() {
        Ok(files) => Some(Arc::new(LazyEmbedder::new(files, Default::default()))),
        Err(why) => {
            println!("note: {why}");
            None
        }
    };
    let ix = NativeIndex::open(dir.path(), embedder.clone(), Some("no model".into()))
        .expect("open index");
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let started = Instant::now();
    let mut batch = Vec::new();
    for i in 0..n {
        let text = format!(
            "{} {}",
            sentence(&mut rng),
            if i % 3 == 0 {
                sentence(&mut rng)
            } else {
                String::new()
            }
        );
        batch.push(IndexDoc {
            doc_id: format!("mem_{i:08}"),
            record_id: format!("mem_{i:08}"),
            source: SourceKind::Memory,
            text,
            path: format!("/team/{}", i % 20),
            kind: ["fact", "decision", "note", "observation"][i % 4].into(),
            tags: vec![],
            agent_id: Some(["claude", "codex"][i % 2].into()),
            lifecycle: "active".into(),
            created_at_ms: 1_700_000_000_000 + i as i64 * 60_000,
            event_at_ms: None,
            locator: None,
            context: None,
        });
        if batch.len() == 256 {
            ix.upsert(std::mem::take(&mut batch)).expect("upsert");
        }
    }
    ix.upsert(batch).expect("upsert");
    ix.commit(n as u64).expect("commit");
    ix.flush().expect("flush");
    let ingest = started.elapsed().as_secs_f64();
    let stats = ix.stats();
    println!(
        "documents: {n}  (model: {})",
        stats.model.as_deref().unwrap_or("none")
    );
    println!(
        "ingest: {:.0} memories/s ({ingest:.1} s)",
        n as f64 / ingest
    );
    println!(
        "index size: lexical {:.1} MiB, vectors {:.1} MiB",
        stats.lexical_bytes as f64 / 1048576.0,
        stats.vector_bytes as f64 / 1048576.0
    );
    let queries: Vec<String> = (0..1000)
        .map(|i| match i % 3 {
            0 => format!("what happened with {}", rng.pick(SUBJECTS)),
            1 => format!("{} {}", rng.pick(OBJECTS), rng.pick(DETAILS)),
            _ => format!("when is {}", rng.pick(OBJECTS)),
        })
        .collect();
    for (label, semantic) in [("lexical-only", false), ("hybrid", true)] {
        if semantic && embedder.is_none() {
            println!("{label}: skipped (no model)");
            continue;
        }
        let mut lat = Vec::with_capacity(queries.len());
        for (i, q) in queries.iter().enumerate() {
            let filters = if i % 4 == 0 {
                SearchFilters {
                    path: Some("/team/3".into()),
                    ..Default::default()
                }
            } else {
                SearchFilters::default()
            };
            let t = Instant::now();
            let r = ix
                .search(&SearchRequest {
                    query: q.clone(),
                    filters,
                    limit: 10,
                    semantic,
                    period: None,
                })
                .expect("search");
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(!r.hits.is_empty(), "query {q:?} found nothing");
        }
        println!(
            "{label}: p50 {:.2} ms, p99 {:.2} ms over {} queries",
            pct(lat.clone(), 0.5),
            pct(lat, 0.99),
            queries.len()
        );
    }
    if let Some(e) = &embedder {
        let texts: Vec<String> = (0..512).map(|_| sentence(&mut rng)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let t = Instant::now();
        e.embed(&refs).expect("embed");
        println!(
            "embedding throughput: {:.0} sentences/s",
            refs.len() as f64 / t.elapsed().as_secs_f64()
        );
    }
    println!("RSS: {:.0} MiB", rss_mib());
}
