//! The contract says what the server enforces: schemathesis (a real
//! third-party client, from the test virtualenv) holds the running server
//! to its own OpenAPI document with every check it has; and each mistake a
//! client or a probe hit before has a regression test here.

use crate::support::{Server, Ws, http, token};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Bounded: a few examples per operation, a fixed seed, one worker. The
/// whole run takes a few minutes on two cores.
#[test]
fn schemathesis_finds_nothing_the_document_does_not_say() {
    let root = repo_root();
    let python = root.join(".venv-test/bin/python");
    assert!(
        root.join(".venv-test/bin/schemathesis").exists(),
        "run scripts/setup: schemathesis is missing from .venv-test"
    );
    let ws = Ws::new();
    // A spare admin token: the fuzzer may revoke others, never the last.
    let admin = token(&ws, "fuzz-admin", "admin", &[]);
    token(&ws, "spare-admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    ws.write("seed.md", b"# Seed\n\nA file for the fuzzer to find.\n");
    let report = ws.path("schemathesis");
    let out = Command::new(&python)
        .arg(root.join("tests/contract/run_schemathesis.py"))
        .arg("--config-file")
        .arg(root.join("tests/contract/schemathesis.toml"))
        .arg("run")
        .arg(srv.url("/v1/openapi.json"))
        .args(["--checks", "all"])
        .args([
            "--max-examples",
            "12",
            "--seed",
            "20261202",
            "--workers",
            "1",
        ])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--header", &format!("Authorization: Bearer {admin}")])
        .args(["--request-timeout", "30", "--no-color"])
        .args(["--generation-database", "none"])
        .arg("--report-dir")
        .arg(&report)
        .current_dir(ws.path(""))
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "schemathesis found failures:\n{text}\nserver log:\n{}",
        srv.log()
    );
    assert!(text.contains("passed") || text.contains("PASSED"), "{text}");
}

fn send(method: &str, url: &str, secret: &str, body: Option<Value>) -> (u16, Value) {
    let a = http();
    let auth = format!("Bearer {secret}");
    let resp = match method {
        "GET" => a.get(url).header("authorization", &auth).call(),
        "DELETE" => a.delete(url).header("authorization", &auth).call(),
        _ => a
            .post(url)
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .send(body.unwrap_or(json!({})).to_string().as_bytes()),
    }
    .unwrap();
    let status = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A workspace with an admin token, a token confined to `/a` (and a
/// memory outside it), served with a small upload limit.
struct Probe {
    ws: Ws,
    admin: String,
    confined: String,
    srv: Server,
}

fn probe() -> Probe {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let confined = token(&ws, "confined", "read,write,search", &["--paths", "/a"]);
    ws.remember("outside the boundary", "/b", None);
    let srv = Server::start(&ws, &["--max-upload", "64"]);
    Probe {
        ws,
        admin,
        confined,
        srv,
    }
}

#[test]
fn regression_an_empty_context_pack_is_200_with_suggestions_not_a_retried_503() {
    let p = probe();
    let (s, pack) = send(
        "POST",
        &p.srv.url("/v1/context"),
        &p.admin,
        Some(json!({"query": "quantum chromodynamics"})),
    );
    assert_eq!(s, 200, "{pack}");
    assert!(
        pack["suggestions"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{pack}"
    );
}

#[test]
fn regression_status_counts_only_what_a_confined_token_sees() {
    let p = probe();
    let (s, status) = send("GET", &p.srv.url("/v1/status"), &p.confined, None);
    assert_eq!(s, 200, "{status}");
    assert_eq!(status["memories"], 0, "{status}");
    assert!(status["plugins"].as_array().unwrap().is_empty(), "{status}");
    let (_, all) = send("GET", &p.srv.url("/v1/status"), &p.admin, None);
    assert_eq!(all["memories"], 1, "{all}");
}

#[test]
fn regression_content_is_stored_exactly_as_sent_and_its_hash_matches() {
    let p = probe();
    let content = "  padded, with a trailing newline\n";
    let (s, r) = send(
        "POST",
        &p.srv.url("/v1/memories"),
        &p.admin,
        Some(json!({"content": content, "kind": "fact", "path": "/a", "idempotency_key": "exact"})),
    );
    assert_eq!(s, 201, "{r}");
    assert_eq!(
        r["memory"]["content_sha256"],
        mem_core::hash::sha256_hex(content.as_bytes())
    );
    assert_eq!(r["memory"]["content"], content);
}

#[test]
fn regression_padded_and_invisible_character_paths_are_refused_everywhere() {
    let p = probe();
    for bad in [" /a", "/a ", "/a/\u{202e}txt", "/a/\u{200b}b"] {
        let (s, e) = send(
            "POST",
            &p.srv.url("/v1/memories"),
            &p.admin,
            Some(
                json!({"content": "x", "kind": "fact", "path": bad, "idempotency_key": format!("p{bad}")}),
            ),
        );
        assert_eq!(
            (s, e["code"].clone()),
            (400, json!("bad_path")),
            "{bad:?}: {e}"
        );
        // The path rule's own words, not a regular expression.
        assert!(
            !e["message"].as_str().unwrap().contains("does not match"),
            "{e}"
        );
    }
    let padded = p.ws.write("padded.txt", b"x");
    p.ws.run(&["put", crate::support::p(&padded), "--to", "/a "])
        .fails("bad_path", 1);
}

#[test]
fn regression_min_confidence_outside_0_to_1_is_refused_not_ignored() {
    let p = probe();
    let (s, e) = send(
        "POST",
        &p.srv.url("/v1/context"),
        &p.admin,
        Some(json!({"query": "x", "min_confidence": 7})),
    );
    assert_eq!((s, e["code"].clone()), (400, json!("bad_request")), "{e}");
}

#[test]
fn regression_a_whole_number_written_as_a_float_is_an_integer() {
    let p = probe();
    let (s, page) = send("GET", &p.srv.url("/v1/memories?limit=2.0"), &p.admin, None);
    assert_eq!(s, 200, "{page}");
    let (s, page) = send(
        "POST",
        &p.srv.url("/v1/search"),
        &p.admin,
        Some(json!({"query": "boundary", "limit": 3.0})),
    );
    assert_eq!(s, 200, "{page}");
}

#[test]
fn regression_an_oversized_upload_names_max_upload() {
    let p = probe();
    let r = http()
        .post(p.srv.url("/v1/files?path=/a/big.bin"))
        .header("authorization", format!("Bearer {}", p.admin))
        .send(&[7u8; 1000][..])
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    let e: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    assert!(e["hint"].as_str().unwrap().contains("--max-upload"), "{e}");
}

#[test]
fn regression_a_method_a_route_does_not_take_is_405_with_the_error_document() {
    let p = probe();
    let (s, e) = send("DELETE", &p.srv.url("/v1/search"), &p.admin, None);
    assert_eq!(
        (s, e["code"].clone()),
        (405, json!("method_not_allowed")),
        "{e}"
    );
    assert!(!e["hint"].as_str().unwrap_or_default().is_empty(), "{e}");
    assert!(p.srv.stop().success());
}

/// Acknowledgements stream as records commit: the first line's answer
/// comes while the input is still open.
#[test]
fn regression_jsonl_acknowledgements_stream_before_the_input_ends() {
    use std::io::{BufRead, BufReader, Write};
    let ws = Ws::new();
    let mut child = ws
        .cmd()
        .args(["--format", "json", "remember", "--jsonl", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"content\":\"first\",\"kind\":\"note\",\"path\":\"/s\",\"idempotency_key\":\"s1\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the first acknowledgement arrives while stdin is open");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        (first["line"].clone(), first["ok"].clone()),
        (json!(1), json!(true)),
        "{first}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
}

#[test]
fn regression_jsonl_reports_every_line_and_goes_on_after_a_bad_one() {
    let ws = Ws::new();
    let mut input = Vec::new();
    input.extend_from_slice(
        b"{\"content\":\"one\",\"kind\":\"note\",\"path\":\"/j\",\"idempotency_key\":\"1\"}\n",
    );
    input.extend_from_slice(b"{not json\n");
    input.extend_from_slice(
        b"{\"content\":\"caf\xe9\",\"kind\":\"note\",\"path\":\"/j\",\"idempotency_key\":\"2\"}\n",
    );
    for i in 3..40 {
        input.extend_from_slice(
            format!("{{\"content\":\"line {i}\",\"kind\":\"note\",\"path\":\"/j\",\"idempotency_key\":\"{i}\"}}\n")
                .as_bytes(),
        );
    }
    let r = ws.run_stdin(&["remember", "--jsonl", "-"], Some(&input));
    assert_eq!(r.code, 1, "two lines failed: {}", r.stderr);
    let lines = r.json_lines();
    assert_eq!(lines.len(), 40, "one result per input line");
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[1]["error"]["code"], "bad_request");
    assert_eq!(lines[2]["error"]["code"], "bad_encoding", "{}", lines[2]);
    assert!(
        lines[3..].iter().all(|l| l["ok"] == true),
        "reading went on"
    );
    let list = ws
        .run(&["memory", "list", "--path", "/j", "--limit", "100"])
        .ok()
        .json();
    assert_eq!(list["items"].as_array().unwrap().len(), 38);

    // Text that is not UTF-8 is its own error, not an I/O problem.
    let r = ws.run_stdin(
        &[
            "remember",
            "-",
            "--kind",
            "note",
            "--path",
            "/j",
            "--idempotency-key",
            "bin",
        ],
        Some(b"\xff\xfe bytes"),
    );
    r.fails("bad_encoding", 1);
}

#[test]
fn administration_is_a_service_operation_audited_on_every_surface() {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    let url = |p: &str| srv.url(p);

    // Granting what the manifest does not request, or revoking what is
    // not granted, is an error that says so.
    let (s, e) = send(
        "POST",
        &url("/v1/plugins/role/grant"),
        &admin,
        Some(json!({"capabilities": ["embed"]})),
    );
    assert_eq!((s, e["code"].clone()), (422, json!("unprocessable")), "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("does not request"),
        "{e}"
    );
    let (s, e) = send(
        "POST",
        &url("/v1/plugins/role/revoke"),
        &admin,
        Some(json!({"capabilities": ["kv"]})),
    );
    assert_eq!((s, e["code"].clone()), (409, json!("invalid_state")), "{e}");

    // A plugin the configuration names is not removed behind its back.
    let (s, e) = send("DELETE", &url("/v1/plugins/role"), &admin, None);
    assert_eq!(s, 409, "{e}");
    assert!(
        e["details"]["uses"]
            .as_array()
            .unwrap()
            .contains(&json!("selection")),
        "{e}"
    );

    // A token cannot revoke itself, so the last admin token stays: the
    // one revoking another is still there.
    let (s, me) = send("GET", &url("/v1/tokens"), &admin, None);
    assert_eq!(s, 200);
    let my_id = me[0]["id"].as_str().unwrap().to_string();
    let (s, e) = send("DELETE", &url(&format!("/v1/tokens/{my_id}")), &admin, None);
    assert_eq!(s, 409, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cannot revoke itself"),
        "{e}"
    );
    let other = token(&ws, "second", "admin", &[]);
    let (s, _) = send("DELETE", &url(&format!("/v1/tokens/{my_id}")), &other, None);
    assert_eq!(s, 200, "another admin may revoke it");
    let (s, e) = send("DELETE", &url("/v1/tokens/second"), &other, None);
    assert_eq!(s, 409, "the last admin token stays: {e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cannot revoke itself"),
        "{e}"
    );

    // A removal with force is audited, and the configuration follows.
    let (s, r) = send(
        "DELETE",
        &url("/v1/plugins/recent?force=true"),
        &other,
        None,
    );
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["unconfigured"], json!(["selection"]));
    let (_, audit) = send("GET", &url("/v1/audit?limit=50"), &other, None);
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    for a in ["plugin-remove", "token-revoke", "token-create"] {
        assert!(actions.contains(&a), "{a} audited: {actions:?}");
    }
    assert!(srv.stop().success());
    let toml = std::fs::read_to_string(ws.home().join("mem.toml")).unwrap();
    assert!(!toml.contains("\"recent\""), "{toml}");

    // The CLI's owner may revoke any token, the last admin one included.
    ws.run(&["token", "revoke", "second"]).ok();
}
