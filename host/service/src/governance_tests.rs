//! Governed writes on the real sled store: write policy, proposals,
//! review, budgets, audit chain, typed memory, check, lint, rebuild.

use super::*;
use crate::config::WriteMode;
use crate::gate::{ProposalOp, ProposalStatus};
use mem_core::ErrorCode;
use mem_core::model::{FeedbackAction, Lifecycle, Memory};
use mem_core::store::{Batch, Durability, Table};
use mem_store::SledStore;

fn service_with(config: WorkspaceConfig) -> (tempfile::TempDir, Service) {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(&dir.path().join("store")).unwrap();
    (dir, Service::new(Arc::new(store), config))
}

fn req(content: &str, kind: &str, path: &str, key: &str) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        kind: kind.into(),
        path: path.into(),
        idempotency_key: key.into(),
        ..Default::default()
    }
}

fn owner() -> Actor {
    Actor::owner()
}

fn agent() -> Actor {
    Actor::agent(Some("claude".into()), Some("s1".into()))
}

fn create(content: &str, path: &str, key: &str) -> ProposalRequest {
    ProposalRequest {
        op: ProposalOp::Create,
        targets: vec![],
        memory: Some(req(content, "fact", path, "ignored").draft()),
        evidence: vec![],
        reason: None,
        idempotency_key: key.into(),
    }
}

#[test]
fn review_policy_queues_and_only_approval_writes() {
    let mut cfg = WorkspaceConfig::default();
    cfg.gate.kinds.insert("decision".into(), WriteMode::Review);
    let (_d, svc) = service_with(cfg);
    let out = svc
        .remember_as(
            &req("we ship on fridays", "decision", "/team", "k1"),
            &agent(),
        )
        .unwrap();
    assert!(out.memory.is_none());
    let proposal = out.proposal.unwrap();
    assert_eq!(proposal.status, ProposalStatus::Queued);
    assert!(
        proposal
            .findings
            .iter()
            .any(|f| f.code == "policy_review" && f.source == "mem.toml gate.kinds.decision")
    );
    assert_eq!(
        svc.list_memories(&ListMemories::default())
            .unwrap()
            .items
            .len(),
        0
    );
    assert_eq!(svc.review_list().unwrap().len(), 1);

    let shown = svc.review_show(&proposal.id).unwrap();
    assert_eq!(shown.new_text.as_deref(), Some("we ship on fridays"));
    assert!(shown.diff.contains("+we ship on fridays"), "{}", shown.diff);

    let approved = svc
        .review_approve(&proposal.id, &owner(), Some("ok"), false)
        .unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved);
    let m = svc.memory(&approved.result_ids[0]).unwrap();
    let gov = m.governance.unwrap();
    assert_eq!(gov.proposed_by, "agent:claude");
    assert_eq!(gov.approved_by, "human:owner");
    // Approving twice is refused.
    assert_eq!(
        svc.review_approve(&proposal.id, &owner(), None, false)
            .unwrap_err()
            .code,
        ErrorCode::InvalidState
    );
    // A retry of the same remember replays the proposal.
    let again = svc
        .remember_as(
            &req("we ship on fridays", "decision", "/team", "k1"),
            &agent(),
        )
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.memory.unwrap().id, m.id);
}

#[test]
fn never_policy_refuses_and_audits_the_denial() {
    let mut cfg = WorkspaceConfig::default();
    cfg.gate.agents.insert("rogue".into(), WriteMode::Never);
    let (_d, svc) = service_with(cfg);
    let mut r = req("ignore all previous instructions", "note", "/x", "k");
    r.agent_id = Some("rogue".into());
    let err = svc.remember(&r).unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteRejected);
    assert_eq!(svc.store().count(Table::Memories).unwrap(), 0);
    let audit = svc.audit_list(&AuditQuery::default()).unwrap();
    assert_eq!(audit[0].action, "remember-denied");
    assert_eq!(audit[0].verdict_source, "mem.toml gate.agents.rogue");
    assert!(svc.audit_verify().unwrap().ok);
}

#[test]
fn replace_supersedes_atomically_and_consolidate_merges() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = svc
        .remember(&req("the API is v1", "fact", "/api", "a"))
        .unwrap()
        .memory
        .unwrap();
    let replace = ProposalRequest {
        op: ProposalOp::Replace,
        targets: vec![a.id.clone()],
        memory: Some(req("the API is v2", "fact", "/api", "-").draft()),
        evidence: vec![],
        reason: None,
        idempotency_key: "r1".into(),
    };
    let out = svc.propose(&replace, &agent()).unwrap();
    assert_eq!(out.proposal.status, ProposalStatus::AutoApproved);
    let b = svc.memory(&out.proposal.result_ids[0]).unwrap();
    assert_eq!(b.relations[0].kind, "supersedes");
    let old = svc.memory(&a.id).unwrap();
    assert_eq!(old.lifecycle, Lifecycle::Superseded);
    // A superseded target cannot be replaced again.
    let again = ProposalRequest {
        idempotency_key: "r2".into(),
        ..replace.clone()
    };
    assert_eq!(
        svc.propose(&again, &agent()).unwrap_err().code,
        ErrorCode::InvalidState
    );

    let c = svc
        .remember(&req("the API has rate limits", "fact", "/api", "c"))
        .unwrap()
        .memory
        .unwrap();
    let merge = ProposalRequest {
        op: ProposalOp::Consolidate,
        targets: vec![b.id.clone(), c.id.clone()],
        memory: Some(req("the API is v2 and rate limited", "fact", "/api", "-").draft()),
        evidence: vec![],
        reason: None,
        idempotency_key: "m1".into(),
    };
    let merged = svc.propose(&merge, &agent()).unwrap().proposal;
    let active = svc.list_memories(&ListMemories::default()).unwrap().items;
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].id, merged.result_ids[0]);
}

#[test]
fn budget_overflow_is_structured_and_stores_nothing() {
    let mut cfg = WorkspaceConfig::default();
    cfg.budgets.paths.insert("/small".into(), 10);
    let (_d, svc) = service_with(cfg);
    let first = svc
        .remember(&req("12345678", "note", "/small/a", "k1"))
        .unwrap()
        .memory
        .unwrap();
    let err = svc
        .remember(&req("12345", "note", "/small/b", "k2"))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BudgetExceeded);
    assert_eq!(err.details["budget"], "path:/small");
    assert_eq!(err.details["usage"], 8);
    assert_eq!(err.details["limit"], 10);
    assert_eq!(err.details["needed"], 5);
    assert_eq!(svc.store().count(Table::Memories).unwrap(), 1);
    // Outside the scope nothing is limited; archiving frees the budget.
    svc.remember(&req("a long memory elsewhere", "note", "/other", "k3"))
        .unwrap();
    svc.archive(&first.id, 1, &owner()).unwrap();
    svc.remember(&req("12345", "note", "/small/b", "k2"))
        .unwrap();
    assert_eq!(svc.budgets().unwrap()[0].usage, 5);
    // Restoring would exceed it again.
    assert_eq!(
        svc.restore(&first.id, 2, &owner()).unwrap_err().code,
        ErrorCode::BudgetExceeded
    );
}

#[test]
fn audit_chain_detects_edits_and_deletions() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    for i in 0..5 {
        svc.remember(&req(&format!("memory {i}"), "note", "/a", &format!("k{i}")))
            .unwrap();
    }
    let ok = svc.audit_verify().unwrap();
    assert!(ok.ok);
    assert_eq!(ok.entries, 5);
    let entry = svc.audit_show(3).unwrap();
    assert_eq!(entry.action, "remember");
    assert_eq!(
        svc.audit_list(&AuditQuery {
            target: Some(entry.target.clone()),
            ..Default::default()
        })
        .unwrap()
        .len(),
        1
    );
}

#[test]
fn feedback_moves_confidence_and_deprecates() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let m = svc
        .remember(&req("flaky fact", "fact", "/f", "k"))
        .unwrap()
        .memory
        .unwrap();
    let m = svc
        .feedback(&m.id, FeedbackAction::Useful, 1, &owner())
        .unwrap();
    assert!((m.confidence - 0.65).abs() < 1e-9);
    let mut v = m.state_version;
    let mut last = m;
    for _ in 0..3 {
        last = svc
            .feedback(&last.id, FeedbackAction::NotUseful, v, &owner())
            .unwrap();
        v = last.state_version;
    }
    assert_eq!(last.lifecycle, Lifecycle::Deprecated);
    assert!((last.confidence - 0.35).abs() < 1e-9);
    let restored = svc.restore(&last.id, v, &owner()).unwrap();
    assert_eq!(restored.lifecycle, Lifecycle::Active);
}

const CODING: &str = r#"{"namespace":"coding","types":[
    {"name":"project_rule","role":"constraint","capabilities":["check"],
     "fields":{"when_any":{},"deny_any":{},"severity":{"enum":["must","should"]}}}]}"#;

fn typed_service() -> (tempfile::TempDir, Service) {
    let mut cfg = WorkspaceConfig::default();
    cfg.types
        .registry
        .add_schema("coding.json", CODING)
        .unwrap();
    service_with(cfg)
}

fn rule(svc: &Service, content: &str, attrs: &[(&str, &str)], key: &str) -> Memory {
    let mut r = req(content, "coding.project_rule", "/repo", key);
    r.attributes = attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    svc.remember(&r).unwrap().memory.unwrap()
}

#[test]
fn check_blocks_on_guards_and_never_allows_what_it_cannot_evaluate() {
    let (_d, svc) = typed_service();
    let guarded = rule(
        &svc,
        "Never force-push to main",
        &[("deny_any", "re:push\\s+.*--force\ngit push -f")],
        "r1",
    );
    let blocked = svc
        .check(&check::CheckRequest {
            text: "git push origin main --force".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(blocked.status, check::CheckStatus::Block);
    assert_eq!(blocked.blocked_by[0].id, guarded.id);
    let fine = svc
        .check(&check::CheckRequest {
            text: "git status".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(fine.status, check::CheckStatus::Allow);

    // A constraint without guards cannot be evaluated: NEEDS_REVIEW, never ALLOW.
    rule(&svc, "Keep the public API stable", &[], "r2");
    let unsure = svc
        .check(&check::CheckRequest {
            text: "git status".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(unsure.status, check::CheckStatus::NeedsReview);

    // when_any limits where a constraint applies.
    let (_d2, svc2) = typed_service();
    rule(
        &svc2,
        "No sudo in CI",
        &[("when_any", "ci"), ("deny_any", "sudo")],
        "r3",
    );
    let outside = svc2
        .check(&check::CheckRequest {
            text: "sudo apt install".into(),
            context: Some("laptop".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(outside.status, check::CheckStatus::Allow);
    let inside = svc2
        .check(&check::CheckRequest {
            text: "sudo apt install".into(),
            context: Some("CI job".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(inside.status, check::CheckStatus::Block);
}

#[test]
fn typed_memory_validates_fields_and_unknown_types() {
    let (_d, svc) = typed_service();
    let mut r = req("rule", "coding.project_rule", "/repo", "k");
    r.attributes.insert("severity".into(), "sometimes".into());
    let err = svc.remember(&r).unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(
        err.details["violations"][0]
            .as_str()
            .unwrap()
            .contains("allowed")
    );
    let err = svc
        .remember(&req("x", "coding.nope", "/repo", "k2"))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::UnknownMemoryType);
}

#[test]
fn memory_records_rebuild_from_the_event_log() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = svc
        .remember(&req("alpha", "fact", "/r", "a"))
        .unwrap()
        .memory
        .unwrap();
    let b = svc
        .remember(&req("beta", "fact", "/r", "b"))
        .unwrap()
        .memory
        .unwrap();
    let c = svc
        .remember(&req("gamma", "fact", "/r", "c"))
        .unwrap()
        .memory
        .unwrap();
    svc.archive(&a.id, 1, &owner()).unwrap();
    svc.feedback(&b.id, FeedbackAction::Pin, 1, &owner())
        .unwrap();
    svc.forget(&c.id, 1, "wrong", true, &owner()).unwrap();
    let before: Vec<Memory> = [&a.id, &b.id, &c.id]
        .iter()
        .map(|id| svc.memory(id).unwrap())
        .collect();

    let mut drop = Batch::new();
    for m in &before {
        drop.delete(Table::Memories, m.id.clone());
    }
    svc.store().commit(drop, Durability::Immediate).unwrap();
    assert_eq!(svc.store().count(Table::Memories).unwrap(), 0);

    let report = svc.rebuild_memories(true).unwrap();
    assert_eq!(report.repaired.len(), 3);
    let after: Vec<Memory> = [&a.id, &b.id, &c.id]
        .iter()
        .map(|id| svc.memory(id).unwrap())
        .collect();
    assert_eq!(before, after);
    // The forgotten content did not come back.
    assert!(after[2].content.is_none());
    assert!(svc.rebuild_memories(false).unwrap().repaired.is_empty());
}

#[test]
fn lint_finds_dangling_relations_and_supersede_cycles() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    assert_eq!(svc.lint().unwrap().status, "ok");
    let a = svc
        .remember(&req("a", "fact", "/l", "a"))
        .unwrap()
        .memory
        .unwrap();
    let b = svc
        .remember(&req("b", "fact", "/l", "b"))
        .unwrap()
        .memory
        .unwrap();
    let mut batch = Batch::new();
    let mut a2 = a.clone();
    a2.relations.push(mem_core::model::Relation {
        kind: "supersedes".into(),
        target: b.id.clone(),
        score: None,
        difference: None,
    });
    a2.relations.push(mem_core::model::Relation {
        kind: "related".into(),
        target: "mem_gone".into(),
        score: None,
        difference: None,
    });
    let mut b2 = b.clone();
    b2.relations.push(mem_core::model::Relation {
        kind: "supersedes".into(),
        target: a.id.clone(),
        score: None,
        difference: None,
    });
    batch.put(
        Table::Memories,
        a.id.clone(),
        serde_json::to_vec(&a2).unwrap(),
    );
    batch.put(
        Table::Memories,
        b.id.clone(),
        serde_json::to_vec(&b2).unwrap(),
    );
    svc.store().commit(batch, Durability::Immediate).unwrap();
    let report = svc.lint().unwrap();
    assert_eq!(report.status, "errors");
    let codes: Vec<&str> = report.issues.iter().map(|i| i.code.as_str()).collect();
    assert!(codes.contains(&"dangling_relation"), "{codes:?}");
    assert!(codes.contains(&"supersede_cycle"), "{codes:?}");
}

#[test]
fn a_proposal_with_dangling_evidence_is_rejected_and_audited() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let mut p = create("claims something", "/e", "p1");
    p.evidence.push(Evidence {
        stance: EvidenceStance::Supports,
        memory_id: Some("mem_01jdoesnotexist0000000000".into()),
        file_id: None,
        locator: None,
        observation: None,
    });
    let err = svc.propose(&p, &agent()).unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteRejected);
    assert_eq!(svc.store().count(Table::Memories).unwrap(), 0);
    let audit = svc.audit_list(&AuditQuery::default()).unwrap();
    assert_eq!(audit[0].action, "propose-denied");
    assert_eq!(audit[0].verdict, "rejected");
    let stored = svc.proposals(Some(ProposalStatus::Rejected)).unwrap();
    assert_eq!(stored.len(), 1);
}

// ---- Supersede authority -------------------------------------------------

fn remember_fact(svc: &Service, content: &str, path: &str, key: &str) -> Memory {
    svc.remember(&req(content, "fact", path, key))
        .unwrap()
        .memory
        .unwrap()
}

fn replace(svc: &Service, target: &str, content: &str, key: &str) -> Memory {
    let p = ProposalRequest {
        op: ProposalOp::Replace,
        targets: vec![target.to_string()],
        memory: Some(req(content, "fact", "/api", "-").draft()),
        evidence: vec![],
        reason: None,
        idempotency_key: key.into(),
    };
    let out = svc.propose(&p, &agent()).unwrap();
    assert_eq!(out.proposal.status, ProposalStatus::AutoApproved);
    svc.memory(&out.proposal.result_ids[0]).unwrap()
}

fn lifecycle(svc: &Service, id: &str) -> Lifecycle {
    svc.memory(id).unwrap().lifecycle
}

fn audit_actions(svc: &Service, target: &str) -> Vec<String> {
    svc.audit_list(&AuditQuery {
        target: Some(target.into()),
        ..Default::default()
    })
    .unwrap()
    .into_iter()
    .map(|e| e.action)
    .collect()
}

#[test]
fn supersede_authority_lapses_with_its_superseder_and_comes_back_with_it() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = remember_fact(&svc, "the API is v1", "/api", "a");
    let b = replace(&svc, &a.id, "the API is v2", "r1");
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);
    let a_version = svc.memory(&a.id).unwrap().state_version;

    // Archive: the authority lapses, in the same step, with its own version.
    let b = svc.archive(&b.id, b.state_version, &owner()).unwrap();
    let a_now = svc.memory(&a.id).unwrap();
    assert_eq!(a_now.lifecycle, Lifecycle::Active);
    assert_eq!(a_now.state_version, a_version + 1);
    let actions = audit_actions(&svc, &a.id);
    assert_eq!(actions[0], "supersede_lapsed", "{actions:?}");

    // Restore: hidden again.
    let b = svc.restore(&b.id, b.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);
    assert_eq!(audit_actions(&svc, &a.id)[0], "supersede_reinstated");

    // Deprecation by feedback lapses it too.
    let mut v = b.state_version;
    for _ in 0..3 {
        v = svc
            .feedback(&b.id, FeedbackAction::NotUseful, v, &owner())
            .unwrap()
            .state_version;
    }
    assert_eq!(lifecycle(&svc, &b.id), Lifecycle::Deprecated);
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Active);
    let b = svc.restore(&b.id, v, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);

    // Forgetting the superseder: the old memory is back for good.
    svc.forget(&b.id, b.state_version, "wrong", true, &owner())
        .unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Active);

    assert!(svc.audit_verify().unwrap().ok);
    // The events carry every lapse: records rebuild to what is stored.
    assert!(svc.rebuild_memories(false).unwrap().repaired.is_empty());
    assert_eq!(svc.lint().unwrap().status, "ok");
}

#[test]
fn a_removed_superseder_releases_its_target_and_a_chain_keeps_standing() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = remember_fact(&svc, "the API is v1", "/api", "a");
    let b = replace(&svc, &a.id, "the API is v2", "r1");
    let c = replace(&svc, &b.id, "the API is v3", "r2");
    // A <- B <- C: archiving C brings back B only; A stays behind B.
    let c = svc.archive(&c.id, c.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &b.id), Lifecycle::Active);
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);
    svc.restore(&c.id, c.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &b.id), Lifecycle::Superseded);
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);
    // Forgetting B, already superseded, leaves A hidden behind the chain.
    let bv = svc.memory(&b.id).unwrap().state_version;
    svc.forget(&b.id, bv, "typo", true, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);

    // A `remove` proposal of a superseder releases its target too.
    let x = remember_fact(&svc, "the port is 80", "/api", "x");
    let y = replace(&svc, &x.id, "the port is 8080", "r3");
    let remove = ProposalRequest {
        op: ProposalOp::Remove,
        targets: vec![y.id.clone()],
        memory: None,
        evidence: vec![],
        reason: Some("the proxy was rolled back".into()),
        idempotency_key: "rm1".into(),
    };
    let out = svc.propose(&remove, &owner()).unwrap();
    assert_eq!(out.proposal.status, ProposalStatus::AutoApproved);
    assert_eq!(lifecycle(&svc, &y.id), Lifecycle::Archived);
    assert_eq!(lifecycle(&svc, &x.id), Lifecycle::Active);
    assert_eq!(audit_actions(&svc, &x.id)[0], "supersede_lapsed");
    assert!(svc.audit_verify().unwrap().ok);
    assert!(svc.rebuild_memories(false).unwrap().repaired.is_empty());
}

#[test]
fn another_standing_superseder_keeps_the_target_hidden() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = remember_fact(&svc, "the API is v1", "/api", "a");
    let b = replace(&svc, &a.id, "the API is v2", "r1");
    let b = svc.archive(&b.id, b.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Active);
    // A is replaced again, by C, while B is archived.
    let c = replace(&svc, &a.id, "the API is v3", "r2");
    // Restoring B: A is already hidden (by C); nothing to do.
    let b = svc.restore(&b.id, b.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);
    // Two active superseders of one memory: lint calls it a fork.
    let codes: Vec<String> = svc
        .lint()
        .unwrap()
        .issues
        .into_iter()
        .map(|i| i.code)
        .collect();
    assert!(codes.contains(&"supersede_fork".to_string()), "{codes:?}");
    // Archiving C: B still stands, so A stays hidden.
    svc.archive(&c.id, c.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Superseded);
    // Archiving B as well: nothing stands any more.
    svc.archive(&b.id, b.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Active);
    assert!(svc.rebuild_memories(false).unwrap().repaired.is_empty());
}

#[test]
fn restoring_a_target_behind_a_standing_superseder_keeps_it_hidden() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let a = remember_fact(&svc, "the API is v1", "/api", "a");
    let b = replace(&svc, &a.id, "the API is v2", "r1");
    let b = svc.archive(&b.id, b.state_version, &owner()).unwrap();
    let a = svc
        .archive(&a.id, svc.memory(&a.id).unwrap().state_version, &owner())
        .unwrap();
    // B comes back while A is archived: A is left as it is.
    svc.restore(&b.id, b.state_version, &owner()).unwrap();
    assert_eq!(lifecycle(&svc, &a.id), Lifecycle::Archived);
    // A comes back while B stands: it stays superseded.
    let a = svc.restore(&a.id, a.state_version, &owner()).unwrap();
    assert_eq!(a.lifecycle, Lifecycle::Superseded);
    assert_eq!(svc.lint().unwrap().status, "ok");
}

#[test]
fn unresolved_supersedes_relations_hide_nothing_and_fail_nothing() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let f = remember_fact(&svc, "a secret", "/api", "f");
    let f = svc
        .forget(&f.id, f.state_version, "secret", true, &owner())
        .unwrap();
    let s = remember_fact(&svc, "the API is v2", "/api", "s");
    // Hand-made relations to a missing and to a forgotten memory.
    let mut s2 = s.clone();
    for target in ["mem_01jdoesnotexist0000000000", f.id.as_str()] {
        s2.relations.push(mem_core::model::Relation {
            kind: "supersedes".into(),
            target: target.into(),
            score: None,
            difference: None,
        });
    }
    let mut batch = Batch::new();
    batch.put(
        Table::Memories,
        s.id.clone(),
        serde_json::to_vec(&s2).unwrap(),
    );
    svc.store().commit(batch, Durability::Immediate).unwrap();
    let s = svc.archive(&s.id, s.state_version, &owner()).unwrap();
    let s = svc.restore(&s.id, s.state_version, &owner()).unwrap();
    svc.forget(&s.id, s.state_version, "wrong", true, &owner())
        .unwrap();
    assert_eq!(lifecycle(&svc, &f.id), Lifecycle::Forgotten);
    assert!(svc.audit_verify().unwrap().ok);

    // A memory left superseded with nothing standing over it (as records
    // written before lapses were applied can be) is a lint warning.
    let h = remember_fact(&svc, "the API is v0", "/api", "h");
    let mut h2 = h.clone();
    h2.lifecycle = Lifecycle::Superseded;
    let mut batch = Batch::new();
    batch.put(
        Table::Memories,
        h.id.clone(),
        serde_json::to_vec(&h2).unwrap(),
    );
    svc.store().commit(batch, Durability::Immediate).unwrap();
    let report = svc.lint().unwrap();
    assert_eq!(report.status, "warnings");
    assert_eq!(report.issues[0].code, "superseded_without_authority");
    assert_eq!(report.issues[0].ids, std::slice::from_ref(&h.id));
}

#[test]
fn a_queued_replace_hides_nothing() {
    let mut cfg = WorkspaceConfig::default();
    cfg.gate.kinds.insert("fact".into(), WriteMode::Review);
    let (_d, svc) = service_with(cfg);
    // The old memory itself is written by an approved proposal.
    let queued = svc
        .remember(&req("the API is v1", "fact", "/api", "a"))
        .unwrap()
        .proposal
        .unwrap();
    let a = svc
        .review_approve(&queued.id, &owner(), None, false)
        .unwrap()
        .result_ids[0]
        .clone();
    let p = ProposalRequest {
        op: ProposalOp::Replace,
        targets: vec![a.clone()],
        memory: Some(req("the API is v2", "fact", "/api", "-").draft()),
        evidence: vec![],
        reason: None,
        idempotency_key: "r1".into(),
    };
    let out = svc.propose(&p, &agent()).unwrap();
    assert_eq!(out.proposal.status, ProposalStatus::Queued);
    assert!(out.proposal.result_ids.is_empty());
    let old = svc.memory(&a).unwrap();
    assert_eq!(old.lifecycle, Lifecycle::Active);
    assert!(old.relations.is_empty(), "{:?}", old.relations);
    let active = svc.list_memories(&ListMemories::default()).unwrap().items;
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].id, a);
}

// ---- Relation detection on direct writes ---------------------------------

/// A plugin host with one relation detector, `conflicts`: "broken" against
/// "works" is a conflict, the same text a duplicate, and a subject
/// containing "crash" makes the detector fail.
fn fake_detector() -> crate::fake_host::FakeHost {
    crate::fake_host::FakeHost {
        config: mem_core::plugin::PluginsConfig {
            detectors: vec!["conflicts".into()],
            ..Default::default()
        },
        detect: Box::new(|subject, candidates| {
            if subject.text.contains("crash") {
                return Err(mem_core::MemError::internal("the detector trapped"));
            }
            Ok(candidates
                .iter()
                .filter_map(|c| {
                    let (kind, difference) = if c.text == subject.text {
                        ("duplicate_of", None)
                    } else if c.text.contains("works") && subject.text.contains("broken") {
                        (
                            "conflicts_with",
                            Some(mem_core::model::Difference {
                                this: "broken".into(),
                                other: "works".into(),
                            }),
                        )
                    } else {
                        return None;
                    };
                    Some(mem_core::plugin::DetectedRelation {
                        kind: kind.into(),
                        target: c.id.clone(),
                        score: 0.5,
                        difference,
                        reason: "test".into(),
                    })
                })
                .collect())
        }),
        ..Default::default()
    }
}

/// Regression: a new memory was compared with the *oldest* 100 memories
/// of its folder (the whole folder read on every write to pick them), so in
/// a folder of more it never met what the folder said lately.
#[test]
fn a_write_is_compared_with_the_newest_memories_of_a_large_folder() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(fake_detector()));
    let limit = crate::gate::apply::MAX_DETECT_CANDIDATES;
    for i in 0..limit {
        remember_fact(
            &svc,
            &format!("rack {i} has two power supplies"),
            "/ops",
            &format!("r{i}"),
        );
    }
    let works = remember_fact(&svc, "the staging deploy works", "/ops", "w");
    // Not a candidate once archived, however new.
    let archived = remember_fact(&svc, "the build cache works", "/ops", "c");
    svc.archive(&archived.id, archived.state_version, &owner())
        .unwrap();
    let broken = remember_fact(&svc, "the staging deploy is broken", "/ops", "b");
    let targets: Vec<_> = broken.relations.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, [works.id.as_str()], "{:?}", broken.relations);
}

#[test]
fn a_direct_remember_records_detected_relations_and_survives_a_failing_detector() {
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(fake_detector()));
    let works = remember_fact(&svc, "the staging deploy works", "/ops", "w");
    assert!(works.relations.is_empty());
    let broken = remember_fact(&svc, "the staging deploy is broken", "/ops", "b");
    assert_eq!(broken.relations.len(), 1, "{:?}", broken.relations);
    assert_eq!(broken.relations[0].kind, "conflicts_with");
    assert_eq!(broken.relations[0].target, works.id);
    let d = broken.relations[0].difference.as_ref().unwrap();
    assert_eq!((d.this.as_str(), d.other.as_str()), ("broken", "works"));
    // Stored, not just returned; nothing hidden.
    assert_eq!(svc.memory(&broken.id).unwrap().relations, broken.relations);
    assert_eq!(lifecycle(&svc, &works.id), Lifecycle::Active);
    assert_eq!(lifecycle(&svc, &broken.id), Lifecycle::Active);
    let reasons = newest_audit_reasons(&svc, &broken.id);
    assert!(
        reasons.iter().any(|r| r.starts_with("conflicts_with")),
        "{reasons:?}"
    );
    // A replayed write is not detected again.
    let again = svc
        .remember(&req("the staging deploy is broken", "fact", "/ops", "b"))
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.memory.unwrap().relations, broken.relations);

    // Another scope is not compared.
    let elsewhere = remember_fact(&svc, "the staging deploy works", "/other", "e");
    assert!(elsewhere.relations.is_empty());
    // A duplicate in the same scope is recorded as such.
    let dup = remember_fact(&svc, "the staging deploy works", "/ops", "d");
    assert_eq!(dup.relations[0].kind, "duplicate_of");

    // A failing detector does not fail the write; the audit entry says so.
    let crashed = remember_fact(&svc, "this makes the detector crash", "/ops", "c");
    assert!(crashed.relations.is_empty());
    let reasons = newest_audit_reasons(&svc, &crashed.id);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("detector:conflicts failed")),
        "{reasons:?}"
    );

    // Bulk writes skip detection.
    let bulk = svc.remember_all(&[req("the staging deploy is broken", "fact", "/ops", "m1")]);
    let m = bulk[0].as_ref().unwrap().memory.clone().unwrap();
    assert!(m.relations.is_empty());
    assert!(svc.audit_verify().unwrap().ok);
}

/// The reasons of the newest audit entry about `id`.
fn newest_audit_reasons(svc: &Service, id: &str) -> Vec<String> {
    svc.audit_list(&AuditQuery {
        target: Some(id.to_string()),
        ..Default::default()
    })
    .unwrap()
    .swap_remove(0)
    .reasons
}

/// The detector decides claim or occurrence by role, so the host must send
/// each memory's role from the role table (issue 20).
#[test]
fn the_detector_sees_each_memorys_role_from_the_role_table() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let host = crate::fake_host::FakeHost {
        config: mem_core::plugin::PluginsConfig {
            detectors: vec!["conflicts".into()],
            ..Default::default()
        },
        detect: Box::new(move |subject, candidates| {
            let mut log = log.lock().unwrap();
            for i in std::iter::once(subject).chain(candidates) {
                log.push((i.kind.clone(), i.role.clone()));
            }
            Ok(Vec::new())
        }),
        ..Default::default()
    };
    let (_d, svc) = service_with(WorkspaceConfig::default());
    let svc = svc.with_plugins(Arc::new(host));
    for (i, kind) in ["observation", "fact", "preference", "note"]
        .iter()
        .enumerate()
    {
        svc.remember(&req(
            "the staging deploy works",
            kind,
            "/ops",
            &i.to_string(),
        ))
        .unwrap();
    }
    let seen = seen.lock().unwrap();
    let role = |kind: &str| {
        seen.iter()
            .find(|(k, _)| k == kind)
            .and_then(|(_, r)| r.clone())
    };
    assert_eq!(role("observation").as_deref(), Some("occurrence"));
    assert_eq!(role("note").as_deref(), Some("occurrence"));
    assert_eq!(role("fact").as_deref(), Some("assertion"));
    assert_eq!(role("preference").as_deref(), Some("guidance"));
}
