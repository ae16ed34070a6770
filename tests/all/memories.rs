//! Memories through the CLI: idempotency, compare-and-swap, forget, JSONL.

use crate::support::{Ws, p};

#[test]
fn remember_records_full_provenance() {
    let ws = Ws::new();
    let f = ws.write("spec.md", b"# spec");
    let file_id = ws.run(&["put", p(&f)]).ok().json()["file"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = ws
        .run(&[
            "remember",
            "The API uses cursor pagination",
            "--kind",
            "decision",
            "--path",
            "/proj/api",
            "--idempotency-key",
            "k-1",
            "--event-at",
            "2026-11-01T10:00:00+02:00",
            "--source-type",
            "doc",
            "--source-ref",
            "spec.md#L1",
            "--source-file-id",
            &file_id,
            "--agent-id",
            "claude",
            "--session-id",
            "s1",
            "--task-id",
            "t1",
            "--attr",
            "team=core",
            "--confidence",
            "0.9",
        ])
        .ok()
        .json();
    assert_eq!(r["replayed"], false);
    let m = &r["memory"];
    assert_eq!(m["kind"], "decision");
    assert_eq!(m["state_version"], 1);
    assert_eq!(m["lifecycle"], "active");
    assert_eq!(
        m["content_sha256"],
        mem_core::hash::sha256_hex(b"The API uses cursor pagination")
    );
    let prov = &m["provenance"];
    assert_eq!(prov["source_file_id"], file_id.as_str());
    assert_eq!(prov["agent_id"], "claude");
    assert_eq!(prov["event_at"], "2026-11-01T08:00:00Z");
    assert_eq!(m["attributes"]["team"], "core");
    let got = ws
        .run(&["memory", "get", m["id"].as_str().unwrap()])
        .ok()
        .json();
    assert_eq!(&got, m);
}

#[test]
fn idempotency_replays_the_original_and_refuses_a_different_request() {
    let ws = Ws::new();
    let first = ws
        .run(&[
            "remember",
            "Bob likes chess",
            "--kind",
            "fact",
            "--path",
            "/p",
            "--idempotency-key",
            "k",
        ])
        .ok()
        .json();
    let again = ws
        .run(&[
            "remember",
            "Bob likes chess",
            "--kind",
            "fact",
            "--path",
            "/p",
            "--idempotency-key",
            "k",
        ])
        .ok()
        .json();
    assert_eq!(again["replayed"], true);
    assert_eq!(again["memory"]["id"], first["memory"]["id"]);
    let err = ws
        .run(&[
            "remember",
            "Bob likes go",
            "--kind",
            "fact",
            "--path",
            "/p",
            "--idempotency-key",
            "k",
        ])
        .fails("idempotency_conflict", 1);
    assert_eq!(err["details"]["memory_id"], first["memory"]["id"]);
    let list = ws.run(&["memory", "list"]).ok().json();
    assert_eq!(
        list["items"].as_array().unwrap().len(),
        1,
        "nothing new was stored"
    );
}

#[test]
fn stale_expected_version_is_a_version_conflict() {
    let ws = Ws::new();
    let m = ws.remember("the cache is warm", "/ops", None);
    let id = m["id"].as_str().unwrap();
    let up = ws
        .run(&[
            "memory",
            "feedback",
            id,
            "useful",
            "--expected-version",
            "1",
        ])
        .ok()
        .json();
    assert_eq!(up["state_version"], 2);
    assert_eq!(up["feedback"]["useful"], 1);
    let err = ws
        .run(&["memory", "archive", id, "--expected-version", "1"])
        .fails("version_conflict", 1);
    assert_eq!(err["details"]["current_version"], 2);
    let archived = ws
        .run(&["memory", "archive", id, "--expected-version", "2"])
        .ok()
        .json();
    assert_eq!(archived["lifecycle"], "archived");
    assert!(
        ws.run(&["memory", "list"]).ok().json()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let all = ws
        .run(&["memory", "list", "--lifecycle", "archived"])
        .ok()
        .json();
    assert_eq!(all["items"][0]["id"], id);
    let restored = ws
        .run(&["memory", "restore", id, "--expected-version", "3"])
        .ok()
        .json();
    assert_eq!(restored["lifecycle"], "active");
    ws.run(&["memory", "restore", id, "--expected-version", "4"])
        .fails("invalid_state", 1);
    ws.run(&["memory", "feedback", id, "bogus", "--expected-version", "4"])
        .fails("bad_request", 1);
    ws.run(&["memory", "archive", "mem_nope", "--expected-version", "1"])
        .fails("not_found", 2);
}

#[test]
fn forget_purges_the_payload_and_leaves_a_tombstone() {
    let ws = Ws::new();
    let m = ws.remember("my password is swordfish", "/secrets", Some("pw"));
    let id = m["id"].as_str().unwrap();
    ws.run(&[
        "memory",
        "forget",
        id,
        "--expected-version",
        "1",
        "--reason",
        "leaked",
    ])
    .fails("confirmation_required", 1);
    let f = ws
        .run(&[
            "memory",
            "forget",
            id,
            "--expected-version",
            "1",
            "--reason",
            "leaked",
            "--confirm",
        ])
        .ok()
        .json();
    assert_eq!(f["lifecycle"], "forgotten");
    assert!(f.get("content").is_none_or(|c| c.is_null()));
    assert_eq!(f["tombstone"]["reason"], "leaked");
    let got = ws.run(&["memory", "get", id]).ok();
    assert!(!got.text().contains("swordfish"));
    let listed = ws.run(&["memory", "list", "--lifecycle", "all"]).ok();
    assert!(!listed.text().contains("swordfish"));
    ws.run(&[
        "memory",
        "feedback",
        id,
        "useful",
        "--expected-version",
        "2",
    ])
    .fails("invalid_state", 1);
}

#[test]
fn jsonl_bad_lines_fail_alone_and_good_lines_land() {
    let ws = Ws::new();
    let lines = [
        r#"{"content":"first","kind":"note","path":"/j","idempotency_key":"a"}"#,
        r#"{"content":"no kind","path":"/j"}"#,
        "this is not json",
        "",
        r#"{"content":"bad kind","kind":"rumour","path":"/j"}"#,
        r#"{"content":"bad path","kind":"note","path":"j"}"#,
        r#"{"content":"extra","kind":"note","path":"/j","colour":"red"}"#,
        r#"{"content":"last","kind":"fact","path":"/j","idempotency_key":"b"}"#,
        r#"{"content":"first","kind":"note","path":"/j","idempotency_key":"a"}"#,
    ];
    let file = ws.write("in.jsonl", lines.join("\n").as_bytes());
    let run = ws.run(&["remember", "--jsonl", p(&file)]);
    assert_eq!(run.code, 1, "partial failure exits non-zero");
    let out = run.json_lines();
    let summary: Vec<(u64, bool)> = out
        .iter()
        .map(|o| (o["line"].as_u64().unwrap(), o["ok"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            (1, true),
            (2, false),
            (3, false),
            (5, false),
            (6, false),
            (7, false),
            (8, true),
            (9, true)
        ]
    );
    assert_eq!(out[3]["error"]["code"], "unknown_memory_type");
    assert_eq!(out[4]["error"]["code"], "bad_path");
    assert!(
        out[1]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 2")
    );
    assert!(
        out[5]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("colour")
    );
    assert_eq!(out[7]["replayed"], true);
    assert_eq!(out[7]["memory"]["id"], out[0]["memory"]["id"]);
    let listed = ws.run(&["memory", "list", "--path", "/j"]).ok().json();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
}

#[test]
fn jsonl_from_stdin_in_order() {
    let ws = Ws::new();
    let input: String = (0..1200).map(|i| format!("{{\"content\":\"m{i}\",\"kind\":\"note\",\"path\":\"/s\",\"idempotency_key\":\"s{i}\"}}\n")).collect();
    let run = ws
        .run_stdin(&["remember", "--jsonl", "-"], Some(input.as_bytes()))
        .ok();
    let out = run.json_lines();
    assert_eq!(out.len(), 1200);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o["line"], i + 1);
        assert_eq!(o["memory"]["content"], format!("m{i}"));
    }
}

#[test]
fn list_pages_with_a_cursor() {
    let ws = Ws::new();
    let input: String = (0..25).map(|i| format!("{{\"content\":\"n{i}\",\"kind\":\"note\",\"path\":\"/l/{}\",\"idempotency_key\":\"l{i}\"}}\n", i % 3)).collect();
    ws.run_stdin(&["remember", "--jsonl", "-"], Some(input.as_bytes()))
        .ok();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["memory", "list", "--limit", "10"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = ws.run(&args).ok().json();
        for m in page["items"].as_array().unwrap() {
            seen.push(m["content"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).rev().map(|i| format!("n{i}")).collect();
    assert_eq!(seen, expected);
    let sub = ws
        .run(&["memory", "list", "--path", "/l/1", "--kind", "note"])
        .ok()
        .json();
    assert_eq!(sub["items"].as_array().unwrap().len(), 8);
    ws.run(&["memory", "list", "--limit", "0"])
        .fails("bad_request", 1);
    ws.run(&["memory", "list", "--cursor", "garbage"])
        .fails("bad_request", 1);
}

#[test]
fn oversized_and_empty_content_are_refused() {
    let ws = Ws::new();
    let big = "x".repeat(64 * 1024 + 1);
    let err = ws
        .run(&[
            "remember",
            &big,
            "--kind",
            "note",
            "--path",
            "/b",
            "--idempotency-key",
            "b1",
        ])
        .fails("payload_too_large", 1);
    assert_eq!(err["details"]["limit"], 65536);
    ws.run(&[
        "remember",
        "   ",
        "--kind",
        "note",
        "--path",
        "/b",
        "--idempotency-key",
        "b2",
    ])
    .fails("bad_request", 1);
    ws.run(&[
        "remember",
        "x",
        "--kind",
        "note",
        "--path",
        "/b",
        "--idempotency-key",
        "b3",
        "--confidence",
        "7",
    ])
    .fails("bad_request", 1);
    assert!(
        ws.run(&["memory", "list", "--lifecycle", "all"])
            .ok()
            .json()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_write_needs_an_idempotency_key() {
    let ws = Ws::new();
    // The CLI refuses before anything runs; a JSONL line without one fails alone.
    let run = ws.run(&["remember", "x", "--kind", "note", "--path", "/b"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let input = "{\"content\":\"no key\",\"kind\":\"note\",\"path\":\"/k\"}\n{\"content\":\"keyed\",\"kind\":\"note\",\"path\":\"/k\",\"idempotency_key\":\"k1\"}\n";
    let run = ws.run_stdin(&["remember", "--jsonl", "-"], Some(input.as_bytes()));
    assert_eq!(run.code, 1);
    let out = run.json_lines();
    assert_eq!(out[0]["ok"], false);
    assert_eq!(out[0]["error"]["code"], "bad_request");
    assert_eq!(out[1]["ok"], true);
}

/// The ledger narrows to one agent's memories and to pinned ones, and
/// pages with its cursor under those filters.
#[test]
fn list_filters_by_agent_and_pinned_and_pages_under_them() {
    let ws = Ws::new();
    let mut by_a = Vec::new();
    for i in 0..5 {
        let agent = if i % 2 == 0 { "agent-a" } else { "agent-b" };
        let m = ws
            .run(&[
                "remember",
                &format!("note {i}"),
                "--kind",
                "fact",
                "--path",
                "/n",
                "--agent-id",
                agent,
                "--idempotency-key",
                &format!("k{i}"),
            ])
            .ok()
            .json();
        let id = m["memory"]["id"].as_str().unwrap().to_string();
        if agent == "agent-a" {
            by_a.push(id);
        }
    }
    ws.run(&[
        "memory",
        "feedback",
        &by_a[0],
        "pin",
        "--expected-version",
        "1",
    ])
    .ok();
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let a = ws
        .run(&["memory", "list", "--agent", "agent-a"])
        .ok()
        .json();
    let mut want = by_a.clone();
    want.reverse();
    assert_eq!(ids(&a), want, "agent-a's, newest first");
    // Paged under the filter: two, then the last one.
    let first = ws
        .run(&["memory", "list", "--agent", "agent-a", "--limit", "2"])
        .ok()
        .json();
    assert_eq!(ids(&first), want[..2]);
    let cursor = first["next_cursor"].as_str().unwrap();
    let rest = ws
        .run(&[
            "memory", "list", "--agent", "agent-a", "--limit", "2", "--cursor", cursor,
        ])
        .ok()
        .json();
    assert_eq!(ids(&rest), want[2..]);
    let pinned = ws.run(&["memory", "list", "--pinned", "true"]).ok().json();
    assert_eq!(ids(&pinned), vec![by_a[0].clone()]);
    let unpinned_a = ws
        .run(&["memory", "list", "--agent", "agent-a", "--pinned", "false"])
        .ok()
        .json();
    assert_eq!(ids(&unpinned_a), want[..2]);
    let none = ws.run(&["memory", "list", "--agent", "nobody"]).ok().json();
    assert!(ids(&none).is_empty());
    let long = "x".repeat(513);
    ws.run(&["memory", "list", "--agent", &long])
        .fails("bad_request", 1);
}

/// A filter few memories match reads a bounded part of the ledger per
/// page: the page ends short with a cursor, and the cursor finds the rest.
#[test]
fn a_sparse_filter_pages_through_the_ledger_in_bounded_reads() {
    let ws = Ws::new();
    let n = mem_service::MAX_LIST_SCAN + 300;
    let lines: String = (0..n)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({
                    "content": format!("n{i}"), "kind": "fact", "path": "/s",
                    "idempotency_key": format!("k{i}"),
                    "agent_id": if i == 0 { "rare" } else { "busy" },
                })
            )
        })
        .collect();
    let file = ws.write("m.jsonl", lines.as_bytes());
    ws.run(&["remember", "--jsonl", p(&file)]).ok();
    let first = ws
        .run(&["memory", "list", "--agent", "rare", "--limit", "5"])
        .ok()
        .json();
    assert!(
        first["items"].as_array().unwrap().is_empty(),
        "the oldest is past one page's reads"
    );
    let cursor = first["next_cursor"].as_str().expect("a cursor to go on");
    let second = ws
        .run(&[
            "memory", "list", "--agent", "rare", "--limit", "5", "--cursor", cursor,
        ])
        .ok()
        .json();
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert_eq!(second["items"][0]["content"], "n0");
    assert!(second["next_cursor"].is_null());
}
