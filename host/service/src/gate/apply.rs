//! Applying an approved proposal, and asking the workspace's plugins
//! (write policies, relation detectors) for their findings.

use super::authority::{SUPERSEDED_BY, SUPERSEDES};
use super::{Finding, Proposal, ProposalOp, finding};
use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::budget::UsageChange;
use crate::records::{encode, load, load_many};
use crate::types::TypeRegistry;
use mem_core::id::{self, new_id};
use mem_core::model::{Governance, Lifecycle, Memory, Relation};
use mem_core::plugin::{Decision, DetectItem, EvidenceRef, ProposalInput, Stance};
use mem_core::store::{Batch, Scan, Table};
use mem_core::time::now;
use mem_core::{ErrorCode, MemError, MemResult};
use serde_json::json;

/// Candidates a relation detector sees per write.
pub(crate) const MAX_DETECT_CANDIDATES: usize = 100;

pub(crate) struct Applied {
    pub result_ids: Vec<String>,
    pub audit: Vec<AuditDraft>,
}

impl Service {
    /// Stages the writes of an approved proposal into `batch`: the new
    /// memory, and each target superseded or archived, with budgets,
    /// events and audit drafts. Targets must still be at the version they
    /// had when proposed.
    pub(crate) fn stage_apply(
        &self,
        batch: &mut Batch,
        p: &Proposal,
        approver: &Actor,
        decided_by: &str,
    ) -> MemResult<Applied> {
        let mut usage = UsageChange::new();
        let mut audit = Vec::new();
        let mut result_ids = Vec::new();
        let new_id = p.memory.as_ref().map(|_| new_id(id::MEMORY));
        for (i, target) in p.targets.iter().enumerate() {
            let stored = load::<Memory>(self.store(), Table::Memories, target)?
                .ok_or_else(|| MemError::not_found("memory", target))?;
            let before = stored.value.clone();
            let proposed_at = p
                .target_versions
                .get(i)
                .copied()
                .unwrap_or(before.state_version);
            if before.state_version != proposed_at || before.lifecycle != Lifecycle::Active {
                return Err(MemError::new(
                    ErrorCode::VersionConflict,
                    format!("target {target} changed since the proposal was made (now version {}, {})", before.state_version, before.lifecycle.as_str()),
                )
                .with_hint("reject this proposal and propose again against the current memory")
                .with_details(json!({ "id": target, "proposed_version": proposed_at, "current_version": before.state_version })));
            }
            let mut after = before.clone();
            let action = match (&new_id, p.op) {
                (Some(nid), _) => {
                    after.lifecycle = Lifecycle::Superseded;
                    after.relations.push(Relation {
                        kind: SUPERSEDED_BY.into(),
                        target: nid.clone(),
                        score: None,
                        difference: None,
                    });
                    "supersede"
                }
                (None, _) => {
                    after.lifecycle = Lifecycle::Archived;
                    "remove"
                }
            };
            after.state_version += 1;
            after.updated_at = now();
            usage.transition(&before, &after);
            batch.expect(Table::Memories, target.clone(), Some(stored.raw));
            batch.put(Table::Memories, target.clone(), encode(&after)?);
            let event = if action == "supersede" {
                "memory.superseded"
            } else {
                "memory.archived"
            };
            self.stage_memory_event(
                batch,
                event,
                &after,
                json!({ "proposal_id": p.id, "reason": p.reason }),
            )?;
            audit.push(AuditDraft {
                actor: approver.clone(),
                action: action.into(),
                target: target.clone(),
                before_sha256: Some(before.content_sha256.clone()),
                after_sha256: None,
                verdict: "applied".into(),
                verdict_source: decided_by.into(),
                reasons: vec![format!("proposal {}", p.id)],
            });
            // A removed memory stops hiding what it superseded.
            audit.extend(self.stage_supersede_authority(
                batch, &mut usage, &before, &after, approver, decided_by,
            )?);
        }
        if let (Some(template), Some(nid)) = (&p.memory, new_id) {
            let mut m = template.clone();
            m.id = nid.clone();
            let at = now();
            m.created_at = at;
            m.updated_at = at;
            for t in &p.targets {
                m.relations.push(Relation {
                    kind: SUPERSEDES.into(),
                    target: t.clone(),
                    score: None,
                    difference: None,
                });
            }
            for f in &p.findings {
                if let (Some(target), true) = (
                    &f.target,
                    f.code == "conflicts_with" || f.code == "duplicate_of",
                ) {
                    m.relations.push(Relation {
                        kind: f.code.clone(),
                        target: target.clone(),
                        score: f.score.map(f64::from),
                        difference: f.difference.clone(),
                    });
                }
            }
            // An imported note's wiki links, to the notes stored by now.
            m.relations.extend(self.approved_note_links(&m)?);
            m.governance = Some(Governance {
                proposal_id: Some(p.id.clone()),
                proposed_by: p.proposer.label(),
                approved_by: decided_by.to_string(),
                tentative: p.tentative,
            });
            usage.add(&m, 1);
            self.stage_new_memory(batch, &m)?;
            audit.push(AuditDraft {
                actor: approver.clone(),
                action: if p.op == ProposalOp::Create {
                    "create".into()
                } else {
                    "write".into()
                },
                target: m.id.clone(),
                before_sha256: None,
                after_sha256: Some(m.content_sha256.clone()),
                verdict: "applied".into(),
                verdict_source: decided_by.into(),
                reasons: vec![format!("proposal {}", p.id)],
            });
            result_ids.push(m.id);
        }
        self.apply_usage(batch, &usage)?;
        Ok(Applied { result_ids, audit })
    }

    /// Verdicts of the workspace's write-policy plugins. A plugin that
    /// fails sends the proposal to review: a broken policy never approves.
    /// Whether a write policy plugin does not simply allow a direct write
    /// arriving by `route` (a failing policy objects: fail closed). The
    /// caller then sends it through the gate, which records the verdict.
    pub(crate) fn policies_object(
        &self,
        req: &super::ProposalRequest,
        memory: &Memory,
        actor: &Actor,
        route: super::WriteRoute,
    ) -> MemResult<bool> {
        let agent = memory
            .provenance
            .agent_id
            .as_deref()
            .or(actor.agent_id.as_deref());
        let findings =
            self.plugin_findings("direct-write", req, Some(memory), &[], agent, route)?;
        Ok(findings.iter().any(|f| f.effect != "note"))
    }

    pub(super) fn plugin_findings(
        &self,
        proposal_id: &str,
        req: &super::ProposalRequest,
        memory: Option<&Memory>,
        targets: &[Memory],
        agent: Option<&str>,
        route: super::WriteRoute,
    ) -> MemResult<Vec<Finding>> {
        let Some(host) = self.plugins() else {
            return Ok(Vec::new());
        };
        let policies = host.config().write_policies;
        if policies.is_empty() {
            return Ok(Vec::new());
        }
        let input = ProposalInput {
            id: proposal_id.to_string(),
            kind: memory.map_or_else(
                || format!("{:?}", req.op).to_lowercase(),
                |m| m.kind.clone(),
            ),
            content: memory
                .and_then(|m| m.content.clone())
                .or_else(|| req.reason.clone())
                .unwrap_or_default(),
            scope: memory
                .or(targets.first())
                .map(|m| m.path.as_str().to_string()),
            source: memory
                .and_then(|m| {
                    let p = &m.provenance;
                    match (&p.source_type, &p.source_ref, &p.source_file_id) {
                        (Some(t), Some(r), _) => Some(format!("{t}:{r}")),
                        (_, Some(r), _) => Some(r.clone()),
                        (_, None, Some(f)) => Some(format!("mem://file/{f}")),
                        (Some(t), None, None) => Some(t.clone()),
                        _ => None,
                    }
                })
                // A retraction's source is the stated reason for it.
                .or_else(|| {
                    if memory.is_none() {
                        req.reason.as_ref().map(|r| format!("reason:{r}"))
                    } else {
                        None
                    }
                }),
            agent: agent.map(str::to_string),
            confidence: memory.map_or(0.0, |m| m.confidence),
            evidence: req
                .evidence
                .iter()
                .map(|e| EvidenceRef {
                    kind: if e.memory_id.is_some() {
                        "memory".into()
                    } else if e.file_id.is_some() {
                        "file".into()
                    } else {
                        "observation".into()
                    },
                    reference: e.reference(),
                    excerpt: e.observation.clone(),
                    stance: match e.stance {
                        super::EvidenceStance::Supports => Stance::Supports,
                        super::EvidenceStance::Weakens => Stance::Weakens,
                        super::EvidenceStance::Contradicts => Stance::Contradicts,
                    },
                })
                .collect(),
            attributes: memory.map(|m| m.attributes.clone()).unwrap_or_default(),
            route: route.as_str().to_string(),
        };
        let mut out = Vec::new();
        for name in policies {
            let source = format!("plugin:{name}");
            match host.check_write(&name, &input) {
                Ok(v) => {
                    let effect = match v.decision {
                        Decision::Allow => "note",
                        Decision::Review => "review",
                        Decision::Deny => "reject",
                    };
                    if v.reasons.is_empty() && effect != "note" {
                        out.push(finding(
                            &format!("policy_{effect}"),
                            "the policy gave no reason",
                            &source,
                            effect,
                        ));
                    }
                    out.extend(
                        v.reasons
                            .into_iter()
                            .map(|r| finding(&r.code, r.message, &source, effect)),
                    );
                }
                Err(e) => out.push(finding(
                    "plugin_failed",
                    format!("{}; sent to review", e.message),
                    &source,
                    "review",
                )),
            }
        }
        Ok(out)
    }

    /// The newest active memories of folder `path` (ids sort by creation
    /// time), at most [`MAX_DETECT_CANDIDATES`], except `targets`: what a
    /// new memory may contradict is what the folder says now. A page's
    /// records are read at once (one round trip on a shared store). (The folder
    /// was read whole, oldest first, on every write: 5,000 keys a write in
    /// a folder of 5,000 memories, to compare with its oldest 100.)
    fn newest_active_in(&self, path: &str, targets: &[Memory]) -> MemResult<Vec<Candidate>> {
        let prefix = format!("{path}\0");
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.store().scan(
                Table::MemoryPaths,
                &Scan {
                    prefix: &prefix,
                    after: after.as_deref(),
                    limit: MAX_DETECT_CANDIDATES,
                    reverse: true,
                },
            )?;
            let exhausted = page.len() < MAX_DETECT_CANDIDATES;
            after = page.last().map(|(key, _)| key.clone());
            let ids: Vec<&str> = page
                .iter()
                .filter_map(|(key, _)| key.split('\0').nth(1))
                .filter(|id| !targets.iter().any(|t| t.id == *id))
                .collect();
            let active = load_many::<Candidate>(self.store(), Table::Memories, &ids)?
                .into_iter()
                .map(|c| c.value)
                .filter(|c| c.lifecycle == Lifecycle::Active);
            for c in active {
                out.push(c);
                if out.len() >= MAX_DETECT_CANDIDATES {
                    return Ok(out);
                }
            }
            if exhausted {
                return Ok(out);
            }
        }
    }

    /// Relation detectors compare the new memory with active memories in
    /// its scope. A contradiction sends the write to review; nothing is
    /// deleted either way.
    pub(crate) fn conflict_findings(
        &self,
        m: &Memory,
        targets: &[Memory],
    ) -> MemResult<Vec<Finding>> {
        let Some(host) = self.plugins() else {
            return Ok(Vec::new());
        };
        let detectors = host.config().detectors;
        if detectors.is_empty() {
            return Ok(Vec::new());
        }
        let config = self.config();
        let registry = &config.types.registry;
        let candidates: Vec<_> = self
            .newest_active_in(m.path.as_str(), targets)?
            .into_iter()
            .map(|c| c.into_item(registry))
            .collect();
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let subject = detect_item(registry, m);
        let mut out = Vec::new();
        for name in detectors {
            let source = format!("detector:{name}");
            match host.detect(&name, &subject, &candidates) {
                Ok(relations) => {
                    for r in relations {
                        let effect = if r.kind == "conflicts_with" {
                            "review"
                        } else {
                            "note"
                        };
                        let mut f = finding(
                            &r.kind,
                            format!("{} (memory {})", r.reason, r.target),
                            &source,
                            effect,
                        );
                        f.target = Some(r.target);
                        f.score = Some(r.score);
                        f.difference = r.difference;
                        out.push(f);
                    }
                }
                Err(e) => out.push(finding("plugin_failed", e.message, &source, "note")),
            }
        }
        Ok(out)
    }
}

/// What the relation check reads of a candidate memory: up to 100 are read
/// on every write, and the rest of a record (its relations, provenance,
/// governance) is skipped rather than built.
#[derive(serde::Deserialize)]
struct Candidate {
    id: String,
    kind: String,
    content: Option<String>,
    path: String,
    lifecycle: Lifecycle,
}

impl Candidate {
    fn into_item(self, registry: &TypeRegistry) -> DetectItem {
        DetectItem {
            role: claim_role(registry, &self.kind),
            id: self.id,
            kind: self.kind,
            text: self.content.unwrap_or_default(),
            path: self.path,
            tags: Vec::new(),
        }
    }
}

fn detect_item(registry: &TypeRegistry, m: &Memory) -> DetectItem {
    DetectItem {
        id: m.id.clone(),
        kind: m.kind.clone(),
        role: claim_role(registry, &m.kind),
        text: m.content.clone().unwrap_or_default(),
        path: m.path.as_str().to_string(),
        tags: Vec::new(),
    }
}

/// The role a relation detector sees for a memory of `kind`: its type's
/// role from the workspace's role table, which decides whether two
/// memories are claims about one thing (they can contradict) or separate
/// occurrences (they cannot). `None` for a kind the table does not know.
pub(crate) fn claim_role(registry: &TypeRegistry, kind: &str) -> Option<String> {
    registry.role_of(kind).map(str::to_string)
}
