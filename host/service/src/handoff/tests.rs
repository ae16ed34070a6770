//! Checkpoints and resume on the real store, through the door.

use crate::Service;
use crate::access::{Access, Scope};
use crate::door::find;
use mem_core::ErrorCode;
use mem_core::store::{Log, Table};
use serde_json::{Value, json};

fn run(svc: &Service, access: &Access, op: &str, args: Value) -> mem_core::MemResult<Value> {
    find(op)?
        .run_json(&svc.caller(access), args)
        .map(|d| d.value)
}

fn confined(path: &str) -> Access {
    Access::token(
        format!("tok_{}", path.trim_start_matches('/')),
        "agent".into(),
        vec![Scope::Read, Scope::Write, Scope::Search],
        vec![path.into()],
    )
    .unwrap()
}

fn handoff(goal: &str, refs: &[String]) -> Value {
    json!({
        "version": "handoff.v1",
        "goal": goal,
        "progress": "half way",
        "next_steps": ["finish it"],
        "references": refs.iter().map(|u| json!({"uri": u})).collect::<Vec<_>>(),
        "producer": {"agent": "claude", "session": "s1"},
    })
}

fn checkpoint(
    svc: &Service,
    access: &Access,
    task: &str,
    base: Option<&str>,
    key: &str,
    goal: &str,
) -> mem_core::MemResult<Value> {
    let mut req = json!({"task": task, "handoff": handoff(goal, &[]), "idempotency_key": key});
    if let Some(b) = base {
        req["base_checkpoint_id"] = b.into();
    }
    run(svc, access, "task.checkpoint", req)
}

fn remember(svc: &Service, content: &str, path: &str, key: &str) -> String {
    let out = run(
        svc,
        &Access::owner(),
        "memory.remember",
        json!({"content": content, "kind": "fact", "path": path, "idempotency_key": key}),
    )
    .unwrap();
    out["memory"]["id"].as_str().unwrap().to_string()
}

#[test]
fn checkpoints_chain_on_the_head_and_a_stale_base_conflicts_with_the_head() {
    let (_d, svc) = crate::tests::service();
    let owner = Access::owner();
    let first = checkpoint(&svc, &owner, "t1", None, "k1", "one").unwrap();
    let id1 = first["checkpoint"]["id"].as_str().unwrap().to_string();
    assert_eq!(first["checkpoint"]["seq"], 1);
    assert_eq!(first["task"]["head_checkpoint_id"], id1.as_str());
    assert_eq!(first["checkpoint"]["handoff"]["task"], "t1");

    // Without a base once the task has one: a conflict naming the head.
    let e = checkpoint(&svc, &owner, "t1", None, "k2", "two").unwrap_err();
    assert_eq!(e.code, ErrorCode::CheckpointConflict);
    assert_eq!(e.details["head_checkpoint_id"], id1.as_str());

    let second = checkpoint(&svc, &owner, "t1", Some(&id1), "k3", "two").unwrap();
    let id2 = second["checkpoint"]["id"].as_str().unwrap().to_string();
    assert_eq!(second["checkpoint"]["base_checkpoint_id"], id1.as_str());
    assert_eq!(second["task"]["checkpoints"], 2);

    let e = checkpoint(&svc, &owner, "t1", Some(&id1), "k4", "three").unwrap_err();
    assert_eq!(e.code, ErrorCode::CheckpointConflict);
    assert_eq!(e.details["head_checkpoint_id"], id2.as_str());
    assert!(!e.hint.is_empty());
    // A base on a task that has none is a conflict too.
    let e = checkpoint(&svc, &owner, "t9", Some(&id1), "k5", "x").unwrap_err();
    assert_eq!(e.code, ErrorCode::CheckpointConflict);
    assert_eq!(e.details["head_checkpoint_id"], Value::Null);

    // Both checkpoints stay, newest first, and are paged by seq.
    let page = run(
        &svc,
        &owner,
        "task.checkpoints",
        json!({"task": "t1", "limit": 1}),
    )
    .unwrap();
    assert_eq!(page["checkpoints"][0]["id"], id2.as_str());
    assert_eq!(page["next_before"], 2);
    let older = run(
        &svc,
        &owner,
        "task.checkpoints",
        json!({"task": "t1", "before": 2}),
    )
    .unwrap();
    assert_eq!(older["checkpoints"][0]["id"], id1.as_str());
    assert_eq!(older["next_before"], Value::Null);
    let got = run(
        &svc,
        &owner,
        "task.checkpoint_get",
        json!({"task": "t1", "id": id1}),
    )
    .unwrap();
    assert_eq!(got["handoff"]["goal"], "one");
    let e = run(
        &svc,
        &owner,
        "task.checkpoint_get",
        json!({"task": "t9", "id": id1}),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

#[test]
fn a_retried_checkpoint_returns_the_original_even_after_the_head_moved() {
    let (_d, svc) = crate::tests::service();
    let owner = Access::owner();
    let first = checkpoint(&svc, &owner, "t1", None, "k1", "one").unwrap();
    let id1 = first["checkpoint"]["id"].as_str().unwrap();
    checkpoint(&svc, &owner, "t1", Some(id1), "k2", "two").unwrap();
    let again = checkpoint(&svc, &owner, "t1", None, "k1", "one").unwrap();
    assert_eq!(again["replayed"], true);
    assert_eq!(again["checkpoint"]["id"], id1);
    let e = checkpoint(&svc, &owner, "t1", None, "k1", "changed").unwrap_err();
    assert_eq!(e.code, ErrorCode::IdempotencyConflict);
    // Keys are per caller: another token's key k1 is its own.
    let other = confined("/");
    let e = checkpoint(&svc, &other, "t1", None, "k1", "one").unwrap_err();
    assert_eq!(e.code, ErrorCode::CheckpointConflict);
}

#[test]
fn concurrent_checkpoints_on_one_head_let_exactly_one_win() {
    let (_d, svc) = crate::tests::service();
    let owner = Access::owner();
    let first = checkpoint(&svc, &owner, "t1", None, "k0", "zero").unwrap();
    let head = first["checkpoint"]["id"].as_str().unwrap().to_string();
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (svc, owner, head) = (&svc, &owner, &head);
                s.spawn(move || {
                    checkpoint(svc, owner, "t1", Some(head), &format!("k{}", i + 1), "n")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(won, 1, "{results:?}");
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(r.code, ErrorCode::CheckpointConflict, "{r:?}");
    }
    assert_eq!(svc.task("t1").unwrap().checkpoints, 2);
}

#[test]
fn a_token_sees_and_checkpoints_only_tasks_inside_its_paths() {
    let (_d, svc) = crate::tests::service();
    let a = confined("/a");
    let b = confined("/b");
    let made = checkpoint(&svc, &b, "tb", None, "k1", "b's task").unwrap();
    assert_eq!(
        made["task"]["scope"], "/b",
        "a confined token's task takes its path"
    );
    let head = made["checkpoint"]["id"].as_str().unwrap();
    let absent = run(&svc, &a, "task.resume", json!({"task": "nope"})).unwrap_err();
    let hidden = run(&svc, &a, "task.resume", json!({"task": "tb"})).unwrap_err();
    assert_eq!(hidden.code, ErrorCode::NotFound);
    assert_eq!(
        hidden.message.replace("tb", "nope"),
        absent.message,
        "an invisible task reads like an absent one"
    );
    let e = checkpoint(&svc, &a, "tb", Some(head), "k2", "steal").unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let e = run(
        &svc,
        &a,
        "task.checkpoint",
        json!({"task": "ta", "scope": "/b", "handoff": handoff("g", &[]), "idempotency_key": "k3"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden);
    let listed = run(&svc, &a, "task.list", json!({})).unwrap();
    assert_eq!(listed["tasks"], json!([]));
    let listed = run(&svc, &Access::owner(), "task.list", json!({"scope": "/b"})).unwrap();
    assert_eq!(listed["tasks"][0]["key"], "tb");
    let listed = run(&svc, &Access::owner(), "task.list", json!({"scope": "/a"})).unwrap();
    assert_eq!(listed["tasks"], json!([]));
}

#[test]
fn resume_resolves_references_or_says_why_not() {
    let (_d, svc) = crate::tests::service();
    let owner = Access::owner();
    let kept = remember(&svc, "The importer streams rows", "/a", "m1");
    let gone = remember(&svc, "An obsolete note", "/a", "m2");
    let elsewhere = remember(&svc, "A secret of /b", "/b", "m3");
    let m = run(&svc, &owner, "memory.get", json!({"id": gone})).unwrap();
    run(
        &svc,
        &owner,
        "memory.forget",
        json!({"id": gone, "expected_version": m["state_version"], "reason": "t", "confirm": true}),
    )
    .unwrap();
    let file = run(
        &svc,
        &owner,
        "files.put",
        json!({"path": "/a/plan.md", "content": "line one\nline two\nline three\n"}),
    )
    .unwrap();
    let file_id = file["file"]["id"].as_str().unwrap().to_string();
    let refs = vec![
        format!("mem://memory/{kept}"),
        format!("mem://memory/{gone}"),
        format!("mem://memory/{elsewhere}"),
        "mem://memory/mem_01jd0000000000000000000000".to_string(),
        format!("mem://file/{file_id}#L2-3"),
        "https://example.org/spec".to_string(),
    ];
    let a = confined("/a");
    run(
        &svc,
        &a,
        "task.checkpoint",
        json!({"task": "t1", "handoff": handoff("ship the importer", &refs), "idempotency_key": "k"}),
    )
    .unwrap();
    let r = run(
        &svc,
        &a,
        "task.resume",
        json!({"task": "t1", "focus": "importer"}),
    )
    .unwrap();
    assert_eq!(r["is_head"], true);
    let resolved = r["references"].as_array().unwrap();
    assert_eq!(resolved.len(), 2, "{r}");
    assert_eq!(resolved[0]["id"], kept.as_str());
    assert_eq!(resolved[0]["excerpt"], "The importer streams rows");
    assert_eq!(
        resolved[0]["content_sha256"],
        mem_core::hash::sha256_hex(b"The importer streams rows")
    );
    assert_eq!(resolved[1]["excerpt"], "line two\nline three");
    assert_eq!(resolved[1]["lines"], json!([2, 3]));
    assert_eq!(resolved[1]["content_sha256"], file["file"]["sha256"]);
    let missing: Vec<(&str, &str)> = r["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["uri"].as_str().unwrap(), m["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        missing,
        vec![
            (refs[1].as_str(), "forgotten"),
            (refs[2].as_str(), "not_found"),
            (refs[3].as_str(), "not_found"),
        ],
        "out of scope reads exactly like absent"
    );
    assert_eq!(r["external"][0]["uri"], "https://example.org/spec");
    // The pack itself is checked end to end, where the index runs.
    assert!(
        r["context"].is_object() || r["context_note"].is_string(),
        "{r}"
    );
}

/// A PDF's bytes are not its text: a reference to lines of a page quotes
/// the processed page, as review does.
#[test]
fn a_reference_to_a_page_resolves_to_the_processed_page_lines() {
    let (_d, svc, file) = crate::tests::paged_service(Default::default());
    let owner = Access::owner();
    let uri = format!("mem://file/{file}#p2:L2");
    run(
        &svc,
        &owner,
        "task.checkpoint",
        json!({"task": "pdf", "handoff": handoff("read the spec", &[uri]), "idempotency_key": "k"}),
    )
    .unwrap();
    let r = run(&svc, &owner, "task.resume", json!({"task": "pdf"})).unwrap();
    let got = &r["references"][0];
    assert_eq!(got["excerpt"], "for TLS", "{r}");
    assert_eq!(got["page"], 2);
    assert_eq!(got["lines"], json!([2, 2]));
}

#[test]
fn a_bad_handoff_names_its_field_and_stores_nothing() {
    let (_d, svc) = crate::tests::service();
    let owner = Access::owner();
    let mut h = handoff("g", &[]);
    h["surprise"] = json!(1);
    let e = run(
        &svc,
        &owner,
        "task.checkpoint",
        json!({"task": "t1", "handoff": h, "idempotency_key": "k"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadHandoff, "{e:?}");
    assert_eq!(e.details["field"], "/handoff/surprise");
    let mut h = handoff("g", &[]);
    h["next_steps"] = json!(["ok", "x".repeat(doc_max() + 1)]);
    let e = run(
        &svc,
        &owner,
        "task.checkpoint",
        json!({"task": "t1", "handoff": h, "idempotency_key": "k"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadHandoff);
    assert_eq!(e.details["field"], "/handoff/next_steps/1");
    let mut h = handoff("g", &[]);
    h["version"] = json!("handoff.v2");
    let e = run(
        &svc,
        &owner,
        "task.checkpoint",
        json!({"task": "t1", "handoff": h, "idempotency_key": "k"}),
    )
    .unwrap_err();
    assert_eq!(
        (e.code, e.details["field"].as_str()),
        (ErrorCode::BadHandoff, Some("/handoff/version"))
    );
    // A wrong field outside the handoff stays a bad_request.
    let e = run(
        &svc,
        &owner,
        "task.checkpoint",
        json!({"task": "bad key!", "handoff": handoff("g", &[]), "idempotency_key": "k"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert_eq!(svc.store().count(Table::Tasks).unwrap(), 0);
    assert_eq!(svc.store().count(Table::Checkpoints).unwrap(), 0);
}

fn doc_max() -> usize {
    super::doc::MAX_ITEM_CHARS
}

#[test]
fn checkpoints_are_audited_and_logged_like_other_writes() {
    let (_d, svc) = crate::tests::service();
    let owner = Access::owner();
    let first = checkpoint(&svc, &owner, "t1", None, "k1", "one").unwrap();
    checkpoint(&svc, &owner, "t1", None, "k2", "stale").unwrap_err();
    let audit = svc.audit_list(&Default::default()).unwrap();
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert!(actions.contains(&"checkpoint"), "{actions:?}");
    assert!(actions.contains(&"checkpoint-denied"), "{actions:?}");
    let events = svc.store().read_log(Log::Events, 0, 100).unwrap();
    let ev: Vec<mem_core::model::Event> = events
        .iter()
        .map(|(_, raw)| serde_json::from_slice(raw).unwrap())
        .collect();
    let ck = ev.iter().find(|e| e.action == "task.checkpointed").unwrap();
    assert_eq!(ck.target, "t1");
    assert_eq!(ck.data["checkpoint_id"], first["checkpoint"]["id"]);
    assert!(svc.audit_verify().unwrap().ok);
}
