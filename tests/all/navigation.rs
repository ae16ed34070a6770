//! `catalog` and `trace` through the binary and REST.

use crate::schemas::assert_valid;
use crate::support::{Server, Ws, http, p, token};
use serde_json::Value;

fn get(url: &str, secret: &str) -> (u16, Value) {
    let resp = http()
        .get(url)
        .header("authorization", &format!("Bearer {secret}"))
        .call()
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[test]
fn catalog_pages_with_exact_totals_and_a_cursor_bound_to_the_revision() {
    let ws = Ws::new();
    for i in 0..5 {
        ws.remember(&format!("the ledger rule {i}"), "/a", None);
    }
    ws.remember("the b side", "/b", None);
    let f = ws.write("notes.md", b"# notes\n");
    ws.run(&["put", p(&f), "--to", "/a"]).ok();

    let first = ws.run(&["catalog", "--limit", "2"]).ok().json();
    assert_valid("catalog-page", &first);
    assert_eq!(first["totals"]["memories"], 6);
    assert_eq!(first["totals"]["files"], 1);
    assert_eq!(first["folders"][0]["name"], "/a");
    assert_eq!(first["folders"][0]["memories"], 5);
    assert_eq!(first["folders"][0]["files"], 1);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["truncated"], true);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();

    let mut ids: Vec<String> = Vec::new();
    let mut next = Some(cursor.clone());
    ids.extend(
        first["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string()),
    );
    while let Some(c) = next {
        let page = ws
            .run(&["catalog", "--limit", "2", "--cursor", &c])
            .ok()
            .json();
        ids.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].as_str().unwrap().to_string()),
        );
        next = page["next_cursor"].as_str().map(str::to_string);
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (7, 7));

    let only_b = ws.run(&["catalog", "--path", "/b"]).ok().json();
    assert_eq!(only_b["totals"]["items"], 1);
    let facts = ws.run(&["catalog", "--type", "fact"]).ok().json();
    assert_eq!(
        facts["totals"]["files"], 0,
        "a type filter lists memories only"
    );

    // A write moves the revision: the old cursor is refused with a hint.
    ws.remember("a late arrival", "/a", None);
    let err = ws
        .run(&["catalog", "--limit", "2", "--cursor", &cursor])
        .fails("cursor_stale", 1);
    assert!(err["hint"].as_str().unwrap().contains("without the cursor"));
}

#[test]
fn catalog_over_rest_counts_only_the_tokens_paths() {
    let ws = Ws::new();
    ws.remember("visible thing", "/team", None);
    ws.remember("hidden thing", "/private/x", None);
    let confined = token(&ws, "confined", "read", &["--paths", "/team"]);
    let srv = Server::start(&ws, &[]);
    let (status, page) = get(&srv.url("/v1/catalog"), &confined);
    assert_eq!(status, 200, "{page}");
    assert_valid("catalog-page", &page);
    assert_eq!(page["totals"]["memories"], 1);
    assert!(!page.to_string().contains("private"), "{page}");

    // A stale cursor is a 409 with the structured error.
    let (_, first) = get(&srv.url("/v1/catalog?limit=1"), &confined);
    assert_eq!(first["truncated"], false);
    // A well-formed cursor of another request is unprocessable, not malformed
    // (schemathesis holds a schema-valid request to 2xx/4xx-but-not-400).
    let (status, err) = get(
        &srv.url("/v1/catalog?cursor=c1-2f61006d656d5f31-00000000"),
        &confined,
    );
    assert_eq!(status, 422, "{err}");
    assert_eq!(err["code"], "unprocessable");
}

/// Replaces `old` through the gate and returns the new memory's id.
fn replace(ws: &Ws, old: &str, content: &str, key: &str) -> String {
    let out = ws
        .run(&[
            "propose",
            "replace",
            old,
            content,
            "--kind",
            "fact",
            "--path",
            "/infra",
            "--source-type",
            "ticket",
            "--source-ref",
            key,
            "--evidence",
            "supports:the upgrade ticket",
            "--idempotency-key",
            key,
        ])
        .ok()
        .json();
    assert_eq!(out["proposal"]["status"], "auto_approved", "{out}");
    out["proposal"]["result_ids"][0]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn trace_walks_supersession_chains_and_marks_the_cycle() {
    let ws = Ws::new();
    let v1 = ws.remember("Staging runs Postgres 15", "/infra", None)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v2 = replace(&ws, &v1, "Staging runs Postgres 16", "up-16");
    let v3 = replace(&ws, &v2, "Staging runs Postgres 17", "up-17");

    let t = ws.run(&["trace", &v3]).ok().json();
    assert_valid("trace-result", &t);
    let nodes: Vec<&str> = t["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, vec![v3.as_str(), v2.as_str(), v1.as_str()]);
    let edge = |from: &str, to: &str| {
        t["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["from"] == from && e["to"] == to)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(edge(&v3, &v2)["relation"], "supersedes");
    assert_eq!(edge(&v3, &v2)["class"], "tree");
    // v2 is superseded_by v3: back to an ancestor, a cycle.
    assert_eq!(edge(&v2, &v3)["class"], "back");

    // Incoming only, one relation kind, one hop.
    let incoming = ws
        .run(&[
            "trace",
            &v1,
            "--direction",
            "in",
            "--relation",
            "supersedes",
            "--depth",
            "1",
        ])
        .ok()
        .json();
    let edges = incoming["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "{incoming}");
    assert_eq!(edges[0]["from"], v2.as_str());
    assert_eq!(edges[0]["via"], "in");

    // A page of one node continues with the cursor.
    let page = ws.run(&["trace", &v3, "--nodes", "1"]).ok().json();
    assert_eq!(page["truncated"], true);
    assert_eq!(page["truncated_by"], "nodes");
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = ws
        .run(&["trace", &v3, "--nodes", "1", "--cursor", cursor])
        .ok()
        .json();
    assert_eq!(rest["nodes"][0]["id"], v2.as_str());

    // Budgets above their maxima are refused, and a stranger id is not found.
    let err = ws
        .run(&["trace", &v3, "--depth", "50"])
        .fails("bad_request", 1);
    assert!(err.to_string().contains("depth"), "{err}");
    ws.run(&["trace", "mem_01jd0000000000000000000000"])
        .fails("not_found", 2);
}

#[test]
fn trace_over_rest_does_not_walk_out_of_the_tokens_paths() {
    let ws = Ws::new();
    let old = ws.remember("Staging runs Postgres 15", "/infra", None)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let new = replace(&ws, &old, "Staging runs Postgres 16", "up-16");
    let admin = token(&ws, "admin", "admin", &[]);
    let elsewhere = token(&ws, "elsewhere", "read", &["--paths", "/other"]);
    let srv = Server::start(&ws, &[]);

    let (status, t) = get(&srv.url(&format!("/v1/trace/{new}?direction=both")), &admin);
    assert_eq!(status, 200, "{t}");
    assert_valid("trace-result", &t);
    assert_eq!(t["nodes"].as_array().unwrap().len(), 2);

    let (status, err) = get(&srv.url(&format!("/v1/trace/{new}")), &elsewhere);
    assert_eq!(status, 404, "{err}");
    assert_eq!(err["code"], "not_found");

    let (status, err) = get(&srv.url(&format!("/v1/trace/{new}?nodes=100000")), &admin);
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["code"], "bad_request");
}

#[test]
fn consolidation_due_shows_in_status_and_catalog_and_a_merge_resets_its_scope() {
    let ws = Ws::new();
    let toml = ws.home().join("mem.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(
        text.contains("consolidate_after = 200"),
        "the template documents it"
    );
    std::fs::write(
        &toml,
        text.replace("consolidate_after = 200", "consolidate_after = 2"),
    )
    .unwrap();
    let a = ws.remember("the deploy runs at noon", "/ops", None)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = ws.remember("the deploy needs a ticket", "/ops/deploy", None)["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.remember("a lone note", "/misc", None);
    let status = ws.run(&["status"]).ok().json();
    assert_valid("workspace-status", &status);
    let ops = &status["consolidation"][1];
    assert_eq!(
        (&ops["scope"], &ops["since_last"], &ops["due"]),
        (&"/ops".into(), &2.into(), &true.into()),
        "{status}"
    );
    assert_eq!(status["consolidation"][0]["due"], false);
    let human = ws.run_human(&["status"]).ok().text();
    assert!(
        human.contains("consolidation /ops: 2 memories never consolidated, consolidation due"),
        "{human}"
    );

    ws.run(&[
        "propose",
        "consolidate",
        &a,
        &b,
        "--content",
        "the deploy runs at noon with a ticket",
        "--kind",
        "fact",
        "--path",
        "/ops",
        "--source-type",
        "ticket",
        "--source-ref",
        "merge-1",
        "--evidence",
        "supports:the ops review",
        "--idempotency-key",
        "merge-1",
    ])
    .ok();
    let page = ws.run(&["catalog", "--path", "/ops"]).ok().json();
    assert_valid("catalog-page", &page);
    let scopes = page["consolidation"].as_array().unwrap();
    assert_eq!(scopes.len(), 1, "only scopes under the page's path: {page}");
    assert_eq!(scopes[0]["since_last"], 0);
    assert_eq!(scopes[0]["due"], false);
    assert!(scopes[0]["last_consolidated_at"].is_string());
}
