//! Adapters for other agents' memory, end to end through the binary and
//! the real wasm plugins: AGENTS.md rules keep their role (MUST), a mem0
//! export, Hermes MEMORY.md / USER.md and an Obsidian vault import with
//! provenance through the write gate, replay without duplicates, and
//! survive export → import into a fresh workspace; hostile documents are
//! refused whole with nothing stored.

use crate::governance::set_config;
use crate::support::{Server, Ws, http, p, token};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/adapters")
        .join(rel)
}

fn memories(ws: &Ws, path: &str) -> Vec<Value> {
    ws.run(&["memory", "list", "--path", path, "--limit", "1000"])
        .ok()
        .json()["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// (content, kind) of every memory under `path`: what a round trip keeps.
fn content_and_kinds(ws: &Ws, path: &str) -> BTreeSet<(String, String)> {
    memories(ws, path)
        .iter()
        .map(|m| {
            (
                m["content"].as_str().unwrap().to_string(),
                m["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn import(ws: &Ws, file: &Path, adapter: &str, path: &str) -> Vec<Value> {
    ws.run(&["import", p(file), "--adapter", adapter, "--path", path])
        .ok()
        .json_lines()
}

/// Importing again replays every entry and stores nothing new.
fn assert_replays(ws: &Ws, file: &Path, adapter: &str, path: &str) {
    let before = memories(ws, path).len();
    let again = import(ws, file, adapter, path);
    assert!(again.iter().all(|l| l["replayed"] == true), "{again:?}");
    assert_eq!(memories(ws, path).len(), before);
}

#[test]
fn agents_md_never_rules_are_constraints_and_land_in_must() {
    let ws = Ws::new();
    let doc = fixture("AGENTS.md");
    let lines = import(&ws, &doc, "agents-md", "/repo");
    assert_eq!(lines.len(), 10, "{lines:?}");
    let by_content = |needle: &str| {
        lines
            .iter()
            .map(|l| &l["memory"])
            .find(|m| m["content"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("{needle} not imported: {lines:?}"))
            .clone()
    };
    let never = by_content("Never commit secrets");
    assert_eq!(never["kind"], "rule");
    assert_eq!(never["provenance"]["source_ref"], "AGENTS.md#L13");
    assert_eq!(never["provenance"]["source_type"], "import:agents-md");
    assert_eq!(never["attributes"]["section"], "AGENTS.md > Safety rules");
    assert_eq!(by_content("You must keep every public API")["kind"], "rule");
    assert_eq!(
        by_content("Prefer `cargo nextest run`")["kind"],
        "preference"
    );

    let pack = ws
        .run(&[
            "context",
            "may I commit the .env file with secrets",
            "--scope",
            "/repo",
        ])
        .ok()
        .json();
    let in_lane = |lane: &str, id: &Value| {
        pack[lane].as_array().unwrap().iter().any(|i| {
            i["citation"].as_str() == Some(&format!("mem://memory/{}", id.as_str().unwrap()))
        })
    };
    assert!(in_lane("must", &never["id"]), "{pack:#}");

    assert_replays(&ws, &doc, "agents-md", "/repo");

    // Round trip: the rules come back as rules in a fresh workspace.
    let out = ws.path("AGENTS.out.md");
    ws.run(&["export", "--path", "/repo", "-o", p(&out)]).ok();
    let fresh = Ws::new();
    import(&fresh, &out, "agents-md", "/repo");
    assert_eq!(
        content_and_kinds(&fresh, "/repo"),
        content_and_kinds(&ws, "/repo")
    );
}

#[test]
fn a_mem0_export_imports_with_provenance_through_the_gate() {
    let ws = Ws::new();
    set_config(
        &ws,
        "[gate]\ndefault = \"auto\"\nkinds = { decision = \"review\" }\n",
    );
    let doc = fixture("mem0-export.json");
    let lines = import(&ws, &doc, "mem0", "/people/alex");
    assert_eq!(lines.len(), 6, "{lines:?}");
    let first = &lines[0]["memory"];
    assert_eq!(
        first["content"],
        "Prefers dark roast coffee, brewed with an AeroPress"
    );
    assert_eq!(first["kind"], "fact");
    assert_eq!(first["provenance"]["source_ref"], "mem0-export.json#L3-12");
    assert_eq!(
        first["attributes"]["mem0_id"],
        "3f1c9a2e-7b41-4d2a-9c1e-5a8f0d6b2e11"
    );
    assert_eq!(first["attributes"]["tags"], "food,preferences");
    assert_eq!(first["attributes"]["user_id"], "alex");
    // The workspace reviews decisions: that entry waits as a proposal.
    let decision = &lines[3];
    assert!(decision["memory"].is_null(), "{decision}");
    assert_eq!(decision["proposal"]["status"], "queued", "{decision}");
    assert_eq!(memories(&ws, "/people/alex").len(), 5);
    assert_eq!(lines[4]["memory"]["kind"], "preference");

    assert_replays(&ws, &doc, "mem0", "/people/alex");
    let queued = ws.run(&["review", "list"]).ok().json();
    assert_eq!(queued.as_array().map(Vec::len), Some(1), "{queued}");

    let out = ws.path("mem0.out.json");
    ws.run(&[
        "export",
        "--adapter",
        "mem0",
        "--path",
        "/people/alex",
        "-o",
        p(&out),
    ])
    .ok();
    let exported: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(exported["results"].as_array().map(Vec::len), Some(5));
    let fresh = Ws::new();
    import(&fresh, &out, "mem0", "/people/alex");
    assert_eq!(
        content_and_kinds(&fresh, "/people/alex"),
        content_and_kinds(&ws, "/people/alex")
    );
}

#[test]
fn hermes_memory_files_import_as_facts_and_preferences() {
    let ws = Ws::new();
    let memory = fixture("hermes/MEMORY.md");
    let user = fixture("hermes/USER.md");
    let lines = import(&ws, &memory, "hermes-md", "/hermes");
    assert_eq!(lines.len(), 5, "{lines:?}");
    let ci = &lines[2]["memory"];
    assert_eq!(ci["kind"], "fact");
    assert_eq!(ci["provenance"]["source_ref"], "MEMORY.md#L5-6");
    assert!(ci["content"].as_str().unwrap().contains("rerun once"));
    let profile = import(&ws, &user, "hermes-md", "/hermes/user");
    assert_eq!(profile.len(), 3);
    assert!(profile.iter().all(|l| l["memory"]["kind"] == "preference"));

    assert_replays(&ws, &memory, "hermes-md", "/hermes");

    let out = ws.path("USER.md");
    ws.run(&[
        "export",
        "--adapter",
        "hermes-md",
        "--path",
        "/hermes/user",
        "-o",
        p(&out),
    ])
    .ok();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.matches("\n§\n").count(), 2, "{text}");
    let fresh = Ws::new();
    import(&fresh, &out, "hermes-md", "/hermes/user");
    assert_eq!(
        content_and_kinds(&fresh, "/hermes/user"),
        content_and_kinds(&ws, "/hermes/user")
    );
}

/// Every wiki link of the vault, as (from note, to note), from the stored
/// relations: `links_to` on the linking note, `linked_from` on the target.
fn link_edges(ws: &Ws, path: &str) -> BTreeSet<(String, String)> {
    let ms = memories(ws, path);
    let note_of = |id: &str| {
        ms.iter()
            .find(|m| m["id"] == id)
            .map(|m| m["attributes"]["note"].as_str().unwrap().to_string())
            .unwrap()
    };
    let mut edges = BTreeSet::new();
    for m in &ms {
        let me = m["attributes"]["note"].as_str().unwrap().to_string();
        for r in m["relations"].as_array().into_iter().flatten() {
            let other = note_of(r["target"].as_str().unwrap());
            match r["type"].as_str() {
                Some("links_to") => edges.insert((me.clone(), other)),
                Some("linked_from") => edges.insert((other, me.clone())),
                _ => false,
            };
        }
    }
    edges
}

/// The wiki links of the fixture vault, as (from note, to note).
fn vault_links() -> BTreeSet<(String, String)> {
    [
        ("Deploy checklist", "Staging cluster"),
        ("Deploy checklist", "Runbook - rollback"),
        ("Staging cluster", "Deploy checklist"),
        ("Runbook - rollback", "Staging cluster"),
        ("Meeting 2025-03-04", "Deploy checklist"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

#[test]
fn wiki_links_of_a_queued_note_become_relations_when_it_is_approved() {
    let ws = Ws::new();
    set_config(
        &ws,
        "[gate]\ndefault = \"auto\"\nkinds = { decision = \"review\" }\n",
    );
    let lines = import(&ws, &fixture("vault"), "obsidian", "/vault");
    assert_eq!(lines.len(), 4, "{lines:?}");
    // The decision note waits for review; the links between the others stand.
    let queued = ws.run(&["review", "list"]).ok().json();
    let queued = queued.as_array().unwrap();
    assert_eq!(queued.len(), 1, "{queued:?}");
    let without: BTreeSet<_> = vault_links()
        .into_iter()
        .filter(|(a, b)| a != "Deploy checklist" && b != "Deploy checklist")
        .collect();
    assert_eq!(link_edges(&ws, "/vault"), without);

    let id = queued[0]["id"].as_str().unwrap();
    ws.run(&["review", "approve", id]).ok();
    assert_eq!(link_edges(&ws, "/vault"), vault_links());
}

#[test]
fn an_obsidian_vault_imports_notes_with_front_matter_and_links() {
    let ws = Ws::new();
    let vault = fixture("vault");
    let lines = import(&ws, &vault, "obsidian", "/vault");
    assert_eq!(lines.len(), 4, "{lines:?}");
    let ms = memories(&ws, "/vault");
    let deploy = ms
        .iter()
        .find(|m| m["attributes"]["note"] == "Deploy checklist")
        .unwrap();
    assert_eq!(deploy["kind"], "decision");
    assert_eq!(deploy["attributes"]["tags"], "ops,deploy");
    assert_eq!(deploy["attributes"]["owner"], "Sam Okafor");
    assert_eq!(
        deploy["provenance"]["source_ref"],
        "Deploy checklist.md#L9-12"
    );
    let want = vault_links();
    assert_eq!(link_edges(&ws, "/vault"), want);

    assert_replays(&ws, &vault, "obsidian", "/vault");

    let out = ws.path("vault-out");
    let written = ws
        .run(&[
            "export",
            "--adapter",
            "obsidian",
            "--path",
            "/vault",
            "--split",
            "-o",
            p(&out),
        ])
        .ok()
        .json();
    assert_eq!(written["notes"], 4, "{written}");
    assert!(out.join("Staging cluster.md").is_file());
    let fresh = Ws::new();
    import(&fresh, &out, "obsidian", "/vault");
    assert_eq!(
        content_and_kinds(&fresh, "/vault"),
        content_and_kinds(&ws, "/vault")
    );
    assert_eq!(link_edges(&fresh, "/vault"), want);
}

#[test]
fn hostile_documents_are_refused_whole_and_store_nothing() {
    let ws = Ws::new();
    let huge_note = format!("---\ntags: [a]\n---\n{}\n", "word ".repeat(60_000));
    // The plugin refuses what it cannot read; the host refuses a document
    // with an entry the ledger would not store.
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        (
            "mem0",
            "broken.json",
            b"{\"results\": [{\"memory\": \"ok\"},".to_vec(),
            "plugin_rejected",
        ),
        (
            "mem0",
            "deep.json",
            format!("[{}{}]", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
            "plugin_rejected",
        ),
        (
            "mem0",
            "huge-meta.json",
            format!(
                "[{{\"memory\": \"fine\"}}, {{\"memory\": \"m\", \"metadata\": {{\"note\": \"{}\"}}}}]",
                "x".repeat(5000)
            )
            .into_bytes(),
            "unprocessable",
        ),
        (
            "obsidian",
            "nested.md",
            b"---\nmeta:\n  deep: 1\n---\nbody\n".to_vec(),
            "plugin_rejected",
        ),
        ("obsidian", "big.md", huge_note.into_bytes(), "unprocessable"),
        ("hermes-md", "MEMORY.md", b"\n\n".to_vec(), "plugin_rejected"),
    ];
    for (adapter, name, bytes, code) in cases {
        let file = ws.write(name, &bytes);
        let run = ws.run(&[
            "import",
            p(&file),
            "--adapter",
            adapter,
            "--path",
            "/hostile",
        ]);
        let err = run.error();
        assert_eq!(err["code"], code, "{adapter} {name}: {err}");
        assert!(err["hint"].is_string(), "{adapter} {name}: {err}");
        assert!(
            memories(&ws, "/hostile").is_empty(),
            "{adapter} {name} stored something"
        );
    }
}

#[test]
fn rest_imports_a_mem0_export_and_exports_a_vault_as_json() {
    let ws = Ws::new();
    let admin = token(&ws, "admin", "admin", &[]);
    let srv = Server::start(&ws, &[]);
    let a = http();
    let body = std::fs::read(fixture("mem0-export.json")).unwrap();
    let url = srv.url("/v1/import?path=/alex&adapter=mem0&name=export.json");
    let resp = a
        .post(&url)
        .header("authorization", format!("Bearer {admin}"))
        .header("content-type", "application/octet-stream")
        .send(&body[..])
        .unwrap();
    let status = resp.status().as_u16();
    let results: Value = serde_json::from_str(&resp.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(status, 200, "{results}");
    assert_eq!(results.as_array().map(Vec::len), Some(6), "{results}");
    assert_eq!(
        results[1]["result"]["memory"]["provenance"]["source_ref"],
        "export.json#L13-22"
    );

    for note in ["Deploy checklist.md", "Staging cluster.md"] {
        let text = std::fs::read(fixture(&format!("vault/{note}"))).unwrap();
        let url = srv.url(&format!(
            "/v1/import?path=/vault&adapter=obsidian&name={}",
            note.replace(' ', "%20")
        ));
        let resp = a
            .post(&url)
            .header("authorization", format!("Bearer {admin}"))
            .send(&text[..])
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
    }
    let resp = a
        .get(srv.url("/v1/export?path=/vault&adapter=obsidian&split=true"))
        .header("authorization", format!("Bearer {admin}"))
        .call()
        .unwrap();
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let doc: Value = serde_json::from_str(&resp.into_body().read_to_string().unwrap()).unwrap();
    let names: Vec<&str> = doc["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Deploy checklist.md", "Staging cluster.md"],
        "{doc}"
    );
    assert!(
        doc["documents"][1]["content"]
            .as_str()
            .unwrap()
            .contains("tags: [infra, k8s]")
    );
}

/// One memory of every built-in kind, worded to mislead a format's own
/// guess (a decision saying "never", a fact in AGENTS.md).
const EVERY_KIND: &[(&str, &str)] = &[
    ("observation", "The nightly build took 41 minutes on 2 May"),
    (
        "decision",
        "Never deploy on Fridays; we agreed on Thursday cut-offs",
    ),
    (
        "preference",
        "Prefers short commit messages in the imperative",
    ),
    (
        "task_state",
        "Migration to Postgres 16 is half done: schema moved",
    ),
    ("fact", "The API server lives in crates/api"),
    ("note", "Ask Sam about the staging certificates"),
    ("artifact", "Release checklist: docs/release.md"),
    ("rule", "You must run cargo fmt before every commit"),
];

/// (content, kind, role) of every memory under `path`, the role from the
/// workspace's own type table.
fn content_kinds_roles(ws: &Ws, path: &str) -> BTreeSet<(String, String, String)> {
    let types = ws.run(&["types"]).ok().json();
    let role_of = |kind: &str| {
        types["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == kind)
            .map(|t| t["role"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no type {kind}"))
    };
    content_and_kinds(ws, path)
        .into_iter()
        .map(|(c, k)| {
            let r = role_of(&k);
            (c, k, r)
        })
        .collect()
}

/// A workspace holding [`EVERY_KIND`] under `/rt`.
fn every_kind_workspace() -> Ws {
    let ws = Ws::new();
    let lines: String = EVERY_KIND
        .iter()
        .map(|(kind, content)| {
            format!(
                "{}\n",
                serde_json::json!({"content": content, "kind": kind, "path": "/rt", "idempotency_key": format!("rt-{kind}")})
            )
        })
        .collect();
    let file = ws.write("every-kind.jsonl", lines.as_bytes());
    ws.run(&["remember", "--jsonl", p(&file)]).ok();
    assert_eq!(memories(&ws, "/rt").len(), EVERY_KIND.len());
    ws
}

/// Exports `/rt` through `adapter` into `out` (extra args: `--split`),
/// imports the result into a fresh workspace and asserts every memory
/// came back with its content, kind and role.
fn assert_round_trip(adapter: &str, out: &str, extra: &[&str]) -> String {
    let ws = every_kind_workspace();
    let out = ws.path(out);
    let mut args = vec![
        "export",
        "--adapter",
        adapter,
        "--path",
        "/rt",
        "-o",
        p(&out),
    ];
    args.extend_from_slice(extra);
    ws.run(&args).ok();
    let fresh = Ws::new();
    let lines = import(&fresh, &out, adapter, "/rt");
    assert_eq!(lines.len(), EVERY_KIND.len(), "{lines:?}");
    let want = content_kinds_roles(&ws, "/rt");
    assert_eq!(want.len(), EVERY_KIND.len());
    assert_eq!(content_kinds_roles(&fresh, "/rt"), want, "{adapter}");
    if out.is_file() {
        std::fs::read_to_string(&out).unwrap()
    } else {
        String::new()
    }
}

#[test]
fn agents_md_round_trip_keeps_content_kinds_and_roles() {
    let text = assert_round_trip("agents-md", "AGENTS.md", &[]);
    // The rule and the preference read as such by their wording; the
    // rest carry a marker.
    assert!(
        text.contains("- You must run cargo fmt before every commit\n"),
        "{text}"
    );
    assert!(!text.contains("every commit\n  <!--"), "{text}");
    assert!(!text.contains("imperative\n  <!--"), "{text}");
    assert_eq!(text.matches("<!-- mem:kind=").count(), 6, "{text}");
}

#[test]
fn hermes_md_round_trip_keeps_content_kinds_and_roles() {
    let text = assert_round_trip("hermes-md", "MEMORY.md", &[]);
    // MEMORY.md entries are facts unless marked.
    assert_eq!(text.matches("<!-- mem:kind=").count(), 7, "{text}");
    assert!(
        text.contains("The API server lives in crates/api\n§\n"),
        "{text}"
    );
}

#[test]
fn mem0_round_trip_keeps_content_kinds_and_roles() {
    let text = assert_round_trip("mem0", "mem0.json", &[]);
    assert!(!text.contains("<!--"), "{text}");
}

#[test]
fn obsidian_round_trip_keeps_content_kinds_and_roles() {
    assert_round_trip("obsidian", "vault", &["--split"]);
}

/// The active memories under `path` as (content, source_ref), sorted.
fn contents_and_refs(ws: &Ws, path: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = memories(ws, path)
        .iter()
        .map(|m| {
            (
                m["content"].as_str().unwrap().to_string(),
                m["provenance"]["source_ref"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn an_edited_document_supersedes_what_changed_and_replays_the_rest() {
    let ws = Ws::new();
    let first = "# Rules\n\n- Never commit secrets.\n- Prefer small modules.\n- Run cargo fmt before pushing.\n";
    let doc = ws.write("v1/AGENTS.md", first.as_bytes());
    let lines = import(&ws, &doc, "agents-md", "/repo");
    assert_eq!(lines.len(), 3);
    let small = lines[1]["memory"].clone();

    // One bullet edited in place, one added above the others.
    let edited = "# Rules\n\n- Always open a pull request.\n- Never commit secrets.\n- Prefer small modules under 600 lines.\n- Run cargo fmt before pushing.\n";
    let doc2 = ws.write("v2/AGENTS.md", edited.as_bytes());
    let again = import(&ws, &doc2, "agents-md", "/repo");
    assert_eq!(again.len(), 4, "{again:?}");
    let replayed: Vec<bool> = again.iter().map(|l| l["replayed"] == true).collect();
    assert_eq!(replayed, [false, true, false, true], "{again:?}");
    // The unchanged entries are the earlier memories, not copies.
    assert_eq!(again[1]["memory"]["id"], lines[0]["memory"]["id"]);
    assert_eq!(again[3]["memory"]["id"], lines[2]["memory"]["id"]);
    // The edited one superseded its earlier memory through the gate.
    let replace = &again[2];
    assert_eq!(replace["proposal"]["op"], "replace", "{replace}");
    assert_eq!(replace["proposal"]["targets"][0], small["id"], "{replace}");
    let old = ws
        .run(&["memory", "get", small["id"].as_str().unwrap()])
        .ok()
        .json();
    assert_eq!(old["lifecycle"], "superseded", "{old}");
    assert_eq!(
        contents_and_refs(&ws, "/repo"),
        [
            ("Always open a pull request.", "AGENTS.md#L3"),
            ("Never commit secrets.", "AGENTS.md#L3"),
            ("Prefer small modules under 600 lines.", "AGENTS.md#L5"),
            ("Run cargo fmt before pushing.", "AGENTS.md#L5"),
        ]
        .map(|(c, r)| (c.to_string(), r.to_string()))
    );

    // The edited document again: everything replays, nothing duplicates.
    let third = import(&ws, &doc2, "agents-md", "/repo");
    assert!(third.iter().all(|l| l["replayed"] == true), "{third:?}");
    assert_eq!(memories(&ws, "/repo").len(), 4);
}

#[test]
fn an_edited_entry_waits_as_a_replace_proposal_when_the_gate_reviews() {
    let ws = Ws::new();
    let v1 = r#"[{"id": "m-1", "memory": "Lives in Oslo"}, {"id": "m-2", "memory": "Drinks tea"}]"#;
    import(&ws, &ws.write("a/export.json", v1.as_bytes()), "mem0", "/u");
    let before = memories(&ws, "/u");
    set_config(&ws, "[gate]\ndefault = \"review\"\n");
    let v2 = r#"[{"id": "m-1", "memory": "Lives in Bergen since 2026"}, {"id": "m-2", "memory": "Drinks tea"}]"#;
    let v2 = ws.write("b/export.json", v2.as_bytes());
    let lines = import(&ws, &v2, "mem0", "/u");
    assert_eq!(lines[1]["replayed"], true, "{lines:?}");
    let queued = &lines[0]["proposal"];
    assert_eq!(queued["status"], "queued", "{lines:?}");
    assert_eq!(queued["op"], "replace");
    // Until approved, the earlier memory stands; a replay files nothing new.
    assert_eq!(memories(&ws, "/u"), before);
    let again = import(&ws, &v2, "mem0", "/u");
    assert_eq!(again[0]["replayed"], true, "{again:?}");
    assert_eq!(again[0]["proposal"]["id"], queued["id"]);
    assert_eq!(
        ws.run(&["review", "list"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    ws.run(&["review", "approve", queued["id"].as_str().unwrap()])
        .ok();
    let now: Vec<String> = contents_and_refs(&ws, "/u")
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert_eq!(now, ["Drinks tea", "Lives in Bergen since 2026"]);
}

/// `mem_import` and `mem_export` over MCP run the same operations as the
/// CLI and REST: an agent confined to /repo imports AGENTS.md there (and
/// again: replays), may not import elsewhere, may not send an oversized
/// document, and another agent over HTTP exports what it imported.
#[test]
fn mcp_agents_import_and_export_documents() {
    use crate::handoff::{Transport, ok, session};
    use serde_json::json;
    let ws = Ws::new();
    let text = std::fs::read_to_string(fixture("AGENTS.md")).unwrap();
    let a = token(&ws, "agent-a", "search,read,write", &["--paths", "/repo"]);
    let b = token(&ws, "agent-b", "search,read", &["--paths", "/repo"]);
    let doc = |path: &str, content: &str| json!(["mem_import", {"path": path, "adapter": "agents-md", "name": "AGENTS.md", "content": content}]);
    let huge = "- x\n".repeat(mem_service::ops::admin::MAX_DOCUMENT_CHARS / 4 + 1);
    let out = session(
        &ws,
        Transport::Stdio { secret: &a },
        json!([
            doc("/repo", &text),
            doc("/repo", &text),
            doc("/elsewhere", &text),
            doc("/repo", &huge),
        ]),
    );
    let first = ok(&out[0]).as_array().unwrap().clone();
    assert_eq!(first.len(), 10, "{first:?}");
    let never = first
        .iter()
        .map(|r| &r["result"]["memory"])
        .find(|m| {
            m["content"] == "Never commit secrets or `.env` files; credentials come from the vault."
        })
        .unwrap_or_else(|| panic!("{first:?}"));
    assert_eq!(never["kind"], "rule");
    assert_eq!(never["provenance"]["source_ref"], "AGENTS.md#L13");
    let again = ok(&out[1]).as_array().unwrap().clone();
    assert!(
        again.iter().all(|r| r["result"]["replayed"] == true),
        "{again:?}"
    );
    assert_eq!(out[2]["is_error"], true, "{}", out[2]);
    assert!(out[2]["result"]["hint"].is_string(), "{}", out[2]);
    assert_eq!(out[3]["is_error"], true);
    // The tool's schema bounds `content`; the door enforces it.
    let too_large = &out[3]["result"];
    assert_eq!(too_large["code"], "bad_request");
    assert!(
        too_large["message"]
            .as_str()
            .is_some_and(|m| m.contains("/content")),
        "{}",
        &too_large["code"]
    );
    assert_eq!(memories(&ws, "/repo").len(), 10);
    assert!(memories(&ws, "/elsewhere").is_empty());

    let srv = Server::start(&ws, &[]);
    let url = srv.url("/mcp");
    let out = session(
        &ws,
        Transport::Http {
            url: &url,
            secret: &b,
        },
        json!([["mem_export", {"path": "/repo"}], doc("/repo", &text)]),
    );
    let exported = ok(&out[0]);
    assert_eq!(exported["name"], "AGENTS.md");
    let content = exported["content"].as_str().unwrap();
    assert!(
        content
            .contains("- Never commit secrets or `.env` files; credentials come from the vault."),
        "{content}"
    );
    // A read-only agent may export but not import.
    assert_eq!(out[1]["is_error"], true, "{}", out[1]);
}
