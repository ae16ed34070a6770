//! Recall on the real sled store and the real (lexical) index.

use crate::{RememberRequest, Service, WorkspaceConfig};
use mem_core::index::LaneStatus;
use mem_core::plugin::{Chunk, LineRange, ProcessedFile};
use mem_core::store::{Batch, Durability, Table};
use mem_core::{ErrorCode, MemResult};
use mem_index::NativeIndex;
use mem_store::SledStore;
use std::path::Path;
use std::sync::Arc;

use super::{ContextRequest, SearchQuery};

fn open(dir: &Path) -> Service {
    let store = SledStore::open(&dir.join("store")).unwrap();
    let index =
        NativeIndex::open(&dir.join("index"), None, Some("no model in tests".into())).unwrap();
    let svc = Service::new(Arc::new(store), WorkspaceConfig::default()).with_index(Arc::new(index));
    svc.open_index().unwrap();
    svc
}

fn remember(
    svc: &Service,
    content: &str,
    kind: &str,
    path: &str,
) -> MemResult<crate::RememberOutcome> {
    svc.remember(&RememberRequest {
        content: content.into(),
        kind: kind.into(),
        path: path.into(),
        idempotency_key: format!("{path}:{}", mem_core::hash::sha256_hex(content.as_bytes())),
        ..Default::default()
    })
}

fn search(svc: &Service, q: &str) -> Vec<String> {
    svc.search(&SearchQuery {
        query: q.into(),
        ..Default::default()
    })
    .unwrap()
    .hits
    .into_iter()
    .map(|h| h.id)
    .collect()
}

#[test]
fn writes_are_searchable_and_forgetting_removes_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let m = remember(&svc, "the vault combination is 4711", "fact", "/secrets")
        .unwrap()
        .memory
        .unwrap();
    assert_eq!(
        search(&svc, "vault combination"),
        std::slice::from_ref(&m.id)
    );
    svc.forget(&m.id, 1, "asked to", true, &crate::Actor::owner())
        .unwrap();
    assert!(search(&svc, "vault combination").is_empty());
    drop(svc);
    // And after reopening (replay does not bring it back).
    let svc = open(tmp.path());
    assert!(search(&svc, "vault combination").is_empty());
}

#[test]
fn archive_hides_and_restore_brings_back() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let m = remember(&svc, "standup moved to ten", "decision", "/team")
        .unwrap()
        .memory
        .unwrap();
    svc.archive(&m.id, 1, &crate::Actor::owner()).unwrap();
    assert!(search(&svc, "standup").is_empty());
    let archived = svc
        .search(&SearchQuery {
            query: "standup".into(),
            lifecycle: vec!["archived".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(archived.hits[0].id, m.id);
    svc.restore(&m.id, 2, &crate::Actor::owner()).unwrap();
    assert_eq!(search(&svc, "standup"), [m.id]);
}

#[test]
fn a_lost_index_is_rebuilt_and_a_lagging_one_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let a = remember(&svc, "alpha centauri trip", "note", "/a")
        .unwrap()
        .memory
        .unwrap();
    drop(svc);
    std::fs::remove_dir_all(tmp.path().join("index")).unwrap();
    let svc = open(tmp.path());
    assert_eq!(search(&svc, "centauri"), std::slice::from_ref(&a.id));
    drop(svc);
    // Writes committed while no index was attached (a crash after the
    // store commit) are replayed at the next open.
    let store = SledStore::open(&tmp.path().join("store")).unwrap();
    let bare = Service::new(Arc::new(store), WorkspaceConfig::default());
    let b = bare.remember(&RememberRequest {
        content: "beta pictoris visit".into(),
        kind: "note".into(),
        // Another scope: in /a it would be `a`'s neighbouring context.
        path: "/b".into(),
        idempotency_key: "b".into(),
        ..Default::default()
    });
    let b = b.unwrap().memory.unwrap();
    drop(bare);
    let svc = open(tmp.path());
    assert_eq!(search(&svc, "pictoris"), [b.id]);
}

#[test]
fn processed_file_chunks_are_searchable_with_line_citations_and_leave_on_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let put = svc
        .put_test(crate::TestPut {
            path: mem_core::VPath::parse("/docs/runbook.md").unwrap(),
            bytes: b"# Runbook\nrestart the flux capacitor\n".to_vec(),
            tags: vec!["ops".into()],
            replace: false,
        })
        .unwrap();
    let processed = ProcessedFile {
        title: Some("Runbook".into()),
        chunks: vec![Chunk {
            text: "restart the flux capacitor".into(),
            lines: LineRange::new(2, 2),
            section: vec!["Runbook".into()],
            kind: "paragraph".into(),
        }],
        ..Default::default()
    };
    let mut batch = Batch::new();
    batch.put(
        Table::FileContent,
        put.file.id.clone(),
        serde_json::to_vec(&processed).unwrap(),
    );
    crate::records::push_event(
        &mut batch,
        "file.processed",
        &put.file.id,
        None,
        serde_json::json!({}),
    )
    .unwrap();
    svc.store().commit(batch, Durability::Immediate).unwrap();
    svc.sync_index().unwrap();
    let r = svc
        .search(&SearchQuery {
            query: "flux capacitor".into(),
            tags: vec!["ops".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 1);
    assert_eq!(r.hits[0].citation, format!("mem://file/{}#L2", put.file.id));
    assert_eq!(r.hits[0].source, mem_core::index::SourceKind::File);
    svc.remove_path("/docs/runbook.md", false).unwrap();
    assert!(search(&svc, "flux capacitor").is_empty());
}

#[test]
fn bulk_remember_syncs_once_per_group() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let reqs: Vec<RememberRequest> = (0..50)
        .map(|i| RememberRequest {
            content: format!("bulk item number {i} about kiwis"),
            kind: "note".into(),
            path: "/bulk".into(),
            idempotency_key: format!("bulk-{i}"),
            ..Default::default()
        })
        .collect();
    let before = svc.index().unwrap().unwrap().watermark();
    let results = svc.remember_all(&reqs);
    assert!(results.iter().all(|r| r.is_ok()));
    let after = svc.index().unwrap().unwrap().watermark();
    assert!(after > before);
    assert_eq!(
        svc.search(&SearchQuery {
            query: "kiwis".into(),
            limit: Some(100),
            ..Default::default()
        })
        .unwrap()
        .hits
        .len(),
        50
    );
}

#[test]
fn search_reports_the_missing_semantic_lane_and_validates_filters() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    remember(&svc, "x marks the spot", "note", "/a").unwrap();
    let r = svc
        .search(&SearchQuery {
            query: "spot".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(r.lanes.iter().any(|l| l.status == LaneStatus::Unavailable));
    assert!(!r.partial);
    assert!(r.warnings.iter().any(|w| w.contains("semantic")));
    let bad = |q: SearchQuery| svc.search(&q).unwrap_err().code;
    assert_eq!(
        bad(SearchQuery {
            query: "x".into(),
            lifecycle: vec!["zombie".into()],
            ..Default::default()
        }),
        ErrorCode::BadRequest
    );
    assert_eq!(
        bad(SearchQuery {
            query: "x".into(),
            since: Some("yesterday".into()),
            ..Default::default()
        }),
        ErrorCode::BadRequest
    );
    assert_eq!(
        bad(SearchQuery {
            query: "x".into(),
            limit: Some(0),
            ..Default::default()
        }),
        ErrorCode::BadRequest
    );
}

#[test]
fn context_pack_lanes_budget_and_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let d = remember(
        &svc,
        "We deploy on Fridays only with a rollback plan",
        "decision",
        "/ops",
    )
    .unwrap()
    .memory
    .unwrap();
    let p = remember(
        &svc,
        "I prefer deploy announcements in the ops channel",
        "preference",
        "/ops",
    )
    .unwrap()
    .memory
    .unwrap();
    let long = format!(
        "deploy checklist: {}",
        "check the dashboards and the error rates; ".repeat(40)
    );
    let c = remember(&svc, &long, "note", "/ops")
        .unwrap()
        .memory
        .unwrap();
    let other = remember(&svc, "deploy the garden sprinklers", "note", "/home")
        .unwrap()
        .memory
        .unwrap();
    let pack = svc
        .context(&ContextRequest {
            query: "how do we deploy".into(),
            scope: Some("/ops".into()),
            max_chars: Some(200),
            ..Default::default()
        })
        .unwrap();
    // Both are guidance (their role): `should`, the decision first.
    assert!(pack.must.is_empty());
    let mut should: Vec<&String> = pack.should.iter().map(|i| &i.id).collect();
    should.sort();
    let mut want = vec![&d.id, &p.id];
    want.sort();
    assert_eq!(should, want);
    let di = pack.should.iter().find(|i| i.id == d.id).unwrap();
    assert_eq!(di.citation, format!("mem://memory/{}", d.id));
    assert_eq!(di.content_sha256, d.content_sha256);
    assert!(pack.used_chars <= 200);
    let omitted = pack
        .omitted
        .iter()
        .find(|o| o.id == c.id)
        .expect("the long note is omitted, not cut");
    assert_eq!(omitted.chars, long.chars().count());
    assert!(
        pack.trace
            .hidden_by_filter
            .iter()
            .any(|h| h.id == other.id && h.filter == "scope"),
        "{:?}",
        pack.trace
    );
    assert_eq!(pack.trace.selection.status, "skipped");
}

/// Regression: a pack that found nothing was a 503 `context_unavailable`,
/// which clients retry; it is a result with suggestions.
#[test]
fn regression_an_empty_pack_is_a_result_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    remember(&svc, "the garden needs water", "note", "/home").unwrap();
    let pack = svc
        .context(&ContextRequest {
            query: "quantum chromodynamics".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(pack.must.is_empty() && pack.context.is_empty());
    assert!(!pack.suggestions.is_empty());
    assert!(!pack.missing.is_empty(), "{:?}", pack.missing);
    let e = svc
        .context(&ContextRequest {
            query: "x".into(),
            min_confidence: Some(1.5),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest, "min_confidence is checked");
}

#[test]
fn context_read_gate_rejects_low_confidence() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let m = svc
        .remember(&RememberRequest {
            content: "the moon is made of cheese".into(),
            kind: "fact".into(),
            path: "/x".into(),
            confidence: Some(0.1),
            idempotency_key: "moon".into(),
            ..Default::default()
        })
        .unwrap()
        .memory
        .unwrap();
    remember(&svc, "the moon orbits the earth", "fact", "/x").unwrap();
    let pack = svc
        .context(&ContextRequest {
            query: "moon".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(
        pack.trace
            .rejected_by_gate
            .iter()
            .any(|r| r.id == m.id && r.rule == "low_confidence" && r.policy.is_none())
    );
    assert!(pack.context.iter().all(|i| i.id != m.id));
}

#[test]
fn neighbours_are_context_and_a_forgotten_neighbour_leaves_it_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let q = remember(
        &svc,
        "Where did you hide the spare key?",
        "observation",
        "/chat",
    )
    .unwrap()
    .memory
    .unwrap();
    // Written later: the earlier memory's context gains it (re-indexed).
    let a = remember(&svc, "Under the blue flowerpot.", "observation", "/chat")
        .unwrap()
        .memory
        .unwrap();
    remember(&svc, "Unrelated: lunch at noon.", "observation", "/other").unwrap();
    // Each is found through the other's words, its own first.
    let hits = search(&svc, "spare key");
    assert_eq!(hits, [q.id.clone(), a.id.clone()]);
    let hits = search(&svc, "flowerpot");
    assert_eq!(hits, [a.id.clone(), q.id.clone()]);
    // Forgetting the answer purges its words from its neighbour's context too.
    svc.forget(
        &a.id,
        a.state_version,
        "asked",
        true,
        &crate::Actor::owner(),
    )
    .unwrap();
    assert!(search(&svc, "flowerpot").is_empty());
}

/// A service whose index opens on first use, counting the opens.
fn open_lazily(dir: &Path, opens: Arc<std::sync::atomic::AtomicUsize>) -> Service {
    let store = SledStore::open(&dir.join("store")).unwrap();
    let index_dir = dir.join("index");
    Service::new(Arc::new(store), WorkspaceConfig::default()).with_index_opener(Box::new(
        move || {
            opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let ix = NativeIndex::open(&index_dir, None, Some("no model in tests".into()))?;
            Ok(Arc::new(ix) as Arc<dyn mem_core::index::SearchIndex>)
        },
    ))
}

#[test]
fn a_lazy_index_opens_on_first_use_and_replays_what_it_missed() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let opens = Arc::new(AtomicUsize::new(0));
    // Written, then the index deleted: only the event log still holds it.
    let id = {
        let svc = open(tmp.path());
        let m = remember(
            &svc,
            "the lighthouse keeper feeds the gulls",
            "fact",
            "/coast",
        )
        .unwrap()
        .memory
        .unwrap();
        m.id
    };
    std::fs::remove_dir_all(tmp.path().join("index")).unwrap();
    let svc = open_lazily(tmp.path(), opens.clone());
    // Reads that need no index do not open it.
    assert_eq!(svc.memory(&id).unwrap().id, id);
    assert_eq!(opens.load(Ordering::SeqCst), 0);
    // The first search opens it once and finds what was written before.
    assert_eq!(search(&svc, "lighthouse gulls"), std::slice::from_ref(&id));
    assert_eq!(search(&svc, "lighthouse"), [id]);
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[test]
fn a_lazy_index_that_cannot_open_fails_searches_not_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SledStore::open(&tmp.path().join("store")).unwrap();
    let svc = Service::new(Arc::new(store), WorkspaceConfig::default()).with_index_opener(
        Box::new(|| {
            Err(mem_core::MemError::internal(
                "the index folder is unreadable",
            ))
        }),
    );
    // The write is durable and acknowledged; the index is behind.
    let m = remember(&svc, "durable despite the index", "fact", "/a")
        .unwrap()
        .memory
        .unwrap();
    assert_eq!(svc.memory(&m.id).unwrap().id, m.id);
    let err = svc
        .search(&SearchQuery {
            query: "durable".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(err.message.contains("unreadable"), "{err:?}");
}

#[test]
fn a_remember_is_acknowledged_before_the_index_replays_it_and_still_found() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let before = svc.index().unwrap().unwrap().watermark();
    let m = remember(
        &svc,
        "the lighthouse key hangs by the door",
        "fact",
        "/home",
    )
    .unwrap()
    .memory
    .unwrap();
    // Acknowledged and durable, the index not yet replayed.
    assert!(svc.is_index_behind());
    assert_eq!(svc.index().unwrap().unwrap().watermark(), before);
    // The writer reads its own write: a search replays first.
    assert_eq!(search(&svc, "lighthouse key"), std::slice::from_ref(&m.id));
    assert!(!svc.is_index_behind());
}

/// Waits (up to 20 s) until a background thread, `who`, replayed every
/// acknowledged write into the index.
fn wait_until_replayed(svc: &Service, who: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while svc.is_index_behind() {
        assert!(
            std::time::Instant::now() < deadline,
            "{who} did not replay the writes"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn the_worker_replays_acknowledged_writes_without_a_search() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = Arc::new(open(tmp.path()));
    let worker = svc.spawn_worker().unwrap();
    remember(&svc, "the ferry leaves at noon", "fact", "/travel").unwrap();
    wait_until_replayed(&svc, "the worker");
    worker.stop().unwrap();
    assert_eq!(search(&svc, "ferry noon").len(), 1);
}

#[test]
fn a_bulk_commands_indexer_replays_writes_while_they_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = Arc::new(open(tmp.path()));
    let indexer = svc.index_alongside().unwrap();
    let before = svc.index().unwrap().unwrap().watermark();
    for i in 0..5 {
        remember(
            &svc,
            &format!("crate {i} of the ferry cargo"),
            "fact",
            "/travel",
        )
        .unwrap();
    }
    wait_until_replayed(&svc, "the indexer");
    assert!(svc.index().unwrap().unwrap().watermark() > before);
    drop(indexer);
    // Stopped: a write now waits for the command's finish (or a read).
    let last = remember(&svc, "the lighthouse keeper waves", "fact", "/travel")
        .unwrap()
        .memory
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(svc.is_index_behind());
    svc.finish_command();
    assert!(!svc.is_index_behind());
    assert!(search(&svc, "lighthouse keeper").contains(&last.id));
}

#[test]
fn concurrent_writers_each_find_their_own_write_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = Arc::new(open(tmp.path()));
    let worker = svc.spawn_worker().unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let svc = &svc;
            s.spawn(move || {
                for i in 0..15 {
                    let word = format!("marker{t}x{i}");
                    let m = remember(svc, &format!("note {word} here"), "note", "/w")
                        .unwrap()
                        .memory
                        .unwrap();
                    assert!(search(svc, &word).contains(&m.id), "{word}");
                }
            });
        }
    });
    worker.stop().unwrap();
}

/// A caller reads its own writes at once; another caller's search does not
/// wait for them (under an agent remembering 20 memories a second, every
/// search had waited for each write's embedding), and finds them once the
/// index has replayed them.
#[test]
fn a_caller_finds_its_own_write_at_once_and_others_once_the_index_has_it() {
    use crate::access::{Access, Scope};
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path());
    let token =
        |id: &str| Access::token(id.into(), id.into(), Scope::ALL.to_vec(), vec![]).unwrap();
    let (writer, other) = (token("tok_writer"), token("tok_other"));
    let found = |who: &Access| {
        let q = SearchQuery {
            query: "lantern batteries".into(),
            ..Default::default()
        };
        svc.caller(who).run(q).unwrap().value.hits.len()
    };
    let req = RememberRequest {
        content: "the lantern batteries are in the blue drawer".into(),
        kind: "fact".into(),
        path: "/home".into(),
        idempotency_key: "lantern".into(),
        ..Default::default()
    };
    svc.caller(&writer).run(req).unwrap();
    assert!(svc.is_index_behind());
    assert_eq!(
        found(&other),
        0,
        "another caller does not wait for the write"
    );
    assert!(svc.is_index_behind());
    assert_eq!(found(&writer), 1, "the writer finds its own write");
    assert!(!svc.is_index_behind());
    assert_eq!(found(&other), 1);
    // A read outside a caller's call (a CLI command) waits for every write.
    svc.caller(&writer)
        .run(RememberRequest {
            content: "spare lantern batteries went to the shed".into(),
            idempotency_key: "lantern 2".into(),
            path: "/home".into(),
            kind: "fact".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(search(&svc, "lantern batteries").len(), 2);
}
