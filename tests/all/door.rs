//! One door: every surface reaches the same operations through the same
//! checks and answers with the same documents; the owner's CLI keeps
//! working while `serve` holds the workspace.

use crate::support::{Server, Ws, http, token};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// MCP tool calls over streamable HTTP with the official Python SDK.
pub(crate) fn mcp_calls(ws: &Ws, srv: &Server, secret: &str, calls: Value) -> Vec<Value> {
    let py = repo_root().join(".venv-test/bin/python");
    assert!(
        py.exists(),
        "run scripts/setup: the test virtualenv is missing"
    );
    let file = ws.write("mcp-calls.json", calls.to_string().as_bytes());
    let out = Command::new(py)
        .arg(repo_root().join("tests/mcp/call.py"))
        .args(["http", &srv.url("/mcp"), secret])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

/// One REST call with a bearer token: the status and the JSON answer.
pub(crate) fn rest(method: &str, url: &str, secret: &str, body: Option<&Value>) -> (u16, Value) {
    let a = http();
    let auth = format!("Bearer {secret}");
    let resp = match (method, body) {
        ("GET", _) => a.get(url).header("authorization", &auth).call(),
        ("DELETE", _) => a.delete(url).header("authorization", &auth).call(),
        ("PUT", Some(b)) => a
            .put(url)
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .send(b.to_string().as_bytes()),
        (_, Some(b)) => a
            .post(url)
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .send(b.to_string().as_bytes()),
        (_, None) => a.post(url).header("authorization", &auth).send(&b""[..]),
    }
    .unwrap();
    let status = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The same operation on the CLI, REST and MCP: the same document, and a
/// retried write answers its first answer on every surface.
#[test]
fn one_operation_gives_one_document_on_every_surface() {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let m = ws.remember("Deploys need two reviewers", "/team", None);
    let id = m["id"].as_str().unwrap().to_string();
    let srv = Server::start(&ws, &[]);

    let cli = ws.run(&["memory", "get", &id]).ok().json();
    let (status, via_rest) = rest("GET", &srv.url(&format!("/v1/memories/{id}")), &admin, None);
    assert_eq!(status, 200, "{via_rest}");
    let via_mcp = mcp_calls(&ws, &srv, &admin, json!([["mem_memory_get", { "id": id }]]));
    assert_eq!(cli, via_rest, "CLI and REST answer one document");
    assert_eq!(via_mcp[0]["result"], via_rest, "MCP too");

    // Feedback with an idempotency key, retried on every surface.
    let body = json!({ "action": "useful", "expected_version": 1, "idempotency_key": "fb-1" });
    let (s1, first) = rest(
        "POST",
        &srv.url(&format!("/v1/memories/{id}/feedback")),
        &admin,
        Some(&body),
    );
    assert_eq!(
        (s1, first["state_version"].clone()),
        (200, json!(2)),
        "{first}"
    );
    let (s2, again) = rest(
        "POST",
        &srv.url(&format!("/v1/memories/{id}/feedback")),
        &admin,
        Some(&body),
    );
    assert_eq!(s2, 200, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(
        again["state_version"], 2,
        "the first answer, not a second vote"
    );
    let replay = mcp_calls(
        &ws,
        &srv,
        &admin,
        json!([["mem_feedback", { "id": id, "action": "useful", "expected_version": 1, "idempotency_key": "fb-1" }]]),
    );
    assert_eq!(replay[0]["is_error"], false, "{}", replay[0]);
    assert_eq!(replay[0]["result"]["state_version"], 2);
    // Errors are one document too: {code, message, hint}.
    let missing = mcp_calls(
        &ws,
        &srv,
        &admin,
        json!([["mem_memory_get", { "id": "mem_nope" }]]),
    );
    assert_eq!(missing[0]["is_error"], true);
    let (_, rest_missing) = rest("GET", &srv.url("/v1/memories/mem_nope"), &admin, None);
    let cli_missing = ws.run(&["memory", "get", "mem_nope"]);
    assert_eq!(cli_missing.code, 2);
    for e in [&missing[0]["result"], &rest_missing, &cli_missing.error()] {
        assert_eq!(e["code"], "not_found", "{e}");
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
        assert!(e["hint"].as_str().is_some_and(|h| !h.is_empty()), "{e}");
    }
    assert!(srv.stop().success());
}

/// The README's walkthrough, with `serve` holding the workspace: every
/// command reaches it over the owner's socket.
#[test]
fn the_cli_keeps_working_while_serve_runs() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let notes = ws.write(
        "notes.md",
        b"# Deploys\n\nWe deploy on Fridays with a rollback plan.\n",
    );
    let put = ws
        .run(&[
            "put",
            notes.to_str().unwrap(),
            "--to",
            "/docs",
            "--tag",
            "meeting",
        ])
        .ok()
        .json();
    assert_eq!(put["file"]["path"], "/docs/notes.md", "{put}");
    assert_eq!(
        put["file"]["index_status"], "done",
        "processed by the server: {put}"
    );
    let fid = put["file"]["id"].as_str().unwrap().to_string();
    ws.run_stdin(
        &["put", "-", "--name", "hello.txt", "--to", "/inbox"],
        Some(b"hello\n"),
    )
    .ok();
    let ls = ws.run(&["ls", "/docs"]).ok().json();
    assert_eq!(ls["entries"][0]["id"], fid.as_str());
    ws.run(&["info", "/docs/notes.md"]).ok();
    let cat = ws.run(&["cat", &fid]).ok();
    assert!(cat.text().contains("rollback plan"));
    let out = ws.path("out.md");
    ws.run(&["get", "/docs/notes.md", "-o", out.to_str().unwrap()])
        .ok();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&notes).unwrap());
    ws.run(&["mkdir", "-p", "/a/b/c"]).ok();
    ws.run(&["mkdir", "/archive"]).ok();
    ws.run(&["mv", "/docs/notes.md", "/archive/notes.md"]).ok();
    ws.run(&["rm", "/a", "--recursive"]).ok();

    let r = ws
        .run(&[
            "remember",
            "We deploy on Fridays only with a rollback plan",
            "--kind",
            "decision",
            "--path",
            "/team/ops",
            "--idempotency-key",
            "ops-1",
            "--agent-id",
            "claude",
        ])
        .ok()
        .json();
    let mid = r["memory"]["id"].as_str().unwrap().to_string();
    let lines = ws.write(
        "batch.jsonl",
        b"{\"content\":\"standup at ten\",\"kind\":\"note\",\"path\":\"/team\",\"idempotency_key\":\"j1\"}\n",
    );
    let batch = ws
        .run(&["remember", "--jsonl", lines.to_str().unwrap()])
        .ok();
    assert_eq!(batch.json_lines()[0]["ok"], true);
    ws.run(&["memory", "list", "--path", "/team"]).ok();
    ws.run(&[
        "memory",
        "feedback",
        &mid,
        "useful",
        "--expected-version",
        "1",
    ])
    .ok();
    ws.run(&["memory", "archive", &mid, "--expected-version", "2"])
        .ok();
    ws.run(&["memory", "restore", &mid, "--expected-version", "3"])
        .ok();
    let search = ws.run(&["search", "deploy fridays"]).ok().json();
    assert!(
        search["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == mid.as_str()),
        "{search}"
    );
    ws.run(&["context", "how do we deploy", "--scope", "/team"])
        .ok();
    let p = ws
        .run(&[
            "propose",
            "create",
            "Staging uses Postgres 16",
            "--kind",
            "fact",
            "--path",
            "/infra",
            "--idempotency-key",
            "p-1",
            "--agent-id",
            "claude",
            "--source-type",
            "log",
            "--source-ref",
            "deploy.log",
            "--evidence",
            &format!("supports:{fid}#L1-2"),
            "--evidence",
            "supports:seen in deploy log",
        ])
        .ok()
        .json();
    assert!(p["proposal"]["id"].is_string(), "{p}");
    ws.run(&["review", "list"]).ok();
    ws.run(&["audit", "list"]).ok();
    let verify = ws.run(&["audit", "verify"]).ok().json();
    assert_eq!(verify["ok"], true);
    ws.run(&["plugin", "list"]).ok();
    ws.run(&["plugin", "inspect", "text"]).ok();
    ws.run(&["status"]).ok();
    ws.run(&["types"]).ok();
    ws.run(&["budgets"]).ok();
    let t = ws
        .run(&["token", "create", "--name", "agent", "--scope", "search"])
        .ok()
        .json();
    assert!(t["secret"].as_str().unwrap().starts_with("memtok_"));
    ws.run(&[
        "memory",
        "forget",
        &mid,
        "--expected-version",
        "4",
        "--reason",
        "wrong",
        "--confirm",
    ])
    .ok();
    // Errors keep their exit codes through the socket.
    let missing = ws.run(&["memory", "get", "mem_01jdzzzzzzzzzzzzzzzzzzzzzz"]);
    missing.fails("not_found", 2);
    assert!(srv.stop().success());
    // And without the server, the CLI opens the workspace itself again.
    ws.run(&["memory", "get", &mid]).ok();
}

/// `STORE_LOCKED` is left for a holder the CLI cannot talk to, and it
/// names that holder.
#[test]
fn a_lock_held_by_another_command_names_it() {
    let ws = Ws::new();
    let mut holder = ws
        .cmd()
        .args(["remember", "--jsonl", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it holds the workspace (its note names it); probing
    // earlier could take the lock from under it.
    let pid = holder.id().to_string();
    let note = ws.home().join("holder");
    let held = (0..300).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::read_to_string(&note).is_ok_and(|n| n.starts_with(&format!("pid {pid} ")))
    });
    assert!(held, "the holder took the lock");
    let err = ws.run(&["memory", "list"]).fails("STORE_LOCKED", 1);
    assert!(
        err["message"].as_str().unwrap().contains(&pid),
        "names the holder: {err}"
    );
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());
}

/// `info`, `GET /v1/files/{id}` and MCP `mem_get` show one file's
/// processed chunks, metadata and entities as one document.
#[test]
fn file_details_are_one_document_on_every_surface() {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let src = ws.write(
        "plan.md",
        b"---\ntitle: Plan\npeople: [Ada Lovelace]\n---\n# One\n\nFirst part.\n\n## Two\n\nSecond part.\n",
    );
    let put = ws
        .run(&["put", src.to_str().unwrap(), "--to", "/p"])
        .ok()
        .json();
    let id = put["file"]["id"].as_str().unwrap().to_string();
    let srv = Server::start(&ws, &[]);
    let cli = ws.run(&["info", &id, "--chunks-limit", "1"]).ok().json();
    assert_eq!(cli["processed"]["chunks"].as_array().unwrap().len(), 1);
    let (status, via_rest) = rest(
        "GET",
        &srv.url(&format!("/v1/files/{id}?chunks_limit=1")),
        &admin,
        None,
    );
    assert_eq!(status, 200, "{via_rest}");
    assert_eq!(cli, via_rest);
    let via_mcp = mcp_calls(
        &ws,
        &srv,
        &admin,
        json!([["mem_get", { "target": id, "chunks_limit": 1 }]]),
    );
    assert_eq!(
        via_mcp[0]["result"]["file"], via_rest,
        "mem_get carries the same details"
    );
    assert!(
        via_mcp[0]["result"]["content"]
            .as_str()
            .unwrap()
            .contains("Second part.")
    );
    // A page out of bounds is the client's mistake, with a hint.
    let (status, err) = rest(
        "GET",
        &srv.url(&format!("/v1/files/{id}?chunks_limit=0")),
        &admin,
        None,
    );
    assert!(status == 400 || status == 422, "{status} {err}");
    assert!(
        err["error"]["hint"].is_string() || err["hint"].is_string(),
        "{err}"
    );
}
