//! The door's own rules: scopes, path boundaries, kept answers.

use super::*;
use crate::ops::files::{Mkdir, PutFileRequest};
use crate::ops::memories::{Archive, Forget, GetMemory};
use crate::tokens::TokenRequest;
use crate::{ListMemories, RememberRequest};
use mem_core::model::Memory;

fn token(s: &Service, scopes: &[&str], paths: &[&str]) -> Access {
    let t = s
        .create_token(&TokenRequest {
            name: format!("t{}", mem_core::id::new_id("x")),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            paths: paths.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
        .unwrap();
    s.authenticate(&t.secret).unwrap()
}

fn remember(s: &Service, path: &str, content: &str) -> Memory {
    s.caller(&Access::owner())
        .run(RememberRequest {
            content: content.into(),
            kind: "fact".into(),
            path: path.into(),
            idempotency_key: format!("k-{path}-{content}"),
            ..Default::default()
        })
        .unwrap()
        .value
        .memory
        .unwrap()
}

fn get(c: &Caller<'_>, id: &str) -> MemResult<Memory> {
    c.run(GetMemory { id: id.into() }).map(|d| d.value)
}

#[test]
fn objects_outside_paths_read_as_not_found_and_a_missing_scope_is_forbidden() {
    let (_d, s) = crate::tests::service();
    let inside = remember(&s, "/a", "inside");
    let outside = remember(&s, "/b", "outside");
    let a = token(&s, &["read", "write"], &["/a"]);
    let c = s.caller(&a);
    assert_eq!(get(&c, &inside.id).unwrap().id, inside.id);
    let e = get(&c, &outside.id).unwrap_err();
    let missing = get(&c, "mem_01jdzzzzzzzzzzzzzzzzzzzzzz").unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    assert_eq!(e.hint, missing.hint);
    // Without the operation's scope: forbidden, on an object as on the
    // workspace (the same answer on every surface).
    let search_only = token(&s, &["search"], &[]);
    assert_eq!(
        get(&s.caller(&search_only), &inside.id).unwrap_err().code,
        ErrorCode::Forbidden
    );
    assert_eq!(
        s.caller(&search_only)
            .run(ListMemories::default())
            .unwrap_err()
            .code,
        ErrorCode::Forbidden
    );
    let listed = c.run(ListMemories::default()).unwrap().value;
    assert!(listed.items.iter().all(|m| m.path.as_str() == "/a"));
    let archive = Archive {
        id: outside.id.clone(),
        expected_version: outside.state_version,
        idempotency_key: None,
    };
    assert_eq!(c.run(archive).unwrap_err().code, ErrorCode::NotFound);
    let forget = Forget {
        id: inside.id.clone(),
        expected_version: inside.state_version,
        reason: "x".into(),
        confirm: true,
        idempotency_key: None,
    };
    assert_eq!(
        c.run(forget).unwrap_err().code,
        ErrorCode::Forbidden,
        "no delete scope"
    );
}

#[test]
fn writes_outside_paths_are_forbidden_and_actor_names_the_token() {
    let (_d, s) = crate::tests::service();
    let a = token(&s, &["write", "read"], &["/a"]);
    let c = s.caller(&a);
    let req = |path: &str| RememberRequest {
        content: "x".into(),
        kind: "fact".into(),
        path: path.into(),
        idempotency_key: "k".into(),
        ..Default::default()
    };
    assert_eq!(c.run(req("/b")).unwrap_err().code, ErrorCode::Forbidden);
    let m = c.run(req("/a/sub")).unwrap().value.memory.unwrap();
    let by = m.governance.unwrap().proposed_by;
    assert!(by.contains(a.token_id().unwrap()), "{by}");
    assert_eq!(c.admin().unwrap_err().code, ErrorCode::Forbidden);
}

#[test]
fn a_kept_answer_is_replayed_and_another_request_with_its_key_conflicts() {
    let (_d, s) = crate::tests::service();
    let owner = Access::owner();
    let c = s.caller(&owner);
    let mkdir = |path: &str| Mkdir {
        path: path.into(),
        parents: true,
        idempotency_key: Some("mk-1".into()),
    };
    let first = c.run(mkdir("/x/y")).unwrap();
    assert!(!first.replayed);
    let again = c.run(mkdir("/x/y")).unwrap();
    assert!(again.replayed);
    assert_eq!(again.value, first.value, "the first answer, not a new one");
    assert_eq!(
        c.run(mkdir("/x/z")).unwrap_err().code,
        ErrorCode::IdempotencyConflict
    );
    // Another caller's key space is its own.
    let t = token(&s, &["write"], &[]);
    assert!(!s.caller(&t).run(mkdir("/x/z")).unwrap().replayed);
}

#[test]
fn regression_content_is_stored_exactly_as_sent() {
    let (_d, s) = crate::tests::service();
    let content = "  padded statement\n";
    let m = s
        .caller(&Access::owner())
        .run(RememberRequest {
            content: content.into(),
            kind: "fact".into(),
            path: "/a".into(),
            idempotency_key: "k".into(),
            ..Default::default()
        })
        .unwrap()
        .value
        .memory
        .unwrap();
    assert_eq!(m.content.as_deref(), Some(content));
    assert_eq!(m.content_sha256, sha256_hex(content.as_bytes()));
}

#[test]
fn regression_padded_paths_are_refused_for_memories_and_files_alike() {
    let (_d, s) = crate::tests::service();
    let owner = Access::owner();
    let c = s.caller(&owner);
    let e = c
        .run(RememberRequest {
            content: "x".into(),
            kind: "fact".into(),
            path: " /a".into(),
            idempotency_key: "k".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadPath);
    let e = c
        .run(PutFileRequest {
            path: "/a/ b.md".into(),
            content: Some("x".into()),
            wait: true,
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadPath);
}

#[test]
fn regression_a_refused_megabyte_value_is_not_repeated_in_the_message() {
    let (_d, s) = crate::tests::service();
    let owner = Access::owner();
    let huge = "x".repeat(1 << 20);
    let e = s
        .caller(&owner)
        .decode::<Mkdir>(serde_json::json!({ "path": "/a", "parents": huge }))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert!(e.message.len() < 1_000, "{} bytes", e.message.len());
    assert!(e.message.contains("characters in all"), "{}", e.message);
}
