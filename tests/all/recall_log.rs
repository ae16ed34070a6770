//! The recall log through the binary and REST: it answers "this question
//! keeps missing", and holds no query text, content or path.

use crate::schemas::assert_valid;
use crate::support::{Server, Ws, http, token};

#[test]
fn the_recall_log_counts_a_question_that_keeps_missing() {
    let ws = Ws::new();
    ws.remember(
        "The quokka migration finished on Tuesday",
        "/zoo/keepers",
        None,
    );
    ws.run(&["search", "quokka migration"]).ok();
    ws.run(&["context", "when did the quokka migration finish"])
        .ok();
    for _ in 0..3 {
        ws.run(&["context", "Where is the axolotl enclosure?"]).ok();
    }

    let all = ws.run(&["recall", "log"]).ok().json();
    assert_valid("recall-log", &all);
    assert_eq!(all["matched"], 5);
    let top = &all["questions"][0];
    assert_eq!(top["seen"], 3, "{all}");
    // The semantic lane packs something, but the question stays open.
    assert_eq!(top["missing"], 3, "{all}");

    // The same question, spelled differently, has the same fingerprint.
    let one = ws
        .run(&["recall", "log", "--query", "where is the AXOLOTL enclosure"])
        .ok()
        .json();
    assert_eq!(one["matched"], 3);
    assert_eq!(one["fingerprint"], top["fingerprint"]);
    let by_fp = ws
        .run(&[
            "recall",
            "log",
            "--fingerprint",
            top["fingerprint"].as_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(by_fp["matched"], 3);
    let rec = &one["records"][0];
    assert_eq!(rec["op"], "context");
    assert_eq!(rec["lanes"]["must"], 0);

    let found = ws
        .run(&["recall", "log", "--query", "quokka migration"])
        .ok()
        .json();
    let hit = &found["records"][0];
    assert_eq!(hit["op"], "search");
    assert_eq!(hit["empty"], false);
    assert!(hit["ids"].as_array().is_some_and(|ids| !ids.is_empty()));
}

/// Regression for the memgarden rule: a record carries no query text, no
/// content and no path, read from the raw store bytes.
#[test]
fn recall_records_hold_no_content_no_path_and_no_query_text() {
    let ws = Ws::new();
    ws.remember(
        "Zephyrine keeps the obsidianwhistle in the vault",
        "/confidential/marmalade",
        None,
    );
    ws.run(&["search", "obsidianwhistle zephyrine"]).ok();
    ws.run(&["context", "who keeps the obsidianwhistle"]).ok();
    ws.run(&["context", "thunderquill moonpetal"]).ok();
    assert_eq!(ws.run(&["recall", "log"]).ok().json()["matched"], 3);

    let db = sled::open(ws.home().join("store").join("db")).unwrap();
    let tree = db.open_tree("recall_log").unwrap();
    let mut bytes = Vec::new();
    for entry in tree.iter() {
        let (k, v) = entry.unwrap();
        bytes.extend_from_slice(&k);
        bytes.extend_from_slice(&v);
    }
    assert!(tree.len() >= 4, "the key and three records");
    let text = String::from_utf8_lossy(&bytes).to_lowercase();
    for word in [
        "zephyrine",
        "obsidianwhistle",
        "vault",
        "thunderquill",
        "moonpetal",
        "who keeps",
        "confidential",
        "marmalade",
        "/",
    ] {
        assert!(!text.contains(word), "{word:?} leaked into the recall log");
    }
}

#[test]
fn the_recall_log_is_for_the_owner_only() {
    let ws = Ws::new();
    let searcher = token(&ws, "searcher", "search,read", &[]);
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    let get = |path: &str, secret: &str| {
        let resp = http()
            .get(srv.url(path))
            .header("authorization", &format!("Bearer {secret}"))
            .call()
            .unwrap();
        let status = resp.status().as_u16();
        let body: serde_json::Value =
            serde_json::from_str(&resp.into_body().read_to_string().unwrap()).unwrap();
        (status, body)
    };
    let (status, err) = get("/v1/recall-log", &searcher);
    assert_eq!(status, 403, "{err}");
    assert_eq!(err["code"], "forbidden");
    let (status, log) = get("/v1/recall-log?query=anything%20at%20all", &admin);
    assert_eq!(status, 200, "{log}");
    assert_valid("recall-log", &log);
    assert_eq!(log["matched"], 0);
    let (status, err) = get("/v1/recall-log?fingerprint=nothex", &admin);
    assert_eq!(status, 400, "{err}");
}
