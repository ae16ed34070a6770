//! MCP end to end with a real client: the official Python SDK
//! (`tests/mcp/client.py`, installed into `.venv-test` by `scripts/setup`)
//! against `mem-host mcp` (stdio) and `mem-host serve` (streamable HTTP).
//! The semantic lane is off (an empty models folder): recall here is
//! lexical and deterministic.

use crate::support::{BIN, Ws, run_command};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const TOOLS: [&str; 27] = [
    "mem_archive",
    "mem_catalog",
    "mem_check",
    "mem_checkpoint",
    "mem_checkpoint_get",
    "mem_checkpoint_list",
    "mem_context",
    "mem_export",
    "mem_feedback",
    "mem_file_annotation_decide",
    "mem_forget",
    "mem_get",
    "mem_import",
    "mem_list",
    "mem_memory_get",
    "mem_memory_list",
    "mem_propose",
    "mem_put",
    "mem_related",
    "mem_remember",
    "mem_restore",
    "mem_resume",
    "mem_search",
    "mem_task_list",
    "mem_timeline",
    "mem_trace",
    "mem_types",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The test virtualenv's interpreter; a missing one fails the test.
fn python() -> PathBuf {
    let py = repo_root().join(".venv-test/bin/python");
    assert!(
        py.exists(),
        "the MCP end-to-end tests need the Python MCP SDK in .venv-test: run scripts/setup"
    );
    py
}

/// Runs the client with `args` and returns its summary.
fn client(ws: &Ws, args: &[&str]) -> Value {
    let mut c = Command::new(python());
    c.arg(repo_root().join("tests/mcp/client.py"))
        .args(args)
        .env("MEM_HOME", ws.home())
        .env("MEM_MODELS", ws.path("models"))
        .env_remove("MEM_FORMAT")
        .env_remove("MEM_TOKEN")
        .current_dir(ws.tmp.path());
    let run = run_command(c, None);
    assert_eq!(
        run.code,
        0,
        "the MCP client failed\nstdout: {}\nstderr: {}",
        run.text(),
        run.stderr
    );
    run.json()
}

/// What both transports must show; returns the remembered memory's id.
fn check_summary(s: &Value) -> String {
    assert_eq!(s["server_name"], "mem-host", "{s}");
    assert!(
        s["protocol_version"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let instructions = s["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("mem_context"), "{instructions}");
    assert!(instructions.contains("mem://catalog"), "{instructions}");
    assert!(instructions.contains("idempotency_key"), "{instructions}");

    let tools: Vec<&str> = s["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tools, TOOLS, "exactly the agent tools");
    for t in &tools {
        for banned in ["review", "token", "audit"] {
            assert!(!t.contains(banned), "{t} must not be exposed over MCP");
        }
    }

    let memory = &s["remember"]["memory"];
    let id = memory["id"].as_str().unwrap().to_string();
    assert_eq!(memory["kind"], "decision");
    assert_eq!(memory["path"], "/ops");
    assert_eq!(s["remember"]["replayed"], false);

    let hits: Vec<&str> = s["search_hit_ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(hits.contains(&id.as_str()), "search finds {id}: {hits:?}");
    assert_eq!(s["dated_search_period"], "this year", "{s}");
    assert_eq!(
        s["dated_search_in_period_ids"],
        serde_json::json!([id]),
        "a memory written today is from the period \"this year\": {s}"
    );
    let cited = format!("mem://memory/{id}");
    assert!(
        s["context_citations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == cited.as_str()),
        "the context pack cites {cited}: {}",
        s["context_citations"]
    );

    let resource: Value = serde_json::from_str(s["resource_text"].as_str().unwrap()).unwrap();
    assert_eq!(resource["id"], id.as_str());
    assert_eq!(
        resource["content"],
        "The deploy window is Tuesday 14:00 UTC"
    );

    // A put file is searchable as soon as mem_put returns.
    let file_id = s["put"]["file"]["id"].as_str().unwrap_or_default();
    assert!(file_id.starts_with("file_"), "{}", s["put"]);
    assert_eq!(s["put"]["file"]["index_status"], "done", "{}", s["put"]);
    assert!(
        s["put_search_hit_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == file_id),
        "search right after mem_put finds {file_id}: {}",
        s["put_search_hit_ids"]
    );

    let err = &s["forget_error"];
    assert!(
        err["message"].as_str().is_some_and(|m| !m.is_empty()),
        "the one error document, {{code, message, hint}}: {err}"
    );
    assert!(err["hint"].as_str().is_some_and(|h| !h.is_empty()), "{err}");
    id
}

#[test]
fn stdio_session_with_the_python_sdk() {
    let ws = Ws::new();
    let s = client(&ws, &["stdio", "--", BIN, "mcp"]);
    let id = check_summary(&s);
    // The owner may delete: the refusal is about the missing confirmation.
    assert_eq!(s["forget_error"]["code"], "confirmation_required", "{s}");
    // The memory survived the refused forget.
    let m = ws.run(&["memory", "get", &id]).ok().json();
    assert_eq!(m["lifecycle"], "active", "{m}");
}

/// An agent's stdio session started while `serve` holds the workspace
/// runs its operations in that server, as the owner: the same tools, the
/// same answers, and the server holds what it wrote.
#[test]
fn stdio_session_while_serve_runs_reaches_the_server() {
    let ws = Ws::new();
    let srv = crate::support::Server::start(&ws, &[]);
    let s = client(&ws, &["stdio", "--", BIN, "mcp"]);
    let id = check_summary(&s);
    assert_eq!(s["forget_error"]["code"], "confirmation_required", "{s}");
    // The CLI (through the same server) sees the session's memory.
    let m = ws.run(&["memory", "get", &id]).ok().json();
    assert_eq!(m["lifecycle"], "active", "{m}");
    assert!(srv.stop().success());
    // A bad token is refused at start, not at every call.
    let srv = crate::support::Server::start(&ws, &[]);
    let mut c = ws.cmd();
    c.arg("mcp").env("MEM_TOKEN", "memtok_not-a-real-one");
    let run = run_command(c, None);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("unauthorized") || run.stderr.contains("Unauthorized"),
        "{}",
        run.stderr
    );
    drop(srv);
}

/// A running `mem-host serve`, stopped with SIGTERM when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(ws: &Ws) -> Self {
        let mut child = ws
            .cmd()
            .env("MEM_MODELS", ws.path("models"))
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep draining stderr (the server logs there) after the address.
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.trim().strip_prefix("listening on http://") {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                panic!("mem-host serve printed no `listening on` line");
            }
        };
        Self { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The status of an MCP `initialize` POST sent with `headers`.
    fn post_status(&self, headers: &str) -> u16 {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{headers}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut status = [0u8; 12];
        s.read_exact(&mut status).unwrap();
        let line = String::from_utf8_lossy(&status).to_string();
        line[9..12].parse().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_session_with_the_python_sdk_and_a_token() {
    let ws = Ws::new();
    let created = ws
        .run(&[
            "token",
            "create",
            "--name",
            "agent",
            "--scope",
            "search,read,write",
        ])
        .ok()
        .json();
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("memtok_"), "{created}");

    let server = Server::start(&ws);
    assert_eq!(server.post_status(""), 401, "no token, no MCP");
    assert_eq!(
        server.post_status("Authorization: Bearer memtok_not-a-real-one\r\n"),
        401
    );

    let s = client(&ws, &["http", &server.url(), &secret]);
    let id = check_summary(&s);
    // This token has no delete scope: forget is forbidden before its
    // arguments are even looked at.
    assert_eq!(s["forget_error"]["code"], "forbidden", "{s}");
    drop(server);

    // The write was made as the token.
    let m = ws.run(&["memory", "get", &id]).ok().json();
    let by = m["governance"]["proposed_by"].as_str().unwrap_or_default();
    assert!(by.contains(created["token"]["id"].as_str().unwrap()), "{m}");
}
