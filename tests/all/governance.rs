//! Governed writes end to end: write policy, review queue, atomic replace
//! under SIGKILL, budgets, audit tampering, check.

use crate::support::Ws;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

pub(crate) fn set_config(ws: &Ws, extra: &str) {
    let path = ws.home().join("mem.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    // Replace the template's [gate] and [budgets] tables with the test's.
    for table in ["[gate]", "[budgets]", "[types]"] {
        if extra.contains(table)
            && let Some(start) = text.find(table)
        {
            let end = text[start + 1..]
                .find("\n[")
                .map_or(text.len(), |e| start + 1 + e + 1);
            text.replace_range(start..end, "");
        }
    }
    text.push('\n');
    text.push_str(extra);
    std::fs::write(&path, text).unwrap();
}

#[test]
fn review_policy_queues_until_a_person_approves() {
    let ws = Ws::new();
    set_config(
        &ws,
        "[gate]\ndefault = \"auto\"\nkinds = { decision = \"review\" }\n",
    );
    let out = ws
        .run(&[
            "remember",
            "We freeze deploys in December",
            "--kind",
            "decision",
            "--path",
            "/ops",
            "--idempotency-key",
            "d1",
            "--agent-id",
            "claude",
            "--source-type",
            "meeting",
            "--source-ref",
            "ops-sync",
        ])
        .ok()
        .json();
    assert!(out.get("memory").is_none(), "{out}");
    let id = out["proposal"]["id"].as_str().unwrap().to_string();
    assert_eq!(out["proposal"]["status"], "queued");
    // Not recallable until approved.
    assert!(
        ws.run(&["memory", "list"]).ok().json()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let queue = ws.run(&["review", "list"]).ok().json();
    assert_eq!(queue.as_array().unwrap().len(), 1);
    let shown = ws.run(&["review", "show", &id]).ok().json();
    assert_eq!(shown["new_text"], "We freeze deploys in December");
    crate::schemas::assert_valid("review-item", &shown);
    crate::schemas::assert_valid("remember-result", &out);
    let approved = ws.run(&["review", "approve", &id]).ok().json();
    assert_eq!(approved["status"], "approved");
    crate::schemas::assert_valid("proposal", &approved);
    let list = ws.run(&["memory", "list"]).ok().json();
    let m = &list["items"][0];
    assert_eq!(m["governance"]["proposed_by"], "agent:claude");
    assert_eq!(m["governance"]["approved_by"], "human:owner");
    let audit = ws.run(&["audit", "list", "--target", &id]).ok().json();
    for entry in audit.as_array().unwrap() {
        crate::schemas::assert_valid("audit-entry", entry);
    }
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["approve", "propose"]);
}

#[test]
fn never_policy_refuses_and_is_audited_as_denied() {
    let ws = Ws::new();
    set_config(&ws, "[gate]\nagents = { rogue = \"never\" }\n");
    let err = ws
        .run(&[
            "remember",
            "the admin password is hunter2",
            "--kind",
            "fact",
            "--path",
            "/x",
            "--idempotency-key",
            "n1",
            "--agent-id",
            "rogue",
        ])
        .fails("write_rejected", 1);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("gate.agents.rogue")
    );
    let audit = ws.run(&["audit", "list"]).ok().json();
    assert_eq!(audit[0]["action"], "remember-denied");
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
fn budget_overflow_returns_the_structured_error_and_stores_nothing() {
    let ws = Ws::new();
    set_config(&ws, "[budgets]\nkinds = { note = 20 }\n");
    ws.run(&[
        "remember",
        "0123456789012345",
        "--kind",
        "note",
        "--path",
        "/b",
        "--idempotency-key",
        "b1",
    ])
    .ok();
    let err = ws
        .run(&[
            "remember",
            "too much text",
            "--kind",
            "note",
            "--path",
            "/b",
            "--idempotency-key",
            "b2",
        ])
        .fails("BUDGET_EXCEEDED", 4);
    assert_eq!(err["details"]["budget"], "kind:note");
    assert_eq!(err["details"]["usage"], 16);
    assert_eq!(err["details"]["limit"], 20);
    assert_eq!(err["details"]["needed"], 13);
    assert!(err["hint"].as_str().unwrap().contains("consolidate"));
    assert_eq!(
        ws.run(&["memory", "list"]).ok().json()["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let budgets = ws.run(&["budgets"]).ok().json();
    assert_eq!(budgets[0]["usage"], 16);
}

#[test]
fn audit_tampering_is_detected_and_named() {
    let ws = Ws::new();
    for i in 0..4 {
        ws.remember(&format!("fact {i}"), "/t", None);
    }
    let ok = ws.run(&["audit", "verify"]).ok().json();
    assert_eq!(ok["ok"], true);
    assert_eq!(ok["entries"], 4);

    // Edit entry 2 behind the host's back, as an attacker with disk access would.
    {
        let db = sled::open(ws.home().join("store").join("db")).unwrap();
        let tree = db.open_tree("log_audit").unwrap();
        let key = 2u64.to_be_bytes();
        let mut entry: Value = serde_json::from_slice(&tree.get(key).unwrap().unwrap()).unwrap();
        entry["verdict_source"] = Value::from("forged");
        tree.insert(key, serde_json::to_vec(&entry).unwrap())
            .unwrap();
        db.flush().unwrap();
    }
    let run = ws.run(&["audit", "verify"]);
    assert_eq!(run.code, 1);
    let bad = run.json();
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["first_bad_seq"], 2);
    crate::schemas::assert_valid("audit-verification", &bad);

    // Deleting an entry is caught too.
    let ws2 = Ws::new();
    for i in 0..4 {
        ws2.remember(&format!("fact {i}"), "/t", None);
    }
    {
        let db = sled::open(ws2.home().join("store").join("db")).unwrap();
        db.open_tree("log_audit")
            .unwrap()
            .remove(3u64.to_be_bytes())
            .unwrap();
        db.flush().unwrap();
    }
    let bad = ws2.run(&["audit", "verify"]).json();
    assert_eq!(bad["first_bad_seq"], 3);
}

#[test]
fn replace_is_atomic_under_sigkill() {
    let ws = Ws::new();
    let n = 400;
    let input: String = (0..n)
        .map(|i| format!("{{\"content\":\"old {i}\",\"kind\":\"fact\",\"path\":\"/r\",\"idempotency_key\":\"o{i}\"}}\n"))
        .collect();
    let run = ws
        .run_stdin(&["remember", "--jsonl", "-"], Some(input.as_bytes()))
        .ok();
    let old_ids: Vec<String> = run
        .json_lines()
        .iter()
        .map(|l| l["memory"]["id"].as_str().unwrap().to_string())
        .collect();

    let mut child = ws
        .cmd()
        .args(["--format", "json", "propose", "batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines: String = old_ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            format!(
                "{{\"op\":\"replace\",\"targets\":[\"{id}\"],\"memory\":{{\"content\":\"new {i}\",\"kind\":\"fact\",\"path\":\"/r\",\"source_type\":\"test\",\"source_ref\":\"kill-test\"}},\"evidence\":[{{\"stance\":\"supports\",\"observation\":\"line {i} of the test\"}}],\"idempotency_key\":\"p{i}\"}}\n"
            )
        })
        .collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(lines.as_bytes());
    });
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = writer.join();

    let all = ws
        .run(&["memory", "list", "--lifecycle", "all", "--limit", "1000"])
        .ok()
        .json();
    let items = all["items"].as_array().unwrap();
    let by_content: HashMap<String, &Value> = items
        .iter()
        .map(|m| (m["content"].as_str().unwrap().to_string(), m))
        .collect();
    let mut replaced = 0;
    for i in 0..n {
        let old = by_content[&format!("old {i}")];
        match by_content.get(&format!("new {i}")) {
            Some(new) => {
                replaced += 1;
                assert_eq!(
                    old["lifecycle"], "superseded",
                    "old {i} must be superseded when new {i} exists"
                );
                assert_eq!(new["lifecycle"], "active");
            }
            None => assert_eq!(
                old["lifecycle"], "active",
                "old {i} must stay active when new {i} was never written"
            ),
        }
    }
    assert!(replaced > 0, "the batch made progress before the kill");
    assert_eq!(ws.run(&["audit", "verify"]).ok().json()["ok"], true);
}

#[test]
fn check_blocks_a_guarded_constraint_and_needs_review_for_an_unguarded_one() {
    let ws = Ws::new();
    let schema = ws.write(
        "types/coding.json",
        br#"{"namespace":"coding","types":[{"name":"rule","role":"constraint","capabilities":["check"],"fields":{"deny_any":{},"when_any":{}}}]}"#,
    );
    std::fs::copy(&schema, ws.home().join("coding.json")).unwrap();
    set_config(&ws, "[types]\nfiles = [\"coding.json\"]\n");
    let types = ws.run(&["types"]).ok().json();
    assert!(
        types["types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "coding.rule" && t["role"] == "constraint")
    );
    ws.run(&[
        "remember",
        "Never commit .env files",
        "--kind",
        "coding.rule",
        "--path",
        "/repo",
        "--idempotency-key",
        "c1",
        "--attr",
        "deny_any=git add .env",
    ])
    .ok();
    let run = ws.run(&["check", "--text", "git add .env && git commit"]);
    assert_eq!(run.code, 1);
    let blocked = run.json();
    assert_eq!(blocked["status"], "BLOCK");
    crate::schemas::assert_valid("check-result", &blocked);
    assert!(
        blocked["blocked_by"][0]["citation"]
            .as_str()
            .unwrap()
            .starts_with("mem://memory/")
    );
    assert_eq!(
        ws.run(&["check", "--text", "cargo test"]).ok().json()["status"],
        "ALLOW"
    );

    ws.run(&[
        "remember",
        "Be careful with migrations",
        "--kind",
        "coding.rule",
        "--path",
        "/repo",
        "--idempotency-key",
        "c2",
    ])
    .ok();
    let review = ws.run(&["check", "--text", "cargo test"]);
    assert_eq!(review.code, 1);
    assert_eq!(review.json()["status"], "NEEDS_REVIEW");
    ws.run(&[
        "remember",
        "x",
        "--kind",
        "coding.unknown",
        "--path",
        "/repo",
        "--idempotency-key",
        "c3",
    ])
    .fails("unknown_memory_type", 1);
    let lint = ws.run(&["lint"]).ok().json();
    assert_eq!(lint["status"], "ok");
    crate::schemas::assert_valid("lint-report", &lint);
    for t in types["types"].as_array().unwrap() {
        crate::schemas::assert_valid("memory-type", t);
    }
}

#[test]
fn a_proposal_without_evidence_is_rejected_with_reasons_and_audited() {
    let ws = Ws::new();
    let err = ws
        .run(&[
            "propose",
            "create",
            "The CEO approved the budget",
            "--kind",
            "fact",
            "--path",
            "/org",
            "--idempotency-key",
            "e1",
            "--agent-id",
            "claude",
        ])
        .fails("write_rejected", 1);
    let codes: Vec<&str> = err["details"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"missing_source"), "{codes:?}");
    assert!(codes.contains(&"missing_supporting_evidence"), "{codes:?}");
    let audit = ws.run(&["audit", "list"]).ok().json();
    assert_eq!(audit[0]["action"], "propose-denied");
    assert_eq!(audit[0]["verdict_source"], "plugin:evidence");
    assert!(
        ws.run(&["memory", "list"]).ok().json()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // With a source and supporting evidence, the same claim is written.
    let f = ws.write("minutes.md", b"# Board\n\nThe CEO approved the budget.\n");
    let file = ws
        .run(&["put", crate::support::p(&f), "--to", "/org"])
        .ok()
        .json();
    let file_id = file["file"]["id"].as_str().unwrap().to_string();
    let ok = ws
        .run(&[
            "propose",
            "create",
            "The CEO approved the budget",
            "--kind",
            "fact",
            "--path",
            "/org",
            "--idempotency-key",
            "e2",
            "--agent-id",
            "claude",
            "--source-type",
            "minutes",
            "--source-ref",
            "minutes.md",
            "--evidence",
            &format!("supports:{file_id}#L3"),
        ])
        .ok()
        .json();
    assert_eq!(ok["proposal"]["status"], "auto_approved");
    crate::schemas::assert_valid("proposal-result", &ok);
    let review = ok["proposal"]["result_ids"][0]
        .as_str()
        .unwrap()
        .to_string();
    let m = ws.run(&["memory", "get", &review]).ok().json();
    assert_eq!(m["governance"]["approved_by"], "mem.toml gate.default");
}

/// Runs `mem-host --format json ARGS` with an empty models folder, so
/// search is deterministically lexical.
fn run_lexical(ws: &Ws, args: &[&str]) -> crate::support::Run {
    let mut c = ws.cmd();
    c.env("MEM_MODELS", ws.path("models"))
        .arg("--format")
        .arg("json")
        .args(args);
    crate::support::run_command(c, None)
}

fn search_ids(ws: &Ws, query: &str) -> Vec<String> {
    run_lexical(ws, &["search", query]).ok().json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

fn memory_json(ws: &Ws, id: &str) -> Value {
    ws.run(&["memory", "get", id]).ok().json()
}

fn version(ws: &Ws, id: &str) -> String {
    memory_json(ws, id)["state_version"].to_string()
}

#[test]
fn supersede_authority_lapses_when_the_superseder_is_archived_and_returns_on_restore() {
    let ws = Ws::new();
    let a = ws.remember("Invoices are kept in the blue bucket", "/billing", None);
    let a = a["id"].as_str().unwrap().to_string();
    assert!(search_ids(&ws, "blue").contains(&a));
    let out = ws
        .run(&[
            "propose",
            "replace",
            &a,
            "Invoices are kept in the green bucket",
            "--kind",
            "fact",
            "--path",
            "/billing",
            "--source-type",
            "ticket",
            "--source-ref",
            "BILL-12",
            "--evidence",
            "supports:the bucket was renamed in BILL-12",
            "--idempotency-key",
            "r1",
        ])
        .ok()
        .json();
    assert_eq!(out["proposal"]["status"], "auto_approved", "{out}");
    let b = out["proposal"]["result_ids"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(memory_json(&ws, &a)["lifecycle"], "superseded");
    assert!(!search_ids(&ws, "blue").contains(&a));
    assert!(search_ids(&ws, "green").contains(&b));

    // Archiving B lapses its authority: A is active and found again.
    ws.run(&[
        "memory",
        "archive",
        &b,
        "--expected-version",
        &version(&ws, &b),
    ])
    .ok();
    assert_eq!(memory_json(&ws, &a)["lifecycle"], "active");
    assert!(search_ids(&ws, "blue").contains(&a));
    assert!(!search_ids(&ws, "green").contains(&b));

    // Restoring B hides A again.
    ws.run(&[
        "memory",
        "restore",
        &b,
        "--expected-version",
        &version(&ws, &b),
    ])
    .ok();
    assert_eq!(memory_json(&ws, &a)["lifecycle"], "superseded");
    assert!(!search_ids(&ws, "blue").contains(&a));
    assert!(search_ids(&ws, "green").contains(&b));

    let audit = ws.run(&["audit", "list", "--target", &a]).ok().json();
    let entries = audit.as_array().unwrap();
    for entry in entries {
        crate::schemas::assert_valid("audit-entry", entry);
    }
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "supersede_reinstated",
            "supersede_lapsed",
            "supersede",
            "remember"
        ]
    );
    assert!(
        entries[1]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("archived"),
        "{}",
        entries[1]
    );
    assert_eq!(ws.run(&["audit", "verify"]).ok().json()["ok"], true);
    assert_eq!(ws.run(&["lint"]).ok().json()["status"], "ok");
}

#[test]
fn a_queued_replace_leaves_the_old_memory_active_and_recallable() {
    let ws = Ws::new();
    let a = ws.remember("Backups run at midnight", "/ops", None);
    let a = a["id"].as_str().unwrap().to_string();
    set_config(&ws, "[gate]\ndefault = \"review\"\n");
    let out = ws
        .run(&[
            "propose",
            "replace",
            &a,
            "Backups run at noon",
            "--kind",
            "fact",
            "--path",
            "/ops",
            "--source-type",
            "ticket",
            "--source-ref",
            "OPS-7",
            "--evidence",
            "supports:the cron entry says 12:00",
            "--idempotency-key",
            "q1",
        ])
        .ok()
        .json();
    assert_eq!(out["proposal"]["status"], "queued", "{out}");
    let old = memory_json(&ws, &a);
    assert_eq!(old["lifecycle"], "active");
    assert!(
        old.get("relations")
            .is_none_or(|r| r.as_array().unwrap().is_empty())
    );
    assert!(search_ids(&ws, "midnight").contains(&a));
    // Nothing new was written, so nothing can be found for the new text.
    assert!(search_ids(&ws, "noon").is_empty());
}

#[test]
fn a_direct_remember_records_a_detected_contradiction_and_deletes_nothing() {
    let ws = Ws::new();
    let first = ws.remember("The staging deploy can run migrations", "/ops", None);
    let second = ws.remember("The staging deploy cannot run migrations", "/ops", None);
    let first = first["id"].as_str().unwrap();
    let relations = second["relations"].as_array().unwrap();
    assert!(
        relations
            .iter()
            .any(|r| r["type"] == "conflicts_with" && r["target"] == first),
        "{second}"
    );
    crate::schemas::assert_valid("memory", &second);
    // Stored, both active, nothing hidden.
    let stored = memory_json(&ws, second["id"].as_str().unwrap());
    assert_eq!(stored["relations"], second["relations"]);
    assert_eq!(stored["lifecycle"], "active");
    assert_eq!(memory_json(&ws, first)["lifecycle"], "active");
    assert_eq!(ws.run(&["audit", "verify"]).ok().json()["ok"], true);
}

/// The issue's own example: opposite words (works/broken), not a negation.
#[test]
fn works_and_broken_are_a_contradiction() {
    let ws = Ws::new();
    let first = ws.remember("The staging deploy works", "/ops", None);
    let second = ws.remember("The staging deploy is broken", "/ops", None);
    let first = first["id"].as_str().unwrap();
    assert!(
        second["relations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["type"] == "conflicts_with" && r["target"] == first),
        "{second}"
    );
    assert_eq!(memory_json(&ws, first)["lifecycle"], "active");
}

/// Regression: the write gate's policy plugins ran on proposals only; the
/// default direct `remember` skipped them. Now every path asks them, and
/// what a policy demands per path is its configuration.
#[test]
fn regression_write_policies_judge_direct_writes_on_their_configured_routes() {
    let ws = Ws::new();
    set_config(
        &ws,
        "[plugins.evidence]\nconfig = { routes = \"propose,remember\" }\n",
    );
    let err = ws
        .run(&[
            "remember",
            "staging runs postgres 16",
            "--kind",
            "fact",
            "--path",
            "/infra",
            "--idempotency-key",
            "w1",
        ])
        .fails("write_rejected", 1);
    assert!(err.to_string().contains("missing_source"), "{err}");
    // A source but no evidence: the policy queues it for review.
    let out = ws
        .run(&[
            "remember",
            "staging runs postgres 17",
            "--kind",
            "fact",
            "--path",
            "/infra",
            "--idempotency-key",
            "w2",
            "--source-type",
            "log",
            "--source-ref",
            "deploy.log",
        ])
        .ok()
        .json();
    assert!(out["memory"].is_null(), "{out}");
    assert_eq!(out["proposal"]["status"], "queued", "{out}");
    // `batch` is not among the routes: a line without a source lands.
    let file = ws.write(
        "in.jsonl",
        br#"{"content":"staging runs postgres 18","kind":"fact","path":"/infra","idempotency_key":"w3"}"#,
    );
    let lines = ws
        .run(&["remember", "--jsonl", crate::support::p(&file)])
        .ok()
        .json_lines();
    assert_eq!(lines[0]["ok"], true, "{lines:?}");
}

#[test]
fn a_proposal_without_evidence_can_be_approved_as_tentative_and_serves_provisional() {
    let ws = Ws::new();
    let queued = ws
        .run(&[
            "propose",
            "create",
            "the office moves to pier 9",
            "--kind",
            "fact",
            "--path",
            "/team",
            "--idempotency-key",
            "t1",
            "--source-type",
            "chat",
            "--source-ref",
            "standup",
        ])
        .ok()
        .json();
    assert_eq!(queued["proposal"]["status"], "queued", "{queued}");
    let id = queued["proposal"]["id"].as_str().unwrap();
    let approved = ws
        .run(&["review", "approve", id, "--tentative"])
        .ok()
        .json();
    assert_eq!(approved["tentative"], true, "{approved}");
    let mid = approved["result_ids"][0].as_str().unwrap();
    let m = ws.run(&["memory", "get", mid]).ok().json();
    assert_eq!(m["confidence"], 0.3, "{m}");
    let pack = ws.run(&["context", "office pier"]).ok().json();
    assert_eq!(pack["provisional"][0]["id"], mid, "{pack:#}");
}

/// `audit list` narrows to one action and pages by `--before`.
#[test]
fn audit_list_filters_by_action_and_pages_by_seq() {
    let ws = crate::support::Ws::new();
    for i in 0..5 {
        ws.remember(&format!("fact {i}"), "/a", None);
    }
    let id = ws.remember("to forget", "/a", None)["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.run(&[
        "memory",
        "forget",
        &id,
        "--expected-version",
        "1",
        "--reason",
        "r",
        "--confirm",
    ])
    .ok();
    let seqs = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect()
    };
    let remembers = ws
        .run(&["audit", "list", "--action", "remember"])
        .ok()
        .json();
    assert_eq!(remembers.as_array().unwrap().len(), 6);
    assert!(
        remembers
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["action"] == "remember")
    );
    let forgets = ws
        .run(&["audit", "list", "--action", "forgotten"])
        .ok()
        .json();
    assert_eq!(forgets.as_array().unwrap().len(), 1, "{forgets}");
    // Pages of two, each below the last seq of the one before.
    let all = seqs(&remembers);
    let mut paged = Vec::new();
    let mut before: Option<u64> = None;
    loop {
        let mut args = vec!["audit", "list", "--action", "remember", "--limit", "2"];
        let b = before.map(|b| b.to_string());
        if let Some(b) = &b {
            args.extend(["--before", b]);
        }
        let page = seqs(&ws.run(&args).ok().json());
        if page.is_empty() {
            break;
        }
        before = page.last().copied();
        paged.extend(page);
    }
    assert_eq!(paged, all, "newest first, nothing skipped or repeated");
    ws.run(&["audit", "list", "--before", "0"])
        .fails("bad_request", 1);
}
