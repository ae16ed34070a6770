//! How vectors live: kept when a re-indexed text is unchanged, saved
//! late and replayed after a kill, kept through a rebuild with the same
//! model, viewed read-only until the first change.

use super::tests::{WordHashEmbedder, doc, ids, kill, open_hashed, req, secret_and_public};
use super::*;
use mem_core::index::SearchFilters;

/// Counts the texts it embeds, delegating to [`WordHashEmbedder`]; with a
/// limit, fails every text past it.
#[derive(Default)]
struct CountingEmbedder(std::sync::atomic::AtomicUsize, Option<usize>);

impl Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        WordHashEmbedder.model_id()
    }
    fn dimensions(&self) -> usize {
        WordHashEmbedder.dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let before = self.0.fetch_add(texts.len(), Ordering::SeqCst);
        if self.1.is_some_and(|limit| before + texts.len() > limit) {
            return Err(IndexError::Embedding("the model ran out".into()));
        }
        WordHashEmbedder.embed(texts)
    }
}

#[test]
fn reindexing_unchanged_text_keeps_its_vector_and_a_change_reembeds() {
    let tmp = tempfile::tempdir().unwrap();
    let counter = Arc::new(CountingEmbedder::default());
    let embedded = || counter.0.load(Ordering::SeqCst);
    let open = || NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap();
    {
        let ix = open();
        ix.upsert(vec![
            doc("m1", "the garden needs watering", "/a"),
            doc("m2", "budget review on thursday", "/a"),
        ])
        .unwrap();
        ix.commit(1).unwrap();
        assert_eq!(embedded(), 2);
        // Re-indexed with new context but the same text: no new embedding.
        ix.remove_record("m1").unwrap();
        let mut again = doc("m1", "the garden needs watering", "/a");
        again.context = Some("budget review on thursday".into());
        ix.upsert(vec![again]).unwrap();
        ix.commit(2).unwrap();
        assert_eq!(embedded(), 2);
        // Changed text: embedded again, and the lane finds the new text.
        ix.remove_record("m2").unwrap();
        ix.upsert(vec![doc("m2", "holiday plans for august", "/a")])
            .unwrap();
        ix.commit(3).unwrap();
        assert_eq!(embedded(), 3);
    }
    // The digests persist: after reopening, unchanged text is not embedded.
    let ix = open();
    ix.remove_record("m1").unwrap();
    ix.upsert(vec![doc("m1", "the garden needs watering", "/a")])
        .unwrap();
    ix.commit(4).unwrap();
    assert_eq!(embedded(), 3);
    assert_eq!(ix.stats().vectors, 2);
    let r = ix
        .search(&req("watering garden", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].doc_id, "m1");
    assert!(r.hits[0].semantic_rank.is_some(), "{r:?}");
    let r = ix
        .search(&req("august holiday", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].doc_id, "m2");
    assert!(r.hits[0].semantic_rank.is_some(), "{r:?}");
    // A removal that is not followed by a re-add deletes the vector at commit.
    ix.remove_record("m2").unwrap();
    ix.commit(5).unwrap();
    assert_eq!(ix.stats().vectors, 1);
}

/// Regression for relations embedding every memory a second time: the
/// plugins' embedder answers texts the index embedded from its vectors.
#[test]
fn the_plugins_embedder_answers_indexed_texts_from_their_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let counter = Arc::new(CountingEmbedder::default());
    let embedded = || counter.0.load(Ordering::SeqCst);
    let ix = Arc::new(NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap());
    let opened = Arc::new(std::sync::OnceLock::new());
    let plugins = KnownFirst::new(counter.clone(), opened.clone());
    let garden = "the garden needs watering";
    // Before the index is open, every text goes to the model.
    plugins.embed(&[garden]).unwrap();
    assert_eq!(embedded(), 1);
    opened.set(ix.clone()).unwrap();
    ix.upsert(vec![
        doc("m1", garden, "/a"),
        doc("m2", "budget review on thursday", "/a"),
    ])
    .unwrap();
    ix.commit(1).unwrap();
    assert_eq!(embedded(), 3);
    let fresh = WordHashEmbedder
        .embed(&[garden, "unseen words here"])
        .unwrap();
    let got = plugins.embed(&[garden, "unseen words here"]).unwrap();
    assert_eq!(embedded(), 4, "only the text the index lacks is embedded");
    assert_eq!(got[1], fresh[1]);
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 2e-3);
    assert_eq!(got[0].len(), fresh[0].len());
    assert!(close(&got[0], &fresh[0]), "the stored (16-bit) vector");
    // A text the model answered is kept: asked again, it is not embedded
    // again (a step of relations asks for the same candidates per item).
    let before = embedded();
    let again = plugins.embed(&["unseen words here"]).unwrap();
    assert_eq!(embedded(), before, "kept from the model's last answer");
    assert_eq!(again[0], fresh[1]);
    // Re-indexed with another text and not committed yet: the stored
    // vector is the new text's, so the old text is not answered with it
    // (here it comes from the model's answer before the index opened).
    ix.remove_record("m1").unwrap();
    ix.upsert(vec![doc("m1", "holiday plans for august", "/a")])
        .unwrap();
    let before = embedded();
    let got = plugins.embed(&[garden]).unwrap();
    assert_eq!(got[0], fresh[0], "the old text's own vector");
    let other = "a text only the model knows";
    plugins.embed(&[other]).unwrap();
    assert_eq!(embedded(), before + 1);
    ix.commit(2).unwrap();
    let got = plugins
        .embed(&["holiday plans for august", garden])
        .unwrap();
    assert_eq!(
        embedded(),
        before + 1,
        "the new text answered by the index, the old from the model's kept answer"
    );
    assert!(close(
        &got[0],
        &WordHashEmbedder
            .embed(&["holiday plans for august"])
            .unwrap()[0]
    ));
    // Another model's index is never asked.
    assert_eq!(
        ix.known_vector("another-model", "budget review on thursday"),
        None
    );
    assert!(
        ix.known_vector(counter.model_id(), "budget review on thursday")
            .is_some()
    );
}

#[test]
fn vector_saves_are_deferred_and_a_kill_reopens_at_the_last_save() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    ix.upsert(vec![doc("m1", "the garden needs watering", "/a")])
        .unwrap();
    ix.commit(1).unwrap();
    // Searchable at once, though the vectors are not saved yet.
    let r = ix
        .search(&req("watering", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].semantic_rank, Some(1), "{r:?}");
    kill(ix);
    // The lexical lane kept event 1, the vectors did not: replay from 0.
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.watermark(), 0);
    ix.remove_record("m1").unwrap();
    ix.upsert(vec![doc("m1", "the garden needs watering", "/a")])
        .unwrap();
    ix.commit(1).unwrap();
    ix.flush().unwrap();
    kill(ix);
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.watermark(), 1);
    assert_eq!(ix.stats().vectors, 1);
    // A clean close saves too.
    ix.upsert(vec![doc("m2", "budget review on thursday", "/a")])
        .unwrap();
    ix.commit(2).unwrap();
    drop(ix);
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.watermark(), 2);
    assert_eq!(ix.stats().vectors, 2);
}

/// The vector the index holds for `doc_id`, and the one the test
/// embedder gives `text` (stored vectors are 16-bit floats).
fn holds_vector_of(ix: &NativeIndex, doc_id: &str, text: &str) -> bool {
    let held = ix
        .semantic
        .as_ref()
        .and_then(|s| s.vectors.read().get(key_of(doc_id)));
    let fresh = WordHashEmbedder.embed(&[text]).unwrap().remove(0);
    held.is_some_and(|h| {
        h.len() == fresh.len() && h.iter().zip(&fresh).all(|(a, b)| (a - b).abs() < 2e-3)
    })
}

/// Regression: a text changed after the last vector save, then a kill. The
/// replay found the committed catalog's digest already the new text's and
/// kept the saved vector, which was the old text's, for good.
#[test]
fn a_text_changed_after_the_last_vector_save_is_embedded_again_after_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = ("the garden needs watering", "holiday plans for august");
    let ix = open_hashed(tmp.path());
    ix.upsert(vec![doc("m1", old, "/a")]).unwrap();
    ix.commit(1).unwrap();
    ix.flush().unwrap();
    ix.remove_record("m1").unwrap();
    ix.upsert(vec![doc("m1", new, "/a")]).unwrap();
    ix.commit(2).unwrap();
    assert!(holds_vector_of(&ix, "m1", new));
    kill(ix);
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.watermark(), 1, "the vectors were saved at event 1");
    // Until the replay passes event 2, no digest vouches for a vector.
    assert_eq!(ix.known_vector("test-word-hash", new), None);
    ix.remove_record("m1").unwrap();
    ix.upsert(vec![doc("m1", new, "/a")]).unwrap();
    ix.commit(2).unwrap();
    assert!(holds_vector_of(&ix, "m1", new), "the new text's vector");
    assert!(ix.known_vector("test-word-hash", new).is_some());
}

/// A rebuild with the same model: a document re-added with its text keeps
/// its vector; a changed or new text is embedded; one not re-added loses
/// its vector at the commit.
#[test]
fn a_rebuild_embeds_only_the_texts_it_holds_no_vector_for() {
    let tmp = tempfile::tempdir().unwrap();
    let counter = Arc::new(CountingEmbedder::default());
    let embedded = || counter.0.load(Ordering::SeqCst);
    let ix = NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap();
    ix.upsert(vec![
        doc("m1", "the garden needs watering", "/a"),
        doc("m2", "budget review on thursday", "/a"),
        doc("m3", "the offsite is in lisbon", "/a"),
    ])
    .unwrap();
    ix.commit(1).unwrap();
    // Staged, not committed, when the rebuild starts: its vector counts too.
    ix.upsert(vec![doc("m4", "marathon training plan", "/a")])
        .unwrap();
    assert_eq!(embedded(), 4);
    ix.clear().unwrap();
    ix.upsert(vec![
        doc("m1", "the garden needs watering", "/a"),
        doc("m2", "holiday plans for august", "/a"),
        doc("m4", "marathon training plan", "/a"),
        doc("m5", "the book club meets monday", "/a"),
    ])
    .unwrap();
    ix.commit(2).unwrap();
    assert_eq!(embedded(), 6, "only the changed m2 and the new m5");
    assert_eq!(ix.stats().vectors, 4, "m3 was not re-added");
    for (id, text) in [
        ("m1", "the garden needs watering"),
        ("m2", "holiday plans for august"),
        ("m4", "marathon training plan"),
        ("m5", "the book club meets monday"),
    ] {
        assert!(holds_vector_of(&ix, id, text), "{id}");
    }
    let r = ix
        .search(&req("august holiday", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].doc_id, "m2");
    assert!(r.hits[0].semantic_rank.is_some(), "{r:?}");
    // Vectors that trail the lexical index (a kill after a commit the
    // vectors were not saved with) vouch for nothing: all are embedded.
    ix.flush().unwrap();
    ix.remove_record("m1").unwrap();
    ix.upsert(vec![doc("m1", "a changed text for m1", "/a")])
        .unwrap();
    ix.commit(3).unwrap();
    kill(ix);
    let ix = NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap();
    let before = embedded();
    ix.clear().unwrap();
    ix.upsert(vec![
        doc("m1", "a changed text for m1", "/a"),
        doc("m2", "holiday plans for august", "/a"),
    ])
    .unwrap();
    ix.commit(3).unwrap();
    assert_eq!(embedded(), before + 2);
    assert!(holds_vector_of(&ix, "m1", "a changed text for m1"));
    assert_eq!(ix.stats().vectors, 2);
}

#[test]
fn vectors_of_records_removed_after_the_last_save_are_dropped_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = secret_and_public(tmp.path());
    ix.flush().unwrap();
    // Forgotten; the lexical commit lands, the process dies before the
    // vectors are saved.
    ix.remove_record("m1").unwrap();
    ix.commit(2).unwrap();
    kill(ix);
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.stats().vectors, 1, "the stray vector is gone");
    assert_eq!(ix.watermark(), 1);
    // ...and gone from disk once saved.
    ix.flush().unwrap();
    drop(ix);
    let keys = std::fs::read(tmp.path().join("vectors/vectors.keys")).unwrap();
    assert_eq!(keys, key_of("m2").to_le_bytes());
}

/// Saved vectors open as a read-only view; the first change reads them in
/// and every later search, save and reopen sees old and new alike.
#[test]
fn viewed_vectors_take_changes_after_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let ix = secret_and_public(tmp.path());
        ix.flush().unwrap();
    }
    {
        let ix = open_hashed(tmp.path());
        let found = ix
            .search(&req("public garden party", SearchFilters::default()))
            .unwrap();
        assert!(ids(&found).contains(&"m2"), "{found:?}");
        ix.upsert(vec![doc("m3", "orchard harvest festival", "/p")])
            .unwrap();
        ix.remove_record("m1").unwrap();
        ix.commit(3).unwrap();
        ix.flush().unwrap();
        assert_eq!(ix.stats().vectors, 2);
    }
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.stats().vectors, 2);
    let r = ix
        .search(&req("orchard harvest festival", SearchFilters::default()))
        .unwrap();
    assert_eq!(ids(&r).first(), Some(&"m3"), "{r:?}");
    let lanes: Vec<_> = r.lanes.iter().map(|l| l.status).collect();
    assert!(lanes.iter().all(|s| *s == LaneStatus::Ok), "{r:?}");
}

/// Writes, in place of `dir`'s lexical index, the previous version's
/// index (document ids stored only) of `docs`, committed at `watermark`.
fn write_earlier_index(dir: &Path, docs: &[IndexDoc], watermark: u64) {
    let lexical = dir.join("lexical");
    std::fs::remove_dir_all(&lexical).unwrap();
    let old = lexical::Lexical::create_earlier(&lexical).unwrap();
    let metas: Vec<DocMeta> = docs.iter().map(DocMeta::of).collect();
    old.upsert(docs, &metas).unwrap();
    old.commit(watermark).unwrap();
}

#[test]
fn an_index_of_an_earlier_version_is_rebuilt_keeping_its_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let counter = Arc::new(CountingEmbedder::default());
    let embedded = || counter.0.load(Ordering::SeqCst);
    let open = || NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap();
    let docs = vec![
        doc("m1", "the garden needs watering", "/a"),
        doc("m2", "budget review on thursday", "/a"),
        doc("m3", "the offsite is in lisbon", "/a"),
    ];
    {
        let ix = open();
        ix.upsert(docs.clone()).unwrap();
        ix.commit(5).unwrap();
        ix.flush().unwrap();
    }
    assert_eq!(embedded(), 3);
    write_earlier_index(tmp.path(), &docs, 5);
    let set_aside = tmp.path().join("lexical.earlier");
    // A process that opens it and exits without rebuilding (a CLI read)
    // leaves the earlier index set aside for the next one.
    for _ in 0..2 {
        let ix = open();
        assert!(ix.needs_rebuild());
        assert_eq!(ix.watermark(), 0);
        assert!(set_aside.join("meta.json").exists());
    }
    let ix = open();
    ix.clear().unwrap();
    ix.upsert(vec![
        doc("m1", "the garden needs watering", "/a"),
        doc("m2", "holiday plans for august", "/a"),
        doc("m3", "the offsite is in lisbon", "/a"),
    ])
    .unwrap();
    ix.commit(6).unwrap();
    assert_eq!(embedded(), 4, "only the changed m2");
    assert!(!set_aside.exists(), "the rebuild's commit removes it");
    assert!(holds_vector_of(&ix, "m1", "the garden needs watering"));
    assert!(holds_vector_of(&ix, "m2", "holiday plans for august"));
    let r = ix
        .search(&req("watering garden", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].doc_id, "m1");
    assert!(r.hits[0].lexical_rank.is_some(), "{r:?}");
    assert!(r.hits[0].semantic_rank.is_some(), "{r:?}");
    drop(ix);
    let ix = open();
    assert!(!ix.needs_rebuild());
    assert_eq!(ix.watermark(), 6);
}

#[test]
fn vectors_saved_before_an_earlier_versions_last_commit_are_embedded_again() {
    let tmp = tempfile::tempdir().unwrap();
    let counter = Arc::new(CountingEmbedder::default());
    let embedded = || counter.0.load(Ordering::SeqCst);
    let docs = vec![doc("m1", "the garden needs watering", "/a")];
    {
        let ix = NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap();
        ix.upsert(docs.clone()).unwrap();
        ix.commit(5).unwrap();
        ix.flush().unwrap();
    }
    // The earlier index committed past the vectors' last save (a kill):
    // its digests may be newer texts' than the vectors.
    write_earlier_index(tmp.path(), &docs, 9);
    let ix = NativeIndex::open(tmp.path(), Some(counter.clone()), None).unwrap();
    assert!(ix.needs_rebuild());
    ix.clear().unwrap();
    ix.upsert(docs).unwrap();
    ix.commit(9).unwrap();
    assert_eq!(embedded(), 2);
    assert!(holds_vector_of(&ix, "m1", "the garden needs watering"));
}

/// Regression guard: an earlier-format index found while another waits set
/// aside (an older version wrote it since) replaces it, so the digests
/// carried are the ones that describe the vectors now.
#[test]
fn an_earlier_index_found_beside_one_set_aside_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let first = vec![doc("m1", "the garden needs watering", "/a")];
    {
        let ix = open_hashed(tmp.path());
        ix.upsert(first.clone()).unwrap();
        ix.commit(5).unwrap();
    }
    write_earlier_index(tmp.path(), &first, 5);
    drop(open::open_lexical(tmp.path()).unwrap());
    assert!(tmp.path().join("lexical.earlier/meta.json").exists());
    let newer = vec![doc("m1", "holiday plans for august", "/a")];
    write_earlier_index(tmp.path(), &newer, 7);
    let opened = open::open_lexical(tmp.path()).unwrap();
    assert!(opened.rebuild);
    let carried = opened.carried.expect("the newer index's digests");
    assert_eq!(carried.watermark, 7);
    assert_eq!(
        carried.digests.get(&key_of("m1")),
        Some(&DocMeta::of(&newer[0]).embed_sig)
    );
}

/// Documents whose vectors go into the graph in several parts (each part
/// inserted while the next is embedded).
fn many_docs(n: usize) -> Vec<IndexDoc> {
    (0..n)
        .map(|i| {
            doc(
                &format!("m{i}"),
                &format!("note {i} about topic{i} and more{i}"),
                "/a",
            )
        })
        .collect()
}

#[test]
fn a_group_embedded_in_overlapping_parts_stores_every_vector_under_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = NativeIndex::open(tmp.path(), Some(Arc::new(WordHashEmbedder)), None).unwrap();
    let docs = many_docs(3 * semantic::INSERT_PART + 5);
    ix.upsert(docs.clone()).unwrap();
    ix.commit(1).unwrap();
    assert_eq!(ix.stats().vectors, docs.len() as u64);
    let sem = ix.semantic.as_ref().unwrap();
    assert!(sem.failed.lock().is_none());
    let vectors = sem.vectors.read();
    for d in &docs {
        let want = &WordHashEmbedder.embed(&[d.text.as_str()]).unwrap()[0];
        let got = vectors
            .get(key_of(&d.doc_id))
            .expect("a vector for every document");
        // Kept in 16 bits.
        assert!(
            want.iter().zip(&got).all(|(a, b)| (a - b).abs() < 1e-2),
            "{}",
            d.doc_id
        );
    }
}

#[test]
fn an_embedding_failure_in_a_later_part_of_a_group_fails_the_lane_visibly() {
    let tmp = tempfile::tempdir().unwrap();
    let embedder = Arc::new(CountingEmbedder(
        Default::default(),
        Some(2 * semantic::INSERT_PART),
    ));
    let ix = NativeIndex::open(tmp.path(), Some(embedder), None).unwrap();
    ix.upsert(many_docs(4 * semantic::INSERT_PART)).unwrap();
    ix.commit(1).unwrap();
    let r = ix.search(&req("topic7", SearchFilters::default())).unwrap();
    let semantic = r.lanes.iter().find(|l| l.lane == Lane::Semantic).unwrap();
    assert_eq!(semantic.status, LaneStatus::Failed, "{r:?}");
    assert!(
        semantic
            .message
            .as_deref()
            .unwrap_or("")
            .contains("ran out"),
        "{r:?}"
    );
    // The lexical lane still finds every document.
    assert_eq!(ids(&r), ["m7"]);
}
