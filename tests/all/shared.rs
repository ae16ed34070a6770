//! The shared backend end to end (issue 19): the service's flows on both
//! backends, two `serve` hosts on one PostgreSQL + S3 workspace (one
//! record for 100 concurrent writes with one key, CAS, one audit chain,
//! quotas counted once, a write on one host found by search on the other
//! within a measured bound, SIGKILL of a host during writes), `migrate`,
//! and a database that is down. The servers come from `scripts/test`
//! (`mem_store_postgres::testing`); by hand without them these skip.

use crate::support::{Server, Ws, http, token};
use mem_store_postgres::testing::{self, TestEnv};
use serde_json::{Value, json};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// `[store]`/`[blobs]` of a workspace in `schema`: secrets by variable name.
fn deployment(env: &TestEnv, schema: &str) -> String {
    format!(
        "\n[store]\nbackend = \"postgres\"\nurl_env = \"{}\"\nschema = \"{schema}\"\npool_size = 8\n\n\
         [blobs]\nbackend = \"s3\"\nbucket = \"{}\"\nendpoint = \"{}\"\nprefix = \"{schema}\"\n\
         access_key_env = \"{}\"\nsecret_key_env = \"{}\"\n",
        testing::PG_URL,
        env.s3_bucket,
        env.s3_endpoint,
        testing::S3_ACCESS_KEY_ID,
        testing::S3_SECRET_ACCESS_KEY,
    )
}

/// A host's folder of the shared workspace `schema` (its mem.toml, index, plugins).
pub(crate) fn shared_ws(env: &TestEnv, schema: &str) -> Ws {
    let ws = Ws::uninitialised();
    std::fs::create_dir_all(ws.home()).unwrap();
    let text = format!(
        "{}{}",
        mem_service::WorkspaceConfig::template("shared"),
        deployment(env, schema)
    );
    std::fs::write(ws.home().join("mem.toml"), text).unwrap();
    ws.run(&["init"]).ok();
    ws
}

struct Reply {
    status: u16,
    body: Value,
}

/// One request; an `overloaded` answer (load shedding) is retried after
/// its retry-after, as a client would.
fn call(
    srv: &Server,
    method: &str,
    path: &str,
    secret: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> Reply {
    for _ in 0..50 {
        let r = call_once(srv, method, path, secret, body, key);
        if r.status != 503 {
            return r;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{method} {path}: still overloaded");
}

fn call_once(
    srv: &Server,
    method: &str,
    path: &str,
    secret: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> Reply {
    let agent = http();
    let b = ureq::http::Request::builder()
        .method(method)
        .uri(srv.url(path))
        .header("authorization", format!("Bearer {secret}"));
    let b = match key {
        Some(k) => b.header("idempotency-key", k),
        None => b,
    };
    let resp = match body {
        Some(v) => agent.run(
            b.header("content-type", "application/json")
                .body(serde_json::to_vec(v).unwrap())
                .unwrap(),
        ),
        None => agent.run(b.body(()).unwrap()),
    }
    .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap_or_default();
    Reply {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

fn remember_body(content: &str) -> Value {
    json!({ "content": content, "kind": "fact", "path": "/team" })
}

/// The flows of the service's own end-to-end tests, on one backend:
/// idempotency, CAS on state_version, forget, a governed write, a file's
/// bytes, audit verify.
fn service_flows(ws: &Ws) {
    let first = ws.remember("Builds run on Linux", "/team", Some("k-1"));
    let id = first["id"].as_str().unwrap().to_string();
    let again = ws
        .run(&[
            "remember",
            "Builds run on Linux",
            "--kind",
            "fact",
            "--path",
            "/team",
            "--idempotency-key",
            "k-1",
        ])
        .ok()
        .json();
    assert_eq!(again["replayed"], true);
    assert_eq!(again["memory"]["id"], id.as_str());
    ws.run(&[
        "remember",
        "Builds run on BSD",
        "--kind",
        "fact",
        "--path",
        "/team",
        "--idempotency-key",
        "k-1",
    ])
    .fails("idempotency_conflict", 1);

    // CAS: the right version wins once; the stale one is refused.
    let v = first["state_version"].as_u64().unwrap().to_string();
    ws.run(&[
        "memory",
        "feedback",
        &id,
        "useful",
        "--expected-version",
        &v,
    ])
    .ok();
    ws.run(&[
        "memory",
        "feedback",
        &id,
        "useful",
        "--expected-version",
        &v,
    ])
    .fails("version_conflict", 1);

    // Forget: the content goes, a tombstone stays, search no longer finds it.
    let gone = ws.remember("The staging password rotates weekly", "/team", Some("k-2"));
    let gid = gone["id"].as_str().unwrap();
    let gv = gone["state_version"].as_u64().unwrap().to_string();
    ws.run(&[
        "memory",
        "forget",
        gid,
        "--expected-version",
        &gv,
        "--reason",
        "secret",
        "--confirm",
    ])
    .ok();
    let m = ws.run(&["memory", "get", gid]).ok().json();
    assert_eq!(m["lifecycle"], "forgotten");
    assert!(m.get("content").is_none_or(Value::is_null), "{m}");
    let hits = ws.run(&["search", "staging password rotates"]).ok().json();
    assert!(!hits.to_string().contains(gid), "{hits}");

    // A governed write: queued, then approved by a person.
    crate::governance::set_config(
        ws,
        "[gate]\ndefault = \"auto\"\nkinds = { decision = \"review\" }\n",
    );
    let queued = ws
        .run(&[
            "remember",
            "We ship on Thursdays",
            "--kind",
            "decision",
            "--path",
            "/team",
            "--idempotency-key",
            "d-1",
            "--agent-id",
            "claude",
            "--source-type",
            "meeting",
            "--source-ref",
            "ops-sync",
        ])
        .ok()
        .json();
    assert_eq!(queued["proposal"]["status"], "queued", "{queued}");
    let pid = queued["proposal"]["id"].as_str().unwrap();
    let approved = ws.run(&["review", "approve", pid]).ok().json();
    assert_eq!(approved["status"], "approved");

    // A file's bytes go through the blob store and come back whole.
    let local = ws.write(
        "notes.md",
        b"# Notes\n\nshared backends keep blobs elsewhere\n",
    );
    ws.run(&["put", local.to_str().unwrap(), "--to", "/notes"])
        .ok();
    let cat = ws.run(&["cat", "/notes/notes.md"]).ok();
    assert_eq!(
        cat.stdout,
        b"# Notes\n\nshared backends keep blobs elsewhere\n"
    );

    let verified = ws.run(&["audit", "verify"]).ok().json();
    assert_eq!(verified["ok"], true, "{verified}");
    assert!(verified["entries"].as_u64().unwrap() >= 4, "{verified}");
}

#[test]
fn the_service_flows_pass_on_both_backends() {
    service_flows(&Ws::new());
    let Some(env) = TestEnv::get("the_service_flows_pass_on_both_backends") else {
        return;
    };
    service_flows(&shared_ws(&env, &env.fresh_schema("flows")));
}

/// Polls `search` on `srv` until `id` is a hit; how long it took.
fn until_found(srv: &Server, secret: &str, query: &str, id: &str, limit: Duration) -> Duration {
    let t = Instant::now();
    loop {
        let r = call(
            srv,
            "POST",
            "/v1/search",
            secret,
            Some(&json!({ "query": query, "lexical_only": true })),
            None,
        );
        if r.body["hits"]
            .as_array()
            .is_some_and(|h| h.iter().any(|x| x["id"] == id))
        {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < limit,
            "not found on the other host within {limit:?}: {}",
            r.body
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn two_hosts_serve_one_workspace() {
    let Some(env) = TestEnv::get("two_hosts_serve_one_workspace") else {
        return;
    };
    let schema = env.fresh_schema("twohosts");
    let (wa, wb) = (shared_ws(&env, &schema), shared_ws(&env, &schema));
    let admin = token(&wa, "admin", "admin", &[]);
    let quota = token(&wa, "quota", "search", &["--quota", "10"]);
    let (a, b) = (Server::start(&wa, &[]), Server::start(&wb, &[]));
    let hosts = [Arc::new(a), Arc::new(b)];

    // 100 concurrent writes with one idempotency key, split between hosts.
    let barrier = Arc::new(Barrier::new(100));
    let writers: Vec<_> = (0..100)
        .map(|n| {
            let (srv, barrier, admin) = (hosts[n % 2].clone(), barrier.clone(), admin.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let r = call(
                    &srv,
                    "POST",
                    "/v1/memories",
                    &admin,
                    Some(&remember_body("One record for one key")),
                    Some("same-key"),
                );
                assert!(
                    r.status == 200 || r.status == 201,
                    "{} {}",
                    r.status,
                    r.body
                );
                (
                    r.body["replayed"].as_bool().unwrap(),
                    r.body["memory"]["id"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    let results: Vec<(bool, String)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|(replayed, _)| !replayed).count(), 1);
    let id = &results[0].1;
    assert!(results.iter().all(|(_, i)| i == id));
    let listed = call(&hosts[1], "GET", "/v1/memories", &admin, None, None);
    assert_eq!(
        listed.body["items"].as_array().unwrap().len(),
        1,
        "{}",
        listed.body
    );

    // CAS on state_version across hosts: one of two wins.
    let m = call(
        &hosts[0],
        "GET",
        &format!("/v1/memories/{id}"),
        &admin,
        None,
        None,
    )
    .body;
    let v = m["state_version"].as_u64().unwrap();
    let cas: Vec<_> = (0..2)
        .map(|n| {
            let (srv, admin, id) = (hosts[n].clone(), admin.clone(), id.clone());
            std::thread::spawn(move || {
                call(
                    &srv,
                    "POST",
                    &format!("/v1/memories/{id}/feedback"),
                    &admin,
                    Some(&json!({ "action": "useful", "expected_version": v })),
                    None,
                )
                .status
            })
        })
        .collect();
    let mut statuses: Vec<u16> = cas.into_iter().map(|t| t.join().unwrap()).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 409]);

    // A quota is counted once across hosts: 10 calls a day, 14 tried.
    let tries: Vec<_> = (0..14)
        .map(|n| {
            let (srv, quota) = (hosts[n % 2].clone(), quota.clone());
            std::thread::spawn(move || {
                call(
                    &srv,
                    "POST",
                    "/v1/search",
                    &quota,
                    Some(&json!({ "query": "x" })),
                    None,
                )
                .status
            })
        })
        .collect();
    let statuses: Vec<u16> = tries.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        10,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        4,
        "{statuses:?}"
    );

    // A write on one host is found by search on the other: measured.
    let mut waits = Vec::new();
    for n in 0..5 {
        let content = format!("Follower probe number {n} zebracorn{n}");
        let r = call(
            &hosts[n % 2],
            "POST",
            "/v1/memories",
            &admin,
            Some(&remember_body(&content)),
            Some(&format!("probe-{n}")),
        );
        let pid = r.body["memory"]["id"].as_str().unwrap().to_string();
        waits.push(until_found(
            &hosts[(n + 1) % 2],
            &admin,
            &format!("zebracorn{n}"),
            &pid,
            Duration::from_secs(10),
        ));
    }
    waits.sort();
    eprintln!(
        "a write on one host was searchable on the other after {waits:?} (median {:?})",
        waits[2]
    );
    assert!(waits[4] < Duration::from_secs(3), "{waits:?}");

    // One audit chain, verified through either host.
    for srv in &hosts {
        let r = call(
            srv,
            "POST",
            "/v1/audit/verify",
            &admin,
            Some(&json!({})),
            None,
        );
        assert_eq!(r.body["ok"], true, "{}", r.body);
    }
}

#[test]
fn a_host_killed_during_writes_loses_no_acknowledged_write() {
    let Some(env) = TestEnv::get("a_host_killed_during_writes_loses_no_acknowledged_write") else {
        return;
    };
    let schema = env.fresh_schema("sigkill");
    let (wa, wb) = (shared_ws(&env, &schema), shared_ws(&env, &schema));
    let admin = token(&wa, "admin", "admin", &[]);
    let a = Arc::new(Server::start(&wa, &[]));
    let b = Server::start(&wb, &[]);
    let acks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = {
        let (a, admin, acks) = (a.clone(), admin.clone(), acks.clone());
        std::thread::spawn(move || {
            let mut acked = Vec::new();
            for n in 0..400 {
                let body = remember_body(&format!("acknowledged write {n}"));
                let agent = http();
                let req = ureq::http::Request::builder()
                    .method("POST")
                    .uri(a.url("/v1/memories"))
                    .header("authorization", format!("Bearer {admin}"))
                    .header("idempotency-key", format!("w-{n}"))
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(&body).unwrap())
                    .unwrap();
                match agent.run(req) {
                    Ok(r) if r.status().as_u16() < 300 => {
                        let v: Value =
                            serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
                        acked.push(v["memory"]["id"].as_str().unwrap().to_string());
                        acks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    // The host is gone: no acknowledgement.
                    _ => break,
                }
            }
            acked
        })
    };
    // Killed mid-stream, once writes are flowing.
    let t = Instant::now();
    while acks.load(std::sync::atomic::Ordering::SeqCst) < 25
        && t.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    a.kill();
    let acked = writer.join().unwrap();
    assert!(acked.len() >= 25, "{} acknowledged", acked.len());
    for id in &acked {
        let r = call(&b, "GET", &format!("/v1/memories/{id}"), &admin, None, None);
        assert_eq!(r.status, 200, "acknowledged {id} is missing: {}", r.body);
    }
    // Written while host A was down; A restarts and catches up.
    let r = call(
        &b,
        "POST",
        "/v1/memories",
        &admin,
        Some(&remember_body("written while A was down quokkafish")),
        Some("while-down"),
    );
    let late = r.body["memory"]["id"].as_str().unwrap().to_string();
    drop(a);
    let a = Server::start(&wa, &[]);
    until_found(&a, &admin, "quokkafish", &late, Duration::from_secs(10));
    eprintln!(
        "{} acknowledged writes before SIGKILL, all readable on the other host",
        acked.len()
    );
}

#[test]
fn migrate_moves_an_embedded_workspace_verified() {
    let Some(env) = TestEnv::get("migrate_moves_an_embedded_workspace_verified") else {
        return;
    };
    let ws = Ws::new();
    let m = ws.remember("Migrations keep every hash", "/team", Some("m-1"));
    let local = ws.write("blob.bin", &[7u8; 50_000]);
    ws.run(&["put", local.to_str().unwrap(), "--to", "/files"])
        .ok();
    let schema = env.fresh_schema("migrate");
    let into = ws.path("shared-host");
    let out = ws
        .run(&[
            "migrate",
            "--to",
            "postgres",
            "--into",
            into.to_str().unwrap(),
            "--url-env",
            testing::PG_URL,
            "--schema",
            &schema,
            "--bucket",
            &env.s3_bucket,
            "--endpoint",
            &env.s3_endpoint,
            "--prefix",
            &schema,
            "--access-key-env",
            testing::S3_ACCESS_KEY_ID,
            "--secret-key-env",
            testing::S3_SECRET_ACCESS_KEY,
        ])
        .ok()
        .json();
    assert_eq!(out["verified"], true, "{out}");
    assert!(out["records"].as_u64().unwrap() >= 2, "{out}");
    let mut c = crate::support::run_command(
        {
            let mut c = std::process::Command::new(crate::support::BIN);
            c.env_remove("MEM_HOME").args([
                "--format",
                "json",
                "--workspace",
                into.to_str().unwrap(),
                "memory",
                "get",
                m["id"].as_str().unwrap(),
            ]);
            c
        },
        None,
    );
    c = c.ok();
    assert_eq!(c.json()["content"], "Migrations keep every hash");
    let mut cat = std::process::Command::new(crate::support::BIN);
    cat.env_remove("MEM_HOME").args([
        "--workspace",
        into.to_str().unwrap(),
        "cat",
        "/files/blob.bin",
    ]);
    assert_eq!(
        crate::support::run_command(cat, None).ok().stdout,
        vec![7u8; 50_000]
    );
    // The same schema again is not empty: refused, nothing changed.
    let again = ws.run(&[
        "migrate",
        "--to",
        "postgres",
        "--into",
        ws.path("second").to_str().unwrap(),
        "--url-env",
        testing::PG_URL,
        "--schema",
        &schema,
        "--bucket",
        &env.s3_bucket,
        "--endpoint",
        &env.s3_endpoint,
        "--prefix",
        &schema,
    ]);
    assert_ne!(again.code, 0);
    assert!(!ws.path("second").exists());
}

#[test]
fn a_database_that_is_down_is_a_clear_error_without_its_password() {
    let Some(env) = TestEnv::get("a_database_that_is_down_is_a_clear_error_without_its_password")
    else {
        return;
    };
    let ws = shared_ws(&env, &env.fresh_schema("down"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = ws.cmd();
    c.env(
        testing::PG_URL,
        format!("postgres://mem:pw-not-for-logs@127.0.0.1:{port}/mem"),
    )
    .args(["--format", "json", "memory", "list"]);
    let r = crate::support::run_command(c, None);
    assert!(!r.stderr.contains("pw-not-for-logs"), "{}", r.stderr);
    r.fails("STORE_UNAVAILABLE", 1);
}
