//! Annotations from processing to decision: pending after processing,
//! accepted and rejected, replayed, conflicting, bounded against a hostile
//! processor, and never resurrected by re-processing.

use crate::Service;
use crate::access::Access;
use crate::fake_host::FakeHost;
use crate::ops::annotations::DecideAnnotation;
use crate::ops::files::FileInfo;
use crate::processing::Reindex;
use mem_core::model::{
    Annotation, AnnotationDecision, AnnotationKind, AnnotationStatus, MAX_DESCRIPTION_CHARS,
    MAX_TAG_ANNOTATIONS,
};
use mem_core::plugin::ProcessedFile;
use mem_core::{ErrorCode, MemResult, VPath};
use parking_lot::Mutex;
use std::sync::Arc;

type Suggest = Arc<Mutex<(Vec<String>, Option<String>)>>;

/// One processor, `text`, suggesting what `suggest` holds at call time.
fn suggesting(suggest: Suggest) -> FakeHost {
    FakeHost {
        processors: vec!["text".into()],
        process: Box::new(move |_| {
            let (tags, description) = suggest.lock().clone();
            let mut p = ProcessedFile {
                tags,
                ..Default::default()
            };
            if let Some(d) = description {
                p.metadata.insert("description".into(), d);
            }
            Ok(p)
        }),
        ..Default::default()
    }
}

fn setup(tags: &[&str], description: Option<&str>) -> (tempfile::TempDir, Service, Suggest) {
    let (d, svc) = crate::tests::service();
    let suggest: Suggest = Arc::new(Mutex::new((
        tags.iter().map(|t| t.to_string()).collect(),
        description.map(str::to_string),
    )));
    let svc = svc.with_plugins(Arc::new(suggesting(suggest.clone())));
    (d, svc, suggest)
}

fn put(svc: &Service, path: &str, bytes: &[u8], replace: bool) -> String {
    let id = svc
        .put_test(crate::TestPut {
            path: VPath::parse(path).unwrap(),
            bytes: bytes.to_vec(),
            tags: vec![],
            replace,
        })
        .unwrap()
        .file
        .id;
    svc.process_now(&id).unwrap();
    id
}

fn anns(svc: &Service, id: &str) -> Vec<Annotation> {
    svc.caller(&Access::owner())
        .run(FileInfo {
            target: id.into(),
            ..Default::default()
        })
        .unwrap()
        .value
        .annotations
}

fn find(svc: &Service, id: &str, kind: AnnotationKind, value: &str) -> Annotation {
    anns(svc, id)
        .into_iter()
        .find(|a| a.kind == kind && a.value == value)
        .unwrap_or_else(|| panic!("no {kind:?} {value}"))
}

fn version(svc: &Service, id: &str) -> u64 {
    svc.file_info(id).unwrap().state_version
}

fn decide(
    svc: &Service,
    file: &str,
    ann: &str,
    decision: AnnotationDecision,
    expected_version: u64,
) -> MemResult<crate::annotations::AnnotationDecided> {
    svc.caller(&Access::owner())
        .run(DecideAnnotation {
            target: file.into(),
            annotation_id: ann.into(),
            decision,
            expected_version,
            reason: Some("looked at it".into()),
            idempotency_key: None,
        })
        .map(|d| {
            assert_eq!(d.replayed, d.value.replayed);
            d.value
        })
}

#[test]
fn processing_leaves_suggestions_pending() {
    let (_d, svc, _) = setup(&["ops", "linux"], Some("A setup guide."));
    let id = put(&svc, "/guide.md", b"# Guide\n", false);
    let all = anns(&svc, &id);
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all.iter().all(|a| a.status == AnnotationStatus::Pending
        && a.producer == "text"
        && a.id.starts_with("ann_")
        && a.decided_at.is_none()));
    let d = find(&svc, &id, AnnotationKind::Description, "A setup guide.");
    assert_eq!(d.kind, AnnotationKind::Description);
    // Suggestions are not the file's tags until accepted.
    let f = svc.file_info(&id).unwrap();
    assert!(f.tags.is_empty() && f.description.is_none());
}

#[test]
fn accepting_a_tag_and_a_description_changes_the_file_and_rejecting_does_not() {
    let (_d, svc, _) = setup(&["ops", "linux"], Some("A setup guide."));
    let id = put(&svc, "/guide.md", b"# Guide\n", false);
    let ops = find(&svc, &id, AnnotationKind::Tag, "ops");
    let v = version(&svc, &id);
    let out = decide(&svc, &id, &ops.id, AnnotationDecision::Accept, v).unwrap();
    assert!(!out.replayed);
    assert_eq!(out.annotation.status, AnnotationStatus::Accepted);
    assert_eq!(out.annotation.decided_by.as_deref(), Some("human:owner"));
    assert_eq!(out.annotation.reason.as_deref(), Some("looked at it"));
    assert_eq!(out.file.tags, ["ops"]);
    assert_eq!(out.file.state_version, v + 1);

    let desc = find(&svc, &id, AnnotationKind::Description, "A setup guide.");
    let out = decide(&svc, &id, &desc.id, AnnotationDecision::Accept, v + 1).unwrap();
    assert_eq!(out.file.description.as_deref(), Some("A setup guide."));

    let linux = find(&svc, &id, AnnotationKind::Tag, "linux");
    let out = decide(&svc, &id, &linux.id, AnnotationDecision::Reject, v + 2).unwrap();
    assert_eq!(out.annotation.status, AnnotationStatus::Rejected);
    assert_eq!(out.file.tags, ["ops"], "a rejected tag does not join");
    assert_eq!(svc.file_info(&id).unwrap().state_version, v + 3);

    // Audited against the file, with who and why.
    let audit = svc
        .audit_list(&crate::AuditQuery {
            target: Some(id.clone()),
            ..Default::default()
        })
        .unwrap();
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "annotation-reject",
            "annotation-accept",
            "annotation-accept"
        ]
    );
    assert!(audit[0].reasons.iter().any(|r| r.contains(&linux.id)));
    assert!(audit[0].reasons.iter().any(|r| r == "reason: looked at it"));
}

#[test]
fn the_same_decision_replays_and_the_opposite_conflicts() {
    let (_d, svc, _) = setup(&["ops"], None);
    let id = put(&svc, "/a.md", b"a\n", false);
    let ops = find(&svc, &id, AnnotationKind::Tag, "ops");
    let v = version(&svc, &id);
    let first = decide(&svc, &id, &ops.id, AnnotationDecision::Accept, v).unwrap();
    // A retry carries the version it saw before its first attempt.
    let again = decide(&svc, &id, &ops.id, AnnotationDecision::Accept, v).unwrap();
    assert!(again.replayed);
    assert_eq!(again.annotation, first.annotation);
    assert_eq!(again.file.state_version, v + 1, "a replay changes nothing");

    let e = decide(&svc, &id, &ops.id, AnnotationDecision::Reject, v + 1).unwrap_err();
    assert_eq!(e.code, ErrorCode::AnnotationDecisionConflict);
    assert_eq!(e.code.http_status(), 409);
    assert_eq!(e.details["status"], "accepted");
    assert!(!e.hint.is_empty());
}

#[test]
fn a_stale_version_conflicts_and_says_the_current_one() {
    let (_d, svc, _) = setup(&["ops"], None);
    let id = put(&svc, "/a.md", b"a\n", false);
    let ops = find(&svc, &id, AnnotationKind::Tag, "ops");
    let v = version(&svc, &id);
    let e = decide(&svc, &id, &ops.id, AnnotationDecision::Accept, v - 1).unwrap_err();
    assert_eq!(e.code, ErrorCode::AnnotationVersionConflict);
    assert_eq!(e.code.http_status(), 409);
    assert_eq!(e.details["current_version"], v);
    assert_eq!(
        find(&svc, &id, AnnotationKind::Tag, "ops").status,
        AnnotationStatus::Pending
    );

    let e = decide(&svc, &id, "ann_nope", AnnotationDecision::Accept, v).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

#[test]
fn a_hostile_processor_cannot_store_oversize_or_invalid_annotations() {
    let mut tags: Vec<String> = (0..1000).map(|i| format!("t{i}")).collect();
    tags.insert(0, "has space".into());
    tags.insert(1, "x".repeat(65));
    tags.insert(2, "comma,tag".into());
    tags.insert(3, "\u{200b}hidden".into());
    tags.insert(4, String::new());
    let tag_refs: Vec<&str> = tags.iter().map(String::as_str).collect();
    let long = format!("bell\u{7}{}", "d".repeat(10_000));
    let (_d, svc, _) = setup(&tag_refs, Some(&long));
    let id = put(&svc, "/h.md", b"h\n", false);
    let details = svc
        .caller(&Access::owner())
        .run(FileInfo {
            target: id.clone(),
            ..Default::default()
        })
        .unwrap()
        .value;
    let all = details.annotations;
    let tags: Vec<&Annotation> = all
        .iter()
        .filter(|a| a.kind == AnnotationKind::Tag)
        .collect();
    assert_eq!(tags.len(), MAX_TAG_ANNOTATIONS);
    assert!(tags.iter().all(|a| crate::files::tag_ok(&a.value)));
    assert_eq!(
        tags[0].value, "t0",
        "invalid tags are dropped, not kept first"
    );
    let descs: Vec<&Annotation> = all
        .iter()
        .filter(|a| a.kind == AnnotationKind::Description)
        .collect();
    assert_eq!(descs.len(), 1);
    assert_eq!(descs[0].value.chars().count(), MAX_DESCRIPTION_CHARS);
    assert!(!descs[0].value.chars().any(char::is_control));
    let notes = details.annotation_notes.join("\n");
    for said in [
        "5 suggested tag(s) dropped",
        "980 suggested tag(s) dropped",
        "cut to 2000 characters",
        "control or invisible characters removed",
    ] {
        assert!(notes.contains(said), "{said:?} not in {notes}");
    }
}

#[test]
fn reprocessing_neither_duplicates_nor_resurrects_decided_annotations() {
    let (_d, svc, _) = setup(&["ops", "linux", "misc"], Some("About setup."));
    let id = put(&svc, "/a.md", b"a\n", false);
    let ops = find(&svc, &id, AnnotationKind::Tag, "ops");
    let linux = find(&svc, &id, AnnotationKind::Tag, "linux");
    let misc = find(&svc, &id, AnnotationKind::Tag, "misc");
    let v = version(&svc, &id);
    decide(&svc, &id, &ops.id, AnnotationDecision::Accept, v).unwrap();
    decide(&svc, &id, &linux.id, AnnotationDecision::Reject, v + 1).unwrap();

    svc.reindex(Reindex::File(id.clone())).unwrap();
    svc.reindex(Reindex::File(id.clone())).unwrap();
    let all = anns(&svc, &id);
    assert_eq!(all.len(), 4, "{all:?}");
    assert_eq!(
        find(&svc, &id, AnnotationKind::Tag, "ops").status,
        AnnotationStatus::Accepted
    );
    assert_eq!(
        find(&svc, &id, AnnotationKind::Tag, "linux").status,
        AnnotationStatus::Rejected
    );
    assert_eq!(
        find(&svc, &id, AnnotationKind::Tag, "misc").id,
        misc.id,
        "a pending suggestion keeps its id"
    );
    assert_eq!(svc.file_info(&id).unwrap().tags, ["ops"]);
}

#[test]
fn new_content_drops_stale_pending_suggestions_and_keeps_decisions() {
    let (_d, svc, suggest) = setup(&["ops", "misc"], None);
    let id = put(&svc, "/a.md", b"a\n", false);
    let ops = find(&svc, &id, AnnotationKind::Tag, "ops");
    decide(
        &svc,
        &id,
        &ops.id,
        AnnotationDecision::Reject,
        version(&svc, &id),
    )
    .unwrap();
    *suggest.lock() = (vec!["ops".into(), "fresh".into()], None);
    put(&svc, "/a.md", b"b\n", true);
    let all = anns(&svc, &id);
    let values: Vec<(&str, AnnotationStatus)> =
        all.iter().map(|a| (a.value.as_str(), a.status)).collect();
    assert_eq!(
        values,
        [
            ("ops", AnnotationStatus::Rejected),
            ("fresh", AnnotationStatus::Pending)
        ]
    );

    // Removing the file removes its annotations.
    svc.remove_path(&id, false).unwrap();
    assert!(svc.annotations(&id).unwrap().items.is_empty());
}
