//! Conflicts are between claims about one thing (issue 20): the bundled
//! `conflicts` detector, driven through the binary, flags two facts that
//! disagree (with the differing part) and leaves separate events alone;
//! the context pack names each CONFLICT item's counterpart and difference.
//! Also: a closed stdout is the reader's choice, not an error.

use crate::support::{Server, Ws, http, run_command, token};
use serde_json::{Value, json};

fn remember(ws: &Ws, kind: &str, content: &str, path: &str, key: &str) -> Value {
    ws.run(&[
        "remember",
        content,
        "--kind",
        kind,
        "--path",
        path,
        "--idempotency-key",
        key,
    ])
    .ok()
    .json()["memory"]
        .clone()
}

fn relations_of(m: &Value, kind: &str) -> Vec<Value> {
    m["relations"]
        .as_array()
        .map(|rs| rs.iter().filter(|r| r["type"] == kind).cloned().collect())
        .unwrap_or_default()
}

fn id(m: &Value) -> String {
    m["id"].as_str().unwrap().to_string()
}

#[test]
fn two_facts_that_disagree_conflict_with_their_difference_in_the_pack() {
    let ws = Ws::new();
    let sixteen = remember(&ws, "fact", "Staging uses Postgres 16", "/ops", "pg-16");
    let seventeen = remember(&ws, "fact", "Staging uses Postgres 17", "/ops", "pg-17");
    let rels = relations_of(&seventeen, "conflicts_with");
    assert_eq!(rels.len(), 1, "{seventeen}");
    assert_eq!(rels[0]["target"], id(&sixteen).as_str());
    assert_eq!(rels[0]["difference"], json!({"this": "17", "other": "16"}));
    crate::schemas::assert_valid("memory", &seventeen);

    let pack = ws
        .run(&["context", "which Postgres does staging use"])
        .ok()
        .json();
    crate::schemas::assert_valid("context-pack", &pack);
    let conflict = pack["conflict"].as_array().unwrap();
    assert_eq!(conflict.len(), 2, "{pack}");
    for (me, other, this_says, other_says) in [
        (&seventeen, &sixteen, "17", "16"),
        (&sixteen, &seventeen, "16", "17"),
    ] {
        let item = conflict
            .iter()
            .find(|i| i["id"] == id(me).as_str())
            .unwrap();
        assert_eq!(
            item["conflicts"],
            json!([{
                "id": id(other),
                "citation": format!("mem://memory/{}", id(other)),
                "difference": {"this": this_says, "other": other_says},
            }]),
            "{item}"
        );
        let reason = item["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!(
                "contradicts mem://memory/{}: this says \"{this_says}\" where it says \"{other_says}\"",
                id(other)
            )),
            "{reason}"
        );
    }

    // REST serves the same pack (MCP's mem_context renders this document too).
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    let resp = http()
        .post(srv.url("/v1/context"))
        .header("authorization", &format!("Bearer {admin}"))
        .header("content-type", "application/json")
        .send(
            json!({"query": "which Postgres does staging use"})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let rest: Value = serde_json::from_str(&resp.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(rest["conflict"].as_array().unwrap().len(), 2, "{rest}");
    assert!(
        rest["conflict"][0]["conflicts"][0]["difference"].is_object(),
        "{rest}"
    );
    srv.stop();
}

#[test]
fn true_conflicts_through_the_binary() {
    let ws = Ws::new();
    for (i, (kind, a, b, this, other)) in [
        (
            "fact",
            "The staging deploy works",
            "The staging deploy is broken",
            "broken",
            "works",
        ),
        (
            "preference",
            "Tom likes spicy food",
            "Tom dislikes spicy food",
            "dislikes",
            "likes",
        ),
        (
            "fact",
            "Ana can drive the van",
            "Ana cannot drive the van",
            "cannot",
            "can",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!("/c{i}");
        let first = remember(&ws, kind, a, &path, &format!("{i}-a"));
        let second = remember(&ws, kind, b, &path, &format!("{i}-b"));
        let rels = relations_of(&second, "conflicts_with");
        assert_eq!(rels.len(), 1, "{a} / {b}: {second}");
        assert_eq!(rels[0]["target"], id(&first).as_str());
        assert_eq!(rels[0]["difference"], json!({"this": this, "other": other}));
    }
}

/// The issue's own report: run logs and numbered notes came back as a
/// CONFLICT pair "contradicting another item of this pack".
#[test]
fn regression_separate_events_and_numbered_notes_are_not_conflicts() {
    let ws = Ws::new();
    let runs = [
        ("observation", "I ran 5 km this morning", "/runs", "run-1"),
        ("observation", "I ran 8 km this morning", "/runs", "run-2"),
        ("note", "garden note 1 about tomatoes", "/garden", "g-1"),
        ("note", "garden note 2 about tomatoes", "/garden", "g-2"),
        ("note", "garden note 3 about tomatoes", "/garden", "g-3"),
        ("fact", "Meeting with Ana at 10:00", "/cal", "m-1"),
        ("fact", "Meeting with Ana at 15:00", "/cal", "m-2"),
    ];
    for (kind, text, path, key) in runs {
        let m = remember(&ws, kind, text, path, key);
        assert!(relations_of(&m, "conflicts_with").is_empty(), "{text}: {m}");
    }
    for q in [
        "how far did I run",
        "garden note tomatoes",
        "meeting with Ana",
    ] {
        let pack = ws.run(&["context", q]).ok().json();
        assert_eq!(pack["conflict"], json!([]), "{q}: {pack}");
    }
}

#[test]
fn the_same_preference_twice_is_a_duplicate_not_a_conflict() {
    let ws = Ws::new();
    let first = remember(&ws, "preference", "I prefer tabs over spaces", "/me", "p-1");
    let again = remember(&ws, "preference", "I prefer tabs over spaces", "/me", "p-2");
    assert!(relations_of(&again, "conflicts_with").is_empty(), "{again}");
    let dups = relations_of(&again, "duplicate_of");
    assert_eq!(dups.len(), 1, "{again}");
    assert_eq!(dups[0]["target"], id(&first).as_str());
}

/// `mem-host … | head`: the reader closing stdout is not an error.
#[test]
fn regression_a_closed_stdout_exits_quietly_and_keeps_the_write() {
    let ws = Ws::new();
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let mut c = ws.cmd();
    c.args(["types"]);
    assert!(
        !run_command(c, None).ok().stdout.is_empty(),
        "types prints a table"
    );
    let mut c = ws.cmd();
    c.args(["types"]).stdout(closed());
    let (code, stderr) = run_with_stdout(c);
    assert_eq!((code, stderr.as_str()), (0, ""), "human output");

    let mut c = ws.cmd();
    c.args([
        "--format",
        "json",
        "remember",
        "Kept although nobody read the answer",
        "--kind",
        "fact",
        "--path",
        "/kept",
        "--idempotency-key",
        "closed-1",
    ])
    .stdout(closed());
    let (code, stderr) = run_with_stdout(c);
    assert_eq!((code, stderr.as_str()), (0, ""), "json output");
    let found = ws.run(&["search", "nobody read the answer"]).ok().json();
    assert_eq!(
        found["hits"][0]["excerpt"], "Kept although nobody read the answer",
        "{found}"
    );
}

/// Runs a command whose stdout is already set; its status and stderr.
fn run_with_stdout(mut c: std::process::Command) -> (i32, String) {
    let out = c
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}
