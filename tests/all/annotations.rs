//! Annotations through the real binary and the real text processor: a
//! Markdown file's front matter suggests tags and a description, which
//! stay pending until a person accepts or rejects each on the CLI, REST,
//! MCP or the web page. A decision is final (the same one replays, the
//! opposite one conflicts), a stale version conflicts, re-processing
//! brings nothing decided back, and a token that may not write the file
//! decides nothing.

use crate::door::{mcp_calls, rest};
use crate::schemas::assert_valid;
use crate::support::{Server, Ws, p, token};
use crate::web::{csrf_of, get_page, link, post_form, sign_in};
use serde_json::{Value, json};

const NOTE: &[u8] = b"---\ntitle: Deploying\ntags: [ops, Linux, release]\ndescription: How we ship the service to production\n---\n# Deploying\n\nRun the pipeline, then watch the dashboards.\n";

/// A workspace with the note processed at /docs/deploy.md; its details.
fn workspace() -> (Ws, Value) {
    let ws = Ws::new();
    let local = ws.write("deploy.md", NOTE);
    ws.run(&["put", p(&local), "--to", "/docs"]).ok();
    let info = ws.run(&["info", "/docs/deploy.md"]).ok().json();
    (ws, info)
}

/// The annotation of `kind` with `value` in a file's details.
fn ann<'a>(info: &'a Value, kind: &str, value: &str) -> &'a Value {
    info["annotations"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["kind"] == kind && x["value"] == value))
        .unwrap_or_else(|| panic!("no {kind} {value:?} in {info}"))
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn version(v: &Value) -> String {
    v["state_version"].to_string()
}

#[test]
fn suggestions_stay_pending_until_decided_and_decisions_are_final_on_the_cli() {
    let (ws, info) = workspace();
    assert_valid("file-details", &info);
    let kinds: Vec<(String, String, String)> = info["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().into(),
                a["value"].as_str().unwrap().into(),
                a["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    for want in [
        ("tag", "ops"),
        ("tag", "linux"),
        ("tag", "release"),
        ("description", "How we ship the service to production"),
    ] {
        assert!(
            kinds
                .iter()
                .any(|(k, v, s)| (k.as_str(), v.as_str()) == want && s == "pending"),
            "{want:?} pending in {kinds:?}"
        );
    }
    assert_eq!(ann(&info, "tag", "ops")["producer"], "text");
    // Nothing is the file's until accepted.
    assert!(
        info["tags"].as_array().is_none_or(|t| t.is_empty()),
        "{info}"
    );
    assert!(info.get("description").is_none(), "{info}");
    let human = ws.run_human(&["info", "/docs/deploy.md"]).ok().text();
    assert!(human.contains("annotations:   4 pending of 4"), "{human}");
    assert!(
        human.contains("mem-host annotation accept|reject"),
        "{human}"
    );

    let file = id_of(&info);
    let v = version(&info);
    let ops = id_of(ann(&info, "tag", "ops"));
    let accepted = ws
        .run(&[
            "annotation",
            "accept",
            "/docs/deploy.md",
            &ops,
            "--expected-version",
            &v,
            "--reason",
            "we use it",
        ])
        .ok()
        .json();
    assert_valid("annotation-decided", &accepted);
    assert_eq!(accepted["annotation"]["status"], "accepted");
    assert_eq!(accepted["annotation"]["reason"], "we use it");
    assert_eq!(accepted["file"]["tags"], json!(["ops"]));
    assert_eq!(accepted["replayed"], false);
    let after = version(&accepted["file"]);
    assert_ne!(after, v, "the decision moves the file's version");

    // The same decision again answers as decided, changing nothing, even
    // on the stale version it was first made on.
    let again = ws
        .run(&[
            "annotation",
            "accept",
            &file,
            &ops,
            "--expected-version",
            &v,
        ])
        .ok()
        .json();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(version(&again["file"]), after);
    // The opposite one is refused: decisions are final.
    let e = ws
        .run(&[
            "annotation",
            "reject",
            &file,
            &ops,
            "--expected-version",
            &after,
        ])
        .fails("annotation_decision_conflict", 1);
    assert_eq!(e["details"]["status"], "accepted", "{e}");
    // A pending one decided on a stale version says the current one.
    let linux = id_of(ann(&info, "tag", "linux"));
    let e = ws
        .run(&[
            "annotation",
            "reject",
            &file,
            &linux,
            "--expected-version",
            &v,
        ])
        .fails("annotation_version_conflict", 1);
    assert_eq!(e["details"]["current_version"].to_string(), after, "{e}");
    ws.run(&[
        "annotation",
        "reject",
        &file,
        &linux,
        "--expected-version",
        &after,
    ])
    .ok();
    ws.run(&[
        "annotation",
        "accept",
        &file,
        "ann_nope",
        "--expected-version",
        &after,
    ])
    .fails("not_found", 2);

    // Re-processing the same content suggests nothing decided again and
    // keeps what is still pending under its id.
    let before = ws.run(&["info", &file]).ok().json();
    ws.run(&["reindex", &file]).ok();
    let reprocessed = ws.run(&["info", &file]).ok().json();
    assert_eq!(reprocessed["annotations"], before["annotations"]);
    assert_eq!(
        reprocessed["tags"],
        json!(["ops"]),
        "rejected linux stays out"
    );

    // The decisions are audited.
    let audit = ws.run(&["audit", "list"]).ok().text();
    assert!(audit.contains("annotation-accept"), "{audit}");
    assert!(audit.contains("annotation-reject"), "{audit}");
}

#[test]
fn rest_and_mcp_decide_within_the_token_paths() {
    let (ws, info) = workspace();
    let other = ws.write("other.md", b"---\ntags: [secret]\n---\nHidden.\n");
    ws.run(&["put", p(&other), "--to", "/private"]).ok();
    let hidden = ws.run(&["info", "/private/other.md"]).ok().json();
    let srv = Server::start(&ws, &[]);
    let writer = token(&ws, "writer", "read,write", &["--paths", "/docs"]);
    let reader = token(&ws, "reader", "read", &[]);
    let file = id_of(&info);
    let desc = id_of(ann(
        &info,
        "description",
        "How we ship the service to production",
    ));
    let url = |f: &str, a: &str| srv.url(&format!("/v1/files/{f}/annotations/{a}"));
    let body = |decision: &str, v: &Value| json!({ "decision": decision, "expected_version": v["state_version"] });

    let (status, e) = rest(
        "PUT",
        &url(&file, &desc),
        &reader,
        Some(&body("accept", &info)),
    );
    assert_eq!(status, 403, "a read-only token decides nothing: {e}");
    let (status, done) = rest(
        "PUT",
        &url(&file, &desc),
        &writer,
        Some(&body("accept", &info)),
    );
    assert_eq!(status, 200, "{done}");
    assert_valid("annotation-decided", &done);
    assert_eq!(
        done["file"]["description"],
        "How we ship the service to production"
    );
    let (status, again) = rest(
        "PUT",
        &url(&file, &desc),
        &writer,
        Some(&body("accept", &info)),
    );
    assert_eq!((status, &again["replayed"]), (200, &json!(true)), "{again}");
    let (status, e) = rest(
        "PUT",
        &url(&file, &desc),
        &writer,
        Some(&body("reject", &done["file"])),
    );
    assert_eq!(status, 409, "{e}");
    assert_eq!(e["code"], "annotation_decision_conflict");
    let (status, e) = rest(
        "PUT",
        &url(&file, &desc),
        &writer,
        Some(&json!({ "decision": "maybe", "expected_version": 1 })),
    );
    assert_eq!(status, 400, "{e}");
    // Outside the token's paths the file does not exist.
    let secret = id_of(ann(&hidden, "tag", "secret"));
    let (status, e) = rest(
        "PUT",
        &url(&id_of(&hidden), &secret),
        &writer,
        Some(&body("accept", &hidden)),
    );
    assert_eq!(status, 404, "{e}");
    assert!(!e.to_string().contains("secret\""), "{e}");

    let release = id_of(ann(&info, "tag", "release"));
    let calls = mcp_calls(
        &ws,
        &srv,
        &writer,
        json!([
            ["mem_file_annotation_decide", {
                "target": "/docs/deploy.md",
                "annotation_id": release,
                "decision": "reject",
                "expected_version": done["file"]["state_version"],
                "reason": "not a release note"
            }],
            ["mem_get", { "target": file }],
            ["mem_file_annotation_decide", {
                "target": id_of(&hidden),
                "annotation_id": secret,
                "decision": "accept",
                "expected_version": hidden["state_version"]
            }],
        ]),
    );
    assert_eq!(calls[0]["is_error"], false, "{}", calls[0]);
    assert_eq!(calls[0]["result"]["annotation"]["status"], "rejected");
    let read = &calls[1]["result"]["file"];
    let statuses: Vec<&str> = read["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "pending").count(),
        2,
        "ops and linux are still pending: {read}"
    );
    assert_eq!(calls[2]["is_error"], true, "{}", calls[2]);
    assert_eq!(calls[2]["result"]["code"], "not_found", "{}", calls[2]);
    let hidden_now = ws.run(&["info", "/private/other.md"]).ok().json();
    assert_eq!(ann(&hidden_now, "tag", "secret")["status"], "pending");
}

#[test]
fn the_file_page_offers_pending_suggestions_to_a_writer_only() {
    let (ws, info) = workspace();
    token(&ws, "viewer", "read", &[]);
    let srv = Server::start(&ws, &[]);
    let (owner, _) = sign_in(&link(&ws, &srv, &[]));
    let page = format!("/drive/file?target={}", id_of(&info));
    let (code, html) = get_page(&srv, &owner, &page);
    assert_eq!(code, 200, "{html}");
    assert!(html.contains(r#"id="annotations""#), "{html}");
    assert!(html.contains(r#"action="/drive/annotation""#), "{html}");
    let ops = id_of(ann(&info, "tag", "ops"));
    let csrf = csrf_of(&html);
    let v = version(&info);
    let form = |csrf: &str| {
        vec![
            ("csrf", csrf.to_string()),
            ("target", id_of(&info)),
            ("annotation_id", ops.clone()),
            ("expected_version", v.clone()),
            ("decision", "accept".to_string()),
        ]
    };

    // A read-only session sees the suggestions and no way to decide them.
    let (viewer, _) = sign_in(&link(&ws, &srv, &["--token", "viewer"]));
    let (code, vhtml) = get_page(&srv, &viewer, &page);
    assert_eq!(code, 200, "{vhtml}");
    assert!(vhtml.contains(r#"id="annotations""#), "{vhtml}");
    assert!(!vhtml.contains(r#"action="/drive/annotation""#), "{vhtml}");
    let send = |cookie: &str, origin: Option<&str>, f: Vec<(&'static str, String)>| {
        let borrowed: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post_form(&srv, cookie, origin, "/drive/annotation", &borrowed)
    };
    let vcsrf = csrf_of(&vhtml);
    assert_eq!(send(&viewer, Some(&srv.base), form(&vcsrf)), 403);
    // A forged post (foreign origin) is refused.
    assert_eq!(send(&owner, Some("http://evil.example"), form(&csrf)), 403);
    let still = ws.run(&["info", &id_of(&info)]).ok().json();
    assert_eq!(ann(&still, "tag", "ops")["status"], "pending");

    assert_eq!(send(&owner, Some(&srv.base), form(&csrf)), 303);
    let now = ws.run(&["info", &id_of(&info)]).ok().json();
    assert_eq!(ann(&now, "tag", "ops")["status"], "accepted");
    assert_eq!(now["tags"], json!(["ops"]));
    let (_, html) = get_page(&srv, &owner, &page);
    assert!(
        html.contains(&format!(
            r#"data-annotation="{ops}" data-status="accepted""#
        )),
        "{html}"
    );
}
