//! A store that is locked, newer or damaged is refused with its own code,
//! never a panic and never a silent re-initialisation.

use crate::support::Ws;
use mem_store::{SCHEMA_VERSION, SledStore};

#[test]
fn a_store_held_by_another_process_is_locked() {
    let ws = Ws::new();
    let _held = SledStore::open(&ws.home().join("store")).unwrap();
    let err = ws.run(&["ls"]).fails("STORE_LOCKED", 1);
    assert!(
        err["hint"]
            .as_str()
            .unwrap()
            .contains("another mem-host process")
    );
}

#[test]
fn a_newer_store_is_refused() {
    let ws = Ws::new();
    ws.remember("kept", "/v", None);
    SledStore::open(&ws.home().join("store"))
        .unwrap()
        .force_schema_version(SCHEMA_VERSION + 1)
        .unwrap();
    let err = ws
        .run(&["memory", "list"])
        .fails("STORE_UNSUPPORTED_VERSION", 1);
    assert_eq!(err["details"]["found"], SCHEMA_VERSION + 1);
    assert_eq!(err["details"]["supported"], SCHEMA_VERSION);
    // init does not paper over it either.
    ws.run(&["init"]).fails("STORE_UNSUPPORTED_VERSION", 1);
}

#[test]
fn a_damaged_store_is_corrupt_and_left_as_found() {
    let ws = Ws::new();
    ws.remember("precious", "/c", None);
    let db = ws.home().join("store/db");
    let mut damaged = Vec::new();
    for entry in walk(&db) {
        std::fs::write(&entry, vec![0x5Au8; 8192]).unwrap();
        damaged.push(entry);
    }
    assert!(!damaged.is_empty());
    ws.run(&["memory", "list"]).fails("STORE_CORRUPT", 1);
    ws.run(&["init"]).fails("STORE_CORRUPT", 1);
    for f in damaged {
        assert_eq!(
            std::fs::read(&f).unwrap(),
            vec![0x5Au8; 8192],
            "{} was rewritten",
            f.display()
        );
    }
}

#[test]
fn a_store_without_its_config_is_not_reinitialised() {
    let ws = Ws::new();
    ws.remember("precious", "/c", None);
    std::fs::remove_file(ws.home().join("mem.toml")).unwrap();
    ws.run(&["init"]).fails("STORE_CORRUPT", 1);
    ws.run(&["ls"]).fails("workspace_not_found", 2);
}

#[test]
fn a_bad_config_is_reported_with_the_key() {
    let ws = Ws::new();
    std::fs::write(ws.home().join("mem.toml"), "[limits]\nmax_file_bytez = 1\n").unwrap();
    let err = ws.run(&["ls"]).fails("config_invalid", 1);
    assert!(err["message"].as_str().unwrap().contains("max_file_bytez"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}
