//! Storing and answering relations, with a scripted detector: both ends
//! see a relation, recomputation replaces only its own findings, a failing
//! detector keeps its earlier ones, an item gone takes its relations along.

use super::*;
use crate::fake_host::FakeHost;
use crate::tests::service_with;
use crate::worker::{RELATE_UNDER_LOAD_EVERY, RELATE_WHILE_WRITING_EVERY, Round, cores};
use crate::{RememberRequest, WorkspaceConfig};
use detect::STEP_ITEMS;
use mem_core::plugin::{DetectedRelation, PluginsConfig};
use mem_core::{ErrorCode, VPath};
use std::sync::Arc;

/// `words`: items sharing the word "sled" are `same_topic`; a subject
/// with "crash" fails the detector.
fn words() -> FakeHost {
    FakeHost {
        config: PluginsConfig {
            related: vec!["words".into()],
            ..Default::default()
        },
        detect: Box::new(|subject, candidates| {
            if subject.text.contains("crash") {
                return Err(MemError::internal("the detector trapped"));
            }
            Ok(candidates
                .iter()
                .filter(|c| subject.text.contains("sled") && c.text.contains("sled"))
                .map(|c| DetectedRelation {
                    kind: "same_topic".into(),
                    target: c.id.clone(),
                    score: 0.7,
                    reason: "both say sled".into(),
                    difference: None,
                })
                // A kind `related` does not keep, and a target that is no candidate.
                .chain([
                    DetectedRelation {
                        kind: "rhymes_with".into(),
                        target: subject.id.clone(),
                        score: 0.9,
                        reason: "x".into(),
                        difference: None,
                    },
                    DetectedRelation {
                        kind: "same_topic".into(),
                        target: "mem_nope".into(),
                        score: 0.9,
                        reason: "x".into(),
                        difference: None,
                    },
                ])
                .collect())
        }),
        ..Default::default()
    }
}

fn remember(svc: &Service, content: &str, path: &str) -> String {
    svc.remember(&RememberRequest {
        content: content.into(),
        kind: "fact".into(),
        path: path.into(),
        idempotency_key: format!("k-{content}"),
        ..Default::default()
    })
    .unwrap()
    .memory
    .unwrap()
    .id
}

fn all(_: &VPath) -> bool {
    true
}

fn ids(r: &RelatedResult) -> Vec<&str> {
    r.relations.iter().map(|e| e.id.as_str()).collect()
}

#[test]
fn a_relation_is_stored_from_both_ends_with_its_detector_and_reason() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(words()));
    let a = remember(&svc, "we store data in sled", "/ops");
    let b = remember(&svc, "sled trees are flushed nightly", "/ops");
    let c = remember(&svc, "lunch is at noon", "/ops");
    assert!(svc.related(&a, None, 10, &all).unwrap().pending);
    let report = svc.refresh_related(false, 100).unwrap();
    assert_eq!(
        (report.items, report.relations, report.pending),
        (3, 2, false)
    );
    let ra = svc.related(&a, None, 10, &all).unwrap();
    assert_eq!(ids(&ra), [b.as_str()]);
    let e = &ra.relations[0];
    assert_eq!(
        (e.kind, e.item, e.detector.as_str()),
        (RelationType::SameTopic, ItemType::Memory, "words")
    );
    assert_eq!(e.reason, "both say sled");
    assert_eq!(e.label, "sled trees are flushed nightly");
    assert!(!ra.pending);
    assert_eq!(ids(&svc.related(&b, None, 10, &all).unwrap()), [a.as_str()]);
    assert!(
        svc.related(&c, None, 10, &all)
            .unwrap()
            .relations
            .is_empty()
    );
    // The type filter and the caller's paths apply.
    assert!(
        svc.related(&a, Some(RelationType::Sequel), 10, &all)
            .unwrap()
            .relations
            .is_empty()
    );
    // Outside the caller's paths the item reads as missing (a related
    // item outside them is left out: tests/all/related.rs).
    let e = svc.related(&a, None, 10, &|_| false).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

#[test]
fn a_refresh_is_bounded_and_resumes_where_it_stopped() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(words()));
    for i in 0..5 {
        remember(&svc, &format!("sled note {i}"), "/n");
    }
    let first = svc.refresh_related(false, 2).unwrap();
    assert_eq!((first.items, first.pending), (2, true));
    let rest = svc.refresh_related(false, 100).unwrap();
    assert_eq!((rest.items, rest.pending), (3, false));
    assert!(rest.watermark > first.watermark);
    // Nothing new: nothing to do; `all` recomputes everything again.
    assert_eq!(svc.refresh_related(false, 100).unwrap().items, 0);
    let again = svc.refresh_related(true, 100).unwrap();
    assert_eq!(again.items, 5);
    assert_eq!(again.relations, 20);
}

#[test]
fn a_failing_detector_keeps_its_earlier_findings_and_an_item_gone_takes_its_relations() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(words()));
    let a = remember(&svc, "sled is our store", "/ops");
    let b = remember(&svc, "sled again", "/ops");
    svc.refresh_related(false, 100).unwrap();
    // A crash note relates to nothing and fails; a and b keep their relation.
    let c = remember(&svc, "crash while reading sled", "/ops");
    let r = svc.refresh_related(false, 100).unwrap();
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    assert!(r.failures[0].starts_with("words: "));
    assert_eq!(ids(&svc.related(&a, None, 10, &all).unwrap()), [b.as_str()]);
    assert!(
        svc.related(&c, None, 10, &all)
            .unwrap()
            .relations
            .is_empty()
    );
    // Archived: hidden at once, removed from both ends by the next step.
    let m = svc.memory(&b).unwrap();
    svc.archive(
        &b,
        m.state_version,
        &crate::access::Access::owner().actor(None, None),
    )
    .unwrap();
    assert!(
        svc.related(&a, None, 10, &all)
            .unwrap()
            .relations
            .is_empty()
    );
    svc.refresh_related(false, 100).unwrap();
    let left = scan_all(svc.store(), Table::Relations, &format!("{a}\0")).unwrap();
    assert!(left.is_empty(), "{left:?}");
    let e = svc.related(&b, None, 10, &all).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

#[test]
fn limits_outside_one_to_a_hundred_are_bad_requests() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = remember(&svc, "x", "/a");
    for bad in [0, MAX_RELATED_LIMIT + 1] {
        let e = svc.related(&a, None, bad, &all).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        assert!(!e.hint.is_empty());
    }
    // Without detectors nothing is pending and nothing is computed.
    let r = svc.related(&a, None, 10, &all).unwrap();
    assert!(!r.pending && r.relations.is_empty());
    assert_eq!(svc.refresh_related(false, 10).unwrap().items, 0);
}

/// Holds `n` surface calls running, as a loaded server does.
fn busy(svc: &Service, n: usize) -> Vec<crate::worker::Foreground<'_>> {
    (0..n).map(|_| svc.foreground_call()).collect()
}

/// Regression: a bulk import's relations backlog took a step every few
/// seconds from a server whose every core was answering requests.
#[test]
fn calls_on_every_core_hold_the_relations_backlog_back_and_an_idle_server_works_through_it() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(words()));
    let first = remember(&svc, "sled note first", "/n");
    for i in 0..STEP_ITEMS + 5 {
        remember(&svc, &format!("sled note {i}"), "/n");
    }
    // The first step of a loaded server runs (none ran yet); the next
    // waits while every core is busy.
    let calls = busy(&svc, cores());
    assert!(svc.settle_with(Round::Writes), "a first step, more pending");
    let ago = |d| *svc.worker.related_at.lock() = std::time::Instant::now().checked_sub(d);
    ago(RELATE_WHILE_WRITING_EVERY);
    assert!(
        !svc.settle_with(Round::Writes),
        "no step while every core is busy"
    );
    assert!(svc.related(&first, None, 10, &all).unwrap().pending);
    // Long after the last step, one runs even under load.
    ago(RELATE_UNDER_LOAD_EVERY);
    svc.settle_with(Round::Writes);
    assert!(!svc.related(&first, None, 10, &all).unwrap().pending);
    drop(calls);
    // Fewer calls than cores: relations go on, a step per interval while
    // writes arrive.
    remember(&svc, "sled note late", "/n");
    let _one = busy(&svc, cores() - 1);
    assert!(
        !svc.settle_with(Round::Writes),
        "nothing computed within the interval"
    );
    assert_eq!(svc.refresh_related(false, 0).unwrap().items, 0);
    assert!(svc.related(&first, None, 10, &all).unwrap().pending);
    ago(RELATE_WHILE_WRITING_EVERY);
    assert!(
        !svc.settle_with(Round::Writes),
        "the step ran and nothing is left"
    );
    let late = svc.refresh_related(false, 100).unwrap();
    assert_eq!(late.items, 0, "{late:?}");
}

/// Regression: while an agent kept remembering, the worker computed a step
/// of relations (every candidate compared again in wasm) per write, and
/// took 40% of a searching server's CPU. Writes in one interval now share
/// one step; a round without writes waiting computes at once.
#[test]
fn writes_arriving_within_the_interval_share_one_step_of_relations() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(words()));
    let first = remember(&svc, "sled note first", "/n");
    assert!(!svc.settle_with(Round::Writes));
    assert!(!svc.related(&first, None, 10, &all).unwrap().pending);
    for i in 0..3 {
        remember(&svc, &format!("sled note {i}"), "/n");
        assert!(!svc.settle_with(Round::Writes));
        assert!(
            svc.related(&first, None, 10, &all).unwrap().pending,
            "write {i}"
        );
    }
    *svc.worker.related_at.lock() =
        std::time::Instant::now().checked_sub(RELATE_WHILE_WRITING_EVERY);
    svc.settle_with(Round::Writes);
    assert!(!svc.related(&first, None, 10, &all).unwrap().pending);
    remember(&svc, "sled note idle", "/n");
    svc.settle_with(Round::Idle);
    assert!(!svc.related(&first, None, 10, &all).unwrap().pending);
}

/// An idle server's worker computes a backlog step after step instead of
/// one step per idle wait.
#[test]
fn an_idle_worker_computes_a_backlog_without_waiting_between_steps() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = Arc::new(svc.with_plugins(Arc::new(words())));
    let first = remember(&svc, "sled note first", "/n");
    for i in 0..3 * STEP_ITEMS {
        remember(&svc, &format!("sled note {i}"), "/n");
    }
    let started = std::time::Instant::now();
    let worker = svc.spawn_worker().unwrap();
    while svc.related(&first, None, 10, &all).unwrap().pending {
        assert!(
            started.elapsed() < crate::worker::WORKER_IDLE,
            "the worker waited between steps of the backlog"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    worker.stop().unwrap();
}

/// `status` shows how far relations are computed behind the event log, to
/// whole-workspace callers, when detectors are configured.
#[test]
fn status_shows_the_relations_backlog_until_it_is_computed() {
    let (_d, plain) = service_with(WorkspaceConfig::default());
    remember(&plain, "sled note without detectors", "/n");
    assert_eq!(plain.status(&[]).unwrap().relations, None);
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(words()));
    for i in 0..3 {
        remember(&svc, &format!("sled note {i}"), "/n");
    }
    // (`status` takes it from here; the fake host lists no plugins.)
    let before = svc.relations_progress().unwrap().unwrap();
    assert!(before.pending, "{before:?}");
    assert!(before.log_head >= before.computed_to + 3, "{before:?}");
    svc.refresh_related(false, 100).unwrap();
    let after = svc.relations_progress().unwrap().unwrap();
    assert_eq!(
        (after.pending, after.computed_to),
        (false, after.log_head),
        "{after:?}"
    );
    // A caller confined to a folder sees nothing workspace-wide.
    let confined = svc.status(&[VPath::parse("/n").unwrap()]).unwrap();
    assert_eq!(confined.relations, None);
}
