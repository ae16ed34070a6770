//! Plugins end to end: first-party plugins installed at init, background
//! processing of put files, install/grant/revoke through the CLI, and a
//! hostile processor contained while the host keeps serving.

use crate::support::{Ws, p};

#[test]
fn init_installs_the_first_party_plugins() {
    let ws = Ws::new();
    let list = ws.run(&["plugin", "list"]).ok().json();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["manifest"]["name"].as_str().unwrap())
        .collect();
    for want in [
        "agents-md",
        "conflicts",
        "evidence",
        "recent",
        "relevance",
        "role",
        "text",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let text = ws.run(&["plugin", "inspect", "text"]).ok().json();
    assert_eq!(text["manifest"]["world"], "processor");
}

#[test]
fn a_put_markdown_file_is_processed_into_chunks_with_line_locators() {
    let ws = Ws::new();
    let f = ws.write("guide.md", b"# Setup\n\nInstall the zymurgy toolkit first.\n\n## Usage\n\nRun the fermenter nightly.\n");
    let put = ws.run(&["put", p(&f), "--to", "/docs"]).ok().json();
    let id = put["file"]["id"].as_str().unwrap().to_string();
    let info = ws.run(&["info", &id]).ok().json();
    assert_eq!(info["index_status"], "done", "{info}");
    let status = ws.run(&["status"]).ok().json();
    assert_eq!(status["index_status"]["done"], 1);
    let hits = ws.run(&["search", "zymurgy"]).ok().json();
    let hit = &hits["hits"][0];
    assert_eq!(hit["source"], "file", "{hits}");
    let citation = hit["citation"]
        .as_str()
        .or(hit["source_ref"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(citation.contains(&format!("mem://file/{id}#L")), "{hit}");
}

#[test]
fn grants_are_edited_in_mem_toml_and_checked_per_capability() {
    let ws = Ws::new();
    let fixture = mem_bundled::fixture("wants-kv").expect("fixture built");
    let installed = ws
        .run(&[
            "plugin",
            "install",
            p(&fixture.wasm_path()),
            "--manifest",
            p(&fixture.manifest_path()),
        ])
        .ok()
        .json();
    assert!(
        installed["missing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "kv"),
        "{installed}"
    );
    let granted = ws.run(&["plugin", "grant", "wants-kv", "kv"]).ok().json();
    assert!(
        granted["effective"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "kv")
    );
    let toml = std::fs::read_to_string(ws.home().join("mem.toml")).unwrap();
    assert!(
        toml.contains("[plugins.wants-kv]") && toml.contains("\"kv\""),
        "{toml}"
    );
    // The comments of the file survive the edit.
    assert!(toml.contains("# mem-host workspace settings"));
    let revoked = ws.run(&["plugin", "revoke", "wants-kv", "kv"]).ok().json();
    assert!(
        revoked["missing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "kv")
    );
    ws.run(&["plugin", "grant", "wants-kv", "teleport"])
        .fails("bad_request", 1);
    ws.run(&["plugin", "grant", "nope", "kv"])
        .fails("not_found", 2);
    ws.run(&["plugin", "remove", "wants-kv"]).ok();
    ws.run(&["plugin", "inspect", "wants-kv"])
        .fails("not_found", 2);
}

#[test]
fn a_tampered_plugin_is_refused_and_nothing_is_installed() {
    let ws = Ws::new();
    let fixture = mem_bundled::fixture("panic").expect("fixture built");
    let mut wasm = std::fs::read(fixture.wasm_path()).unwrap();
    let last = wasm.len() - 1;
    wasm[last] ^= 0xff;
    let tampered = ws.write("evil/plugin.wasm", &wasm);
    std::fs::copy(fixture.manifest_path(), ws.path("evil/manifest.json")).unwrap();
    let err = ws.run(&["plugin", "install", p(&tampered)]).json_err_code();
    assert!(err == "plugin_invalid" || err == "bad_request", "{err}");
    ws.run(&["plugin", "inspect", "panic"])
        .fails("not_found", 2);
}

#[test]
fn a_runaway_processor_fails_its_call_and_the_host_keeps_serving() {
    let ws = Ws::new();
    let spin = mem_bundled::fixture("spin").expect("fixture built");
    ws.run(&[
        "plugin",
        "install",
        p(&spin.wasm_path()),
        "--manifest",
        p(&spin.manifest_path()),
    ])
    .ok();
    let toml_path = ws.home().join("mem.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    std::fs::write(
        &toml_path,
        format!("{toml}\n[plugins.spin]\nlimits = {{ timeout_ms = 300 }}\n"),
    )
    .unwrap();
    let f = ws.write("notes.txt", b"plain words about quokkas\n");
    let put = ws.run(&["put", p(&f), "--to", "/n"]).ok().json();
    let id = put["file"]["id"].as_str().unwrap().to_string();
    let info = ws.run(&["info", &id]).ok().json();
    assert_eq!(
        info["index_status"], "partial",
        "text succeeded, spin hit its deadline: {info}"
    );
    assert!(
        info["index_error"].as_str().unwrap().contains("spin"),
        "{info}"
    );
    let inspect = ws.run(&["plugin", "inspect", "spin"]).ok().json();
    assert!(
        inspect["failures"]["total"].as_u64().unwrap() >= 1,
        "{inspect}"
    );
    // The text processor's chunks still made the file searchable.
    assert_eq!(
        ws.run(&["search", "quokkas"]).ok().json()["hits"][0]["source"],
        "file"
    );
    ws.run(&["plugin", "remove", "spin"]).ok();
    let r = ws.run(&["reindex", &id]).ok().json();
    assert_eq!(r["done"], 1, "{r}");
}

#[test]
fn an_agents_md_document_round_trips_through_the_adapter() {
    let ws = Ws::new();
    let doc = ws.write(
        "AGENTS.md",
        b"# Project rules\n\n- Run cargo fmt before committing\n- Never push to main directly\n\n## Testing\n\n- Tests drive the built binary\n",
    );
    let run = ws.run(&["import", p(&doc), "--path", "/repo"]).ok();
    let lines = run.json_lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let first = &lines[0]["memory"];
    assert_eq!(first["content"], "Run cargo fmt before committing");
    assert_eq!(first["provenance"]["source_ref"], "AGENTS.md#L3");
    assert_eq!(first["attributes"]["section"], "Project rules");
    // Importing again replays instead of duplicating.
    let again = ws
        .run(&["import", p(&doc), "--path", "/repo"])
        .ok()
        .json_lines();
    assert!(again.iter().all(|l| l["replayed"] == true));
    let out = ws.path("out.md");
    ws.run(&["export", "--path", "/repo", "-o", p(&out)]).ok();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("Never push to main directly"), "{text}");
    assert!(text.contains("Testing"), "{text}");
    ws.run(&["import", p(&doc), "--path", "/repo", "--adapter", "nope"])
        .fails("not_found", 2);
}
