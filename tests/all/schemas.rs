//! Public documents: `schemas/*.json` match what the Rust types produce,
//! and real CLI output validates against them.

use crate::support::{Ws, p};
use serde_json::Value;
use std::path::PathBuf;

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

fn load(name: &str) -> Value {
    let path = schema_dir().join(mem_service::schemas::file_name(name));
    serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

#[test]
fn committed_schemas_match_the_types() {
    let bless = std::env::var("MEM_HOST_BLESS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, schema) in mem_service::schemas::public_schemas() {
        let path = schema_dir().join(mem_service::schemas::file_name(name));
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if bless {
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "schemas out of date: {stale:?}; regenerate with MEM_HOST_BLESS=1 cargo test"
    );
}

pub fn assert_valid(schema: &str, doc: &Value) {
    let validator = jsonschema::validator_for(&load(schema)).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{schema}: {errors:?}\n{doc}");
}

#[test]
fn cli_output_validates_against_the_schemas() {
    let ws = Ws::new();
    let f = ws.write("doc.md", b"# doc");
    let put = ws
        .run(&["put", p(&f), "--to", "/d", "--tag", "t"])
        .ok()
        .json();
    assert_valid("put-result", &put);
    let info = ws.run(&["info", "/d/doc.md"]).ok().json();
    assert_valid("file-details", &info);
    assert_valid("file", &info);
    assert_valid("folder-listing", &ws.run(&["ls", "/d"]).ok().json());
    assert_valid("folder-listing", &ws.run(&["ls", "/"]).ok().json());
    let r = ws
        .run(&[
            "remember",
            "x",
            "--kind",
            "fact",
            "--path",
            "/d",
            "--idempotency-key",
            "s1",
            "--event-at",
            "2026-01-01T00:00:00Z",
            "--attr",
            "a=b",
        ])
        .ok()
        .json();
    assert_valid("remember-result", &r);
    let id = r["memory"]["id"].as_str().unwrap();
    assert_valid("memory", &ws.run(&["memory", "get", id]).ok().json());
    let forgotten = ws
        .run(&[
            "memory",
            "forget",
            id,
            "--expected-version",
            "1",
            "--reason",
            "r",
            "--confirm",
        ])
        .ok()
        .json();
    assert_valid("memory", &forgotten);
    assert_valid(
        "memory-page",
        &ws.run(&["memory", "list", "--lifecycle", "all"])
            .ok()
            .json(),
    );
    assert_valid("error", &ws.run(&["info", "/nope"]).fails("not_found", 2));
    assert_valid("error", &ws.run(&["mkdir", "a/b"]).fails("bad_path", 1));
    // A JSONL request line is a remember-request document.
    let line: Value =
        serde_json::json!({"content": "c", "kind": "note", "path": "/x", "idempotency_key": "k"});
    assert_valid("remember-request", &line);
}
