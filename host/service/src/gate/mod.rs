//! The write gate: the one place an agent's claim can become memory.
//!
//! Every content-changing write — a proposal (`create`, `replace`,
//! `remove`, `consolidate`), and `remember` when the workspace says so —
//! passes host checks (type, fields, scope, evidence, idempotency, budget),
//! the owner's write policy from `mem.toml`, and the workspace's `policy`
//! plugins. The verdict is `auto_approved`, `queued` (for a human) or
//! `rejected`, with every reason, and is audited before anything returns.
//! Surfaces cannot bypass it: it sits in the service, below all of them.

pub(crate) mod apply;
pub(crate) mod authority;
mod review;

pub use review::{EvidenceView, ReviewItem};

use crate::Service;
use crate::audit::{Actor, AuditDraft, verdict_details};
use crate::records::{encode, load, scan_all, transact};
pub use crate::requests::{Evidence, EvidenceStance, ProposalOp, ProposalRequest};
use mem_core::hash::sha256_hex;
use mem_core::id::new_id;
use mem_core::model::{Lifecycle, Memory};
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub(crate) const PROPOSAL_PREFIX: &str = "prop";
/// Idempotency keys of proposals live beside those of memories, hashed
/// with this prefix so the two never collide.
const KEY_NAMESPACE: &str = "proposal\n";
/// Most memories one consolidation may merge.
const MAX_CONSOLIDATE: usize = 100;
const MAX_EVIDENCE: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    AutoApproved,
    Queued,
    Approved,
    Rejected,
}

impl ProposalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AutoApproved => "auto_approved",
            Self::Queued => "queued",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }
}

/// One reason behind a verdict, and who gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// e.g. `missing_source`, `policy_review`, `conflicts_with`, `dangling_evidence`.
    pub code: String,
    pub message: String,
    /// `host`, `mem.toml gate.kinds.decision`, `plugin:evidence`, `detector:conflicts`.
    pub source: String,
    /// What the finding asks for: `reject`, `review` or `note`.
    pub effect: String,
    /// The memory a detected relation points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// For a detected conflict: what the new memory says against the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<mem_core::model::Difference>,
}

/// A proposal as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Proposal {
    pub id: String,
    pub op: ProposalOp,
    pub status: ProposalStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The memory that would be (or was) written, as validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub proposer: Actor,
    pub findings: Vec<Finding>,
    /// Which rule, policy or human decided the status.
    pub decided_by: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    /// Memories written when applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub result_ids: Vec<String>,
    /// Target versions when proposed: approval refuses if they changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_versions: Vec<u64>,
    pub request_sha256: String,
    /// Approved as tentative: no supporting evidence, so the memory was
    /// written at [`TENTATIVE_CONFIDENCE`] and serves as provisional.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tentative: bool,
}

/// The write path a memory arrives by. Write policy plugins see it, so
/// what a policy demands on each path is that policy's configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteRoute {
    /// `propose` (and `remember` routed through the gate).
    #[default]
    Propose,
    /// `remember` (CLI, REST, MCP).
    Remember,
    /// `remember --jsonl` and the REST batch.
    Batch,
    /// An adapter import (`import AGENTS.md`).
    Import,
}

impl WriteRoute {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Propose => "propose",
            Self::Remember => "remember",
            Self::Batch => "batch",
            Self::Import => "import",
        }
    }
}

/// Confidence of a memory approved as tentative (Mnemosyne's tentative
/// promote); feedback raises it out of the provisional lane.
pub const TENTATIVE_CONFIDENCE: f64 = 0.3;

/// What `propose` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProposalOutcome {
    pub replayed: bool,
    pub proposal: Proposal,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ProposalKey {
    request_sha256: String,
    proposal_id: String,
}

fn key_hash(key: &str) -> String {
    sha256_hex(format!("{KEY_NAMESPACE}{key}").as_bytes())
}

fn finding(code: &str, message: impl Into<String>, source: &str, effect: &str) -> Finding {
    Finding {
        code: code.into(),
        message: message.into(),
        source: source.into(),
        effect: effect.into(),
        target: None,
        score: None,
        difference: None,
    }
}

impl Service {
    /// Runs a proposal through the gate. `Ok` for auto-approved and queued
    /// proposals; a rejected one is stored, audited as `propose-denied`,
    /// and returned as a `write_rejected` error carrying every reason.
    pub(crate) fn propose(
        &self,
        req: &ProposalRequest,
        actor: &Actor,
    ) -> MemResult<ProposalOutcome> {
        self.propose_via(req, actor, WriteRoute::Propose)
    }

    /// [`Self::propose`] for a write that arrived by `route` (the write
    /// policies see it).
    pub(crate) fn propose_via(
        &self,
        req: &ProposalRequest,
        actor: &Actor,
        route: WriteRoute,
    ) -> MemResult<ProposalOutcome> {
        let result = self.propose_inner(req, actor, route);
        if let Err(e) = &result
            && e.code != ErrorCode::WriteRejected
        {
            // Malformed or over-budget: nothing stored, but the attempt is on record.
            self.audit_denied(AuditDraft {
                actor: actor.clone(),
                action: "propose-denied".into(),
                target: req.targets.first().cloned().unwrap_or_default(),
                before_sha256: None,
                after_sha256: None,
                verdict: "denied".into(),
                verdict_source: "host".into(),
                reasons: vec![format!("{}: {}", e.code.as_str(), e.message)],
            })?;
        }
        result
    }

    fn propose_inner(
        &self,
        req: &ProposalRequest,
        actor: &Actor,
        route: WriteRoute,
    ) -> MemResult<ProposalOutcome> {
        let key = req.idempotency_key.trim();
        if key.is_empty() || key.chars().count() > 256 {
            return Err(
                MemError::bad_request("idempotency_key must be 1..=256 characters").with_hint(
                    "pass a key unique to this proposal, so a retry cannot file it twice",
                ),
            );
        }
        let request_sha = sha256_hex(&encode(req)?);
        let kh = key_hash(key);
        if let Some(rec) = load::<ProposalKey>(self.store(), Table::Idempotency, &kh)? {
            if rec.value.request_sha256 != request_sha {
                return Err(MemError::new(
                    ErrorCode::IdempotencyConflict,
                    "this idempotency key was already used for a different proposal",
                )
                .with_hint("use a new key for a new proposal, or resend exactly the original")
                .with_details(json!({ "proposal_id": rec.value.proposal_id })));
            }
            return Ok(ProposalOutcome {
                replayed: true,
                proposal: self.proposal(&rec.value.proposal_id)?,
            });
        }
        let mut proposal = self.evaluate(req, actor, request_sha, route)?;
        let status = proposal.status;
        let outcome = transact(self.store(), Durability::Immediate, || {
            let mut batch = Batch::new();
            let mut p = proposal.clone();
            let mut drafts = Vec::new();
            if status == ProposalStatus::AutoApproved {
                let applied = self.stage_apply(&mut batch, &p, actor, &p.decided_by.clone())?;
                p.result_ids = applied.result_ids;
                p.decided_at = Some(now());
                drafts.extend(applied.audit);
            }
            let rec = ProposalKey {
                request_sha256: p.request_sha256.clone(),
                proposal_id: p.id.clone(),
            };
            batch.expect(Table::Idempotency, kh.clone(), None);
            batch.put(Table::Idempotency, kh.clone(), encode(&rec)?);
            batch.put(Table::Proposals, p.id.clone(), encode(&p)?);
            let action = if status == ProposalStatus::Rejected {
                "propose-denied"
            } else {
                "propose"
            };
            drafts.insert(
                0,
                self.proposal_audit(&p, actor, action, status.as_str(), &p.decided_by),
            );
            self.seal_audit(&mut batch, drafts)?;
            Ok((batch, p))
        })?;
        proposal = outcome;
        self.after_write();
        if proposal.status == ProposalStatus::Rejected {
            let reasons: Vec<String> = proposal
                .findings
                .iter()
                .filter(|f| f.effect == "reject")
                .map(|f| format!("{}: {}", f.code, f.message))
                .collect();
            return Err(MemError::new(
                ErrorCode::WriteRejected,
                format!("proposal {} was rejected: {}", proposal.id, reasons.join("; ")),
            )
            .with_hint("address the reasons (cite evidence with a source, fix the scope) and propose again with a new idempotency key")
            .with_details(json!({
                "proposal_id": proposal.id,
                "findings": proposal.findings,
                "verdict": verdict_details("rejected", &proposal.decided_by, &reasons),
            })));
        }
        Ok(ProposalOutcome {
            replayed: false,
            proposal,
        })
    }

    pub(crate) fn proposal_audit(
        &self,
        p: &Proposal,
        actor: &Actor,
        action: &str,
        verdict: &str,
        source: &str,
    ) -> AuditDraft {
        AuditDraft {
            actor: actor.clone(),
            action: action.into(),
            target: p.id.clone(),
            before_sha256: None,
            after_sha256: p.memory.as_ref().map(|m| m.content_sha256.clone()),
            verdict: verdict.into(),
            verdict_source: source.into(),
            reasons: p
                .findings
                .iter()
                .map(|f| format!("{} ({}): {}", f.code, f.source, f.message))
                .collect(),
        }
    }

    /// Validates a request and decides its status; writes nothing.
    fn evaluate(
        &self,
        req: &ProposalRequest,
        actor: &Actor,
        request_sha: String,
        route: WriteRoute,
    ) -> MemResult<Proposal> {
        let (targets, target_versions) = self.check_targets(req)?;
        let memory = match (&req.memory, req.op) {
            (Some(m), ProposalOp::Create | ProposalOp::Replace | ProposalOp::Consolidate) => {
                let (mut memory, _) = self.prepare_memory(m)?;
                if memory.provenance.agent_id.is_none() {
                    memory.provenance.agent_id = actor.agent_id.clone();
                }
                Some(memory)
            }
            (None, ProposalOp::Remove) => None,
            (None, op) => {
                return Err(MemError::bad_request(
                    format!("a {op:?} proposal needs the new memory").to_lowercase(),
                )
                .with_hint("pass the memory's content, kind and path"));
            }
            (Some(_), ProposalOp::Remove) => {
                return Err(
                    MemError::bad_request("a remove proposal takes no new memory")
                        .with_hint("name the memory to remove as the target, and a reason"),
                );
            }
        };
        if req.op == ProposalOp::Remove && req.reason.as_deref().is_none_or(|r| r.trim().is_empty())
        {
            return Err(MemError::bad_request("a remove proposal needs a reason")
                .with_hint("say why the memory is wrong or obsolete"));
        }
        if req.evidence.len() > MAX_EVIDENCE {
            return Err(MemError::bad_request(format!(
                "at most {MAX_EVIDENCE} pieces of evidence"
            )));
        }
        // Budget: what would become active, minus what stops being active.
        let mut usage = crate::budget::UsageChange::new();
        if let Some(m) = &memory {
            usage.add(m, 1);
        }
        for t in &targets {
            if req.op != ProposalOp::Create {
                usage.add(t, -1);
            }
        }
        self.apply_usage(&mut Batch::new(), &usage)?;

        let mut findings = self.evidence_findings(&req.evidence)?;
        let (kind, role) = match &memory {
            Some(m) => (
                m.kind.clone(),
                self.config().types.registry.resolve(&m.kind)?.role.clone(),
            ),
            None => {
                let t = &targets[0];
                (
                    t.kind.clone(),
                    self.config()
                        .types
                        .registry
                        .resolve(&t.kind)
                        .map(|d| d.role.clone())
                        .unwrap_or_default(),
                )
            }
        };
        let agent = actor.agent_id.as_deref().or(memory
            .as_ref()
            .and_then(|m| m.provenance.agent_id.as_deref()));
        let (mode, rule) = self.config().gate.mode_for(&kind, &role, agent);
        let rule_source = format!("mem.toml {rule}");
        match mode {
            crate::config::WriteMode::Never => findings.push(finding(
                "policy_never",
                format!("the workspace's write policy refuses {kind} writes here"),
                &rule_source,
                "reject",
            )),
            crate::config::WriteMode::Review => findings.push(finding(
                "policy_review",
                format!("the workspace's write policy requires a review of {kind} writes"),
                &rule_source,
                "review",
            )),
            crate::config::WriteMode::Auto => {}
        }
        let id = new_id(PROPOSAL_PREFIX);
        findings.extend(self.plugin_findings(&id, req, memory.as_ref(), &targets, agent, route)?);
        if let Some(m) = &memory {
            findings.extend(self.conflict_findings(m, &targets)?);
        }
        let rejecting = findings.iter().find(|f| f.effect == "reject");
        let reviewing = findings.iter().find(|f| f.effect == "review");
        let (status, decided_by) = match (rejecting, reviewing) {
            (Some(f), _) => (ProposalStatus::Rejected, f.source.clone()),
            (None, Some(f)) => (ProposalStatus::Queued, f.source.clone()),
            (None, None) => (ProposalStatus::AutoApproved, rule_source),
        };
        let now = now();
        Ok(Proposal {
            id,
            op: req.op,
            status,
            targets: targets.iter().map(|t| t.id.clone()).collect(),
            memory,
            evidence: req.evidence.clone(),
            reason: req.reason.as_ref().map(|r| r.trim().to_string()),
            proposer: actor.clone(),
            findings,
            decided_by,
            created_at: now,
            decided_at: (status != ProposalStatus::Queued).then_some(now),
            decision_reason: None,
            result_ids: Vec::new(),
            target_versions,
            request_sha256: request_sha,
            tentative: false,
        })
    }

    /// The targets, checked against the op: they exist, are active, and
    /// are distinct.
    fn check_targets(&self, req: &ProposalRequest) -> MemResult<(Vec<Memory>, Vec<u64>)> {
        let want = match req.op {
            ProposalOp::Create => 0..=0,
            ProposalOp::Replace | ProposalOp::Remove => 1..=1,
            ProposalOp::Consolidate => 2..=MAX_CONSOLIDATE,
        };
        if !want.contains(&req.targets.len()) {
            return Err(MemError::bad_request(format!(
                "a {} proposal takes {} target(s), got {}",
                format!("{:?}", req.op).to_lowercase(),
                if req.op == ProposalOp::Consolidate {
                    format!("2 to {MAX_CONSOLIDATE}")
                } else {
                    want.start().to_string()
                },
                req.targets.len()
            ))
            .with_hint("targets are the ids of the memories the proposal acts on"));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        let mut versions = Vec::new();
        for id in &req.targets {
            if !seen.insert(id) {
                return Err(MemError::bad_request(format!("target {id} is named twice")));
            }
            let m = self.memory(id)?;
            if m.lifecycle != Lifecycle::Active {
                return Err(MemError::new(
                    ErrorCode::InvalidState,
                    format!("target {id} is {}, not active", m.lifecycle.as_str()),
                )
                .with_hint("only active memories can be replaced, removed or consolidated")
                .with_details(json!({ "id": id, "lifecycle": m.lifecycle })));
            }
            versions.push(m.state_version);
            out.push(m);
        }
        Ok((out, versions))
    }

    /// Evidence must resolve: a memory that exists (and was not
    /// forgotten), a stored file with a well-formed locator, or non-empty
    /// observation text. Dangling evidence rejects the proposal.
    fn evidence_findings(&self, evidence: &[Evidence]) -> MemResult<Vec<Finding>> {
        let mut out = Vec::new();
        for (i, e) in evidence.iter().enumerate() {
            let given = [
                e.memory_id.is_some(),
                e.file_id.is_some(),
                e.observation.is_some(),
            ]
            .iter()
            .filter(|b| **b)
            .count();
            if given != 1 {
                return Err(MemError::bad_request(format!(
                    "evidence {} must name exactly one of memory_id, file_id or observation",
                    i + 1
                )));
            }
            let dangling = |what: String| finding("dangling_evidence", what, "host", "reject");
            if let Some(id) = &e.memory_id {
                match load::<Memory>(self.store(), Table::Memories, id)? {
                    Some(m) if m.value.lifecycle != Lifecycle::Forgotten => {}
                    _ => out.push(dangling(format!(
                        "evidence {} cites memory {id}, which does not exist",
                        i + 1
                    ))),
                }
            }
            if let Some(id) = &e.file_id {
                if load::<mem_core::model::FileRecord>(self.store(), Table::Files, id)?.is_none() {
                    out.push(dangling(format!(
                        "evidence {} cites file {id}, which does not exist",
                        i + 1
                    )));
                }
                if let Some(l) = &e.locator
                    && mem_core::locator::Locator::parse(l).is_none()
                {
                    return Err(MemError::new(
                        ErrorCode::Unprocessable,
                        format!("evidence {}: bad locator {l:?}", i + 1),
                    )
                    .with_hint("locators are line ranges such as L10 or L10-24, or p3:L10-24 on a page of a PDF"));
                }
            }
            if e.observation
                .as_deref()
                .is_some_and(|o| o.trim().is_empty())
            {
                out.push(finding(
                    "empty_observation",
                    format!("evidence {} is an empty observation", i + 1),
                    "host",
                    "reject",
                ));
            }
        }
        Ok(out)
    }

    /// Every queued proposal, oldest first.
    pub(crate) fn review_list(&self) -> MemResult<Vec<Proposal>> {
        self.proposals(Some(ProposalStatus::Queued))
    }

    /// Proposals, oldest first, optionally of one status.
    pub(crate) fn proposals(&self, status: Option<ProposalStatus>) -> MemResult<Vec<Proposal>> {
        let mut out = Vec::new();
        for (key, raw) in scan_all(self.store(), Table::Proposals, "")? {
            let p: Proposal = crate::records::decode(Table::Proposals, &key, &raw)?;
            if status.is_none_or(|s| p.status == s) {
                out.push(p);
            }
        }
        Ok(out)
    }

    pub(crate) fn proposal(&self, id: &str) -> MemResult<Proposal> {
        load(self.store(), Table::Proposals, id)?
            .map(|s| s.value)
            .ok_or_else(|| {
                MemError::not_found("proposal", id)
                    .with_hint("`mem-host review list` shows queued proposals")
            })
    }
}
