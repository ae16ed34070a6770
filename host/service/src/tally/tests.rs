//! Tallies on the real sled store: every write path keeps them equal to a
//! fresh count, and the catalog answers from them as the pass over every
//! record does.

use super::recount::counted_fresh;
use super::{PENDING, PREFIX, READY};
use crate::access::{Access, Scope};
use crate::gate::ProposalOp;
use crate::navigation::catalog::{Catalog, CatalogPage};
use crate::records::transact;
use crate::tests::service;
use crate::{Actor, ProposalRequest, RememberRequest, Service, TestPut};
use mem_core::VPath;
use mem_core::store::{Batch, Durability, Table};
use std::collections::BTreeMap;

fn remember(svc: &Service, content: &str, path: &str, kind: &str, subject: Option<&str>) -> String {
    let mut attributes = BTreeMap::new();
    if let Some(s) = subject {
        attributes.insert("subject".to_string(), s.to_string());
    }
    svc.remember(&RememberRequest {
        content: content.into(),
        kind: kind.into(),
        path: path.into(),
        idempotency_key: format!("{path}/{content}"),
        attributes,
        ..Default::default()
    })
    .unwrap()
    .memory
    .unwrap()
    .id
}

fn put(svc: &Service, path: &str, bytes: &[u8], replace: bool) {
    svc.put_test(TestPut {
        path: VPath::parse(path).unwrap(),
        bytes: bytes.to_vec(),
        tags: vec![],
        replace,
    })
    .unwrap();
}

/// A token's access, confined to `paths` (none: the whole workspace).
pub(crate) fn confined(paths: &[VPath]) -> Access {
    let paths = paths.iter().map(|p| p.as_str().to_string()).collect();
    Access::token("t".into(), "t".into(), vec![Scope::Read], paths).unwrap()
}

/// The tallies as stored (without the ready and pending marks).
fn stored(svc: &Service) -> Vec<(String, Vec<u8>)> {
    let mut out = crate::records::scan_all(svc.store(), Table::Meta, PREFIX).unwrap();
    out.retain(|(k, _)| k != READY && k != PENDING);
    out.sort();
    out
}

fn assert_counted(svc: &Service) {
    let fresh = counted_fresh(svc.store());
    assert_eq!(stored(svc), fresh, "the tallies drifted from the records");
}

fn version(svc: &Service, id: &str) -> u64 {
    svc.memory(id).unwrap().state_version
}

/// Every page of a request (from the tallies, or from the pass), and the
/// first page.
fn all_pages(
    svc: &Service,
    req: &Catalog,
    access: &Access,
    tallied: bool,
) -> (CatalogPage, Vec<String>) {
    let first = svc.catalog_with(req, access, tallied).unwrap();
    let mut ids: Vec<String> = first.items.iter().map(|i| i.id.clone()).collect();
    let mut next = first.next_cursor.clone();
    while let Some(c) = next {
        let req = Catalog {
            cursor: Some(c),
            ..req.clone()
        };
        let page = svc.catalog_with(&req, access, tallied).unwrap();
        ids.extend(page.items.iter().map(|i| i.id.clone()));
        next = page.next_cursor;
    }
    (first, ids)
}

/// A varied workspace: kinds, subjects, lifecycles, files, a
/// consolidation, a move and a removal.
fn varied(svc: &Service) {
    let a = remember(svc, "the port is 8443", "/a", "fact", None);
    let b = remember(svc, "we chose sled", "/a", "decision", Some("storage"));
    remember(svc, "sled is embedded", "/a/b", "fact", Some("storage"));
    let d = remember(svc, "call Ana on fridays", "/c", "note", Some("Ana"));
    let e = remember(svc, "a typo", "/c", "note", None);
    remember(svc, "root level", "/", "fact", None);
    svc.archive(&a, version(svc, &a), &Actor::owner()).unwrap();
    svc.restore(&a, version(svc, &a), &Actor::owner()).unwrap();
    svc.archive(&d, version(svc, &d), &Actor::owner()).unwrap();
    svc.forget(&e, version(svc, &e), "wrong", true, &Actor::owner())
        .unwrap();
    svc.propose(
        &ProposalRequest {
            op: ProposalOp::Consolidate,
            targets: vec![a.clone(), b.clone()],
            memory: Some(
                RememberRequest {
                    content: "port 8443, on sled".into(),
                    kind: "fact".into(),
                    path: "/a".into(),
                    ..Default::default()
                }
                .draft(),
            ),
            evidence: vec![],
            reason: None,
            idempotency_key: "merge".into(),
        },
        &Actor::agent(Some("claude".into()), None),
    )
    .unwrap();
    put(svc, "/docs/x.md", b"# x\n", false);
    put(svc, "/docs/y.txt", b"why\n", false);
    put(svc, "/docs/x.md", b"# x, longer now\n", true);
    put(svc, "/docs/deep/z.md", b"zed\n", false);
    put(svc, "/top.md", b"top\n", false);
    svc.drain_processing().unwrap();
    svc.move_path("/docs/deep", &VPath::parse("/moved").unwrap())
        .unwrap();
    svc.move_path("/docs/x.md", &VPath::parse("/docs/renamed.md").unwrap())
        .unwrap();
    svc.remove_path("/docs/y.txt", false).unwrap();
}

#[test]
fn every_write_path_keeps_the_tallies_equal_to_a_fresh_count() {
    let (_d, svc) = service();
    assert!(svc.ensure_tallies().unwrap());
    varied(&svc);
    assert_counted(&svc);
    assert!(
        stored(&svc)
            .iter()
            .any(|(k, _)| k.starts_with(super::CONSOLIDATED))
    );
    // `status` counts from them what it counted from the table.
    let all = svc.store().count(Table::Memories).unwrap();
    assert_eq!(svc.status(&[]).unwrap().memories, all);
    let a = VPath::parse("/a").unwrap();
    let under_a = crate::records::scan_all(svc.store(), Table::MemoryPaths, "/a")
        .unwrap()
        .into_iter()
        .filter(|(k, _)| k.starts_with("/a\0") || k.starts_with("/a/"))
        .count() as u64;
    assert_eq!(
        svc.status(std::slice::from_ref(&a)).unwrap().memories,
        under_a
    );
}

#[test]
fn the_catalog_answers_from_the_tallies_as_the_pass_over_every_record_does() {
    let (_d, svc) = service();
    assert!(svc.ensure_tallies().unwrap());
    varied(&svc);
    let docs = VPath::parse("/docs").unwrap();
    let file = VPath::parse("/top.md").unwrap();
    let both = [file.clone(), docs.clone()];
    let boundaries: [&[VPath]; 3] = [&[], std::slice::from_ref(&docs), &both];
    let requests = [
        Catalog::default(),
        Catalog {
            status: Some("all".into()),
            limit: Some(2),
            ..Default::default()
        },
        Catalog {
            status: Some("forgotten".into()),
            ..Default::default()
        },
        Catalog {
            path: Some("/a".into()),
            status: Some("superseded".into()),
            ..Default::default()
        },
        Catalog {
            type_name: Some("note".into()),
            status: Some("archived".into()),
            ..Default::default()
        },
        Catalog {
            path: Some("/docs/x.md".into()),
            ..Default::default()
        },
        Catalog {
            limit: Some(1),
            max_bytes: Some(1024),
            ..Default::default()
        },
    ];
    for boundary in boundaries {
        let access = confined(boundary);
        for req in &requests {
            let (tallied, tallied_ids) = all_pages(&svc, req, &access, true);
            let (passed, passed_ids) = all_pages(&svc, req, &access, false);
            assert_eq!(tallied_ids, passed_ids, "{req:?} {boundary:?}");
            assert_eq!(tallied.totals, passed.totals, "{req:?} {boundary:?}");
            assert_eq!(tallied.folders, passed.folders, "{req:?} {boundary:?}");
            assert_eq!(tallied.types, passed.types, "{req:?} {boundary:?}");
            assert_eq!(tallied.subjects, passed.subjects, "{req:?} {boundary:?}");
            assert_eq!(
                tallied.consolidation, passed.consolidation,
                "{req:?} {boundary:?}"
            );
            let unique: std::collections::BTreeSet<_> = tallied_ids.iter().collect();
            assert_eq!(unique.len(), tallied_ids.len(), "an item repeated: {req:?}");
            assert_eq!(
                tallied_ids.len() as u64,
                tallied.totals.items,
                "{req:?} {boundary:?}"
            );
        }
    }
    // The boundary names a file in a folder it does not see: that file only.
    let page = svc
        .catalog(&Catalog::default(), &confined(std::slice::from_ref(&file)))
        .unwrap();
    assert_eq!((page.totals.files, page.totals.memories), (1, 0));
    assert_eq!(page.items[0].path, "/top.md");
}

#[test]
fn a_workspace_from_before_tallies_is_counted_once_with_the_writes_made_meanwhile() {
    let (_d, svc) = service();
    // No count yet: writes only mark that they happened.
    remember(&svc, "before the count", "/a", "fact", None);
    assert!(stored(&svc).is_empty());
    assert!(svc.store().get(Table::Meta, PENDING).unwrap().is_some());
    assert!(svc.ensure_tallies().unwrap());
    assert!(svc.store().get(Table::Meta, PENDING).unwrap().is_none());
    assert_counted(&svc);

    // Counts started over and over while writers write: none is missed.
    let svc = std::sync::Arc::new(svc);
    let writers: Vec<_> = (0..3)
        .map(|t| {
            let svc = svc.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    remember(
                        &svc,
                        &format!("w{t} fact {i}"),
                        &format!("/w{}", i % 3),
                        "fact",
                        Some("s"),
                    );
                }
            })
        })
        .collect();
    for _ in 0..15 {
        let mut b = Batch::new();
        super::invalidate(&mut b);
        svc.store().commit(b, Durability::Immediate).unwrap();
        let _ = svc.ensure_tallies().unwrap();
    }
    for w in writers {
        w.join().unwrap();
    }
    while !svc.ensure_tallies().unwrap() {}
    assert_counted(&svc);
}

#[test]
fn a_damaged_record_has_the_tallies_counted_again_without_it() {
    let (_d, svc) = service();
    assert!(svc.ensure_tallies().unwrap());
    remember(&svc, "kept", "/a", "fact", None);
    transact(svc.store(), Durability::Immediate, || {
        let mut b = Batch::new();
        b.put(Table::Memories, "mem_damaged", b"{not json".to_vec());
        Ok((b, ()))
    })
    .unwrap();
    assert!(svc.store().get(Table::Meta, READY).unwrap().is_none());
    assert!(svc.ensure_tallies().unwrap());
    assert_counted(&svc);
    let page = svc.catalog(&Catalog::default(), &Access::owner()).unwrap();
    assert_eq!(page.totals.memories, 1);
}

/// Regression: writers of one process that collided on the shared tally
/// counters retried at once, collided again, and a `remember` failed with
/// `version_conflict` (a quarter of the runs of the test above).
#[test]
fn concurrent_writers_of_one_folder_are_not_refused_over_their_shared_counters() {
    let (_d, svc) = service();
    assert!(svc.ensure_tallies().unwrap());
    let svc = std::sync::Arc::new(svc);
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let svc = svc.clone();
            std::thread::spawn(move || {
                for i in 0..60 {
                    remember(&svc, &format!("c{t} fact {i}"), "/one", "fact", Some("s"));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_counted(&svc);
    let page = svc.catalog(&Catalog::default(), &Access::owner()).unwrap();
    assert_eq!(page.totals.memories, 240);
}
