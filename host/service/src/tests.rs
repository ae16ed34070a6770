//! Service-level tests on the real sled store.

use super::*;
use mem_core::model::{FeedbackAction, Lifecycle};
use mem_core::{ErrorCode, VPath};
use mem_store::SledStore;

pub(crate) fn service() -> (tempfile::TempDir, Service) {
    service_with(WorkspaceConfig::default())
}

pub(crate) fn service_with(config: WorkspaceConfig) -> (tempfile::TempDir, Service) {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(&dir.path().join("store")).unwrap();
    (dir, Service::new(Arc::new(store), config))
}

/// A service whose processor reads every file as a two-page document
/// (page 1 "the cover", page 2 "the port is 8443\nfor TLS"), with one such
/// file put at `/spec.pdf` and processed: the fixture of page locators.
pub(crate) fn paged_service(config: WorkspaceConfig) -> (tempfile::TempDir, Service, String) {
    use mem_core::plugin::{Chunk, LineRange, ProcessedFile};
    let page = |n: u32, text: &str| Chunk {
        text: text.into(),
        lines: LineRange { start: 1, end: 2 },
        section: vec![format!("page {n}")],
        kind: "page".into(),
    };
    let host = crate::fake_host::FakeHost {
        processors: vec!["pdf".into()],
        process: Box::new(move |_| {
            Ok(ProcessedFile {
                chunks: vec![page(1, "the cover"), page(2, "the port is 8443\nfor TLS")],
                ..Default::default()
            })
        }),
        ..Default::default()
    };
    let (dir, svc) = service_with(config);
    let svc = svc.with_plugins(Arc::new(host));
    let file = put(&svc, "/spec.pdf", b"%PDF-1.7\n\xff\xfe binary").file.id;
    svc.process_now(&file).unwrap();
    (dir, svc, file)
}

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

fn put(svc: &Service, path: &str, bytes: &[u8]) -> PutFileResult {
    svc.put_test(crate::TestPut {
        path: p(path),
        bytes: bytes.to_vec(),
        tags: vec![],
        replace: false,
    })
    .unwrap()
}

fn remember(
    svc: &Service,
    content: &str,
    path: &str,
    key: Option<&str>,
) -> MemResult<RememberOutcome> {
    svc.remember(&RememberRequest {
        content: content.into(),
        kind: "fact".into(),
        path: path.into(),
        // Tests that do not exercise idempotency take a fresh key per write.
        idempotency_key: key.map_or_else(fresh_key, str::to_string),
        ..Default::default()
    })
}

use mem_core::MemResult;

fn fresh_key() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "test-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn owner() -> crate::Actor {
    crate::Actor::owner()
}

#[test]
fn identical_bytes_are_stored_once() {
    let (_d, svc) = service();
    let a = put(&svc, "/a/one.txt", b"same bytes");
    let b = put(&svc, "/b/two.txt", b"same bytes");
    assert!(!a.deduplicated);
    assert!(b.deduplicated);
    assert_eq!(a.file.sha256, b.file.sha256);
    assert_eq!(svc.store().blob_refcount(&a.file.sha256).unwrap(), 2);
    svc.remove_path(&a.file.id, false).unwrap();
    assert_eq!(svc.store().blob_refcount(&a.file.sha256).unwrap(), 1);
    assert_eq!(
        svc.read_file("/b/two.txt", u64::MAX).unwrap().1,
        b"same bytes"
    );
    svc.remove_path("/b/two.txt", false).unwrap();
    assert!(svc.store().get_blob(&a.file.sha256).unwrap().is_none());
}

#[test]
fn put_creates_parents_and_refuses_clobber_without_replace() {
    let (_d, svc) = service();
    let first = put(&svc, "/deep/er/f.md", b"# one");
    assert!(svc.folder_exists(&p("/deep/er")).unwrap());
    let err = svc
        .put_test(crate::TestPut {
            path: p("/deep/er/f.md"),
            bytes: b"# two".to_vec(),
            tags: vec![],
            replace: false,
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::AlreadyExists);
    let replaced = svc
        .put_test(crate::TestPut {
            path: p("/deep/er/f.md"),
            bytes: b"# two".to_vec(),
            tags: vec![],
            replace: true,
        })
        .unwrap();
    assert!(!replaced.created);
    assert_eq!(replaced.file.id, first.file.id);
    assert_eq!(replaced.file.state_version, 2);
    assert_eq!(svc.read_file(&first.file.id, u64::MAX).unwrap().1, b"# two");
    // The replaced blob is released.
    assert!(svc.store().get_blob(&first.file.sha256).unwrap().is_none());
}

#[test]
fn listing_shows_direct_children_including_empty_folders() {
    let (_d, svc) = service();
    put(&svc, "/docs/a.md", b"a");
    put(&svc, "/docs/sub/b.md", b"b");
    svc.mkdir(&p("/docs/empty"), false).unwrap();
    let names: Vec<String> = svc
        .list_folder(&p("/docs"), None, 1000)
        .unwrap()
        .entries
        .iter()
        .map(|e| match e {
            Entry::Folder { name, .. } => format!("{name}/"),
            Entry::File(f) => f.name.clone(),
        })
        .collect();
    assert_eq!(names, ["empty/", "sub/", "a.md"]);
}

#[test]
fn a_long_folder_lists_in_pages_folders_first_skipping_subtrees() {
    let (_d, svc) = service();
    for i in 0..5 {
        put(&svc, &format!("/big/f{i}.md"), format!("{i}").as_bytes());
    }
    for sub in ["a", "b", "c"] {
        put(&svc, &format!("/big/{sub}/deep/x.md"), b"x");
        svc.mkdir(&p(&format!("/big/{sub}/empty")), false).unwrap();
    }
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = svc.list_folder(&p("/big"), cursor.as_deref(), 2).unwrap();
        assert!(page.entries.len() <= 2);
        pages += 1;
        names.extend(page.entries.iter().map(|e| match e {
            Entry::Folder { name, .. } => format!("{name}/"),
            Entry::File(f) => f.name.clone(),
        }));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(
        names,
        [
            "a/", "b/", "c/", "f0.md", "f1.md", "f2.md", "f3.md", "f4.md"
        ]
    );
    assert_eq!(pages, 4);
    let e = svc.list_folder(&p("/big"), Some("bogus"), 2).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
}

#[test]
fn a_tagged_listing_reaches_below_the_folder_in_pages() {
    let (_d, svc) = service();
    for (path, tags) in [
        ("/t/a.md", vec!["x"]),
        ("/t/b.md", vec![]),
        ("/t/sub/c.md", vec!["x", "y"]),
        ("/t/sub/deep/d.md", vec!["x"]),
        ("/t/z.md", vec!["y"]),
        ("/elsewhere.md", vec!["x"]),
    ] {
        svc.put_test(crate::TestPut {
            path: p(path),
            bytes: path.as_bytes().to_vec(),
            tags: tags.into_iter().map(String::from).collect(),
            replace: false,
        })
        .unwrap();
    }
    let tags = ["x".to_string()];
    let mut paths = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = svc
            .list_tagged(&p("/t"), &tags, cursor.as_deref(), 2)
            .unwrap();
        assert!(page.entries.len() <= 2);
        paths.extend(page.entries.iter().map(|e| match e {
            Entry::File(f) => f.path.as_str().to_string(),
            Entry::Folder { .. } => panic!("a tagged listing holds files only"),
        }));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(paths, ["/t/a.md", "/t/sub/c.md", "/t/sub/deep/d.md"]);
    // A cursor is a position: one naming a file resumes after it.
    let rest = svc
        .list_tagged(&p("/t"), &tags, Some("f:a.md"), 10)
        .unwrap();
    assert_eq!(rest.entries.len(), 2, "{rest:?}");
}

#[test]
fn mkdir_semantics() {
    let (_d, svc) = service();
    assert_eq!(
        svc.mkdir(&p("/x/y"), false).unwrap_err().code,
        ErrorCode::NotFound
    );
    let r = svc.mkdir(&p("/x/y"), true).unwrap();
    assert_eq!(r.created, vec![p("/x"), p("/x/y")]);
    assert!(svc.mkdir(&p("/x/y"), true).unwrap().created.is_empty());
    assert_eq!(
        svc.mkdir(&p("/x/y"), false).unwrap_err().code,
        ErrorCode::AlreadyExists
    );
}

#[test]
fn moving_a_folder_into_itself_is_refused() {
    let (_d, svc) = service();
    put(&svc, "/a/f.txt", b"f");
    svc.mkdir(&p("/a/b"), true).unwrap();
    let err = svc.move_path("/a", &p("/a/b/c")).unwrap_err();
    assert_eq!(err.code, ErrorCode::MoveIntoSelf);
    // Moving into an existing folder inside itself too.
    assert_eq!(
        svc.move_path("/a", &p("/a/b")).unwrap_err().code,
        ErrorCode::MoveIntoSelf
    );
}

#[test]
fn moving_a_folder_moves_its_subtree() {
    let (_d, svc) = service();
    let f = put(&svc, "/a/sub/f.txt", b"f");
    svc.mkdir(&p("/dest"), false).unwrap();
    let r = svc.move_path("/a", &p("/dest")).unwrap();
    assert_eq!(r.to, p("/dest/a"));
    assert_eq!(r.files_moved, 1);
    assert_eq!(
        svc.file_info(&f.file.id).unwrap().path,
        p("/dest/a/sub/f.txt")
    );
    assert!(!svc.folder_exists(&p("/a")).unwrap());
    assert!(svc.folder_exists(&p("/dest/a/sub")).unwrap());
    assert_eq!(svc.file_info("/dest/a/sub/f.txt").unwrap().id, f.file.id);
}

#[test]
fn folders_holding_memories_cannot_be_removed_or_moved() {
    let (_d, svc) = service();
    remember(&svc, "the build uses cargo", "/proj/notes", None).unwrap();
    assert_eq!(
        svc.remove_path("/proj", true).unwrap_err().code,
        ErrorCode::FolderHasMemories
    );
    assert_eq!(
        svc.remove_path("/proj/notes", true).unwrap_err().code,
        ErrorCode::FolderHasMemories
    );
    assert_eq!(
        svc.move_path("/proj", &p("/other")).unwrap_err().code,
        ErrorCode::FolderHasMemories
    );
    // A sibling folder with a common name prefix is unaffected.
    svc.mkdir(&p("/proj2"), false).unwrap();
    svc.remove_path("/proj2", false).unwrap();
}

#[test]
fn non_empty_folder_needs_recursive() {
    let (_d, svc) = service();
    put(&svc, "/t/f.txt", b"f");
    assert_eq!(
        svc.remove_path("/t", false).unwrap_err().code,
        ErrorCode::FolderNotEmpty
    );
    let r = svc.remove_path("/t", true).unwrap();
    assert_eq!((r.files_removed, r.folders_removed), (1, 1));
    assert_eq!(
        svc.file_info("/t/f.txt").unwrap_err().code,
        ErrorCode::NotFound
    );
}

#[test]
fn idempotent_remember_replays_and_conflicts() {
    let (_d, svc) = service();
    let first = remember(&svc, "Alice prefers tea", "/people", Some("k1")).unwrap();
    assert!(!first.replayed);
    // Content is kept verbatim, so only the exact request replays.
    let again = remember(&svc, "Alice prefers tea", "/people", Some("k1")).unwrap();
    assert!(again.replayed);
    assert_eq!(
        again.memory.as_ref().unwrap().id,
        first.memory.as_ref().unwrap().id
    );
    let err = remember(&svc, "Alice prefers coffee", "/people", Some("k1")).unwrap_err();
    assert_eq!(err.code, ErrorCode::IdempotencyConflict);
    assert_eq!(
        err.details["memory_id"],
        first.memory.as_ref().unwrap().id.as_str()
    );
    // The key itself is never stored.
    for (k, _) in records::scan_all(svc.store(), mem_core::store::Table::Idempotency, "").unwrap() {
        assert_ne!(k, "k1");
        assert!(mem_core::hash::is_sha256_hex(&k));
    }
}

#[test]
fn compare_and_swap_lifecycle() {
    let (_d, svc) = service();
    let m = remember(&svc, "deploys happen on fridays", "/ops", None)
        .unwrap()
        .memory
        .unwrap();
    let m2 = svc
        .feedback(&m.id, FeedbackAction::Useful, 1, &owner())
        .unwrap();
    assert_eq!(m2.state_version, 2);
    assert!((m2.confidence - 0.65).abs() < 1e-9);
    let stale = svc.archive(&m.id, 1, &owner()).unwrap_err();
    assert_eq!(stale.code, ErrorCode::VersionConflict);
    assert_eq!(stale.details["current_version"], 2);
    let archived = svc.archive(&m.id, 2, &owner()).unwrap();
    assert_eq!(archived.lifecycle, Lifecycle::Archived);
    assert_eq!(
        svc.archive(&m.id, 3, &owner()).unwrap_err().code,
        ErrorCode::InvalidState
    );
    let restored = svc.restore(&m.id, 3, &owner()).unwrap();
    assert_eq!(restored.lifecycle, Lifecycle::Active);
}

#[test]
fn forget_purges_content_and_keeps_a_tombstone() {
    let (_d, svc) = service();
    let m = remember(&svc, "secret: hunter2", "/s", Some("key"))
        .unwrap()
        .memory
        .unwrap();
    assert_eq!(
        svc.forget(&m.id, 1, "asked", false, &owner())
            .unwrap_err()
            .code,
        ErrorCode::ConfirmationRequired
    );
    let f = svc.forget(&m.id, 1, "user asked", true, &owner()).unwrap();
    assert_eq!(f.lifecycle, Lifecycle::Forgotten);
    assert!(f.content.is_none());
    assert_eq!(f.tombstone.unwrap().reason, "user asked");
    let raw = svc
        .store()
        .get(mem_core::store::Table::Memories, &m.id)
        .unwrap()
        .unwrap();
    assert!(!String::from_utf8_lossy(&raw).contains("hunter2"));
    // The folder no longer counts as holding memories.
    svc.remove_path("/s", true).unwrap();
}

#[test]
fn list_paginates_newest_first_with_filters() {
    let (_d, svc) = service();
    let mut ids = Vec::new();
    for i in 0..7 {
        let path = if i % 2 == 0 { "/even" } else { "/odd" };
        ids.push(
            remember(&svc, &format!("memory number {i}"), path, None)
                .unwrap()
                .memory
                .unwrap()
                .id,
        );
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = svc
            .list_memories(&ListMemories {
                limit: Some(3),
                cursor: cursor.clone(),
                ..Default::default()
            })
            .unwrap();
        seen.extend(page.items.iter().map(|m| m.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    ids.reverse();
    assert_eq!(seen, ids);
    let even = svc
        .list_memories(&ListMemories {
            path: Some("/even".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(even.items.len(), 4);
    let err = svc.list_memories(&ListMemories {
        lifecycle: Some("bogus".into()),
        ..Default::default()
    });
    assert_eq!(err.unwrap_err().code, ErrorCode::BadRequest);
}

#[test]
fn bad_inputs_get_structured_errors() {
    let (_d, svc) = service();
    assert_eq!(
        remember(&svc, "  ", "/a", None).unwrap_err().code,
        ErrorCode::BadRequest
    );
    assert_eq!(
        remember(&svc, "x", "relative", None).unwrap_err().code,
        ErrorCode::BadPath
    );
    let unknown = svc.remember(&RememberRequest {
        content: "x".into(),
        kind: "gossip".into(),
        path: "/a".into(),
        ..Default::default()
    });
    assert_eq!(unknown.unwrap_err().code, ErrorCode::UnknownMemoryType);
    let bad_time = svc.remember(&RememberRequest {
        content: "x".into(),
        kind: "fact".into(),
        path: "/a".into(),
        event_at: Some("yesterday".into()),
        ..Default::default()
    });
    assert_eq!(bad_time.unwrap_err().code, ErrorCode::BadRequest);
    let missing_file = svc.remember(&RememberRequest {
        content: "x".into(),
        kind: "fact".into(),
        path: "/a".into(),
        source_file_id: Some("file_nope".into()),
        idempotency_key: "k".into(),
        ..Default::default()
    });
    assert_eq!(missing_file.unwrap_err().code, ErrorCode::NotFound);
    // Nothing was stored by the failures.
    assert_eq!(
        svc.store().count(mem_core::store::Table::Memories).unwrap(),
        0
    );
}

#[test]
fn remember_many_reports_each_line() {
    let (_d, svc) = service();
    let good = RememberRequest {
        content: "ok".into(),
        kind: "note".into(),
        path: "/n".into(),
        idempotency_key: "g".into(),
        ..Default::default()
    };
    let bad = RememberRequest {
        content: "".into(),
        ..good.clone()
    };
    let results = svc.remember_all(&[good.clone(), bad, good]);
    assert!(results[0].is_ok());
    assert!(results[1].is_err());
    assert!(results[2].is_ok());
}

#[test]
fn every_change_appends_an_event() {
    let (_d, svc) = service();
    let m = remember(&svc, "x", "/e", None).unwrap().memory.unwrap();
    svc.archive(&m.id, 1, &owner()).unwrap();
    let events = svc
        .store()
        .read_log(mem_core::store::Log::Events, 0, 100)
        .unwrap();
    let actions: Vec<String> = events
        .iter()
        .map(|(_, raw)| {
            serde_json::from_slice::<mem_core::model::Event>(raw)
                .unwrap()
                .action
        })
        .collect();
    assert_eq!(
        actions,
        ["folder.created", "memory.created", "memory.archived"]
    );
}

#[test]
fn a_write_without_an_idempotency_key_is_refused() {
    let (_d, svc) = service();
    let err = svc
        .remember(&RememberRequest {
            content: "x".into(),
            kind: "fact".into(),
            path: "/a".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(err.message.contains("idempotency_key"));
}
