//! Task handoff end to end: the SPEC's two-agent test over the real MCP
//! SDK clients (agent A over stdio, agent B over HTTP, each with its own
//! token), the CLI commands, REST, and the documents against their schemas.

use crate::schemas::assert_valid;
use crate::support::{BIN, Server, Ws, http, run_command, token};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let py = repo_root().join(".venv-test/bin/python");
    assert!(
        py.exists(),
        "the MCP end-to-end tests need the Python MCP SDK in .venv-test: run scripts/setup"
    );
    py
}

/// One MCP session of `calls` ([tool, arguments] pairs) with the Python
/// SDK: over stdio (`mem-host mcp` as the token `secret`) or over HTTP.
pub(crate) fn session(ws: &Ws, transport: Transport<'_>, calls: Value) -> Vec<Value> {
    let file = ws.write("calls.json", calls.to_string().as_bytes());
    let mut c = Command::new(python());
    c.arg(repo_root().join("tests/mcp/call.py"))
        .env("MEM_HOME", ws.home())
        .env("MEM_MODELS", ws.path("models"))
        .env_remove("MEM_FORMAT")
        .env_remove("MEM_TOKEN")
        .current_dir(ws.tmp.path());
    match transport {
        Transport::Stdio { secret } => {
            c.arg("stdio").arg(&file).args(["--", BIN, "mcp"]);
            c.env("MEM_TOKEN", secret);
        }
        Transport::Http { url, secret } => {
            c.args(["http", url, secret]).arg(&file);
        }
    }
    let run = run_command(c, None);
    assert_eq!(
        run.code,
        0,
        "MCP client failed: {}\n{}",
        run.text(),
        run.stderr
    );
    serde_json::from_value(run.json()).unwrap()
}

pub(crate) enum Transport<'a> {
    Stdio { secret: &'a str },
    Http { url: &'a str, secret: &'a str },
}

/// The result of a call that must have succeeded.
pub(crate) fn ok(r: &Value) -> &Value {
    assert_eq!(r["is_error"], false, "{r}");
    &r["result"]
}

fn handoff(refs: &[String]) -> Value {
    json!({
        "version": "handoff.v1",
        "goal": "Migrate the billing importer to streaming reads",
        "progress": "Reader rewritten; the writer still buffers whole files.",
        "decisions": ["Stream with a 64 KiB buffer: the old reader ran out of memory on 2 GB exports"],
        "completed_steps": ["Rewrote the reader", "Added a 2 GB fixture"],
        "next_steps": ["Make the writer stream", "Run the nightly import against the fixture"],
        "blockers": ["The fixture bucket needs read access for CI"],
        "references": refs.iter().map(|u| json!({"uri": u, "note": "see"})).collect::<Vec<_>>(),
        "producer": {"agent": "claude-code", "session": "sess-a1"},
    })
}

/// The SPEC's acceptance test: agent A (its own token, MCP over stdio)
/// checkpoints a task referencing a file and two memories; agent B
/// (another token, a new MCP session over HTTP) lists tasks, resumes and
/// gets the same goal, next steps and resolved references; a checkpoint
/// from A on the stale base fails with `checkpoint_conflict`.
#[test]
fn two_agents_hand_a_task_over_through_mcp() {
    let ws = Ws::new();
    let plan = ws.write(
        "plan.md",
        b"# Plan\nread in chunks\nwrite in chunks\nverify totals\n",
    );
    let file = ws
        .run(&["put", crate::support::p(&plan), "--to", "/billing"])
        .ok()
        .json();
    let file_id = file["file"]["id"].as_str().unwrap().to_string();
    let m1 = ws.remember("Exports can reach 2 GB", "/billing", Some("h-m1"));
    let m2 = ws.remember("The importer must keep row order", "/billing", Some("h-m2"));
    let refs = vec![
        format!("mem://file/{file_id}#L2-3"),
        format!("mem://memory/{}", m1["id"].as_str().unwrap()),
        format!("mem://memory/{}", m2["id"].as_str().unwrap()),
    ];
    let scopes = "search,read,write";
    let a = token(&ws, "agent-a", scopes, &["--paths", "/billing"]);
    let b = token(&ws, "agent-b", scopes, &["--paths", "/billing"]);
    let srv = Server::start(&ws, &[]);
    let url = srv.url("/mcp");

    let doc = handoff(&refs);
    let out = session(
        &ws,
        Transport::Stdio { secret: &a },
        json!([["mem_checkpoint", {
            "task": "billing-import", "handoff": doc, "idempotency_key": "a-1"
        }]]),
    );
    let first = ok(&out[0]).clone();
    assert_valid("checkpoint-result", &first);
    assert_eq!(first["replayed"], false);
    assert_eq!(first["task"]["scope"], "/billing");
    let id1 = first["checkpoint"]["id"].as_str().unwrap().to_string();
    let a_token_id = first["checkpoint"]["written_by"]["token_id"].clone();
    assert!(a_token_id.is_string(), "written as A's token: {first}");

    let out = session(
        &ws,
        Transport::Http {
            url: &url,
            secret: &b,
        },
        json!([
            ["mem_task_list", {}],
            ["mem_resume", {"task": "billing-import", "focus": "streaming writer"}],
            ["mem_checkpoint_list", {"task": "billing-import"}],
            ["mem_checkpoint_get", {"task": "billing-import", "id": id1}],
            ["mem_checkpoint", {
                "task": "billing-import",
                "base_checkpoint_id": id1,
                "handoff": {
                    "version": "handoff.v1",
                    "goal": doc["goal"],
                    "progress": "Writer streams too.",
                    "completed_steps": ["Made the writer stream"],
                    "next_steps": ["Run the nightly import against the fixture"],
                    "producer": {"agent": "codex", "session": "sess-b1"}
                },
                "idempotency_key": "b-1"
            }],
        ]),
    );
    let tasks = ok(&out[0]);
    assert_valid("task-list", tasks);
    assert_eq!(tasks["tasks"][0]["key"], "billing-import", "{tasks}");
    assert_eq!(tasks["tasks"][0]["head_checkpoint_id"], id1.as_str());
    let resumed = ok(&out[1]);
    assert_valid("resume-result", resumed);
    let h = &resumed["checkpoint"]["handoff"];
    assert_valid("handoff.v1", h);
    assert_eq!(h["goal"], doc["goal"]);
    assert_eq!(h["next_steps"], doc["next_steps"]);
    assert_eq!(h["decisions"], doc["decisions"]);
    assert_eq!(h["blockers"], doc["blockers"]);
    assert_eq!(resumed["missing"], json!([]), "{resumed}");
    let resolved = resumed["references"].as_array().unwrap();
    let uris: Vec<&str> = resolved
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, refs.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(resolved[0]["content_sha256"], file["file"]["sha256"]);
    assert_eq!(resolved[0]["excerpt"], "read in chunks\nwrite in chunks");
    assert_eq!(resolved[1]["content_sha256"], m1["content_sha256"]);
    assert_eq!(resolved[1]["excerpt"], "Exports can reach 2 GB");
    assert_eq!(resolved[2]["excerpt"], "The importer must keep row order");
    assert_eq!(resumed["context"]["query"], "streaming writer");
    let page = ok(&out[2]);
    assert_valid("checkpoint-page", page);
    assert_eq!(page["checkpoints"][0]["id"], id1.as_str());
    let got = ok(&out[3]);
    assert_valid("checkpoint", got);
    assert_eq!(got["handoff"], first["checkpoint"]["handoff"]);
    let second = ok(&out[4]);
    let id2 = second["checkpoint"]["id"].as_str().unwrap().to_string();
    assert_eq!(second["checkpoint"]["seq"], 2);
    assert_ne!(second["checkpoint"]["written_by"]["token_id"], a_token_id);

    // A, in a new stdio session, writes on the base it last saw: refused,
    // told the head to resume from; a retry of its first write replays.
    let out = session(
        &ws,
        Transport::Stdio { secret: &a },
        json!([
            ["mem_checkpoint", {
                "task": "billing-import", "base_checkpoint_id": id1,
                "handoff": handoff(&[]), "idempotency_key": "a-2"
            }],
            ["mem_checkpoint", {
                "task": "billing-import", "handoff": doc, "idempotency_key": "a-1"
            }],
        ]),
    );
    assert_eq!(out[0]["is_error"], true, "{}", out[0]);
    let err = &out[0]["result"];
    assert_valid("error", err);
    assert_eq!(err["code"], "checkpoint_conflict", "{err}");
    assert_eq!(err["details"]["head_checkpoint_id"], id2.as_str());
    let replay = ok(&out[1]);
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["checkpoint"]["id"], id1.as_str());
    drop(srv);

    // Both agents' writes and A's refusal are in the audit log.
    let audit = ws.run(&["audit", "list"]).ok().json();
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "checkpoint").count(),
        2,
        "{actions:?}"
    );
    assert!(actions.contains(&"checkpoint-denied"), "{actions:?}");
}

/// The CLI commands, and REST for the same task: one operation each.
#[test]
fn cli_and_rest_checkpoint_list_and_resume_one_task() {
    let ws = Ws::new();
    let m = ws.remember("Use the blue deploy pipeline", "/ops", Some("c-m1"));
    let mid = m["id"].as_str().unwrap();
    let doc = json!({
        "version": "handoff.v1",
        "goal": "Move ops to the blue pipeline",
        "next_steps": ["switch the DNS"],
        "references": [{"uri": format!("mem://memory/{mid}")}, {"uri": "https://example.org/runbook"}],
    });
    let input = ws.write("h.json", doc.to_string().as_bytes());
    let one = ws
        .run(&[
            "checkpoint",
            "--task",
            "ops-move",
            "--input",
            crate::support::p(&input),
            "--idempotency-key",
            "c1",
            "--scope",
            "/ops",
        ])
        .ok()
        .json();
    assert_valid("checkpoint-result", &one);
    let id1 = one["checkpoint"]["id"].as_str().unwrap().to_string();
    // From stdin, on the head.
    let two = ws
        .run_stdin(
            &[
                "checkpoint",
                "--task",
                "ops-move",
                "--input",
                "-",
                "--idempotency-key",
                "c2",
                "--base",
                &id1,
            ],
            Some(doc.to_string().as_bytes()),
        )
        .ok()
        .json();
    let id2 = two["checkpoint"]["id"].as_str().unwrap().to_string();
    let stale = ws
        .run(&[
            "checkpoint",
            "--task",
            "ops-move",
            "--input",
            crate::support::p(&input),
            "--idempotency-key",
            "c3",
            "--base",
            &id1,
        ])
        .fails("checkpoint_conflict", 1);
    assert_eq!(stale["details"]["head_checkpoint_id"], id2.as_str());

    let mut bad = doc.clone();
    bad["estimate"] = json!("2 days");
    let bad_input = ws.write("bad.json", bad.to_string().as_bytes());
    let e = ws
        .run(&[
            "checkpoint",
            "--task",
            "ops-move",
            "--input",
            crate::support::p(&bad_input),
            "--idempotency-key",
            "c4",
            "--base",
            &id2,
        ])
        .fails("bad_handoff", 1);
    assert_eq!(e["details"]["field"], "/handoff/estimate");
    let not_json = ws.write("nj.json", b"goal: x");
    ws.run(&[
        "checkpoint",
        "--task",
        "ops-move",
        "--input",
        crate::support::p(&not_json),
        "--idempotency-key",
        "c5",
        "--base",
        &id2,
    ])
    .fails("bad_handoff", 1);

    let tasks = ws.run(&["tasks", "--scope", "/ops"]).ok().json();
    assert_valid("task-list", &tasks);
    assert_eq!(tasks["tasks"][0]["checkpoints"], 2);
    let page = ws
        .run(&["checkpoints", "ops-move", "--limit", "1"])
        .ok()
        .json();
    assert_eq!(page["checkpoints"][0]["id"], id2.as_str());
    assert_eq!(page["next_before"], 2);
    let older = ws
        .run(&["checkpoints", "ops-move", "--before", "2"])
        .ok()
        .json();
    assert_eq!(older["checkpoints"][0]["id"], id1.as_str());
    let got = ws.run(&["checkpoint", "get", "ops-move", &id1]).ok().json();
    assert_valid("checkpoint", &got);
    let resumed = ws
        .run(&[
            "resume",
            "ops-move",
            "--checkpoint",
            &id1,
            "--max-chars",
            "500",
        ])
        .ok()
        .json();
    assert_valid("resume-result", &resumed);
    assert_eq!(resumed["is_head"], false);
    assert_eq!(resumed["references"][0]["id"], mid);
    assert_eq!(resumed["external"][0]["uri"], "https://example.org/runbook");
    assert_eq!(resumed["context"]["max_chars"], 500);
    let human = ws.run_human(&["resume", "ops-move"]).ok().text();
    assert!(
        human.contains("goal: Move ops to the blue pipeline"),
        "{human}"
    );
    assert!(human.contains("switch the DNS"), "{human}");
    ws.run(&["resume", "nope"]).fails("not_found", 2);

    // REST: the same operations, the same documents.
    let secret = token(&ws, "rest", "search,read,write", &[]);
    let srv = Server::start(&ws, &[]);
    let auth = format!("Bearer {secret}");
    let get = |path: &str| {
        let r = http()
            .get(srv.url(path))
            .header("authorization", &auth)
            .call()
            .unwrap();
        let status = r.status().as_u16();
        (
            status,
            serde_json::from_str::<Value>(&r.into_body().read_to_string().unwrap()).unwrap(),
        )
    };
    let post = |path: &str, body: &Value| {
        let r = http()
            .post(srv.url(path))
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .send(body.to_string().as_bytes())
            .unwrap();
        let status = r.status().as_u16();
        (
            status,
            serde_json::from_str::<Value>(&r.into_body().read_to_string().unwrap()).unwrap(),
        )
    };
    let (s, listed) = get("/v1/tasks?scope=/ops");
    assert_eq!((s, &listed["tasks"][0]["key"]), (200, &json!("ops-move")));
    let (s, page) = get("/v1/tasks/ops-move/checkpoints?limit=1");
    assert_eq!((s, &page["checkpoints"][0]["id"]), (200, &json!(id2)));
    let (s, got) = get(&format!("/v1/tasks/ops-move/checkpoints/{id1}"));
    assert_eq!((s, &got["id"]), (200, &json!(id1)));
    let (s, resumed) = post("/v1/tasks/ops-move/resume", &json!({"focus": "pipeline"}));
    assert_eq!(s, 200, "{resumed}");
    assert_valid("resume-result", &resumed);
    let body = json!({"handoff": doc, "base_checkpoint_id": id2, "idempotency_key": "r1"});
    let (s, third) = post("/v1/tasks/ops-move/checkpoints", &body);
    assert_eq!(s, 201, "{third}");
    let (s, again) = post("/v1/tasks/ops-move/checkpoints", &body);
    assert_eq!(
        (s, &again["checkpoint"]["id"]),
        (200, &third["checkpoint"]["id"])
    );
    let (s, conflict) = post(
        "/v1/tasks/ops-move/checkpoints",
        &json!({"handoff": doc, "base_checkpoint_id": id2, "idempotency_key": "r2"}),
    );
    assert_eq!((s, &conflict["code"]), (409, &json!("checkpoint_conflict")));
    let mut long = doc.clone();
    long["goal"] = json!("g".repeat(2001));
    let (s, e) = post(
        "/v1/tasks/ops-move/checkpoints",
        &json!({"handoff": long, "base_checkpoint_id": id2, "idempotency_key": "r3"}),
    );
    assert_eq!(
        (s, &e["code"], &e["details"]["field"]),
        (400, &json!("bad_handoff"), &json!("/handoff/goal"))
    );
}
