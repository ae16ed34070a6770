//! The semantic lane's graph settings, measured on real vectors.
//!
//! `cargo bench -p mem-index --bench graph` reads the vectors a workspace
//! saved (by default the serve bench's 100k workspace, so run
//! `cargo bench -p mem-host --bench serve` once first; `-- --from DIR`
//! names another `index/vectors` folder), builds a graph of `N` of them
//! (`-- --vectors N`, default 20000) on one thread with each setting, and
//! prints the cost of an insert and of a search, and recall@10 against an
//! exact scan, for 500 held-out vectors as queries. It compares the
//! settings in use ([`mem_index::graph_options`]) with the earlier ones, so
//! a change to either is measured, not guessed.

use std::path::PathBuf;
use std::time::Instant;
use usearch::{Index, IndexOptions, ScalarKind};

const QUERIES: usize = 500;
const TOP: usize = 10;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The saved keys and their vectors, widened to f32.
fn saved_vectors(dir: &std::path::Path, wanted: usize) -> Vec<Vec<f32>> {
    let keys = std::fs::read(dir.join("vectors.keys")).unwrap_or_else(|e| {
        eprintln!(
            "cannot read {}: {e}\nrun `cargo bench -p mem-host --bench serve` first \
             (it builds the 100k workspace), or pass --from DIR",
            dir.join("vectors.keys").display()
        );
        std::process::exit(2)
    });
    let path = dir.join("vectors.usearch");
    let meta = Index::metadata(path.to_str().expect("utf-8 path")).expect("vectors header");
    let dimensions = usize::try_from(meta.dimensions).expect("dimensions fit");
    let saved = Index::new(&mem_index::graph_options(dimensions)).expect("index");
    saved
        .view(path.to_str().expect("utf-8 path"))
        .expect("view the saved vectors");
    let mut out = Vec::with_capacity(wanted);
    for key in keys
        .chunks_exact(8)
        .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
    {
        if out.len() == wanted {
            break;
        }
        let mut v = vec![0f32; dimensions];
        if saved.get(key, &mut v).unwrap_or(0) > 0 {
            out.push(v);
        }
    }
    out
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    dot / (na.sqrt() * nb.sqrt()).max(f32::MIN_POSITIVE)
}

/// Each query's exact top ten among `base`, by position.
fn exact_top(base: &[Vec<f32>], queries: &[Vec<f32>]) -> Vec<Vec<u64>> {
    queries
        .iter()
        .map(|q| {
            let mut scored: Vec<(f32, u64)> = base
                .iter()
                .enumerate()
                .map(|(i, b)| (cosine(q, b), i as u64))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored.iter().take(TOP).map(|s| s.1).collect()
        })
        .collect()
}

fn measure(
    label: &str,
    opts: &IndexOptions,
    base: &[Vec<f32>],
    queries: &[Vec<f32>],
    truth: &[Vec<u64>],
) {
    let index = Index::new(opts).expect("index");
    index
        .reserve_capacity_and_threads(base.len(), 1)
        .expect("reserve");
    let started = Instant::now();
    for (i, v) in base.iter().enumerate() {
        index.add(i as u64, v).expect("add");
    }
    let insert_us = started.elapsed().as_secs_f64() * 1e6 / base.len() as f64;
    let started = Instant::now();
    let mut found = 0;
    for (q, want) in queries.iter().zip(truth) {
        let got = index.search(q, TOP).expect("search");
        found += got.keys.iter().filter(|k| want.contains(k)).count();
    }
    let search_us = started.elapsed().as_secs_f64() * 1e6 / queries.len() as f64;
    println!(
        "{label:<40} insert {insert_us:>7.0} us  search {search_us:>7.0} us  recall@{TOP} {:.4}",
        found as f64 / (queries.len() * TOP) as f64
    );
}

fn main() {
    let n: usize = arg("--vectors")
        .map(|v| v.parse().expect("--vectors N"))
        .unwrap_or(20_000);
    let dir = arg("--from").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-bench-100000/index/vectors")
    });
    let vectors = saved_vectors(&dir, n + QUERIES);
    assert!(
        vectors.len() > QUERIES,
        "{} holds {} vectors; more than {QUERIES} are needed",
        dir.display(),
        vectors.len()
    );
    let (base, queries) = vectors.split_at(vectors.len() - QUERIES);
    let truth = exact_top(base, queries);
    let dims = base[0].len();
    println!(
        "{} vectors of {dims} dimensions, {QUERIES} held-out queries, one thread",
        base.len()
    );
    let now = mem_index::graph_options(dims);
    let earlier = IndexOptions {
        quantization: ScalarKind::F16,
        expansion_add: 128,
        expansion_search: 128,
        ..now.clone()
    };
    let describe = |o: &IndexOptions| {
        format!(
            "{:?}, expansion {}/{}",
            o.quantization, o.expansion_add, o.expansion_search
        )
    };
    measure(
        &format!("in use: {}", describe(&now)),
        &now,
        base,
        queries,
        &truth,
    );
    measure(
        &format!("earlier: {}", describe(&earlier)),
        &earlier,
        base,
        queries,
        &truth,
    );
}
