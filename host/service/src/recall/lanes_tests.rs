//! Lanes follow roles, questions are gaps, symbols need naming, tentative
//! memories are provisional (real sled store, real lexical index).

use super::ContextRequest;
use super::context::ContextPack;
use crate::audit::Actor;
use crate::config::WriteMode;
use crate::gate::{ProposalOp, ProposalRequest, ProposalStatus};
use crate::{RememberRequest, Service, WorkspaceConfig};
use mem_core::ErrorCode;
use mem_core::model::{FeedbackAction, Memory};
use mem_index::NativeIndex;
use mem_store::SledStore;
use std::path::Path;
use std::sync::Arc;

const CODING: &str = r#"{"namespace":"coding","types":[
    {"name":"project_rule","role":"constraint","capabilities":["check"],
     "fields":{"deny_any":{"required":true}}},
    {"name":"open_question","role":"question"}]}"#;

fn open(dir: &Path, mut cfg: WorkspaceConfig) -> Service {
    cfg.types
        .registry
        .add_schema("coding.json", CODING)
        .unwrap();
    let store = SledStore::open(&dir.join("store")).unwrap();
    let index =
        NativeIndex::open(&dir.join("index"), None, Some("no model in tests".into())).unwrap();
    let svc = Service::new(Arc::new(store), cfg).with_index(Arc::new(index));
    svc.open_index().unwrap();
    svc
}

fn remember(svc: &Service, content: &str, kind: &str, attrs: &[(&str, &str)]) -> Memory {
    svc.remember(&RememberRequest {
        content: content.into(),
        kind: kind.into(),
        path: "/proj".into(),
        attributes: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        idempotency_key: format!("k:{content}"),
        ..Default::default()
    })
    .unwrap()
    .memory
    .unwrap()
}

fn pack(svc: &Service, q: &str) -> ContextPack {
    svc.context(&ContextRequest {
        query: q.into(),
        ..Default::default()
    })
    .unwrap()
}

fn ids(items: &[super::context::ContextItem]) -> Vec<&str> {
    items.iter().map(|i| i.id.as_str()).collect()
}

/// Regression: `lane_of` placed by built-in kind: a decision (role
/// guidance) went to MUST and a schema `constraint` to CONTEXT.
#[test]
fn regression_a_schema_constraint_is_must_and_a_decision_is_should() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path(), WorkspaceConfig::default());
    let rule = remember(
        &svc,
        "Never force push the release branch",
        "coding.project_rule",
        &[("deny_any", "push --force")],
    );
    let d = remember(&svc, "We release the branch on Tuesdays", "decision", &[]);
    let f = remember(&svc, "The release branch is called stable", "fact", &[]);
    let p = pack(&svc, "release branch");
    assert_eq!(ids(&p.must), [rule.id.as_str()], "{p:#?}");
    assert_eq!(ids(&p.should), [d.id.as_str()]);
    assert_eq!(ids(&p.context), [f.id.as_str()]);
    assert!(
        p.must[0].reason.contains("role constraint"),
        "{}",
        p.must[0].reason
    );
}

#[test]
fn the_owner_can_make_a_builtin_kind_a_constraint() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = WorkspaceConfig::default();
    cfg.types
        .roles
        .insert("decision".into(), "constraint".into());
    cfg.types.registry.override_roles(&cfg.types.roles).unwrap();
    let svc = open(tmp.path(), cfg);
    let d = remember(&svc, "We release the branch on Tuesdays", "decision", &[]);
    assert_eq!(svc.role_of("decision").as_deref(), Some("constraint"));
    assert_eq!(ids(&pack(&svc, "release branch").must), [d.id.as_str()]);
}

/// Regression: MISSING said "decision (no packed item mentions it)" for
/// "storage decision" while the pack held the decision about storage.
#[test]
fn regression_a_query_word_naming_a_packed_kind_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path(), WorkspaceConfig::default());
    remember(&svc, "All storage goes through sled", "decision", &[]);
    let p = pack(&svc, "storage decision");
    assert_eq!(p.should.len(), 1, "{p:#?}");
    assert!(p.missing.is_empty(), "{:?}", p.missing);
    // A word nothing answers is still missing.
    let p = pack(&svc, "storage decision backups");
    let terms: Vec<&str> = p.missing.iter().map(|m| m.term.as_str()).collect();
    assert_eq!(terms, ["backups"]);
}

#[test]
fn a_question_is_a_known_gap_in_missing_not_a_packed_fact() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path(), WorkspaceConfig::default());
    let q = remember(
        &svc,
        "Which database backs the release dashboard?",
        "coding.open_question",
        &[],
    );
    let p = pack(&svc, "release dashboard database");
    assert!(
        p.must.is_empty() && p.should.is_empty() && p.context.is_empty(),
        "{p:#?}"
    );
    let gap = p
        .missing
        .iter()
        .find(|m| m.citation.as_deref() == Some(&format!("mem://memory/{}", q.id)))
        .expect("the question is listed as a gap");
    assert!(gap.reason.contains("known gap"), "{}", gap.reason);
}

#[test]
fn a_symbol_is_packed_only_when_the_query_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path(), WorkspaceConfig::default());
    let a = remember(
        &svc,
        "deploy script lives in ops/deploy.sh and takes the target host",
        "artifact",
        &[("name", "deploy script")],
    );
    let named = pack(&svc, "where is the deploy script");
    assert_eq!(ids(&named.context), [a.id.as_str()], "{named:#?}");
    let unnamed = pack(&svc, "how do we deploy");
    assert!(ids(&unnamed.context).is_empty(), "{unnamed:#?}");
    let r = unnamed
        .trace
        .rejected_by_gate
        .iter()
        .find(|r| r.id == a.id)
        .expect("rejected, not silently dropped");
    assert_eq!(
        (r.rule.as_str(), r.policy.as_deref()),
        ("no_task_match", None)
    );
}

#[test]
fn a_pin_leads_its_lane_but_does_not_change_the_role() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path(), WorkspaceConfig::default());
    let a = remember(&svc, "the garden gate is green", "fact", &[]);
    let b = remember(
        &svc,
        "the garden gate squeaks, the garden gate sticks",
        "fact",
        &[],
    );
    svc.feedback(&a.id, FeedbackAction::Pin, 1, &Actor::owner())
        .unwrap();
    let p = pack(&svc, "garden gate");
    assert!(p.must.is_empty(), "a pin is not a rule: {p:#?}");
    assert_eq!(ids(&p.context), [a.id.as_str(), b.id.as_str()]);
    assert!(
        p.context[0].reason.contains("pinned"),
        "{}",
        p.context[0].reason
    );
}

#[test]
fn low_confidence_alone_no_longer_makes_an_item_provisional() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = open(tmp.path(), WorkspaceConfig::default());
    let m = svc
        .remember(&RememberRequest {
            content: "the kettle is in the attic".into(),
            kind: "fact".into(),
            path: "/home".into(),
            confidence: Some(0.3),
            idempotency_key: "kettle".into(),
            ..Default::default()
        })
        .unwrap()
        .memory
        .unwrap();
    let p = pack(&svc, "kettle");
    assert_eq!(ids(&p.context), [m.id.as_str()], "{p:#?}");
}

fn queued(svc: &Service, content: &str, source: bool, key: &str) -> String {
    let mut draft = RememberRequest {
        content: content.into(),
        kind: "fact".into(),
        path: "/infra".into(),
        ..Default::default()
    };
    if source {
        draft.source_type = Some("log".into());
        draft.source_ref = Some("deploy.log".into());
    }
    let out = svc
        .propose(
            &ProposalRequest {
                op: ProposalOp::Create,
                targets: vec![],
                memory: Some(draft.draft()),
                evidence: vec![],
                reason: None,
                idempotency_key: key.into(),
            },
            &Actor::agent(Some("claude".into()), None),
        )
        .unwrap();
    assert_eq!(out.proposal.status, ProposalStatus::Queued);
    out.proposal.id
}

#[test]
fn a_tentative_approval_serves_as_provisional_until_feedback_raises_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = WorkspaceConfig::default();
    cfg.gate.default = WriteMode::Review;
    let svc = open(tmp.path(), cfg);
    let without_source = queued(&svc, "staging runs postgres 16", false, "p0");
    let e = svc
        .review_approve(&without_source, &Actor::owner(), None, true)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert!(e.message.contains("source"), "{}", e.message);

    let id = queued(&svc, "staging runs postgres 17", true, "p1");
    let p = svc
        .review_approve(&id, &Actor::owner(), None, true)
        .unwrap();
    assert!(p.tentative);
    let m = svc.memory(&p.result_ids[0]).unwrap();
    assert_eq!(m.confidence, crate::gate::TENTATIVE_CONFIDENCE);
    assert!(m.governance.as_ref().is_some_and(|g| g.tentative));
    let pk = pack(&svc, "staging postgres");
    assert_eq!(ids(&pk.provisional), [m.id.as_str()], "{pk:#?}");
    assert!(pk.provisional[0].reason.contains("tentative"));
    // Four useful votes lift 0.3 to 0.5: it serves by its role again.
    for v in 1..=4 {
        svc.feedback(&m.id, FeedbackAction::Useful, v, &Actor::owner())
            .unwrap();
    }
    let pk = pack(&svc, "staging postgres");
    assert_eq!(ids(&pk.context), [m.id.as_str()], "{pk:#?}");
}

#[test]
fn role_overrides_in_mem_toml_are_validated() {
    let bad = WorkspaceConfig::parse("[types]\nroles = { decision = \"law\" }\n").unwrap_err();
    assert_eq!(bad.code, ErrorCode::ConfigInvalid);
    let cfg = WorkspaceConfig::parse("[types]\nroles = { note = \"guidance\" }\n").unwrap();
    assert_eq!(cfg.types.registry.role_of("note"), Some("guidance"));
}
