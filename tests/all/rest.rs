//! REST against the running binary with a real HTTP client: idempotency,
//! errors, limits, auth, metrics, OpenAPI, graceful shutdown.

use crate::support::{Server, Ws, http, token};
use serde_json::{Value, json};
use ureq::Agent;

struct Reply {
    status: u16,
    headers: ureq::http::HeaderMap,
    body: Value,
    text: String,
}

fn send(
    agent: &Agent,
    method: &str,
    url: &str,
    secret: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Reply {
    let attempt = |agent: &Agent| {
        let builder = ureq::http::Request::builder().method(method).uri(url);
        let builder = match secret {
            Some(s) => builder.header("authorization", format!("Bearer {s}")),
            None => builder,
        };
        let builder = headers.iter().fold(builder, |b, (k, v)| b.header(*k, *v));
        match body {
            Some(b) => agent.run(
                builder
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(b).unwrap())
                    .unwrap(),
            ),
            None => agent.run(builder.body(()).unwrap()),
        }
    };
    // A pooled keep-alive connection can be closed by the server just as
    // it is reused (no response at all): retry once on a new connection,
    // as HTTP clients do. A server that is down fails both.
    let resp = attempt(agent)
        .or_else(|first| attempt(&http()).map_err(|again| format!("{first}; then {again}")))
        .unwrap_or_else(|e| panic!("{method} {url}: no response: {e}"));
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.into_body().read_to_string().unwrap_or_default();
    Reply {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    }
}

fn remember_body(content: &str, path: &str) -> Value {
    json!({ "content": content, "kind": "decision", "path": path })
}

#[test]
fn rest_writes_are_idempotent_and_errors_are_structured() {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &["--max-body", "4096"]);
    let a = http();
    let url = srv.url("/v1/memories");
    let body = remember_body("Deploys happen on Tuesdays", "/ops");

    // A write without a key is refused, and says how to fix it.
    let r = send(&a, "POST", &url, Some(&admin), Some(&body), &[]);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.body["hint"].as_str().unwrap().contains("Idempotency-Key"));

    let key = [("idempotency-key", "k-1")];
    let first = send(&a, "POST", &url, Some(&admin), Some(&body), &key);
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.body["replayed"], false);
    let id = first.body["memory"]["id"].as_str().unwrap().to_string();
    let again = send(&a, "POST", &url, Some(&admin), Some(&body), &key);
    assert_eq!(again.status, 200);
    assert_eq!(again.body["replayed"], true);
    assert_eq!(again.body["memory"]["id"], id.as_str());
    let other = remember_body("Deploys happen on Fridays", "/ops");
    let conflict = send(&a, "POST", &url, Some(&admin), Some(&other), &key);
    assert_eq!(conflict.status, 409);
    assert_eq!(conflict.body["code"], "idempotency_conflict");

    // Read back, search, context: the same service as the CLI.
    let got = send(
        &a,
        "GET",
        &srv.url(&format!("/v1/memories/{id}")),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(got.status, 200);
    assert_eq!(got.body["content"], "Deploys happen on Tuesdays");
    let hits = send(
        &a,
        "POST",
        &srv.url("/v1/search"),
        Some(&admin),
        Some(&json!({ "query": "deploys tuesdays" })),
        &[],
    );
    assert_eq!(hits.status, 200, "{}", hits.text);
    assert_eq!(hits.body["hits"][0]["id"], id.as_str());
    assert!(hits.body.get("period").is_none(), "{}", hits.text);
    // A period named in the query: the memory written just now is from it.
    let dated = send(
        &a,
        "POST",
        &srv.url("/v1/search"),
        Some(&admin),
        Some(&json!({ "query": "deploys tuesdays agreed this year" })),
        &[],
    );
    assert_eq!(dated.status, 200, "{}", dated.text);
    assert_eq!(dated.body["period"]["text"], "this year", "{}", dated.text);
    assert_eq!(dated.body["hits"][0]["id"], id.as_str());
    assert_eq!(dated.body["hits"][0]["in_period"], true, "{}", dated.text);
    let pack = send(
        &a,
        "POST",
        &srv.url("/v1/context"),
        Some(&admin),
        Some(&json!({ "query": "when do deploys happen" })),
        &[],
    );
    assert_eq!(pack.status, 200, "{}", pack.text);
    assert!(
        pack.text.contains(&format!("mem://memory/{id}")),
        "{}",
        pack.text
    );

    // Malformed, unknown, oversized, missing.
    let bad = send(
        &a,
        "POST",
        &srv.url("/v1/search"),
        Some(&admin),
        Some(&json!({ "qurey": "x" })),
        &[],
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["code"], "bad_request");
    assert!(!bad.body["hint"].as_str().unwrap().is_empty());
    let huge = json!({ "query": "x".repeat(10_000) });
    let r = send(
        &a,
        "POST",
        &srv.url("/v1/search"),
        Some(&admin),
        Some(&huge),
        &[],
    );
    assert_eq!(r.status, 413, "{}", r.text);
    assert_eq!(r.body["code"], "payload_too_large");
    let r = send(
        &a,
        "GET",
        &srv.url("/v1/memories/mem_01jdzzzzzzzzzzzzzzzzzzzzzz"),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.body["code"], "not_found");
    let r = send(
        &a,
        "GET",
        &srv.url("/v1/nothing-here"),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(r.status, 404);
    let r = send(
        &a,
        "POST",
        &srv.url(&format!("/v1/memories/{id}/forget")),
        Some(&admin),
        Some(&json!({ "expected_version": 1, "reason": "x" })),
        &[],
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.body["code"], "confirmation_required");

    // Files: raw upload, then the bytes back.
    let r = a
        .post(srv.url("/v1/files?path=/notes/a.md&tags=x&tags=y"))
        .header("authorization", format!("Bearer {admin}"))
        .send("# Title\n\nbody\n".as_bytes())
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let file: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    let fid = file["file"]["id"]
        .as_str()
        .or(file["id"].as_str())
        .unwrap()
        .to_string();
    let content = send(
        &a,
        "GET",
        &srv.url(&format!("/v1/files/{fid}/content")),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(content.text, "# Title\n\nbody\n");

    // Writes without idempotency of their own replay their first answer.
    let upload = |key: &str, bytes: &'static [u8]| {
        let r = a
            .post(srv.url("/v1/files?path=/notes/b.txt"))
            .header("authorization", format!("Bearer {admin}"))
            .header("idempotency-key", key)
            .send(bytes)
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
        (status, body)
    };
    let (s1, b1) = upload("up-1", b"first");
    assert_eq!(s1, 201, "{b1}");
    let (s2, b2) = upload("up-1", b"first");
    assert_eq!(s2, 200, "a retry is not `already_exists`: {b2}");
    assert_eq!(b2["replayed"], true);
    assert_eq!(b2["file"], b1["file"]);
    let (s3, b3) = upload("up-1", b"other bytes");
    assert_eq!(s3, 409);
    assert_eq!(b3["code"], "idempotency_conflict");
    let mk = json!({ "path": "/made", "parents": true });
    let r = send(
        &a,
        "POST",
        &srv.url("/v1/folders"),
        Some(&admin),
        Some(&mk),
        &[("idempotency-key", "mk")],
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let r = send(
        &a,
        "POST",
        &srv.url("/v1/folders"),
        Some(&admin),
        Some(&mk),
        &[("idempotency-key", "mk")],
    );
    assert_eq!(
        (r.status, &r.body["replayed"]),
        (200, &json!(true)),
        "{}",
        r.text
    );

    // Reads sent as POST (search, context) have nothing to replay: a key
    // reused for another query is not a conflict, and no answer goes stale.
    for q in ["tuesday", "deploys"] {
        let r = send(
            &a,
            "POST",
            &srv.url("/v1/search"),
            Some(&admin),
            Some(&json!({ "query": q })),
            &[("idempotency-key", "read-1")],
        );
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["query"], q);
        assert!(r.body.get("replayed").is_none(), "{}", r.text);
    }

    // Metrics count requests per route template.
    let m = send(&a, "GET", &srv.url("/metrics"), None, None, &[]);
    assert_eq!(m.status, 200);
    assert!(
        m.text.contains(
            "mem_http_requests_total{method=\"POST\",route=\"/v1/memories\",status=\"201\"} 1"
        ),
        "{}",
        m.text
    );
    assert!(m.text.contains("mem_http_request_duration_seconds_bucket"));
    assert!(m.text.contains("mem_index_documents"));
    assert!(srv.stop().success());
}

#[test]
fn a_duplicate_of_a_write_still_running_is_refused_not_run_twice() {
    use std::io::{Read, Write};
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    let a = http();
    let addr = srv.base.trim_start_matches("http://").to_string();
    let body = b"the first half, and the second half";
    let (head, tail) = body.split_at(15);
    // The first upload sends its headers and half its body, then stalls.
    let mut first = std::net::TcpStream::connect(&addr).unwrap();
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    write!(
        first,
        "POST /v1/files?path=/notes/slow.txt HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer {admin}\r\nIdempotency-Key: slow-1\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    first.write_all(head).unwrap();
    first.flush().unwrap();
    let duplicate = || {
        let r = a
            .post(srv.url("/v1/files?path=/notes/slow.txt"))
            .header("authorization", format!("Bearer {admin}"))
            .header("idempotency-key", "slow-1")
            .send(&body[..])
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
        (status, body)
    };
    // The same key while the first is running: refused, and nothing runs.
    // (The pause lets the server take the first request's headers.)
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (status, refused) = duplicate();
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "idempotency_conflict", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("still in progress"),
        "{refused}"
    );
    // The first finishes normally...
    first.write_all(tail).unwrap();
    let mut reply = String::new();
    first.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
    // ...and a retry now gets its answer instead of running again.
    let (status, b) = duplicate();
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["replayed"], true, "{b}");
    assert_eq!(b["file"]["path"], "/notes/slow.txt");
}

#[test]
fn tokens_are_required_and_expire_revoke_and_run_out() {
    let ws = Ws::new();
    let reader = token(&ws, "reader", "read", &[]);
    let admin = token(&ws, "admin", "admin", &[]);
    let quota = token(&ws, "metered", "search", &["--quota", "2"]);
    let srv = Server::start(&ws, &[]);
    let a = http();
    let status = srv.url("/v1/status");

    let r = send(&a, "GET", &status, None, None, &[]);
    assert_eq!(r.status, 401);
    assert_eq!(r.body["code"], "unauthorized");
    assert!(r.headers.contains_key("www-authenticate"));
    assert_eq!(
        send(&a, "GET", &status, Some("memtok_forged"), None, &[]).status,
        401
    );
    assert_eq!(
        send(&a, "GET", &status, Some(&reader), None, &[]).status,
        200
    );

    // Revocation (over REST: the server holds the workspace) takes effect
    // on the next call.
    let r = send(
        &a,
        "DELETE",
        &srv.url("/v1/tokens/reader"),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["revoked_at"].is_string());
    let r = send(&a, "GET", &status, Some(&reader), None, &[]);
    assert_eq!(r.status, 401);
    assert!(r.body["message"].as_str().unwrap().contains("revoked"));

    let q = json!({ "query": "anything" });
    for _ in 0..2 {
        assert_eq!(
            send(
                &a,
                "POST",
                &srv.url("/v1/search"),
                Some(&quota),
                Some(&q),
                &[]
            )
            .status,
            200
        );
    }
    let r = send(
        &a,
        "POST",
        &srv.url("/v1/search"),
        Some(&quota),
        Some(&q),
        &[],
    );
    assert_eq!(r.status, 429);
    assert_eq!(r.body["code"], "quota_exceeded");
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry > 0 && retry <= 86_400);
    assert!(srv.stop().success());
    // The secret itself never reaches the token list.
    let list = ws.run(&["token", "list"]).ok().text();
    assert!(!list.contains(&quota) && list.contains("metered"));
}

#[test]
fn path_boundaries_hide_what_a_token_may_not_see() {
    let ws = Ws::new();
    let outside = ws.remember("The payroll vendor is Acme", "/hr", None);
    let inside = ws.remember("The payroll export runs nightly", "/eng", None);
    let t = token(&ws, "eng", "search,read,write", &["--paths", "/eng"]);
    let srv = Server::start(&ws, &[]);
    let a = http();
    let get = |id: &str| {
        send(
            &a,
            "GET",
            &srv.url(&format!("/v1/memories/{id}")),
            Some(&t),
            None,
            &[],
        )
    };
    assert_eq!(get(inside["id"].as_str().unwrap()).status, 200);
    let hidden = get(outside["id"].as_str().unwrap());
    let missing = get("mem_01jdzzzzzzzzzzzzzzzzzzzzzz");
    assert_eq!(hidden.status, 404);
    // Indistinguishable from a memory that does not exist, except for the id echoed back.
    assert_eq!(hidden.body["hint"], missing.body["hint"]);
    let hits = send(
        &a,
        "POST",
        &srv.url("/v1/search"),
        Some(&t),
        Some(&json!({ "query": "payroll" })),
        &[],
    );
    let ids: Vec<&str> = hits.body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [inside["id"].as_str().unwrap()]);
    let pack = send(
        &a,
        "POST",
        &srv.url("/v1/context"),
        Some(&t),
        Some(&json!({ "query": "payroll vendor" })),
        &[],
    );
    assert!(
        !pack.text.contains(outside["id"].as_str().unwrap()),
        "{}",
        pack.text
    );
    let r = send(
        &a,
        "POST",
        &srv.url("/v1/memories"),
        Some(&t),
        Some(&remember_body("x", "/hr")),
        &[("idempotency-key", "k")],
    );
    assert_eq!(r.status, 403);
    let listing = send(&a, "GET", &srv.url("/v1/memories"), Some(&t), None, &[]);
    assert!(
        listing.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["path"] == "/eng")
    );
}

/// Minimal input for each operation, so that an allowed call reaches the
/// service (and fails there, if at all, for reasons other than auth).
fn input(op: &str, tag: &str) -> (Option<Value>, &'static str) {
    let body = match op {
        "remember" => {
            Some(json!({ "content": format!("matrix {tag}"), "kind": "fact", "path": "/m" }))
        }
        "search" | "context" => Some(json!({ "query": "matrix" })),
        "check" => Some(json!({ "text": "deploy on friday" })),
        "feedback" => Some(json!({ "action": "useful", "expected_version": 1 })),
        "archive" | "restore" => Some(json!({ "expected_version": 1 })),
        "forget" => Some(json!({ "expected_version": 1, "reason": "matrix" })),
        "mkdir" => Some(json!({ "path": format!("/m/dir-{tag}"), "parents": true })),
        "move" => Some(json!({ "from": "/m/none", "to": format!("/m/to-{tag}") })),
        "propose" => Some(
            json!({ "op": "create", "memory": { "content": format!("proposed {tag}"), "kind": "fact", "path": "/m" }, "idempotency_key": format!("propose-{tag}") }),
        ),
        "createToken" => Some(json!({ "name": format!("made-{tag}"), "scopes": ["read"] })),
        "reviewApprove" | "reviewReject" => Some(json!({ "note": "matrix" })),
        _ => None,
    };
    let query = match op {
        "putFile" => "?path=/m/upload.txt",
        "removeFolder" => "?target=/m/none",
        "import" | "export" => "?path=/m",
        _ => "",
    };
    (body, query)
}

#[test]
fn auth_matrix_every_route_times_every_scope() {
    let ws = Ws::new();
    let mem = ws.remember("matrix seed", "/m", None);
    let file = ws.write("seed.txt", b"matrix seed file");
    let fid = ws
        .run(&["put", crate::support::p(&file), "--to", "/m"])
        .ok()
        .json()["file"]["id"]
        .as_str()
        .map(str::to_string);
    let fid = fid.unwrap_or_else(|| {
        ws.run(&["info", "/m/seed.txt"]).ok().json()["id"]
            .as_str()
            .unwrap()
            .to_string()
    });
    let victim = ws
        .run(&["token", "create", "--name", "victim", "--scope", "read"])
        .ok()
        .json()["token"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let scopes = ["search", "read", "write", "delete", "admin"];
    let secrets: Vec<(&str, String)> = scopes
        .iter()
        .map(|s| (*s, token(&ws, &format!("t-{s}"), s, &[])))
        .collect();
    let srv = Server::start(&ws, &[]);
    let a = http();
    let spec = send(&a, "GET", &srv.url("/v1/openapi.json"), None, None, &[]).body;
    assert_eq!(spec["openapi"], "3.1.0");
    let mut checked = 0;
    for (path, ops) in spec["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap();
            let needs = op["x-mem-scope"].as_str().unwrap();
            let concrete = path
                .replace(
                    "/v1/memories/{id}",
                    &format!("/v1/memories/{}", mem["id"].as_str().unwrap()),
                )
                .replace("/v1/files/{target}", &format!("/v1/files/{fid}"))
                .replace("/v1/tokens/{id}", &format!("/v1/tokens/{victim}"))
                .replace("{seq}", "1")
                .replace("{name}", "text")
                .replace("{id}", "prop_01jdzzzzzzzzzzzzzzzzzzzzzz");
            for (scope, secret) in &secrets {
                let (body, query) = input(id, scope);
                let url = srv.url(&format!("{concrete}{query}"));
                let idem = format!("{id}-{scope}");
                let headers = [("idempotency-key", idem.as_str())];
                let r = send(
                    &a,
                    &method.to_uppercase(),
                    &url,
                    Some(secret),
                    body.as_ref(),
                    &headers,
                );
                let allowed = *scope == "admin" || *scope == needs;
                let what = format!(
                    "{method} {path} as {scope} (needs {needs}): {} {}",
                    r.status, r.text
                );
                assert_ne!(r.status, 401, "{what}");
                assert!(r.status < 500, "{what}");
                if allowed {
                    assert_ne!(r.status, 403, "{what}");
                } else if path.contains('{') || ["removeFolder", "export"].contains(&id) {
                    // An object (named in the path or the query) outside
                    // scope reads as not found.
                    assert!(r.status == 403 || r.status == 404, "{what}");
                } else {
                    assert_eq!(r.status, 403, "{what}");
                    assert_eq!(r.body["code"], "forbidden", "{what}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 38 * 5, "only {checked} route×scope cells");
    // Without any token, every documented route is 401.
    for (path, ops) in spec["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            let r = send(&a, &method.to_uppercase(), &srv.url(path), None, None, &[]);
            assert_eq!(r.status, 401, "{method} {path}");
        }
    }
}

#[test]
fn sigterm_finishes_in_flight_work_and_loses_no_acknowledged_write() {
    let ws = Ws::new();
    let secret = token(&ws, "writer", "write,read", &[]);
    let srv = Server::start(&ws, &["--log-format", "json"]);
    let url = srv.url("/v1/memories");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let writer = std::thread::spawn(move || {
        let a = http();
        for i in 0.. {
            let body = remember_body(&format!("acknowledged write {i}"), "/w");
            let key = format!("w-{i}");
            let r = a
                .post(&url)
                .header("authorization", format!("Bearer {secret}"))
                .header("idempotency-key", &key)
                .header("content-type", "application/json")
                .send(serde_json::to_vec(&body).unwrap());
            match r {
                Ok(mut resp) if resp.status().as_u16() == 201 => {
                    let v: Value =
                        serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
                    tx.send(v["memory"]["id"].as_str().unwrap().to_string())
                        .unwrap();
                }
                // Refused or cut off by the shutdown: not acknowledged.
                _ => return,
            }
        }
    });
    let mut acked = Vec::new();
    while acked.len() < 20 {
        acked.push(rx.recv().unwrap());
    }
    // Structured logs: one JSON object per request line.
    let log = srv.log();
    assert!(
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|v| v["level"] == "INFO"
                && v["span"]["uri"]
                    .as_str()
                    .is_some_and(|u| u.contains("/v1/memories"))),
        "{log}"
    );
    let status = srv.stop();
    writer.join().unwrap();
    acked.extend(rx.try_iter());
    assert!(status.success(), "serve exited with {status:?}");
    for id in &acked {
        let m = ws.run(&["memory", "get", id]).ok().json();
        assert_eq!(m["id"], id.as_str());
    }
}

#[test]
fn openapi_documents_every_route_and_only_real_ones() {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    let a = http();
    let spec = send(&a, "GET", &srv.url("/v1/openapi.json"), None, None, &[]).body;
    let mut n = 0;
    for (path, ops) in spec["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            // A documented route exists: whatever it answers, it is not the
            // router's "no such route" nor a wrong-method 405.
            let r = send(
                &a,
                &method.to_uppercase(),
                &srv.url(path),
                Some(&admin),
                None,
                &[],
            );
            assert_ne!(r.status, 405, "{method} {path}");
            assert!(
                !r.text.contains("no such route"),
                "{method} {path}: {}",
                r.text
            );
            n += 1;
        }
    }
    assert!(n >= 38, "{n}");
    // Schemas are real: the remember body names its required fields.
    let remember = &spec["paths"]["/v1/memories"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert!(remember["properties"]["content"].is_object(), "{remember}");
    assert!(
        remember["required"]
            .as_array()
            .unwrap()
            .contains(&json!("content")),
        "{remember}"
    );
    let schemas = &spec["components"]["schemas"];
    assert!(schemas["Error"]["properties"]["code"].is_object());
}
