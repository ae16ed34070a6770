//! Catalog and trace on the real sled store.

use super::catalog::{Catalog, Record};
use super::trace::{Direction, EdgeClass, Trace};
use super::{filters_digest, title};
use crate::RememberRequest;
use crate::access::Access;
use crate::records::{decode, encode};
use crate::tests::service;
use mem_core::model::{Memory, Relation};
use mem_core::store::{Batch, Durability, Table};
use mem_core::{ErrorCode, VPath};

fn remember(svc: &crate::Service, content: &str, path: &str, kind: &str) -> String {
    svc.remember(&RememberRequest {
        content: content.into(),
        kind: kind.into(),
        path: path.into(),
        idempotency_key: format!("{path}/{content}"),
        ..Default::default()
    })
    .unwrap()
    .memory
    .unwrap()
    .id
}

/// Gives `from` a relation to `to`, behind the service's back (relations
/// come from the gate and detectors; the walk only reads them).
fn relate(svc: &crate::Service, from: &str, kind: &str, to: &str) {
    let raw = svc.store().get(Table::Memories, from).unwrap().unwrap();
    let mut m: Memory = decode(Table::Memories, from, &raw).unwrap();
    m.relations.push(Relation {
        kind: kind.into(),
        target: to.into(),
        score: None,
        difference: None,
    });
    let mut b = Batch::new();
    b.put(Table::Memories, from, encode(&m).unwrap());
    svc.store().commit(b, Durability::Immediate).unwrap();
}

fn everywhere(_: &VPath) -> bool {
    true
}

#[test]
fn catalog_pages_cover_everything_once_with_exact_totals() {
    let (_d, svc) = service();
    for i in 0..7 {
        remember(&svc, &format!("fact number {i}"), "/a", "fact");
    }
    remember(&svc, "we chose sled", "/b", "decision");
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = svc
            .catalog(
                &Catalog {
                    limit: Some(3),
                    cursor: cursor.clone(),
                    ..Default::default()
                },
                &Access::owner(),
            )
            .unwrap();
        assert_eq!(page.totals.memories, 8);
        assert_eq!(page.folders[0].name, "/a");
        assert_eq!(page.folders[0].memories, 7);
        seen.extend(page.items.iter().map(|i| i.id.clone()));
        if !page.truncated {
            assert!(page.next_cursor.is_none());
            break;
        }
        cursor = page.next_cursor;
    }
    let unique: std::collections::BTreeSet<_> = seen.iter().collect();
    assert_eq!((seen.len(), unique.len()), (8, 8));

    let decisions = svc
        .catalog(
            &Catalog {
                type_name: Some("decision".into()),
                ..Default::default()
            },
            &Access::owner(),
        )
        .unwrap();
    assert_eq!(decisions.totals.items, 1);
    assert_eq!(decisions.types[0].role.as_deref(), Some("guidance"));
    assert_eq!(decisions.items[0].record, Record::Memory);
}

#[test]
fn a_catalog_cursor_goes_stale_when_the_workspace_changes() {
    let (_d, svc) = service();
    for i in 0..3 {
        remember(&svc, &format!("fact {i}"), "/a", "fact");
    }
    let req = Catalog {
        limit: Some(1),
        ..Default::default()
    };
    let first = svc.catalog(&req, &Access::owner()).unwrap();
    remember(&svc, "a new fact", "/a", "fact");
    let e = svc
        .catalog(
            &Catalog {
                cursor: first.next_cursor,
                ..req
            },
            &Access::owner(),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::CursorStale);
    assert!(e.hint.contains("without the cursor"));
}

#[test]
fn the_catalog_hides_what_lies_outside_the_callers_paths() {
    let (_d, svc) = service();
    remember(&svc, "visible", "/team", "fact");
    remember(&svc, "secret", "/private", "fact");
    let team = VPath::parse("/team").unwrap();
    let page = svc
        .catalog(
            &Catalog::default(),
            &crate::tally::tests::confined(std::slice::from_ref(&team)),
        )
        .unwrap();
    assert_eq!(page.totals.memories, 1);
    assert!(page.folders.iter().all(|g| g.name == "/team"));
    assert!(!serde_json::to_string(&page).unwrap().contains("private"));
}

#[test]
fn trace_marks_tree_back_and_cross_edges_and_walks_both_ways() {
    let (_d, svc) = service();
    let a = remember(&svc, "alpha", "/g", "fact");
    let b = remember(&svc, "beta", "/g", "fact");
    let c = remember(&svc, "gamma", "/g", "fact");
    relate(&svc, &a, "supersedes", &b);
    relate(&svc, &b, "superseded_by", &a);
    relate(&svc, &a, "related", &c);
    relate(&svc, &b, "related", &c);
    let out = svc
        .trace(
            &Trace {
                id: a.clone(),
                ..Default::default()
            },
            &everywhere,
        )
        .unwrap();
    let ids: Vec<&str> = out.nodes.iter().map(|n| n.id.as_str()).collect();
    // BFS order: the root, then its targets sorted by relation kind.
    assert_eq!(ids, vec![a.as_str(), c.as_str(), b.as_str()]);
    let class = |from: &str, to: &str| {
        out.edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .map(|e| e.class)
    };
    assert_eq!(class(&a, &b), Some(EdgeClass::Tree));
    assert_eq!(class(&b, &a), Some(EdgeClass::Back));
    assert_eq!(class(&b, &c), Some(EdgeClass::Cross));

    let incoming = svc
        .trace(
            &Trace {
                id: c.clone(),
                direction: Some(Direction::In),
                ..Default::default()
            },
            &everywhere,
        )
        .unwrap();
    let found: Vec<&str> = incoming.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(found, vec![c.as_str(), a.as_str(), b.as_str()]);
    assert!(incoming.edges.iter().all(|e| e.via == Direction::In));

    let only = svc
        .trace(
            &Trace {
                id: a.clone(),
                relation: Some("supersedes".into()),
                ..Default::default()
            },
            &everywhere,
        )
        .unwrap();
    assert_eq!(only.edges.len(), 1);
}

#[test]
fn trace_pages_continue_where_the_budget_stopped() {
    let (_d, svc) = service();
    let root = remember(&svc, "root", "/g", "fact");
    let mut leaves = Vec::new();
    for i in 0..5 {
        let l = remember(&svc, &format!("leaf {i}"), "/g", "fact");
        relate(&svc, &root, "related", &l);
        leaves.push(l);
    }
    let mut all = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = svc
            .trace(
                &Trace {
                    id: root.clone(),
                    nodes: Some(2),
                    cursor: cursor.clone(),
                    ..Default::default()
                },
                &everywhere,
            )
            .unwrap();
        assert!(page.nodes.len() <= 2);
        pages += 1;
        all.extend(page.nodes.into_iter().map(|n| n.id));
        if !page.truncated {
            break;
        }
        assert_eq!(page.truncated_by.as_deref(), Some("nodes"));
        cursor = page.next_cursor;
    }
    assert_eq!(pages, 3);
    assert_eq!(all.len(), 6);
    leaves.sort();
    assert_eq!(all[1..], leaves[..]);
}

#[test]
fn trace_does_not_walk_through_what_the_caller_may_not_see() {
    let (_d, svc) = service();
    let a = remember(&svc, "public", "/team", "fact");
    let hidden = remember(&svc, "hidden", "/private", "fact");
    let beyond = remember(&svc, "beyond", "/team", "fact");
    relate(&svc, &a, "related", &hidden);
    relate(&svc, &hidden, "related", &beyond);
    let team = VPath::parse("/team").unwrap();
    let sees = |p: &VPath| p.is_within(&team);
    let t = svc
        .trace(
            &Trace {
                id: a.clone(),
                ..Default::default()
            },
            &sees,
        )
        .unwrap();
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.edges[0].class, EdgeClass::Missing);
    let e = svc
        .trace(
            &Trace {
                id: hidden.clone(),
                ..Default::default()
            },
            &sees,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    // Out of sight reads exactly like an id that does not exist.
    let nowhere = "mem_01jd0000000000000000000000";
    let missing = svc
        .trace(
            &Trace {
                id: nowhere.into(),
                ..Default::default()
            },
            &everywhere,
        )
        .unwrap_err();
    assert_eq!(
        missing.message.replace(nowhere, "?"),
        e.message.replace(&hidden, "?")
    );
    assert_eq!(missing.hint, e.hint);
}

#[test]
fn trace_budgets_above_their_maxima_are_refused() {
    let (_d, svc) = service();
    let a = remember(&svc, "x", "/g", "fact");
    for t in [
        Trace {
            depth: Some(11),
            ..Default::default()
        },
        Trace {
            nodes: Some(501),
            ..Default::default()
        },
        Trace {
            edges: Some(0),
            ..Default::default()
        },
        Trace {
            max_bytes: Some(100),
            ..Default::default()
        },
    ] {
        let e = svc
            .trace(&Trace { id: a.clone(), ..t }, &everywhere)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        assert!(e.details["maximum"].is_number(), "{e:?}");
    }
}

#[test]
fn titles_are_one_line_and_bounded() {
    assert_eq!(title("a\n  b\tc", 10), "a b c");
    let t = title(&"x".repeat(50), 10);
    assert_eq!(t.chars().count(), 10);
    assert!(t.ends_with('…'));
}

#[test]
fn digests_differ_by_filter() {
    assert_ne!(filters_digest(&["/a", ""]), filters_digest(&["/a/", ""]));
    assert_ne!(filters_digest(&["a", "b"]), filters_digest(&["ab", ""]));
    assert_eq!(filters_digest(&["a"]).len(), 8);
}
