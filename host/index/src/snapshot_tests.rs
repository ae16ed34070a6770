//! The catalog's snapshot through the index: a reopened index reads it
//! when it describes the last commit and rebuilds the catalog otherwise,
//! so a snapshot can speed an open up but never change an answer.

use super::*;
use crate::tests::{doc, kill, open_hashed, req, sorted_ids};
use mem_core::index::{SearchFilters, SourceKind};

fn docs() -> Vec<IndexDoc> {
    let mut tagged = doc("m2", "quarterly budget review for the garden club", "/club");
    tagged.tags = vec!["money".into()];
    tagged.agent_id = Some("codex".into());
    let mut chunk = doc("f1#0", "garden shed budget spreadsheet", "/files/shed.csv");
    chunk.record_id = "f1".into();
    chunk.source = SourceKind::File;
    chunk.kind = "text/csv".into();
    chunk.locator = Some("rows:1-9".into());
    vec![
        doc("m1", "the garden needs watering every morning", "/home"),
        tagged,
        chunk,
        doc("m3", "budget for garden tools", "/club/tools"),
    ]
}

/// What a few filtered hybrid searches find.
fn answers(ix: &NativeIndex) -> Vec<Vec<String>> {
    let filters = [
        SearchFilters::default(),
        SearchFilters {
            path: Some("/club".into()),
            ..Default::default()
        },
        SearchFilters {
            tags: vec!["money".into()],
            ..Default::default()
        },
        SearchFilters {
            source: Some(SourceKind::File),
            ..Default::default()
        },
        SearchFilters {
            lifecycles: vec!["archived".into()],
            ..Default::default()
        },
    ];
    filters
        .into_iter()
        .map(|f| sorted_ids(ix, &req("garden budget", f)))
        .collect()
}

/// A new index holding [`docs`], committed at event 4.
fn indexed() -> (tempfile::TempDir, NativeIndex) {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    ix.upsert(docs()).unwrap();
    ix.commit(4).unwrap();
    (tmp, ix)
}

fn loaded_from_snapshot(ix: &NativeIndex) -> bool {
    ix.snapshot.lock().saved.is_some()
}

#[test]
fn a_reopened_index_reads_its_catalog_from_the_snapshot() {
    let (tmp, ix) = indexed();
    let before = answers(&ix);
    assert_eq!(before[3], vec!["f1#0".to_string()]);
    drop(ix);
    assert!(catalog_file(tmp.path()).exists());
    let ix = open_hashed(tmp.path());
    assert!(loaded_from_snapshot(&ix));
    assert_eq!(answers(&ix), before);
    let r = ix
        .search(&req("spreadsheet", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].record_id, "f1");
    assert_eq!(r.hits[0].locator.as_deref(), Some("rows:1-9"));
    // Removing a record by id still finds its documents.
    ix.remove_record("f1").unwrap();
    ix.commit(5).unwrap();
    assert!(answers(&ix)[3].is_empty());
}

#[test]
fn a_stale_snapshot_never_hides_a_later_change() {
    let (tmp, ix) = indexed();
    ix.flush().unwrap();
    assert!(catalog_file(tmp.path()).exists());
    // Archived after the snapshot was written, then killed before another.
    let mut archived = doc("m1", "the garden needs watering every morning", "/home");
    archived.lifecycle = "archived".into();
    ix.upsert(vec![archived]).unwrap();
    ix.commit(5).unwrap();
    ix.flush().unwrap();
    let after = answers(&ix);
    kill(ix);
    let ix = open_hashed(tmp.path());
    assert!(
        !loaded_from_snapshot(&ix),
        "the snapshot is of an older commit"
    );
    assert_eq!(answers(&ix), after);
    assert!(!after[0].contains(&"m1".to_string()));
    assert_eq!(after[4], vec!["m1".to_string()]);
}

#[test]
fn a_snapshot_holds_what_is_committed_not_what_waits_for_a_commit() {
    let (tmp, ix) = indexed();
    ix.upsert(vec![doc("m9", "garden budget never committed", "/home")])
        .unwrap();
    ix.remove_record("m1").unwrap();
    ix.flush().unwrap();
    kill(ix);
    let ix = open_hashed(tmp.path());
    assert!(loaded_from_snapshot(&ix));
    let all = answers(&ix)[0].clone();
    assert!(!all.contains(&"m9".to_string()), "{all:?}");
    assert!(all.contains(&"m1".to_string()), "{all:?}");
}

#[test]
fn a_record_being_replaced_stays_findable_until_the_commit() {
    let (_tmp, ix) = indexed();
    let finds_m1 = |ix: &NativeIndex| {
        sorted_ids(ix, &req("watering", SearchFilters::default())).contains(&"m1".to_string())
    };
    // Re-indexing a record removes it and adds it again: searches in
    // between see the last commit, which has it.
    ix.remove_record("m1").unwrap();
    assert!(finds_m1(&ix));
    ix.upsert(vec![doc(
        "m1",
        "the garden needs watering at noon",
        "/home",
    )])
    .unwrap();
    assert!(finds_m1(&ix));
    ix.commit(5).unwrap();
    assert!(finds_m1(&ix));
    // A removal shows at its commit.
    ix.remove_record("m1").unwrap();
    assert!(finds_m1(&ix));
    ix.commit(6).unwrap();
    assert!(!finds_m1(&ix));
}

#[test]
fn a_damaged_snapshot_is_rebuilt_from_the_index() {
    let (tmp, ix) = indexed();
    let before = answers(&ix);
    drop(ix);
    let file = catalog_file(tmp.path());
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let ix = open_hashed(tmp.path());
    assert!(!loaded_from_snapshot(&ix));
    assert_eq!(answers(&ix), before);
    // Its close writes a good one again.
    drop(ix);
    assert!(loaded_from_snapshot(&open_hashed(tmp.path())));
}

#[test]
fn a_cleared_index_does_not_reopen_with_the_old_catalog() {
    let (tmp, ix) = indexed();
    ix.flush().unwrap();
    ix.clear().unwrap();
    ix.commit(0).unwrap();
    kill(ix);
    let ix = open_hashed(tmp.path());
    assert!(answers(&ix).iter().all(Vec::is_empty));
}

#[test]
fn small_segments_are_merged_and_the_snapshot_outlives_the_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    for (i, d) in docs().into_iter().enumerate() {
        ix.upsert(vec![d]).unwrap();
        ix.commit(i as u64 + 1).unwrap();
    }
    ix.upsert(vec![doc("m5", "garden budget again", "/home")])
        .unwrap();
    ix.commit(5).unwrap();
    let before = answers(&ix);
    // Closing waits for the merges the commits started.
    drop(ix);
    let ix = open_hashed(tmp.path());
    assert!(
        ix.lexical.segments() < 5,
        "{} segments",
        ix.lexical.segments()
    );
    assert!(
        loaded_from_snapshot(&ix),
        "a merge keeps opstamp and payload"
    );
    assert_eq!(answers(&ix), before);
}

/// Regression: tantivy's default merge policy counts every segment under
/// 10,000 documents as one size, so beside writes committed one at a time
/// a segment of a few thousand was merged again every third commit (37% of
/// a searching server's CPU).
#[test]
fn commits_of_one_write_each_do_not_merge_again_into_a_large_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    let rack = |i: usize| doc(&format!("r{i}"), &format!("rack {i} power supply"), "/ops");
    ix.upsert((0..2000).map(rack).collect()).unwrap();
    ix.commit(1).unwrap();
    let sizes = ix.lexical.segment_sizes();
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    let large = sizes[0].0.clone();
    for i in 0..12 {
        ix.upsert(vec![rack(2000 + i)]).unwrap();
        ix.commit(2 + i as u64).unwrap();
    }
    // Closing waits for the merges the commits started.
    drop(ix);
    let ix = open_hashed(tmp.path());
    let sizes = ix.lexical.segment_sizes();
    assert!(
        sizes.iter().any(|(id, n)| *id == large && *n == 2000),
        "the large segment was merged again: {sizes:?}"
    );
    assert!(sizes.len() < 8, "the small segments were merged: {sizes:?}");
    assert_eq!(sizes.iter().map(|(_, n)| n).sum::<u32>(), 2012);
}
