//! Workspace bundles end to end: export, import into a fresh folder,
//! verify; what an import refuses (and that it then changes nothing);
//! the REST routes.

use crate::schemas::assert_valid;
use crate::support::{Server, Ws, http, p, token};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Runs `args` against the workspace at `dir` (not the test's own).
fn at(ws: &Ws, dir: &Path, args: &[&str]) -> crate::support::Run {
    let mut a = vec!["--workspace", p(dir)];
    a.extend_from_slice(args);
    ws.run(&a)
}

const SEARCHES: &[&str] = &["deploy", "Fridays rollback", "postgres", "quarterly report"];

/// What a round trip must keep: file records (hashes), every memory in
/// every state with its relations, audit verification and entries, and
/// the results of a fixed set of searches.
fn snapshot(ws: &Ws, dir: &Path, memory_ids: &[String]) -> Value {
    let files: Vec<Value> = ["/docs/plan.md", "/docs/copy.md", "/data/blob.bin"]
        .iter()
        .map(|f| at(ws, dir, &["info", f]).ok().json())
        .collect();
    let memories: Vec<Value> = memory_ids
        .iter()
        .map(|id| at(ws, dir, &["memory", "get", id]).ok().json())
        .collect();
    let searches: Vec<Value> = SEARCHES
        .iter()
        .map(|q| {
            let r = at(ws, dir, &["search", q, "--lifecycle", "all"])
                .ok()
                .json();
            // Ranked by score; equal scores (the two files of the same
            // content) in id order, as a tie has no order of its own.
            let mut hits: Vec<(i64, String, Value)> = r["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    let score = (h["score"].as_f64().unwrap_or(0.0) * 1e4).round() as i64;
                    (
                        -score,
                        h["id"].as_str().unwrap().to_string(),
                        h["kind"].clone(),
                    )
                })
                .collect();
            hits.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            // The same hits in the same order; not the same scores: BM25
            // counts deleted documents until their segment is merged, so
            // the source's scores depend on its history of updates and
            // merges, the copy's (indexed once) do not.
            Value::Array(
                hits.into_iter()
                    .map(|(_, id, k)| serde_json::json!([id, k]))
                    .collect(),
            )
        })
        .collect();
    let mut audit = at(ws, dir, &["audit", "list", "--limit", "10000"])
        .ok()
        .json();
    // Entries are the same; the log position is the store's.
    if let Some(a) = audit.as_array_mut() {
        for e in a {
            e.as_object_mut().unwrap().remove("seq");
        }
    }
    // Counted afresh in the copy (tallies never travel): the same catalog,
    // at the copy's own revision.
    let mut catalog = at(ws, dir, &["catalog", "--status", "all", "--limit", "500"])
        .ok()
        .json();
    assert_eq!(catalog["truncated"], false, "{catalog}");
    catalog.as_object_mut().unwrap().remove("revision");
    serde_json::json!({
        "catalog": catalog,
        "files": files,
        "memories": memories,
        "searches": searches,
        "audit_verify": at(ws, dir, &["audit", "verify"]).ok().json(),
        "audit": audit,
        "proposals": at(ws, dir, &["review", "list"]).ok().json(),
        "plugins": at(ws, dir, &["plugin", "list"]).ok().json(),
    })
}

/// A workspace with files (one content twice), memories active, archived
/// and forgotten, a detected relation, a queued proposal, audit entries
/// and the first-party plugins. Returns the memory ids.
fn populated(ws: &Ws) -> Vec<String> {
    let plan = ws.write(
        "plan.md",
        b"# Plan\nWe deploy on Fridays with a rollback plan.\n",
    );
    ws.run(&["put", p(&plan), "--to", "/docs", "--tag", "plan"])
        .ok();
    let copy = ws.write(
        "copy.md",
        b"# Plan\nWe deploy on Fridays with a rollback plan.\n",
    );
    ws.run(&["put", p(&copy), "--to", "/docs"]).ok();
    let bin = ws.write("blob.bin", &[0u8, 159, 146, 150, 255, 1, 2, 3]);
    ws.run(&["put", p(&bin), "--to", "/data"]).ok();
    let a = ws.remember("The staging deploy can run migrations", "/ops", Some("b1"));
    let b = ws.remember(
        "The staging deploy cannot run migrations",
        "/ops",
        Some("b2"),
    );
    let c = ws.remember("Staging uses Postgres 16", "/infra", Some("b3"));
    let d = ws.remember("The quarterly report is due in March", "/team", Some("b4"));
    let id = |m: &Value| m["id"].as_str().unwrap().to_string();
    assert!(!b["relations"].as_array().unwrap().is_empty(), "{b}");
    ws.run(&["memory", "archive", &id(&c), "--expected-version", "1"])
        .ok();
    ws.run(&[
        "memory",
        "forget",
        &id(&d),
        "--expected-version",
        "1",
        "--reason",
        "wrong",
        "--confirm",
    ])
    .ok();
    ws.run(&[
        "propose",
        "create",
        "Backups run at noon",
        "--kind",
        "fact",
        "--path",
        "/ops",
        "--idempotency-key",
        "pb1",
        "--source-type",
        "ticket",
        "--source-ref",
        "OPS-1",
    ])
    .ok();
    vec![id(&a), id(&b), id(&c), id(&d)]
}

fn manifest_of(bundle: &Path) -> Value {
    let bytes = std::fs::read(bundle).unwrap();
    let tar_bytes = zstd::decode_all(&bytes[..]).unwrap();
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    let mut first = archive.entries().unwrap().next().unwrap().unwrap();
    assert_eq!(&*first.path_bytes(), b"manifest.json");
    let mut text = String::new();
    first.read_to_string(&mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_workspace_round_trips_through_a_bundle() {
    let ws = Ws::new();
    let ids = populated(&ws);
    // A token of the source: it stays behind.
    token(&ws, "agent", "read", &[]);
    let before = snapshot(&ws, &ws.home(), &ids);
    assert_eq!(before["audit_verify"]["ok"], true);

    let bundle = ws.path("ws.mem-bundle");
    let exported = ws.run(&["export", "--out", p(&bundle)]).ok().json();
    assert!(exported["bytes"].as_u64().unwrap() > 0);
    let manifest = manifest_of(&bundle);
    assert_valid("bundle-manifest", &manifest);
    assert_eq!(manifest["format_version"], 1);
    assert_eq!(exported["bundle"].as_str().unwrap().len(), 64);
    // The same content is one blob; tokens and idempotency keys stay out.
    let blobs: Vec<&Value> = manifest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["path"].as_str().unwrap().starts_with("blobs/"))
        .collect();
    assert_eq!(
        blobs.len() as u64,
        manifest["counts"]["blobs"].as_u64().unwrap()
    );
    let excluded = manifest["excluded"].to_string();
    assert!(
        excluded.contains("tokens") && excluded.contains("idempotency"),
        "{excluded}"
    );
    assert!(manifest["counts"]["records"].get("tokens").is_none());
    assert!(manifest["counts"]["records"].get("idempotency").is_none());
    assert!(
        manifest["counts"]["records"]["tasks"].is_u64(),
        "every table is listed"
    );
    assert!(
        !std::str::from_utf8(&std::fs::read(&bundle).unwrap()).is_ok_and(|t| t.contains("memtok_"))
    );

    let verified = ws.run(&["verify", p(&bundle)]).ok().json();
    assert_valid("bundle-verify-result", &verified);
    assert_eq!(verified["ok"], true);
    assert_eq!(verified["bundle"], exported["bundle"]);

    let copy = ws.path("copy");
    let imported = ws
        .run(&["import", p(&bundle), "--into", p(&copy)])
        .ok()
        .json();
    assert_valid("bundle-import-result", &imported);
    assert_eq!(imported["imported"], true, "{imported}");
    assert!(imported["reindexed_records"].as_u64().unwrap() > 0);
    let after = snapshot(&ws, &copy, &ids);
    for key in [
        "catalog",
        "files",
        "memories",
        "searches",
        "audit_verify",
        "audit",
        "proposals",
        "plugins",
    ] {
        let (b, a) = (&before[key], &after[key]);
        if key == "plugins" {
            // Installed from the bundle: same names and digests.
            let digests = |v: &Value| -> Vec<(Value, Value)> {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| {
                        (
                            x["manifest"]["name"].clone(),
                            x["manifest"]["sha256"].clone(),
                        )
                    })
                    .collect()
            };
            assert_eq!(digests(b), digests(a));
        } else {
            assert_eq!(b, a, "{key} differs after the round trip");
        }
    }
    // The owner uses the copy as before, and makes tokens anew.
    assert_eq!(
        at(&ws, &copy, &["token", "list"]).ok().json(),
        serde_json::json!([])
    );
    at(
        &ws,
        &copy,
        &["token", "create", "--name", "new", "--scope", "read"],
    )
    .ok();
    let c = at(&ws, &copy, &["cat", "/data/blob.bin"]).ok();
    assert_eq!(c.stdout, [0u8, 159, 146, 150, 255, 1, 2, 3]);

    // The same bundle again is a no-op that says so.
    let again = ws
        .run(&["import", p(&bundle), "--into", p(&copy)])
        .ok()
        .json();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["imported"], false);
    assert_eq!(at(&ws, &copy, &["audit", "verify"]).ok().json()["ok"], true);
}

#[test]
fn a_scoped_export_holds_only_what_lies_under_the_scope() {
    let ws = Ws::new();
    populated(&ws);
    let bundle = ws.path("ops.mem-bundle");
    ws.run(&["export", "--out", p(&bundle), "--scope", "/docs"])
        .ok();
    let manifest = manifest_of(&bundle);
    assert_eq!(manifest["scope"], "/docs");
    let records = &manifest["counts"]["records"];
    assert_eq!(records["files"], 2, "{records}");
    assert_eq!(records["memories"], 0, "{records}");
    let copy = ws.path("docs-only");
    ws.run(&["import", p(&bundle), "--into", p(&copy)]).ok();
    at(&ws, &copy, &["info", "/docs/plan.md"]).ok();
    at(&ws, &copy, &["info", "/data/blob.bin"]).fails("not_found", 2);
    let hits = at(&ws, &copy, &["search", "Fridays"]).ok().json();
    assert!(!hits["hits"].as_array().unwrap().is_empty(), "{hits}");
}

/// A bundle's archive entries: (name, bytes), in archive order.
type Entries = Vec<(String, Vec<u8>)>;

/// Rewrites the bundle at `from` through `f` on its (name, bytes) entries.
fn tampered(from: &Path, to: &Path, f: impl FnOnce(&mut Entries)) -> PathBuf {
    let bytes = std::fs::read(from).unwrap();
    let tar_bytes = zstd::decode_all(&bytes[..]).unwrap();
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    let mut entries: Entries = archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = String::from_utf8(e.path_bytes().to_vec()).unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (name, data)
        })
        .collect();
    f(&mut entries);
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in &entries {
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(data.len() as u64);
        h.set_mode(0o600);
        h.set_cksum();
        b.append(&h, &data[..]).unwrap();
    }
    let out = zstd::encode_all(&b.into_inner().unwrap()[..], 1).unwrap();
    std::fs::write(to, out).unwrap();
    to.to_path_buf()
}

fn edit_manifest(entries: &mut [(String, Vec<u8>)], f: impl FnOnce(&mut Value)) {
    let mut m: Value = serde_json::from_slice(&entries[0].1).unwrap();
    f(&mut m);
    entries[0].1 = serde_json::to_vec(&m).unwrap();
}

#[test]
fn an_import_that_cannot_be_done_changes_nothing() {
    let ws = Ws::new();
    populated(&ws);
    let bundle = ws.path("ws.mem-bundle");
    ws.run(&["export", "--out", p(&bundle)]).ok();
    let bad = |name: &str, f: Box<dyn FnOnce(&mut Entries)>| {
        tampered(&bundle, &ws.path(&format!("t-{name}")), f)
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            bad(
                "newer",
                Box::new(|e| edit_manifest(e, |m| m["format_version"] = 99.into())),
            ),
            "bundle_unsupported_version",
        ),
        (
            bad(
                "missing",
                Box::new(|e| e.retain(|(n, _)| !n.starts_with("blobs/"))),
            ),
            "bundle_missing_blob",
        ),
        (
            bad(
                "flipped",
                Box::new(|e| {
                    let blob = e.iter_mut().find(|(n, _)| n.starts_with("blobs/")).unwrap();
                    blob.1[0] ^= 0x20;
                }),
            ),
            "bundle_hash_mismatch",
        ),
        (
            bad(
                "escape",
                Box::new(|e| e.push(("../escape".into(), b"x".to_vec()))),
            ),
            "bundle_invalid",
        ),
        (
            bad(
                "absolute",
                Box::new(|e| e.push(("/tmp/mem-host-bundle-escape".into(), b"x".to_vec()))),
            ),
            "bundle_invalid",
        ),
        (
            bad(
                "duplicate",
                Box::new(|e| {
                    let again = e[1].clone();
                    e.push(again);
                }),
            ),
            "bundle_invalid",
        ),
    ];
    // Into a new folder: refused, and no workspace is left behind.
    for (file, code) in &cases {
        ws.run(&["verify", p(file)]).fails(code, 1);
        let target = ws.path("target");
        ws.run(&["import", p(file), "--into", p(&target)])
            .fails(code, 1);
        assert!(
            !target.exists(),
            "{code}: a failed import left {}",
            target.display()
        );
        assert!(!ws.path("escape").exists() && !Path::new("/tmp/mem-host-bundle-escape").exists());
    }
    // Into an empty workspace: refused, and it stays empty.
    let empty = Ws::new();
    for (file, code) in &cases {
        empty.run(&["import", p(file)]).fails(code, 1);
        assert_eq!(
            empty
                .run(&["memory", "list", "--lifecycle", "all"])
                .ok()
                .json()["items"],
            serde_json::json!([])
        );
        assert_eq!(
            empty.run(&["ls", "/"]).ok().json()["entries"],
            serde_json::json!([])
        );
    }
    // A truncated archive.
    let whole = std::fs::read(&bundle).unwrap();
    let cut = ws.path("cut");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    empty.run(&["import", p(&cut)]).fails("bundle_invalid", 1);
    // Into a workspace that holds data.
    let err = ws
        .run(&["import", p(&bundle)])
        .fails("workspace_not_empty", 1);
    assert!(err["hint"].as_str().unwrap().contains("--into"), "{err}");
    // Into a folder that holds other files.
    let other = ws.path("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("keep.txt"), b"mine").unwrap();
    ws.run(&["import", p(&bundle), "--into", p(&other)])
        .fails("workspace_not_empty", 1);
    assert_eq!(std::fs::read(other.join("keep.txt")).unwrap(), b"mine");
    // A good import into the empty workspace still works after all that.
    let done = empty.run(&["import", p(&bundle)]).ok().json();
    assert_eq!(done["imported"], true, "{done}");
}

#[test]
fn bundles_over_rest() {
    let ws = Ws::new();
    populated(&ws);
    let admin = token(&ws, "admin", "admin", &[]);
    let reader = token(&ws, "reader", "read", &[]);
    let server = Server::start(&ws, &[]);
    let agent = http();
    let bearer = |t: &str| format!("Bearer {t}");
    let r = agent
        .get(server.url("/v1/bundle"))
        .header("Authorization", &bearer(&reader))
        .call()
        .unwrap();
    assert_eq!(r.status(), 403);
    let mut r = agent
        .get(server.url("/v1/bundle?scope=/docs"))
        .header("Authorization", &bearer(&admin))
        .call()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers().get("content-type").unwrap(), "application/zstd");
    let scoped = r
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_vec()
        .unwrap();
    let mut r = agent
        .get(server.url("/v1/bundle"))
        .header("Authorization", &bearer(&admin))
        .call()
        .unwrap();
    let whole = r
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_vec()
        .unwrap();
    // Compare what each bundle holds, not its compressed size: a few
    // records more can compress to fewer bytes.
    let verify = |bundle: &[u8]| -> Value {
        let mut r = agent
            .post(server.url("/v1/bundle/verify"))
            .header("Authorization", &bearer(&reader))
            .send(bundle)
            .unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        assert_valid("bundle-verify-result", &v);
        v
    };
    let (w, s) = (verify(&whole), verify(&scoped));
    assert_eq!(s["scope"], "/docs", "{s}");
    let records = |v: &Value| v["records"].as_u64().unwrap();
    assert!(records(&w) > records(&s), "whole {w}\nscoped {s}");
    assert!(
        w["counts"]["blobs"].as_u64() > s["counts"]["blobs"].as_u64(),
        "whole {w}\nscoped {s}"
    );
    // Into its own (non-empty) workspace: refused, and the client receives
    // the refusal although it is decided before the upload ends.
    let r = agent
        .post(server.url("/v1/bundle/import"))
        .header("Authorization", &bearer(&admin))
        .send(&whole[..])
        .unwrap();
    assert_eq!(r.status(), 409);
    server.stop();

    // Into an empty served workspace, with the admin token made for it.
    let target = Ws::new();
    let admin2 = token(&target, "admin", "admin", &[]);
    let reader2 = token(&target, "reader", "read", &[]);
    let server = Server::start(&target, &[]);
    // Refused before the upload is read: the client may see the closed
    // connection as a broken pipe on its send instead of the 403.
    match agent
        .post(server.url("/v1/bundle/import"))
        .header("Authorization", &bearer(&reader2))
        .send(&whole[..])
    {
        Ok(r) => assert_eq!(r.status(), 403),
        Err(e) => assert!(matches!(e, ureq::Error::Io(_)), "{e}"),
    }
    let r = agent
        .post(server.url("/v1/bundle/import"))
        .header("Authorization", &bearer(&admin2))
        .send(&whole[..10])
        .unwrap();
    assert_eq!(r.status(), 422);
    let mut r = agent
        .post(server.url("/v1/bundle/import"))
        .header("Authorization", &bearer(&admin2))
        .send(&whole[..])
        .unwrap();
    assert_eq!(r.status(), 200);
    let done: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    assert_valid("bundle-import-result", &done);
    assert_eq!(done["imported"], true, "{done}");
    let mut r = agent
        .post(server.url("/v1/bundle/import"))
        .header("Authorization", &bearer(&admin2))
        .send(&whole[..])
        .unwrap();
    let again: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(again["replayed"], true, "{again}");
    // The tokens made before the import still work; the chain verifies.
    let mut r = agent
        .get(server.url("/v1/files/%2Fdocs%2Fplan.md"))
        .header("Authorization", &bearer(&reader2))
        .call()
        .unwrap();
    assert_eq!(
        r.status(),
        200,
        "{}",
        r.body_mut().read_to_string().unwrap()
    );
    // The CLI reaches the running server for the audit check.
    assert_eq!(target.run(&["audit", "verify"]).ok().json()["ok"], true);
    server.stop();
}

/// Regression: a replay (or a non-empty target) is decided from a bundle's
/// first entries, and the server answered before the upload ended; with a
/// bundle larger than the connection's buffers the client's send then
/// failed with a broken pipe instead of receiving the answer.
#[test]
fn a_replayed_or_refused_large_upload_still_receives_its_answer() {
    let ws = Ws::new();
    // Incompressible bytes, so the bundle is larger than what loopback
    // buffers hold (xorshift: deterministic, no dependency).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let big: Vec<u8> = (0..24 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let file = ws.write("big.bin", &big);
    ws.run(&["put", p(&file), "--to", "/data"]).ok();
    let bundle = ws.path("big.mem-bundle");
    ws.run(&["export", "--out", p(&bundle)]).ok();
    let bytes = std::fs::read(&bundle).unwrap();
    assert!(bytes.len() > 20 << 20, "{}", bytes.len());

    let target = Ws::new();
    let admin = token(&target, "admin", "admin", &[]);
    let server = Server::start(&target, &[]);
    let agent = http();
    let import = |bytes: &[u8]| {
        let mut r = agent
            .post(server.url("/v1/bundle/import"))
            .header("Authorization", &format!("Bearer {admin}"))
            .send(bytes)
            .unwrap();
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        (r.status().as_u16(), v)
    };
    let (status, done) = import(&bytes);
    assert_eq!(
        (status, &done["imported"]),
        (200, &Value::Bool(true)),
        "{done}"
    );
    for _ in 0..3 {
        let (status, again) = import(&bytes);
        assert_eq!(
            (status, &again["replayed"]),
            (200, &Value::Bool(true)),
            "{again}"
        );
    }
    // Another bundle into the now non-empty target is refused, and the
    // refusal arrives.
    let note = ws.write("note.md", b"# One more note\n");
    ws.run(&["put", p(&note), "--to", "/docs"]).ok();
    ws.run(&["export", "--out", p(&bundle)]).ok();
    let (status, refused) = import(&std::fs::read(&bundle).unwrap());
    assert_eq!(status, 409, "{refused}");
    server.stop();
}

/// Checkpoints one task under `scope`; returns its head checkpoint id.
fn checkpointed(ws: &Ws, task: &str, scope: &str, goal: &str) -> String {
    let doc =
        serde_json::json!({"version": "handoff.v1", "goal": goal, "next_steps": ["carry on"]});
    let input = ws.write(&format!("{task}.json"), doc.to_string().as_bytes());
    let out = ws
        .run(&[
            "checkpoint",
            "--task",
            task,
            "--input",
            p(&input),
            "--idempotency-key",
            task,
            "--scope",
            scope,
        ])
        .ok()
        .json();
    out["checkpoint"]["id"].as_str().unwrap().to_string()
}

/// Regression: a scoped export kept a task but none of its checkpoints
/// (they carry no path of their own), so the imported task resumed nothing.
#[test]
fn tasks_travel_with_their_checkpoints_in_whole_and_scoped_bundles() {
    let ws = Ws::new();
    let docs = checkpointed(&ws, "docs-rewrite", "/docs", "Rewrite the docs");
    checkpointed(&ws, "ops-move", "/ops", "Move ops");
    for (scope, tasks) in [(None, 2), (Some("/docs"), 1)] {
        let bundle = ws.path(&format!("tasks-{tasks}.mem-bundle"));
        let mut args = vec!["export", "--out", p(&bundle)];
        if let Some(s) = scope {
            args.extend(["--scope", s]);
        }
        ws.run(&args).ok();
        let copy = ws.path(&format!("tasks-copy-{tasks}"));
        ws.run(&["import", p(&bundle), "--into", p(&copy)]).ok();
        let listed = at(&ws, &copy, &["tasks"]).ok().json();
        assert_eq!(listed["tasks"].as_array().unwrap().len(), tasks, "{listed}");
        let resumed = at(&ws, &copy, &["resume", "docs-rewrite"]).ok().json();
        assert_eq!(resumed["checkpoint"]["id"], docs.as_str(), "{resumed}");
        assert_eq!(resumed["checkpoint"]["handoff"]["goal"], "Rewrite the docs");
        at(&ws, &copy, &["checkpoint", "get", "docs-rewrite", &docs]).ok();
    }
}
