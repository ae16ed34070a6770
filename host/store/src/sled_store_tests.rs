use super::*;

fn open(dir: &Path) -> SledStore {
    SledStore::open(dir).unwrap()
}

#[test]
fn batch_is_atomic_and_conditions_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut b = Batch::new();
    b.expect(Table::Memories, "a", None)
        .put(Table::Memories, "a", b"1".to_vec());
    s.commit(b, Durability::Immediate).unwrap();

    let mut b = Batch::new();
    b.expect(Table::Memories, "a", None)
        .put(Table::Memories, "a", b"2".to_vec())
        .put(Table::Memories, "b", b"2".to_vec());
    let err = s.commit(b, Durability::Immediate).unwrap_err();
    assert_eq!(err, StoreError::ConditionFailed { index: 0 });
    assert_eq!(s.get(Table::Memories, "a").unwrap().unwrap(), b"1");
    assert!(s.get(Table::Memories, "b").unwrap().is_none());
}

#[test]
fn log_sequence_is_gap_free_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        let mut b = Batch::new();
        b.append(Log::Events, b"e1".to_vec())
            .append(Log::Events, b"e2".to_vec());
        assert_eq!(s.commit(b, Durability::Immediate).unwrap().seqs, vec![1, 2]);
        // A failed batch consumes no sequence numbers.
        let mut b = Batch::new();
        b.expect(Table::Meta, "x", Some(b"nope".to_vec()))
            .append(Log::Events, b"lost".to_vec());
        assert!(s.commit(b, Durability::Immediate).is_err());
    }
    let s = open(dir.path());
    let mut b = Batch::new();
    b.append(Log::Events, b"e3".to_vec());
    assert_eq!(s.commit(b, Durability::Immediate).unwrap().seqs, vec![3]);
    let all = s.read_log(Log::Events, 0, 10).unwrap();
    assert_eq!(
        all.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(s.read_log(Log::Events, 2, 10).unwrap().len(), 1);
    assert_eq!(s.last_log_entry(Log::Events).unwrap().unwrap().0, 3);
}

#[test]
fn scan_prefix_cursor_and_reverse() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut b = Batch::new();
    for k in ["a/1", "a/2", "a/3", "b/1"] {
        b.put(Table::Folders, k, k.as_bytes().to_vec());
    }
    s.commit(b, Durability::Immediate).unwrap();
    let keys = |v: Vec<(String, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    let scan = |prefix, after, reverse| Scan {
        prefix,
        after,
        limit: 10,
        reverse,
    };
    assert_eq!(
        keys(s.scan(Table::Folders, &scan("a/", None, false)).unwrap()),
        ["a/1", "a/2", "a/3"]
    );
    assert_eq!(
        keys(
            s.scan(Table::Folders, &scan("a/", Some("a/1"), false))
                .unwrap()
        ),
        ["a/2", "a/3"]
    );
    assert_eq!(
        keys(s.scan(Table::Folders, &scan("a/", None, true)).unwrap()),
        ["a/3", "a/2", "a/1"]
    );
    assert_eq!(
        keys(
            s.scan(Table::Folders, &scan("a/", Some("a/3"), true))
                .unwrap()
        ),
        ["a/2", "a/1"]
    );
    assert_eq!(
        keys(
            s.scan(Table::Folders, &scan("", Some("a/3"), false))
                .unwrap()
        ),
        ["b/1"]
    );
    assert_eq!(
        keys(
            s.scan(
                Table::Folders,
                &Scan {
                    prefix: "",
                    after: None,
                    limit: 2,
                    reverse: false
                }
            )
            .unwrap()
        ),
        ["a/1", "a/2"]
    );
}

#[test]
fn second_open_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let _s = open(dir.path());
    assert!(matches!(
        SledStore::open(dir.path()),
        Err(StoreError::Locked { .. })
    ));
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.force_schema_version(SCHEMA_VERSION + 1).unwrap();
    }
    assert_eq!(
        SledStore::open(dir.path()).unwrap_err(),
        StoreError::UnsupportedVersion {
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION
        }
    );
}

#[test]
fn damaged_store_is_corrupt_not_reinitialised() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        let mut b = Batch::new();
        b.put(Table::Memories, "m", b"v".to_vec());
        s.commit(b, Durability::Immediate).unwrap();
    }
    let db = dir.path().join("db");
    for entry in std::fs::read_dir(&db).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            std::fs::write(&p, vec![0xA5u8; 4096]).unwrap();
        }
    }
    let err = SledStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
}

/// The shared contract of every backend (`mem_core::store_conformance`):
/// one process owns a sled store, so both handles are the same one.
fn conformance_pair() -> Option<mem_core::store_conformance::Pair> {
    let dir = tempfile::tempdir().unwrap();
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(open(dir.path()));
    Some(mem_core::store_conformance::Pair {
        a: store.clone(),
        b: store,
        guard: Box::new(dir),
    })
}

mod conformance {
    use super::conformance_pair;
    mem_core::store_conformance_tests!(conformance_pair);
}
