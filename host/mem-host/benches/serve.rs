//! Load on the REST search route from loopback clients.
//!
//! `cargo bench -p mem-host --bench serve` builds (once, then reuses) a
//! workspace of `MEM_BENCH_MEMORIES` memories (default 100000), starts
//! `mem-host serve`, and drives lexical search, hybrid search and context
//! packs for `MEM_BENCH_SECS` seconds (default 10) each at concurrency 1, 8
//! and 64, printing requests/s, p50, p99, errors, requests shed (503) and
//! whether answers under load equal the sequential ones, beside the
//! targets; then lexical and hybrid search from 8 clients while another
//! agent (its own token) remembers 20 memories a second, both sides'
//! figures; then the sequential p50/p99 of
//! lexical-only search, hybrid search, context packs and single remembers
//! over `MEM_BENCH_QUERIES` requests each (default 1000); then the
//! web page's memory ledger (first response after sign-in, then p50/p99;
//! target under 300 ms at 100k memories); then catalog and ledger pages
//! over REST (first and next page; target under 50 ms at 1M); then the
//! server's RSS and the workspace's size on disk, per memory, by where it
//! goes; then, with the server stopped, the cold CLI:
//! the wall time of whole `mem-host` processes for `memory get`, lexical
//! and hybrid `search` and `context` (median and worst of
//! `MEM_BENCH_COLD` runs each, default 9), beside their targets.
//!
//! `-- --memories N` sets the size (over `MEM_BENCH_MEMORIES`; 1M is a
//! manual run of hours here: `MEM_BENCH_DIR` puts the workspace outside
//! `target/`, and a stopped build resumes at its next chunk); `-- --cold`
//! runs only the cold CLI; `-- --browse` only the catalog and ledger pages;
//! `-- --rebuild` only the index rebuilt from the store (vectors kept, then
//! from nothing);
//! `-- --only WORD` runs only the load levels of the operations whose label has WORD
//! (`lexical`, `hybrid`, `context`; `writes`: the searches beside writes),
//! for profiling one; `-- --ledger`
//! times only the ledger (plain, filtered by a rare agent, and by pinned)
//! over a workspace built without embeddings, which is what makes 100k
//! memories buildable in minutes in the dev profile:
//! `cargo bench --profile dev -p mem-host --bench serve -- --ledger --memories 100000`.

mod common;

use common::{Lcg, corpus_memory, du, env_usize, http_agent, mem, mem_watching_rss, percentile};
use common::{cpu_of, rss_of, start_server, stop_server, token_secret};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the bench's workspaces live: `MEM_BENCH_DIR`, else cargo's
/// scratch folder for benches (a 1M-memory workspace takes hours to build
/// here; a folder outside `target/` survives `cargo clean`). Set but empty
/// counts as unset: taken as a path, it built a workspace in the current
/// folder.
fn bench_dir() -> PathBuf {
    std::env::var_os("MEM_BENCH_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from)
}

/// Memories ingested per `remember --jsonl` process while building.
const CHUNK: usize = 20_000;

/// How far an unfinished build got, kept in the workspace's `PROGRESS`
/// file after every chunk, so an interrupted build (hours at 1M) resumes
/// at its next chunk instead of starting again. A chunk cut short is sent
/// again whole: its memories carry idempotency keys, so the ones already
/// stored are not stored twice.
#[derive(Default)]
struct Progress {
    /// Memories stored (a multiple of [`CHUNK`], or `n`).
    done: usize,
    /// Wall seconds the earlier runs of this build spent ingesting (a
    /// run paused mid-chunk counts its pause).
    secs: f64,
    /// Peak RSS of an ingesting process so far, MiB.
    peak_rss: f64,
}

impl Progress {
    const FILE: &str = "PROGRESS";

    fn read(ws: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(ws.join(Self::FILE)).ok()?;
        let mut p = Self::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("done", v)) => p.done = v.parse().ok()?,
                Some(("secs", v)) => p.secs = v.parse().ok()?,
                Some(("peak_rss", v)) => p.peak_rss = v.parse().ok()?,
                _ => {}
            }
        }
        Some(p)
    }

    /// Written whole beside, then renamed over, so a kill leaves the old
    /// or the new record.
    fn write(&self, ws: &Path) {
        let tmp = ws.join("PROGRESS.new");
        let text = format!(
            "done {}\nsecs {}\npeak_rss {}\n",
            self.done, self.secs, self.peak_rss
        );
        std::fs::write(&tmp, text).expect("write the build's progress");
        std::fs::rename(&tmp, ws.join(Self::FILE)).expect("keep the build's progress");
    }
}

/// The workspace, built once per size and reused by later runs (the
/// figures of the run that built it are kept in its `READY` file); a build
/// that was stopped resumes where its `PROGRESS` says.
fn workspace(n: usize, lexical: bool) -> PathBuf {
    let name = if lexical {
        format!("serve-bench-{n}-lexical")
    } else {
        format!("serve-bench-{n}")
    };
    let ws = bench_dir().join(name);
    if let Ok(built) = std::fs::read_to_string(ws.join("READY")) {
        println!("reusing the {n}-memory workspace; when it was built:\n{built}");
        return ws;
    }
    let mut progress = match Progress::read(&ws) {
        Some(p) => {
            println!("resuming the {n}-memory workspace's build at {}", p.done);
            p
        }
        // Hours of build are not deleted over a record this bench cannot read.
        None if ws.join(Progress::FILE).exists() => panic!(
            "{} is unreadable: fix it (done N / secs S / peak_rss R) or delete the workspace",
            ws.join(Progress::FILE).display()
        ),
        None => {
            let _ = std::fs::remove_dir_all(&ws);
            mem(&ws, &["init", ws.to_str().expect("utf-8 path")]);
            Progress::default()
        }
    };
    // The corpus is one random sequence: a resumed build draws the
    // memories it already stored again, unsent, to continue it.
    let mut rng = Lcg(7);
    for i in 0..progress.done {
        corpus_memory(&mut rng, i);
    }
    let started = Instant::now();
    let earlier = progress.secs;
    for first in (progress.done..n).step_by(CHUNK) {
        let last = (first + CHUNK).min(n);
        let jsonl = ws.with_extension(format!("{first}.jsonl"));
        let mut f = std::fs::File::create(&jsonl).expect("create jsonl");
        for i in first..last {
            let mut line = corpus_memory(&mut rng, i);
            line["idempotency_key"] = format!("bench-{i}").into();
            writeln!(f, "{line}").expect("write jsonl");
        }
        drop(f);
        progress.peak_rss = progress.peak_rss.max(mem_watching_rss(
            &ws,
            &["remember", "--jsonl", jsonl.to_str().expect("utf-8 path")],
        ));
        let _ = std::fs::remove_file(&jsonl);
        progress.done = last;
        progress.secs = earlier + started.elapsed().as_secs_f64();
        progress.write(&ws);
        println!(
            "  ingested {last} memories ({:.0}/s)",
            last as f64 / progress.secs
        );
    }
    let built = format!(
        "ingest (remember --jsonl, {CHUNK} a process, {}): {:.0} memories/s over {n}\n\
         peak RSS of an ingesting process: {:.0} MiB (sampled)",
        if lexical {
            "lexical only"
        } else {
            "with embeddings"
        },
        n as f64 / progress.secs.max(1e-9),
        progress.peak_rss
    );
    println!("{built}");
    std::fs::write(ws.join("READY"), &built).expect("mark ready");
    let _ = std::fs::remove_file(ws.join(Progress::FILE));
    ws
}

/// Where a `--ledger` run points `MEM_MODELS`: an empty folder, so no
/// embedding model loads and the index is lexical only.
const NO_MODELS: &str = "no-models";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args
        .iter()
        .position(|a| a == "--memories")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("--memories takes a number"))
        .unwrap_or_else(|| env_usize("MEM_BENCH_MEMORIES", 100_000));
    if args.iter().any(|a| a == "--ledger") {
        return ledger_only(&args, n);
    }
    let secs = env_usize("MEM_BENCH_SECS", 10) as u64;
    let ws = workspace(n, false);
    if args.iter().any(|a| a == "--cold") {
        return cold_cli(&ws, n);
    }
    if args.iter().any(|a| a == "--rebuild") {
        return rebuild(&ws, n);
    }
    if args.iter().any(|a| a == "--browse") {
        let (server, base) = start_server(&ws);
        browse_pages(
            &ws,
            &base,
            n,
            env_usize("MEM_BENCH_QUERIES", 1000).div_ceil(10),
        );
        stop_server(server);
        return;
    }
    let secret = token_secret(
        &ws,
        &format!("bench-{}", std::process::id()),
        "search,write",
    );
    // Another agent's token: what it writes is found by its own next
    // search at once, by the searching agents' once the index has it.
    let writer = token_secret(
        &ws,
        &format!("bench-writer-{}", std::process::id()),
        "write",
    );

    let (server, base) = start_server(&ws);
    let mut rng = Lcg(99);
    // `--only WORD`: just the load levels of the operations whose label
    // has WORD (e.g. `hybrid`), for profiling one of them.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    for op in LOAD_OPS
        .iter()
        .filter(|op| only.is_none_or(|w| op.label.contains(w.as_str())))
    {
        load_levels(op, server.id(), &base, &secret, secs, n);
    }
    // The normal case of a shared server: agents search while others
    // remember. `--only writes` runs just these.
    for op in LOAD_OPS[..2]
        .iter()
        .filter(|_| only.is_none_or(|w| "beside writes".contains(w.as_str())))
    {
        beside_writes(op, server.id(), &base, [&secret, &writer], secs);
    }
    if only.is_some() {
        stop_server(server);
        return;
    }
    // Sequential latency of each recall operation, as one agent sees it.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let n_seq = env_usize("MEM_BENCH_QUERIES", 1000);
    // The last row writes (to its own folder, so the searched corpus barely
    // changes between runs): what an agent waits for when it remembers.
    for (label, path, text_field, extra) in [
        (
            "search, lexical only",
            "/v1/search",
            "query",
            serde_json::json!({ "lexical_only": true, "limit": 10 }),
        ),
        (
            "search, hybrid",
            "/v1/search",
            "query",
            serde_json::json!({ "limit": 10 }),
        ),
        (
            "context pack",
            "/v1/context",
            "query",
            serde_json::json!({ "max_chars": 4000 }),
        ),
        (
            "remember",
            "/v1/memories",
            "content",
            serde_json::json!({ "kind": "note", "path": "/bench-writes" }),
        ),
    ] {
        let mut times = Vec::with_capacity(n_seq);
        let mut errors = 0;
        for i in 0..n_seq {
            let mut body = extra.clone();
            body[text_field] = serde_json::Value::String(rng.sentence(2 + i % 3));
            let started = Instant::now();
            let ok = agent
                .post(format!("{base}{path}"))
                .header("authorization", format!("Bearer {secret}"))
                .header("content-type", "application/json")
                .header(
                    "idempotency-key",
                    format!("bench-{}-{i}", std::process::id()),
                )
                .send(serde_json::to_vec(&body).expect("json"))
                .map(|mut r| {
                    let _ = r.body_mut().read_to_vec();
                    matches!(r.status().as_u16(), 200 | 201)
                })
                .unwrap_or(false);
            if ok {
                times.push(started.elapsed());
            } else {
                errors += 1;
            }
        }
        times.sort();
        if times.is_empty() {
            println!("{label}: every request failed ({errors})");
            continue;
        }
        println!(
            "{label:<22} ({n_seq} sequential): p50 {:>6.1} ms, p99 {:>6.1} ms, errors {errors}",
            percentile(&times, 0.50).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
    }
    web_ledger(&ws, &base, n, n_seq.div_ceil(10), "");
    browse_pages(&ws, &base, n, n_seq.div_ceil(10));
    let (peak, now) = rss_of(server.id());
    println!("serve RSS: peak {peak:.0} MiB, now {now:.0} MiB");
    let mib = |p: &Path| du(p) as f64 / 1048576.0;
    let per = |p: &Path| du(p) as f64 / n as f64;
    let (store, lexical, vectors) = (
        ws.join("store"),
        ws.join("index").join("lexical"),
        ws.join("index").join("vectors"),
    );
    println!(
        "on disk: {:.0} MiB = {:.0} bytes a memory: store {:.0} MiB ({:.0} B/memory: records, events, blobs, tallies), \
         lexical index {:.0} MiB ({:.0} B/memory), vectors {:.0} MiB ({:.0} B/memory)",
        mib(&ws),
        per(&ws),
        mib(&store),
        per(&store),
        mib(&lexical),
        per(&lexical),
        mib(&vectors),
        per(&vectors),
    );
    stop_server(server);
    cold_cli(&ws, n);
}

/// Pages a person or an agent browses: the catalog (first page, then the
/// page its cursor names) and the memory ledger (`GET /v1/memories`),
/// each timed over `reps` requests beside the target (< 50 ms at 1M).
fn browse_pages(ws: &Path, base: &str, n: usize, reps: usize) {
    let secret = token_secret(ws, &format!("bench-read-{}", std::process::id()), "read");
    let agent = http_agent();
    let get = |url: &str| -> (Duration, serde_json::Value) {
        let started = Instant::now();
        let mut r = agent
            .get(url)
            .header("authorization", format!("Bearer {secret}"))
            .call()
            .expect("GET");
        let body = r.body_mut().read_to_vec().expect("body");
        let took = started.elapsed();
        assert_eq!(
            r.status().as_u16(),
            200,
            "{url}: {}",
            String::from_utf8_lossy(&body)
        );
        (took, serde_json::from_slice(&body).expect("json"))
    };
    let (_, first) = get(&format!("{base}/v1/catalog?limit=50"));
    let catalog_cursor = first["next_cursor"].as_str().map(str::to_string);
    let (_, listed) = get(&format!("{base}/v1/memories?limit=50"));
    let list_cursor = listed["next_cursor"].as_str().map(str::to_string);
    let mut pages = vec![
        (
            "catalog, first page".to_string(),
            format!("{base}/v1/catalog?limit=50"),
        ),
        (
            "catalog, one kind".to_string(),
            format!("{base}/v1/catalog?limit=50&type=note"),
        ),
        (
            "ledger, first page".to_string(),
            format!("{base}/v1/memories?limit=50"),
        ),
    ];
    if let Some(c) = catalog_cursor {
        pages.push((
            "catalog, next page".into(),
            format!("{base}/v1/catalog?limit=50&cursor={c}"),
        ));
    }
    if let Some(c) = list_cursor {
        pages.push((
            "ledger, next page".into(),
            format!("{base}/v1/memories?limit=50&cursor={c}"),
        ));
    }
    for (label, url) in pages {
        let mut times: Vec<Duration> = (0..reps).map(|_| get(&url).0).collect();
        times.sort();
        println!(
            "{label:<22} on {n} memories: p50 {:>6.1} ms, p99 {:>6.1} ms over {reps} (target < 50 ms at 1M)",
            percentile(&times, 0.50).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
    }
}

/// Whole CLI processes on the workspace (no server holds it), as a person
/// at a shell waits for them. One run of each first, unmeasured: it brings
/// the files into the page cache and leaves the index's catalog snapshot
/// written, as any earlier command would have.
fn cold_cli(ws: &Path, n: usize) {
    let runs = env_usize("MEM_BENCH_COLD", 9);
    let listed = mem(ws, &["memory", "list", "--limit", "1"]);
    let id = serde_json::from_slice::<serde_json::Value>(&listed).expect("json")["items"][0]["id"]
        .as_str()
        .expect("a memory id")
        .to_string();
    let query = "deploy the database migration on friday";
    for (label, args, target_ms) in [
        ("memory get", vec!["memory", "get", id.as_str()], 30.0),
        (
            "search, lexical only",
            vec!["search", "--lexical-only", query],
            100.0,
        ),
        ("search, hybrid", vec!["search", query], 300.0),
        ("context", vec!["context", query], 400.0),
    ] {
        mem(ws, &args);
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let started = Instant::now();
                mem(ws, &args);
                started.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "cold CLI {label:<22} on {n} memories: median {:>6.1} ms, worst {:>6.1} ms over {runs} (target < {target_ms:.0} ms)",
            percentile(&times, 0.50).as_secs_f64() * 1e3,
            times.last().map_or(0.0, |t| t.as_secs_f64() * 1e3),
        );
    }
}

/// `--rebuild`: the whole search index built again from the store, first
/// as `reindex --all` does it (the vectors of unchanged texts kept), then
/// from nothing (the index folder deleted: every memory embedded again,
/// as after a model change).
fn rebuild(ws: &Path, n: usize) {
    let timed = |label: &str, args: &[&str]| {
        let started = Instant::now();
        let out = mem(ws, args);
        let secs = started.elapsed().as_secs_f64();
        let report: serde_json::Value = serde_json::from_slice(&out).expect("reindex json");
        let docs = report["stats"]["documents"].as_u64().unwrap_or(0);
        println!(
            "index rebuilt {label} on {n} memories: {docs} documents in {secs:.0} s = {:.0}/s (target < 1 h at 1M)",
            docs as f64 / secs
        );
    };
    timed("from the store, vectors kept", &["reindex", "--all"]);
    std::fs::remove_dir_all(ws.join("index")).expect("delete the index");
    timed("from nothing", &["reindex"]);
}

/// `--ledger`: the ledger's figures alone, over a lexical-only workspace.
/// The bench runs itself again with `MEM_MODELS` at an empty folder, so
/// every `mem-host` it starts inherits it.
fn ledger_only(args: &[String], n: usize) {
    let empty = bench_dir().join(NO_MODELS);
    if std::env::var_os("MEM_MODELS").as_deref() != Some(empty.as_os_str()) {
        std::fs::create_dir_all(&empty).expect("create the empty models folder");
        let status = Command::new(std::env::current_exe().expect("own path"))
            .args(&args[1..])
            .env("MEM_MODELS", &empty)
            .status()
            .expect("run the bench again");
        std::process::exit(status.code().unwrap_or(1));
    }
    let ws = workspace(n, true);
    let (server, base) = start_server(&ws);
    let reps = env_usize("MEM_BENCH_QUERIES", 100);
    web_ledger(&ws, &base, n, reps, "");
    // A filter that matches few memories scans the most of them.
    web_ledger(&ws, &base, n, reps, "?agent=agent-3&pinned=true");
    web_ledger(&ws, &base, n, reps, "?agent=agent-3");
    stop_server(server);
}

/// The web page's memory ledger: sign in with a one-time link, then time
/// `GET /memories{query}` (the whole first page of HTML), first and repeated.
fn web_ledger(ws: &Path, base: &str, n: usize, reps: usize, query: &str) {
    let link = serde_json::from_slice::<serde_json::Value>(&mem(ws, &["web", "--url", base]))
        .expect("sign-in json")["url"]
        .as_str()
        .expect("sign-in url")
        .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let signed_in = agent.get(&link).call().expect("sign in");
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("session cookie")
        .to_string();
    let url = format!("{base}/memories{query}");
    let mut times = Vec::with_capacity(reps + 1);
    for _ in 0..=reps {
        let started = Instant::now();
        let ok = agent
            .get(&url)
            .header("cookie", &cookie)
            .call()
            .map(|mut r| {
                let _ = r.body_mut().read_to_vec();
                r.status().as_u16() == 200
            })
            .unwrap_or(false);
        assert!(ok, "GET /memories failed");
        times.push(started.elapsed());
    }
    let first = times[0];
    times.sort();
    println!(
        "web ledger /memories{query} on {n} memories: first response {:.1} ms (target < 300 ms), then p50 {:.1} ms, p99 {:.1} ms over {reps}",
        first.as_secs_f64() * 1e3,
        percentile(&times, 0.50).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
    );
}

/// One recall operation driven under load.
struct LoadOp {
    label: &'static str,
    path: &'static str,
    /// The request's fixed fields (the query text is added).
    extra: fn() -> serde_json::Value,
    /// Requests/s wanted at concurrency 8 (the throughput issue's targets).
    target_rps_at_8: f64,
    /// p99 wanted at concurrency 8, if the issue names one.
    target_p99_ms_at_8: Option<f64>,
}

const LOAD_OPS: &[LoadOp] = &[
    LoadOp {
        label: "lexical search",
        path: "/v1/search",
        extra: || serde_json::json!({ "lexical_only": true, "limit": 10 }),
        target_rps_at_8: 1000.0,
        target_p99_ms_at_8: None,
    },
    LoadOp {
        label: "hybrid search",
        path: "/v1/search",
        extra: || serde_json::json!({ "limit": 10 }),
        target_rps_at_8: 250.0,
        target_p99_ms_at_8: Some(60.0),
    },
    LoadOp {
        label: "context pack",
        path: "/v1/context",
        extra: || serde_json::json!({ "max_chars": 4000 }),
        target_rps_at_8: 100.0,
        target_p99_ms_at_8: None,
    },
];

/// Sample queries whose answers are checked under load.
const SAMPLES: usize = 24;
/// Every how many requests a client sends a sample query.
const SAMPLE_EVERY: usize = 4;

fn body_of(op: &LoadOp, query: String) -> Vec<u8> {
    let mut body = (op.extra)();
    body["query"] = serde_json::Value::String(query);
    serde_json::to_vec(&body).expect("query json")
}

/// An answer without what legitimately varies between two identical
/// requests: timings and the trace that carries them.
fn comparable(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("took_ms");
        o.remove("trace");
    }
    v
}

/// What one client sees of one request.
enum Outcome {
    /// 200 (201 for a write), with the answer when it was asked for.
    Ok(Option<serde_json::Value>),
    /// 503 with retry-after: the server shed the request.
    Shed,
    Failed(String),
}

/// Sends one request; parses the answer when `parse` (the load clients
/// share the server's two cores, so they parse only the answers they
/// compare: the server's throughput, not the client's JSON parsing, is
/// measured).
fn post(agent: &ureq::Agent, url: &str, secret: &str, body: &[u8], parse: bool) -> Outcome {
    let result = agent
        .post(url)
        .header("authorization", format!("Bearer {secret}"))
        .header("content-type", "application/json")
        .send(body);
    match result {
        Err(e) => Outcome::Failed(e.to_string()),
        Ok(mut r) => {
            let status = r.status().as_u16();
            let retry_after = r.headers().contains_key("retry-after");
            let text = r.body_mut().read_to_string().unwrap_or_default();
            match status {
                200 | 201 if !parse => Outcome::Ok(None),
                200 | 201 => serde_json::from_str(&text)
                    .map_or_else(|e| Outcome::Failed(e.to_string()), |v| Outcome::Ok(Some(v))),
                503 if retry_after => Outcome::Shed,
                _ => Outcome::Failed(format!("{status} {text}")),
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    times: Vec<Duration>,
    errors: usize,
    shed: usize,
    checked: usize,
    differed: usize,
}

/// The sample requests a client sends, and the answers each got alone.
type Checks = (Arc<Vec<Vec<u8>>>, Arc<Vec<serde_json::Value>>);

/// One load client: sends fresh queries until stopped and, with
/// `checks`, every [`SAMPLE_EVERY`]th request a sample query whose answer
/// must equal the one it got alone.
struct Client {
    url: String,
    secret: String,
    op: &'static LoadOp,
    seed: u64,
    checks: Option<Checks>,
    /// Where its requests start counting (clients take turns with samples).
    first: usize,
}

impl Client {
    fn run(self, stop: &AtomicBool, tally: &Mutex<Tally>) {
        let agent = http_agent();
        let mut rng = Lcg(self.seed);
        let mut mine = Tally::default();
        let mut i = self.first;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let sample = self.checks.as_ref().and_then(|_| {
                i.is_multiple_of(SAMPLE_EVERY)
                    .then_some(i / SAMPLE_EVERY % SAMPLES)
            });
            let body = match (sample, &self.checks) {
                (Some(s), Some((samples, _))) => samples[s].clone(),
                _ => {
                    let words = 2 + rng.next() % 3;
                    body_of(self.op, rng.sentence(words))
                }
            };
            let started = Instant::now();
            match post(&agent, &self.url, &self.secret, &body, sample.is_some()) {
                Outcome::Ok(v) => {
                    mine.times.push(started.elapsed());
                    if let (Some(s), Some(v), Some((_, expected))) = (sample, v, &self.checks) {
                        mine.checked += 1;
                        if comparable(v) != expected[s] {
                            if mine.differed == 0 {
                                eprintln!(
                                    "  {}: sample {s} answered differently under load",
                                    self.op.label
                                );
                            }
                            mine.differed += 1;
                        }
                    }
                }
                Outcome::Shed => mine.shed += 1,
                Outcome::Failed(e) => {
                    if mine.errors == 0 && self.first == 0 {
                        eprintln!("  first error: {}", e.chars().take(300).collect::<String>());
                    }
                    mine.errors += 1;
                }
            }
        }
        let mut all = tally.lock().expect("tally");
        all.times.extend(mine.times);
        all.errors += mine.errors;
        all.shed += mine.shed;
        all.checked += mine.checked;
        all.differed += mine.differed;
    }
}

/// Drives `op` at concurrency 1, 8 and 64 for `secs` each. Every client
/// sends fresh queries (so nothing is answered from a cache of the
/// previous round), and every [`SAMPLE_EVERY`]th request one of the
/// sample queries, whose answer must equal the one it got alone.
fn load_levels(op: &'static LoadOp, server: u32, base: &str, secret: &str, secs: u64, n: usize) {
    let url = format!("{base}{}", op.path);
    let mut rng = Lcg(4242);
    let samples: Vec<Vec<u8>> = (0..SAMPLES)
        .map(|_| {
            let words = 2 + rng.next() % 3;
            body_of(op, rng.sentence(words))
        })
        .collect();
    let alone = http_agent();
    let expected: Arc<Vec<serde_json::Value>> = Arc::new(
        samples
            .iter()
            .map(|b| match post(&alone, &url, secret, b, true) {
                Outcome::Ok(Some(v)) => comparable(v),
                Outcome::Ok(None) => unreachable!("a parsed answer"),
                Outcome::Shed => panic!("{}: a sequential request was shed", op.label),
                Outcome::Failed(e) => panic!("{}: {e}", op.label),
            })
            .collect(),
    );
    let samples = Arc::new(samples);
    println!(
        "{} ({}) on {n} memories, {secs} s per level",
        op.label, op.path
    );
    for concurrency in [1usize, 8, 64] {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Mutex::new(Tally::default()));
        let threads: Vec<_> = (0..concurrency)
            .map(|t| {
                let client = Client {
                    url: url.clone(),
                    secret: secret.to_string(),
                    op,
                    seed: 1000 * concurrency as u64 + t as u64,
                    checks: Some((samples.clone(), expected.clone())),
                    first: t,
                };
                let (stop, tally) = (stop.clone(), tally.clone());
                std::thread::spawn(move || client.run(&stop, &tally))
            })
            .collect();
        let started = Instant::now();
        let cpu_before = cpu_of(server);
        std::thread::sleep(Duration::from_secs(secs));
        // The server's CPU per request: what the two cores' limit is made
        // of (the clients on the same machine take their share beside it).
        let server_cpu = cpu_of(server) - cpu_before;
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("client thread");
        }
        let took = started.elapsed().as_secs_f64();
        let mut tally = std::mem::take(&mut *tally.lock().expect("tally"));
        tally.times.sort();
        if tally.times.is_empty() {
            println!(
                "  concurrency {concurrency:>2}: no successful request, {} errors",
                tally.errors
            );
            continue;
        }
        let rps = tally.times.len() as f64 / took;
        let p99 = percentile(&tally.times, 0.99).as_secs_f64() * 1e3;
        let target = match concurrency {
            8 => {
                let mut t = format!("target >= {:.0} req/s", op.target_rps_at_8);
                if let Some(p) = op.target_p99_ms_at_8 {
                    t.push_str(&format!(", p99 < {p:.0} ms"));
                }
                let met =
                    rps >= op.target_rps_at_8 && op.target_p99_ms_at_8.is_none_or(|p| p99 < p);
                format!("  [{t}: {}]", if met { "met" } else { "NOT met" })
            }
            64 => format!(
                "  [target 0 errors, p99 bounded by queueing: {}]",
                if tally.errors + tally.shed == 0 {
                    "met"
                } else {
                    "NOT met"
                }
            ),
            _ => String::new(),
        };
        println!(
            "  concurrency {concurrency:>2}: {:>6} req in {took:.1} s = {rps:>7.1} req/s, p50 {:>6.1} ms, p99 {p99:>6.1} ms, server CPU {:.2} ms/req ({:.2} cores), errors {}, shed {}, same answers {}/{}{target}",
            tally.times.len(),
            percentile(&tally.times, 0.50).as_secs_f64() * 1e3,
            server_cpu * 1e3 / tally.times.len() as f64,
            server_cpu / took,
            tally.errors,
            tally.shed,
            tally.checked - tally.differed,
            tally.checked,
        );
    }
}

/// Remembers a second, paced, while 8 clients search: what the writes
/// cost the searches (each search first brings the index up to the
/// acknowledged writes, so it may wait for their embeddings).
const WRITES_PER_SEC: u64 = 20;

/// Drives `op` with 8 clients while one more client remembers
/// [`WRITES_PER_SEC`] memories a second (into a folder of its own), and
/// prints both sides. Answers are not compared: the corpus grows.
fn beside_writes(op: &'static LoadOp, server: u32, base: &str, tokens: [&str; 2], secs: u64) {
    let [secret, writer_secret] = tokens;
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let clients: Vec<_> = (0..8)
        .map(|t| {
            let client = Client {
                url: format!("{base}{}", op.path),
                secret: secret.to_string(),
                op,
                seed: 77_000 + t,
                checks: None,
                first: t as usize,
            };
            let (stop, tally) = (stop.clone(), tally.clone());
            std::thread::spawn(move || client.run(&stop, &tally))
        })
        .collect();
    let writer = {
        let (stop, url, secret) = (
            stop.clone(),
            format!("{base}/v1/memories"),
            writer_secret.to_string(),
        );
        std::thread::spawn(move || {
            let agent = http_agent();
            let mut rng = Lcg(31 + std::process::id() as u64);
            let mut acks = Vec::new();
            let mut errors = 0usize;
            let every = Duration::from_micros(1_000_000 / WRITES_PER_SEC);
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let body = serde_json::json!({
                    "content": rng.sentence(10),
                    "kind": "note",
                    "path": "/bench-writes/beside-searches",
                    "idempotency_key": format!("beside-{}-{}", std::process::id(), acks.len() + errors),
                });
                let body = serde_json::to_vec(&body).expect("json");
                let started = Instant::now();
                match post(&agent, &url, &secret, &body, false) {
                    Outcome::Ok(_) => acks.push(started.elapsed()),
                    Outcome::Shed => errors += 1,
                    Outcome::Failed(e) => {
                        if errors == 0 {
                            eprintln!(
                                "  first write error: {}",
                                e.chars().take(300).collect::<String>()
                            );
                        }
                        errors += 1;
                    }
                }
                next += every;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            (acks, errors)
        })
    };
    let started = Instant::now();
    let cpu_before = cpu_of(server);
    std::thread::sleep(Duration::from_secs(secs));
    let server_cpu = cpu_of(server) - cpu_before;
    stop.store(true, Ordering::Relaxed);
    for t in clients {
        t.join().expect("client thread");
    }
    let (mut acks, write_errors) = writer.join().expect("writer thread");
    let took = started.elapsed().as_secs_f64();
    let mut tally = std::mem::take(&mut *tally.lock().expect("tally"));
    tally.times.sort();
    acks.sort();
    if tally.times.is_empty() || acks.is_empty() {
        println!(
            "{} beside writes: nothing succeeded ({} search errors, {write_errors} write errors)",
            op.label, tally.errors
        );
        return;
    }
    let rps = tally.times.len() as f64 / took;
    let p99 = percentile(&tally.times, 0.99).as_secs_f64() * 1e3;
    let met = rps >= op.target_rps_at_8 && op.target_p99_ms_at_8.is_none_or(|p| p99 < p);
    println!(
        "{} beside {WRITES_PER_SEC} remembers/s, 8 clients: {rps:.1} req/s, p50 {:.1} ms, p99 {p99:.1} ms, \
         server {:.2} cores, errors {}, shed {}; writes {:.1}/s acknowledged, p50 {:.1} ms, p99 {:.1} ms, \
         errors {write_errors}  [the 8-client target beside writes: {}]",
        op.label,
        percentile(&tally.times, 0.50).as_secs_f64() * 1e3,
        server_cpu / took,
        tally.errors,
        tally.shed,
        acks.len() as f64 / took,
        percentile(&acks, 0.50).as_secs_f64() * 1e3,
        percentile(&acks, 0.99).as_secs_f64() * 1e3,
        if met { "met" } else { "NOT met" },
    );
}
