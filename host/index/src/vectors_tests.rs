//! Unit tests of the vectors' store: precision kept, saves, the view.

use super::*;

const MODEL: &str = "test-model";
const DIMS: usize = 4;

/// Three components of 0.5 + 2^-10, which float16 keeps exactly and
/// bfloat16 rounds to 0.5, so `get` tells the two apart.
fn three_of(i: usize) -> Vec<f32> {
    let mut v = vec![0.5 + 1.0 / 1024.0; DIMS];
    v[i % DIMS] = 0.0;
    v
}

fn kept_exactly(vectors: &Vectors, key: u64, want: &[f32]) -> bool {
    let got = vectors.get(key).expect("the key is stored");
    got.iter().zip(want).all(|(a, b)| a == b)
}

#[test]
fn a_new_index_keeps_bfloat16_vectors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut vectors, stale) = Vectors::open(dir.path(), MODEL, DIMS).expect("open");
    assert!(stale, "nothing was saved yet");
    vectors.upsert(1, &three_of(0)).expect("upsert");
    assert_eq!(vectors.index.scalar_kind(), ScalarKind::BF16);
    assert!(!kept_exactly(&vectors, 1, &three_of(0)), "bfloat16 rounds");
    let got = vectors.get(1).expect("stored");
    assert!(
        got.iter()
            .zip(three_of(0))
            .all(|(a, b)| (a - b).abs() < 2e-3)
    );
    let best = vectors.search(&three_of(0), 1, None, None).expect("search");
    assert_eq!(best.first().map(|b| b.0), Some(1));
}

/// A workspace indexed by an earlier version has float16 vectors on disk:
/// they must open (viewed, then read in at the first change), answer, and
/// take new vectors in the same precision, without a rebuild.
#[test]
fn vectors_saved_in_float16_by_an_earlier_version_open_answer_and_take_new_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let earlier = Index::new(&IndexOptions {
        quantization: ScalarKind::F16,
        ..graph_options(DIMS)
    })
    .expect("index");
    earlier.reserve(16).expect("reserve");
    for key in 0..3u64 {
        earlier.add(key, &three_of(key as usize)).expect("add");
    }
    let path = dir.path().join(INDEX_FILE);
    earlier.save(path.to_str().expect("utf-8")).expect("save");
    let keys: Vec<u8> = (0..3u64).flat_map(|k| k.to_le_bytes()).collect();
    std::fs::write(dir.path().join(KEYS_FILE), keys).expect("keys");
    let state = State {
        model: MODEL.into(),
        dimensions: DIMS,
        watermark: 7,
    };
    std::fs::write(
        dir.path().join(STATE_FILE),
        serde_json::to_vec(&state).expect("state"),
    )
    .expect("write state");

    let (mut vectors, stale) = Vectors::open(dir.path(), MODEL, DIMS).expect("open");
    assert!(!stale, "an earlier version's vectors are current");
    assert_eq!(vectors.watermark(), 7);
    assert_eq!(vectors.index.scalar_kind(), ScalarKind::F16);
    let best = vectors.search(&three_of(1), 1, None, None).expect("search");
    assert_eq!(best.first().map(|b| b.0), Some(1));

    vectors.upsert(3, &three_of(3)).expect("upsert");
    assert_eq!(vectors.index.scalar_kind(), ScalarKind::F16);
    assert!(kept_exactly(&vectors, 3, &three_of(3)));
    assert!(kept_exactly(&vectors, 0, &three_of(0)));
    vectors.save(8).expect("save");
    drop(vectors);

    let (vectors, stale) = Vectors::open(dir.path(), MODEL, DIMS).expect("reopen");
    assert!(!stale);
    assert_eq!(vectors.len(), 4);
    assert!(kept_exactly(&vectors, 3, &three_of(3)));
    let best = vectors.search(&three_of(3), 1, None, None).expect("search");
    assert_eq!(best.first().map(|b| b.0), Some(3));
}

#[test]
fn a_slow_save_postpones_the_next_one() {
    assert_eq!(save_interval(Duration::ZERO), SAVE_EVERY);
    assert_eq!(save_interval(Duration::from_millis(100)), SAVE_EVERY);
    assert_eq!(
        save_interval(Duration::from_secs(2)),
        Duration::from_secs(2) * SAVE_SHARE
    );
}

/// The files are written under a shared hold of the vectors: a search
/// from another thread answers meanwhile, and what is marked saved
/// reopens.
#[test]
fn searches_answer_while_the_vectors_are_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut vectors, _) = Vectors::open(dir.path(), MODEL, DIMS).expect("open");
    vectors.upsert(1, &three_of(1)).expect("upsert");
    let lock = parking_lot::RwLock::new(vectors);
    let held = lock.upgradable_read();
    let took = held.write_files(7).expect("write");
    let found = std::thread::scope(|s| {
        s.spawn(|| lock.read().search(&three_of(1), 1, None, None))
            .join()
            .expect("the search thread")
    })
    .expect("search");
    assert_eq!(found.first().map(|f| f.0), Some(1));
    parking_lot::RwLockUpgradableReadGuard::upgrade(held).saved(7, took);
    assert!(!lock.read().dirty(), "saved");
    assert!(lock.read().save_took > Duration::ZERO);
    let (reopened, stale) = Vectors::open(dir.path(), MODEL, DIMS).expect("reopen");
    assert!(!stale);
    assert_eq!(reopened.watermark(), 7);
    assert!(reopened.contains(1));
}

/// Saved vectors, reopened as a view.
fn viewed_with(dir: &Path, keys: std::ops::Range<u64>) -> Vectors {
    let (mut vectors, _) = Vectors::open(dir, MODEL, DIMS).expect("open");
    for key in keys {
        vectors
            .upsert(key, &three_of(key as usize))
            .expect("upsert");
    }
    vectors.save(1).expect("save");
    drop(vectors);
    let (vectors, stale) = Vectors::open(dir, MODEL, DIMS).expect("reopen");
    assert!(!stale && vectors.viewed);
    vectors
}

#[test]
fn the_first_change_lets_the_view_go_and_keeps_every_vector() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut vectors = viewed_with(dir.path(), 0..3);
    vectors.upsert(3, &three_of(3)).expect("upsert");
    assert!(!vectors.viewed);
    assert_eq!(vectors.len(), 4);
    for key in 0..4 {
        let best = vectors.search(&three_of(key as usize), 1, None, None);
        assert!(vectors.contains(key));
        assert!(best.expect("search").iter().any(|b| b.1 > 0.99));
    }
}

/// A file that no longer matches the view cannot be read in: the change
/// fails, and the lane answers from the file rather than from nothing.
#[test]
fn a_vectors_file_changed_under_the_view_fails_the_change_and_is_viewed_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut vectors = viewed_with(dir.path(), 0..3);
    let other = tempfile::tempdir().expect("temp dir");
    drop(viewed_with(other.path(), 0..2));
    std::fs::copy(other.path().join(INDEX_FILE), dir.path().join(INDEX_FILE)).expect("copy");
    let err = vectors
        .upsert(9, &three_of(1))
        .expect_err("the file changed");
    assert!(err.to_string().contains("changed while open"), "{err}");
    assert!(vectors.viewed);
    let best = vectors.search(&three_of(1), 1, None, None).expect("search");
    assert_eq!(best.first().map(|b| b.0), Some(1));
}

/// The file gone under the view: the change fails and says that the file
/// could be neither read in nor viewed again.
#[test]
fn a_vectors_file_removed_under_the_view_fails_the_change_with_both_reasons() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut vectors = viewed_with(dir.path(), 0..3);
    std::fs::remove_file(dir.path().join(INDEX_FILE)).expect("remove");
    let err = vectors
        .upsert(9, &three_of(1))
        .expect_err("nothing to read in");
    assert!(
        err.to_string().contains("viewing the file again failed"),
        "{err}"
    );
}

#[test]
fn a_full_graph_grows_by_an_eighth_and_keeps_every_vector() {
    assert_eq!(grown(0), 1024);
    assert_eq!(grown(1_000_000), 1_125_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut vectors, _) = Vectors::open(dir.path(), MODEL, DIMS).expect("open");
    for key in 0..1025u64 {
        vectors
            .upsert(key, &three_of(key as usize))
            .expect("upsert");
    }
    assert_eq!(vectors.index.capacity(), 1152, "1024 and an eighth");
    assert_eq!(vectors.len(), 1025);
    assert!((0..1025u64).all(|k| vectors.get(k).is_some()));
}
