//! Files and folders through the CLI.

use crate::support::{Ws, p};
use std::os::unix::fs::PermissionsExt;

#[test]
fn binary_content_round_trips_byte_for_byte() {
    let ws = Ws::new();
    let bytes: Vec<u8> = (0..70_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let src = ws.write("blob.bin", &bytes);
    let put = ws
        .run(&["put", p(&src), "--to", "/bin", "--tag", "raw"])
        .ok()
        .json();
    assert_eq!(put["created"], true);
    let file = &put["file"];
    assert_eq!(file["path"], "/bin/blob.bin");
    assert_eq!(file["size"], bytes.len());
    // The CLI's put waits for processing: no processor takes raw bytes.
    assert_eq!(file["index_status"], "done");
    assert_eq!(file["tags"][0], "raw");
    let id = file["id"].as_str().unwrap();

    let out = ws.path("back.bin");
    ws.run(&["get", id, "-o", p(&out)]).ok();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    // get refuses to clobber a local file unless --force.
    ws.run(&["get", id, "-o", p(&out)]).fails("io_error", 1);
    ws.run(&["get", "/bin/blob.bin", "-o", p(&out), "--force"])
        .ok();

    let cat = ws.cmd().args(["cat", "/bin/blob.bin"]).output().unwrap();
    assert_eq!(cat.stdout, bytes);
    let info = ws.run(&["info", id]).ok().json();
    assert_eq!(info["sha256"], mem_core::hash::sha256_hex(&bytes));
}

#[test]
fn stdin_put_needs_a_name_and_sniffs_mime_from_bytes() {
    let ws = Ws::new();
    ws.run_stdin(&["put", "-"], Some(b"x"))
        .fails("bad_request", 1);
    let png = [
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0,
    ];
    let r = ws
        .run_stdin(
            &["put", "-", "--name", "notes.md", "--to", "/in"],
            Some(&png),
        )
        .ok()
        .json();
    assert_eq!(
        r["file"]["mime"], "image/png",
        "magic bytes win over the .md name"
    );
    let r = ws
        .run_stdin(&["put", "-", "--name", "readme.md"], Some(b"# Title\n"))
        .ok()
        .json();
    assert_eq!(r["file"]["mime"], "text/markdown");
}

#[test]
fn identical_content_is_deduplicated() {
    let ws = Ws::new();
    let a = ws.write("a.txt", b"same");
    let b = ws.write("b.txt", b"same");
    let first = ws.run(&["put", p(&a)]).ok().json();
    let second = ws.run(&["put", p(&b)]).ok().json();
    assert_eq!(first["deduplicated"], false);
    assert_eq!(second["deduplicated"], true);
    assert_eq!(first["file"]["sha256"], second["file"]["sha256"]);
    assert_ne!(first["file"]["id"], second["file"]["id"]);
    // Removing one keeps the other's content.
    ws.run(&["rm", "/a.txt"]).ok();
    assert_eq!(
        ws.cmd().args(["cat", "/b.txt"]).output().unwrap().stdout,
        b"same"
    );
    // Same path again without --replace is refused.
    ws.run(&["put", p(&b)]).fails("already_exists", 1);
}

#[test]
fn recursive_put_mirrors_a_tree_and_skips_symlinks() {
    let ws = Ws::new();
    ws.write("tree/a.md", b"# A");
    ws.write("tree/sub/b.txt", b"b");
    std::fs::create_dir_all(ws.path("tree/empty")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.path("tree/link")).unwrap();
    let run = ws
        .run(&["put", p(&ws.path("tree")), "--recursive", "--to", "/kb"])
        .ok();
    let lines = run.json_lines();
    assert_eq!(lines.iter().filter(|l| l["ok"] == true).count(), 2);
    assert!(lines.iter().any(|l| l["skipped"] == "symlink"));
    let ls = ws.run(&["ls", "/kb/tree"]).ok().json();
    let names: Vec<&str> = ls["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["empty", "sub", "a.md"]);
    // Without --recursive a folder is refused.
    ws.run(&["put", p(&ws.path("tree"))])
        .fails("bad_request", 1);
}

#[test]
fn bad_paths_name_the_rule() {
    let ws = Ws::new();
    for (path, rule) in [
        ("relative/x", "not_absolute"),
        ("/a/", "trailing_slash"),
        ("/a//b", "empty_segment"),
        ("/a/./b", "dot_segment"),
        ("/a/../b", "dot_dot_segment"),
    ] {
        let err = ws.run(&["mkdir", "-p", path]).fails("bad_path", 1);
        assert_eq!(err["details"]["rule"], rule, "{path}");
    }
    let err = ws.run(&["mkdir", "/nul\u{1}x"]).fails("bad_path", 1);
    assert_eq!(err["details"]["rule"], "control_character");
}

#[test]
fn folders_are_first_class_and_case_sensitive() {
    let ws = Ws::new();
    ws.run(&["mkdir", "/A/b"]).fails("not_found", 2);
    ws.run(&["mkdir", "-p", "/A/b"]).ok();
    ws.run(&["mkdir", "-p", "/a"]).ok();
    let root = ws.run(&["ls"]).ok().json();
    let names: Vec<&str> = root["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["A", "a"]);
    assert!(
        ws.run(&["ls", "/A/b"]).ok().json()["entries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    ws.run(&["ls", "/nope"]).fails("not_found", 2);
}

#[test]
fn move_rules() {
    let ws = Ws::new();
    let f = ws.write("f.txt", b"f");
    ws.run(&["put", p(&f), "--to", "/src/inner"]).ok();
    ws.run(&["mkdir", "-p", "/dst"]).ok();
    ws.run(&["mv", "/src", "/src/inner/deeper"])
        .fails("move_into_self", 1);
    ws.run(&["mv", "/src", "/nowhere/x"]).fails("not_found", 2);
    let moved = ws.run(&["mv", "/src", "/dst"]).ok().json();
    assert_eq!(moved["to"], "/dst/src");
    ws.run(&["info", "/dst/src/inner/f.txt"]).ok();
    ws.run(&["info", "/src/inner/f.txt"]).fails("not_found", 2);
    // Rename a file by id.
    let id = ws.run(&["info", "/dst/src/inner/f.txt"]).ok().json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    ws.run(&["mv", &id, "/dst/renamed.txt"]).ok();
    assert_eq!(
        ws.run(&["info", &id]).ok().json()["path"],
        "/dst/renamed.txt"
    );
}

#[test]
fn remove_rules() {
    let ws = Ws::new();
    let f = ws.write("f.txt", b"f");
    ws.run(&["put", p(&f), "--to", "/full"]).ok();
    ws.run(&["rm", "/full"]).fails("folder_not_empty", 1);
    ws.remember("a fact", "/full/notes", None);
    ws.run(&["rm", "/full", "--recursive"])
        .fails("folder_has_memories", 1);
    ws.run(&["rm", "/full/f.txt"]).ok();
    ws.run(&["rm", "/"]).fails("bad_path", 1);
    ws.run(&["rm", "/ghost"]).fails("not_found", 2);
}

#[test]
fn data_is_private_to_the_user() {
    let ws = Ws::new();
    let f = ws.write("f.txt", b"f");
    ws.run(&["put", p(&f)]).ok();
    let mut stack = vec![ws.home()];
    while let Some(dir) = stack.pop() {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                assert_eq!(
                    meta.permissions().mode() & 0o777,
                    0o600,
                    "{}",
                    e.path().display()
                );
            }
        }
    }
}

#[test]
fn human_output_is_readable() {
    let ws = Ws::new();
    let f = ws.write("notes.md", b"# hi");
    let out = ws.run_human(&["put", p(&f)]);
    assert_eq!(out.code, 0);
    assert!(out.text().starts_with("stored /notes.md"), "{}", out.text());
    let err = ws.run_human(&["info", "/missing"]);
    assert_eq!(err.code, 2);
    assert!(err.stderr.starts_with("error[not_found]"), "{}", err.stderr);
    assert!(err.stderr.contains("hint:"));
}

#[test]
fn commands_without_a_workspace_say_how_to_create_one() {
    let ws = Ws::uninitialised();
    let err = ws.run(&["ls"]).fails("workspace_not_found", 2);
    assert!(err["hint"].as_str().unwrap().contains("mem-host init"));
}

const DETAILED: &[u8] = b"---\ntitle: Launch plan\ntags: [launch, q3]\npeople: [Ada Lovelace]\ndate: 2026-05-01\n---\n# Launch\n\nWe ship in May.\n\n## Risks\n\nThe database migration is slow.\n\n## Owners\n\nAda owns the rollout, see https://example.com/rollout.\n";

/// `info` shows what processing made of a file, pages its chunks, and
/// `cat --chunk N` prints one of them.
#[test]
fn info_shows_chunks_with_locators_metadata_entities_and_cat_prints_one_chunk() {
    let ws = Ws::new();
    let src = ws.write("plan.md", DETAILED);
    let put = ws.run(&["put", p(&src), "--to", "/p"]).ok().json();
    let id = put["file"]["id"].as_str().unwrap().to_string();
    let info = ws.run(&["info", "/p/plan.md"]).ok().json();
    assert_eq!(
        info["id"],
        id.as_str(),
        "the record's fields stay where they were"
    );
    let proc = &info["processed"];
    assert_eq!(proc["title"], "Launch plan");
    assert_eq!(proc["metadata"]["date"], "2026-05-01");
    assert_eq!(proc["suggested_tags"], serde_json::json!(["launch", "q3"]));
    let values: Vec<&str> = proc["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["value"].as_str().unwrap())
        .collect();
    assert!(values.contains(&"Ada Lovelace"), "{values:?}");
    assert!(
        values.iter().any(|v| v.contains("example.com")),
        "{values:?}"
    );
    let chunks = proc["chunks"].as_array().unwrap();
    let count = proc["chunk_count"].as_u64().unwrap() as usize;
    assert!(count >= 2, "{proc}");
    assert_eq!(chunks.len(), count);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c["index"], i);
        let loc = c["locator"].as_str().unwrap();
        let lines = &c["lines"];
        let want = if lines["start"] == lines["end"] {
            format!("mem://file/{id}#L{}", lines["start"])
        } else {
            format!("mem://file/{id}#L{}-{}", lines["start"], lines["end"])
        };
        assert_eq!(loc, want);
    }
    assert!(proc.get("next_chunk").is_none(), "one page holds them all");

    // A page of one, then the next.
    let page = ws.run(&["info", &id, "--chunks-limit", "1"]).ok().json();
    assert_eq!(page["processed"]["chunks"].as_array().unwrap().len(), 1);
    assert_eq!(page["processed"]["next_chunk"], 1);
    let second = ws
        .run(&["info", &id, "--chunks-from", "1", "--chunks-limit", "1"])
        .ok()
        .json();
    assert_eq!(second["processed"]["chunks"][0], chunks[1]);
    ws.run(&["info", &id, "--chunks-limit", "0"])
        .fails("bad_request", 1);
    ws.run(&["info", &id, "--chunks-limit", "101"])
        .fails("bad_request", 1);

    // The human form lists the locators.
    let human = ws.run_human(&["info", &id]).ok().text();
    assert!(
        human.contains(chunks[1]["locator"].as_str().unwrap()),
        "{human}"
    );
    assert!(human.contains("Ada Lovelace"), "{human}");

    // `cat --chunk N` prints that chunk's text, nothing else.
    let one = ws
        .cmd()
        .args(["cat", &id, "--chunk", "1"])
        .output()
        .unwrap();
    assert!(one.status.success());
    assert_eq!(
        String::from_utf8(one.stdout).unwrap().trim_end(),
        chunks[1]["text"].as_str().unwrap().trim_end()
    );
    let missing = ws
        .run(&["cat", &id, "--chunk", &count.to_string()])
        .fails("not_found", 2);
    assert_eq!(missing["details"]["chunk_count"], count);

    // A file no processor takes has no processed part, and no chunk to cat.
    let raw = ws.write("blob.bin", &[0u8, 159, 146, 150, 0, 1]);
    ws.run(&["put", p(&raw), "--to", "/p"]).ok();
    let bin = ws.run(&["info", "/p/blob.bin"]).ok().json();
    assert!(
        bin["processed"].is_null() || bin["processed"]["chunk_count"] == 0,
        "{bin}"
    );
    ws.run(&["cat", "/p/blob.bin", "--chunk", "0"])
        .fails("not_found", 2);
}
