//! Recall end to end: search, batch search, context packs, the model
//! commands. Most commands run with a private, empty models folder, so the
//! semantic lane is deterministically unavailable; one test drives the
//! installed model (`scripts/setup --model`) through the binary.

use crate::support::{Run, Ws, p, run_command};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

fn run(ws: &Ws, args: &[&str]) -> Run {
    run_env(ws, args, &[])
}

fn run_env(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Run {
    let models = ws.path("models");
    let mut c = ws.cmd();
    c.env("MEM_MODELS", &models)
        .arg("--format")
        .arg("json")
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    run_command(c, None)
}

fn remember(ws: &Ws, content: &str, extra: &[&str]) -> Value {
    let mut args = vec!["remember", content];
    if !extra.contains(&"--kind") {
        args.extend(["--kind", "fact"]);
    }
    if !extra.contains(&"--path") {
        args.extend(["--path", "/notes"]);
    }
    let key = format!(
        "key-{}-{}",
        content.len(),
        content.chars().take(40).collect::<String>()
    );
    args.extend(["--idempotency-key", key.as_str()]);
    args.extend(extra);
    run(ws, &args).ok().json()["memory"].clone()
}

fn hit_ids(r: &Value) -> Vec<String> {
    r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

fn search(ws: &Ws, args: &[&str]) -> Value {
    let mut a = vec!["search"];
    a.extend(args);
    run(ws, &a).ok().json()
}

#[test]
fn forgotten_content_is_not_searchable() {
    let ws = Ws::new();
    let m = remember(&ws, "the wifi password is hunter2", &[]);
    let id = m["id"].as_str().unwrap();
    assert_eq!(hit_ids(&search(&ws, &["wifi password"])), [id]);
    run(
        &ws,
        &[
            "memory",
            "forget",
            id,
            "--expected-version",
            "1",
            "--reason",
            "secret",
            "--confirm",
        ],
    )
    .ok();
    let r = search(&ws, &["wifi password"]);
    assert!(hit_ids(&r).is_empty(), "{r}");
    let r = search(&ws, &["hunter2", "--lifecycle", "all"]);
    assert!(hit_ids(&r).is_empty(), "{r}");
}

#[test]
fn archived_memories_leave_default_search_and_come_back_on_restore() {
    let ws = Ws::new();
    let id = remember(&ws, "retro every second friday", &[])["id"]
        .as_str()
        .unwrap()
        .to_string();
    run(&ws, &["memory", "archive", &id, "--expected-version", "1"]).ok();
    assert!(hit_ids(&search(&ws, &["retro friday"])).is_empty());
    assert_eq!(
        hit_ids(&search(&ws, &["retro friday", "--lifecycle", "archived"])),
        std::slice::from_ref(&id)
    );
    run(&ws, &["memory", "restore", &id, "--expected-version", "2"]).ok();
    assert_eq!(hit_ids(&search(&ws, &["retro friday"])), [id]);
}

#[test]
fn filters_narrow_hits_and_hits_carry_citations_and_ranks() {
    let ws = Ws::new();
    let a = remember(
        &ws,
        "kubernetes upgrade planned",
        &[
            "--kind",
            "decision",
            "--path",
            "/ops",
            "--agent-id",
            "claude",
            "--event-at",
            "2026-01-10T00:00:00Z",
            "--source-ref",
            "ticket-1",
        ],
    );
    let b = remember(
        &ws,
        "kubernetes upgrade went fine",
        &[
            "--kind",
            "observation",
            "--path",
            "/ops/log",
            "--agent-id",
            "codex",
            "--event-at",
            "2026-03-10T00:00:00Z",
        ],
    );
    let c = remember(
        &ws,
        "kubernetes upgrade for the home lab",
        &["--kind", "note", "--path", "/home"],
    );
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    let sorted = |r: Value| {
        let mut v = hit_ids(&r);
        v.sort();
        v
    };
    let mut all = vec![id(&a), id(&b), id(&c)];
    all.sort();
    assert_eq!(sorted(search(&ws, &["kubernetes upgrade"])), all);
    assert_eq!(
        hit_ids(&search(&ws, &["kubernetes", "--kind", "decision"])),
        [id(&a)]
    );
    let mut ops = vec![id(&a), id(&b)];
    ops.sort();
    assert_eq!(sorted(search(&ws, &["kubernetes", "--path", "/ops"])), ops);
    assert_eq!(
        hit_ids(&search(&ws, &["kubernetes", "--agent", "codex"])),
        [id(&b)]
    );
    assert_eq!(
        hit_ids(&search(
            &ws,
            &["kubernetes", "--path", "/ops", "--since", "2026-02-01"]
        )),
        [id(&b)]
    );
    assert_eq!(
        hit_ids(&search(
            &ws,
            &["kubernetes", "--path", "/ops", "--until", "2026-01-10"]
        )),
        [id(&a)]
    );
    let r = search(&ws, &["kubernetes planned", "--kind", "decision"]);
    let h = &r["hits"][0];
    assert_eq!(h["citation"], format!("mem://memory/{}", id(&a)));
    assert_eq!(h["source_ref"], "ticket-1");
    assert_eq!(h["lexical_rank"], 1);
    assert_eq!(h["content_sha256"], a["content_sha256"]);
    let mut terms: Vec<&str> = h["matched_terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    terms.sort();
    assert_eq!(terms, ["kubernetes", "planned"]);
    run(&ws, &["search", "x", "--lifecycle", "zombie"]).fails("bad_request", 1);
}

#[test]
fn without_a_model_the_semantic_lane_is_reported_unavailable() {
    let ws = Ws::new();
    remember(&ws, "lexical still works", &[]);
    let r = search(&ws, &["lexical"]);
    assert_eq!(hit_ids(&r).len(), 1);
    let lanes = r["lanes"].as_array().unwrap();
    let sem = lanes.iter().find(|l| l["lane"] == "semantic").unwrap();
    assert_eq!(sem["status"], "unavailable", "{r}");
    assert!(
        sem["message"].as_str().unwrap().contains("model install"),
        "{sem}"
    );
    assert_eq!(r["partial"], false);
    let mut c = ws.cmd();
    c.env("MEM_MODELS", ws.path("models"))
        .args(["search", "lexical"]);
    let human = run_command(c, None).ok().text();
    assert!(human.contains("semantic lane unavailable"), "{human}");
}

#[test]
fn with_the_installed_model_a_paraphrase_is_found_and_weak_neighbours_are_not() {
    let ws = Ws::new();
    // The per-user models folder, where `scripts/setup --model` installs it.
    let json = |args: &[&str]| ws.run(args).ok().json();
    let pup = json(&[
        "remember",
        "Melanie adopted a puppy from the shelter last week",
        "--kind",
        "fact",
        "--path",
        "/people",
        "--idempotency-key",
        "pup",
    ])["memory"]["id"]
        .clone();
    json(&[
        "remember",
        "The quarterly budget review is on Thursday",
        "--kind",
        "fact",
        "--path",
        "/people",
        "--idempotency-key",
        "budget",
    ]);
    let r = json(&["search", "new dog"]);
    let sem = &r["lanes"][1];
    assert_eq!(
        sem["status"], "ok",
        "this test needs the embedding model; install it with scripts/setup --model: {r}"
    );
    // Found by meaning alone; the unrelated memory is below the floor.
    assert_eq!(r["hits"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["hits"][0]["id"], pup);
    assert_eq!(r["hits"][0]["lexical_rank"], Value::Null);
    assert_eq!(r["hits"][0]["semantic_rank"], 1);
    let r = json(&["search", "lattice gauge theory of quantum chromodynamics"]);
    assert_eq!(hit_ids(&r), Vec::<String>::new(), "{r}");
    let human = ws
        .run_human(&["search", "lattice gauge theory of quantum chromodynamics"])
        .ok()
        .text();
    assert!(human.contains("no matches"), "{human}");
    assert!(
        human.contains("note: semantic lane: 2 nearest candidates were below cosine similarity"),
        "{human}"
    );
}

#[test]
fn batch_answers_every_line_in_order() {
    let ws = Ws::new();
    let lines: String = ["apples are red", "bananas are yellow", "cherries are dark"]
        .iter()
        .enumerate()
        .map(|(i, c)| {
            serde_json::json!({"content": c, "kind": "fact", "path": "/fruit", "source_ref": format!("T{i}"), "idempotency_key": format!("k{i}")}).to_string() + "\n"
        })
        .collect();
    let jl = ws.write("fruit.jsonl", lines.as_bytes());
    run(&ws, &["remember", "--jsonl", p(&jl)]).ok();
    let queries = "{\"query\": \"cherries\"}\n{\"query\": \"apples\"}\n\n{\"query\": \"bananas\", \"path\": \"/nope\"}\n{\"query\": \"yellow\"}\n";
    let qf = ws.write("q.jsonl", queries.as_bytes());
    let out = run(&ws, &["search", "--batch", p(&qf), "--limit", "5"])
        .ok()
        .json_lines();
    assert_eq!(out.len(), 4);
    let first_ref = |v: &Value| v["hits"][0]["source_ref"].as_str().map(str::to_string);
    assert_eq!(first_ref(&out[0]).as_deref(), Some("T2"));
    assert_eq!(first_ref(&out[1]).as_deref(), Some("T0"));
    assert!(out[2]["hits"].as_array().unwrap().is_empty());
    assert_eq!(first_ref(&out[3]).as_deref(), Some("T1"));
    // A bad line gets an error in its place; the others are answered.
    let qf = ws.write(
        "bad.jsonl",
        b"{\"query\": \"apples\"}\nnot json\n{\"query\": \"cherries\"}\n",
    );
    let r = run(&ws, &["search", "--batch", p(&qf)]);
    assert_eq!(r.code, 1);
    let out = r.json_lines();
    assert_eq!(out.len(), 3);
    assert_eq!(out[1]["error"]["code"], "bad_request");
    assert_eq!(first_ref(&out[2]).as_deref(), Some("T2"));
}

#[test]
fn context_pack_is_cited_budgeted_and_explains_itself() {
    let ws = Ws::new();
    let d = remember(
        &ws,
        "We release on Tuesdays after the freeze",
        &["--kind", "decision", "--path", "/team"],
    );
    let long = format!(
        "release notes template: {}",
        "list every change and its owner. ".repeat(30)
    );
    let n = remember(&ws, &long, &["--kind", "note", "--path", "/team"]);
    remember(
        &ws,
        "release the hounds",
        &["--kind", "note", "--path", "/kennel"],
    );
    let pack = run(
        &ws,
        &[
            "context",
            "when do we release",
            "--scope",
            "/team",
            "--max-chars",
            "120",
        ],
    )
    .ok()
    .json();
    // A decision's role is guidance: `should`.
    assert_eq!(
        pack["should"][0]["citation"],
        format!("mem://memory/{}", d["id"].as_str().unwrap())
    );
    assert_eq!(pack["should"][0]["content_sha256"], d["content_sha256"]);
    assert!(pack["used_chars"].as_u64().unwrap() <= 120);
    let omitted = pack["omitted"].as_array().unwrap();
    assert_eq!(omitted[0]["id"], n["id"]);
    assert_eq!(
        omitted[0]["chars"].as_u64().unwrap() as usize,
        long.chars().count()
    );
    assert_eq!(pack["trace"]["hidden_by_filter"][0]["filter"], "scope");
    // init installed the first-party selection chain (role → recent → relevance).
    assert_eq!(pack["trace"]["selection"]["status"], "ran");
    let sem = pack["trace"]["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lane"] == "semantic")
        .cloned()
        .unwrap();
    assert_eq!(sem["status"], "unavailable");
    // Nothing found is an answer (exit 0, not a retryable failure), with
    // what was missing and what to try next.
    let empty = run(&ws, &["context", "zebra migration patterns"])
        .ok()
        .json();
    assert!(
        empty["suggestions"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{empty}"
    );
}

#[test]
fn a_period_named_in_the_query_ranks_memories_from_then_first() {
    let ws = Ws::new();
    let july = remember(
        &ws,
        "Joanna hiked to Whispering Falls with friends",
        &["--event-at", "2023-07-08T10:00:00Z", "--path", "/j/july"],
    );
    let may = remember(
        &ws,
        "Joanna hiked to Whispering Falls alone on a quiet morning",
        &["--event-at", "2023-05-20T10:00:00Z", "--path", "/j/may"],
    );
    let id = |m: &Value| m["id"].as_str().unwrap().to_string();
    // Without a period the shorter (July) memory is the better match.
    let plain = search(&ws, &["where did Joanna hike"]);
    assert!(plain.get("period").is_none(), "{plain}");
    assert_eq!(hit_ids(&plain), [id(&july), id(&may)], "{plain}");
    for (query, named) in [
        ("where did Joanna hike in May 2023", "May 2023"),
        ("where did Joanna hike in May", "in May"),
        ("where did Joanna hike on 20 May, 2023", "20 May, 2023"),
    ] {
        let r = search(&ws, &[query]);
        assert_eq!(r["period"]["text"], named, "{r}");
        // Nothing is filtered out: July is still a hit, ranked after May.
        assert_eq!(hit_ids(&r), [id(&may), id(&july)], "{query}: {r}");
        assert_eq!(r["hits"][0]["in_period"], true);
        assert!(r["hits"][1].get("in_period").is_none(), "{r}");
    }
    let r = search(&ws, &["where did Joanna hike in July 2023"]);
    assert_eq!(hit_ids(&r), [id(&july), id(&may)], "{r}");
    let human = ws
        .run_human(&["search", "where did Joanna hike in July 2023"])
        .ok()
        .text();
    assert!(human.contains(", in period]"), "{human}");
    assert!(
        human.contains("note: \"July 2023\" names a period: hits from then rank higher"),
        "{human}"
    );

    let pack = run(&ws, &["context", "where did Joanna hike in May 2023"])
        .ok()
        .json();
    assert_eq!(pack["trace"]["query"]["period"]["text"], "May 2023");
    assert_eq!(
        pack["trace"]["query"]["period"]["from"],
        "2023-05-01T00:00:00Z"
    );
    let items: Vec<&Value> = ["must", "should", "context"]
        .iter()
        .flat_map(|lane| pack[lane].as_array().unwrap())
        .collect();
    let item = items.iter().find(|i| i["id"] == may["id"]).unwrap();
    assert!(
        item["reason"]
            .as_str()
            .unwrap()
            .contains("from the period the query names"),
        "{item}"
    );
}

#[test]
fn search_and_context_output_validate_against_their_schemas() {
    let ws = Ws::new();
    remember(
        &ws,
        "schemas keep surfaces honest",
        &["--kind", "decision", "--event-at", "2025-03-04T09:00:00Z"],
    );
    let schema_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
    let check = |name: &str, doc: &Value| {
        let text = std::fs::read_to_string(schema_dir.join(format!("{name}.schema.json"))).unwrap();
        let v = jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap();
        let errors: Vec<String> = v
            .iter_errors(doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}\n{doc}");
    };
    check("search-result", &search(&ws, &["schemas"]));
    // A query that names a period adds it to the result and the trace.
    let dated = search(&ws, &["schemas in March 2025"]);
    assert_eq!(dated["hits"][0]["in_period"], true, "{dated}");
    check("search-result", &dated);
    check(
        "context-pack",
        &run(&ws, &["context", "schemas"]).ok().json(),
    );
    check(
        "context-pack",
        &run(&ws, &["context", "schemas in March"]).ok().json(),
    );
    check(
        "search-request",
        &serde_json::json!({"query": "q", "kinds": ["fact"], "limit": 3}),
    );
}

/// A one-shot registry: answers the package index and the wheel download.
fn fake_registry(
    wheel: Vec<u8>,
    advertised_sha256: String,
) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for _ in 0..2 {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            let (ctype, body) = if request_line.contains("/simple/onnxruntime/") {
                let index = serde_json::json!({"files": [{
                    "filename": "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                    "url": "/files/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                    "hashes": {"sha256": advertised_sha256},
                }]});
                (
                    "application/vnd.pypi.simple.v1+json",
                    index.to_string().into_bytes(),
                )
            } else {
                ("application/octet-stream", wheel.clone())
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(&body).unwrap();
        }
    });
    (base, handle)
}

#[test]
fn model_install_refuses_a_download_whose_digest_does_not_match() {
    let ws = Ws::uninitialised();
    let (base, server) = fake_registry(
        b"definitely not the onnxruntime wheel".to_vec(),
        "0".repeat(64),
    );
    let r = run_env(&ws, &["model", "install"], &[("MEM_PYPI_URL", &base)]);
    let err = r.fails("provider_unavailable", 5);
    assert!(
        err["message"].as_str().unwrap().contains("SHA-256"),
        "{err}"
    );
    assert!(
        err["hint"]
            .as_str()
            .unwrap()
            .contains("nothing was installed"),
        "{err}"
    );
    server.join().unwrap();
    let status = run(&ws, &["model", "status"]).ok().json();
    assert_eq!(status["active"], Value::Null, "{status}");
    assert!(
        status["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["active"] == false && m["installed"] == false)
    );
    assert!(!ws.path("models").join("active.json").exists());
    let list = run(&ws, &["model", "list"]).ok().json();
    assert_eq!(list["models"][0]["name"], "all-MiniLM-L6-v2");
}
