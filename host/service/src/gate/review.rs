//! The review queue: a person sees exactly what would change (old text,
//! new text, a diff, the evidence, the gate's findings) and approves or
//! rejects it. Approval writes with the provenance of both proposer and
//! approver.

use super::{Evidence, Proposal, ProposalStatus};
use crate::Service;
use crate::audit::Actor;
use crate::excerpts::lines_of;
use crate::records::{encode, load, transact};
use mem_core::locator::Locator;
use mem_core::model::{FileRecord, Memory};
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::now;
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Longest excerpt of cited file content shown in a review.
const MAX_EXCERPT_CHARS: usize = 2000;

/// A piece of evidence with what it points at, resolved for a reviewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceView {
    pub evidence: Evidence,
    pub reference: String,
    /// False when the cited record no longer exists.
    pub found: bool,
    /// The cited memory's content, the cited lines, or the observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Everything `review show` displays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewItem {
    pub proposal: Proposal,
    /// The targets as they are now, in full.
    pub old: Vec<Memory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_text: Option<String>,
    /// Unified diff from the old text(s) to the new text.
    pub diff: String,
    pub evidence: Vec<EvidenceView>,
}

impl Service {
    pub(crate) fn review_show(&self, id: &str) -> MemResult<ReviewItem> {
        let proposal = self.proposal(id)?;
        let old: Vec<Memory> = proposal
            .targets
            .iter()
            .map(|t| self.memory(t))
            .collect::<MemResult<_>>()?;
        let old_text = old
            .iter()
            .map(|m| m.content.clone().unwrap_or_else(|| "(forgotten)".into()))
            .collect::<Vec<_>>()
            .join("\n");
        let new_text = proposal.memory.as_ref().and_then(|m| m.content.clone());
        let diff = similar::TextDiff::from_lines(
            &ensure_newline(&old_text),
            &ensure_newline(new_text.as_deref().unwrap_or("")),
        )
        .unified_diff()
        .header("old", "new")
        .to_string();
        let evidence = proposal
            .evidence
            .iter()
            .map(|e| self.resolve_evidence(e))
            .collect::<MemResult<_>>()?;
        Ok(ReviewItem {
            proposal,
            old,
            new_text,
            diff,
            evidence,
        })
    }

    fn resolve_evidence(&self, e: &Evidence) -> MemResult<EvidenceView> {
        let (found, text) = if let Some(id) = &e.memory_id {
            match load::<Memory>(self.store(), Table::Memories, id)? {
                Some(m) => (true, m.value.content),
                None => (false, None),
            }
        } else if let Some(id) = &e.file_id {
            match load::<FileRecord>(self.store(), Table::Files, id)? {
                Some(f) => (true, self.file_excerpt(&f.value, e.locator.as_deref())?),
                None => (false, None),
            }
        } else {
            (true, e.observation.clone())
        };
        Ok(EvidenceView {
            evidence: e.clone(),
            reference: e.reference(),
            found,
            text,
        })
    }

    /// The cited lines of a text file (all of it without a locator), or of
    /// a page of a paged document, capped.
    fn file_excerpt(&self, f: &FileRecord, locator: Option<&str>) -> MemResult<Option<String>> {
        let at = locator.and_then(Locator::parse);
        let cut = |t: String| t.chars().take(MAX_EXCERPT_CHARS).collect::<String>();
        if let Some(at) = at.filter(|l| l.page.is_some()) {
            return Ok(Some(cut(self.page_lines(&f.id, &at)?.unwrap_or_default())));
        }
        let Some(bytes) = self.store().get_blob(&f.sha256)? else {
            return Ok(None);
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return Ok(Some(format!("({} bytes of {})", f.size, f.mime)));
        };
        Ok(Some(cut(lines_of(&text, at.as_ref()))))
    }

    /// Applies a queued proposal. Refused when it is not queued any more or
    /// a target changed since it was proposed. `tentative` approves a new
    /// memory that has a source and a scope but no supporting evidence, at
    /// low confidence (see [`super::TENTATIVE_CONFIDENCE`]).
    pub(crate) fn review_approve(
        &self,
        id: &str,
        approver: &Actor,
        note: Option<&str>,
        tentative: bool,
    ) -> MemResult<Proposal> {
        let source = approver.label();
        let p = transact(self.store(), Durability::Immediate, || {
            let stored = load::<Proposal>(self.store(), Table::Proposals, id)?
                .ok_or_else(|| MemError::not_found("proposal", id))?;
            let mut p = stored.value.clone();
            require_queued(&p)?;
            if tentative {
                make_tentative(&mut p)?;
            }
            let mut batch = Batch::new();
            let applied = self.stage_apply(&mut batch, &p, approver, &source)?;
            p.status = ProposalStatus::Approved;
            p.decided_by = source.clone();
            p.decided_at = Some(now());
            p.decision_reason = note.map(str::to_string);
            p.result_ids = applied.result_ids;
            batch.expect(Table::Proposals, id, Some(stored.raw));
            batch.put(Table::Proposals, id, encode(&p)?);
            let mut drafts =
                vec![self.proposal_audit(&p, approver, "approve", "approved", &source)];
            drafts.extend(applied.audit);
            self.seal_audit(&mut batch, drafts)?;
            Ok((batch, p))
        })?;
        self.after_write();
        Ok(p)
    }

    pub(crate) fn review_reject(
        &self,
        id: &str,
        reviewer: &Actor,
        reason: &str,
    ) -> MemResult<Proposal> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(
                MemError::bad_request("a reason is required to reject a proposal")
                    .with_hint("pass --reason; the proposer sees it"),
            );
        }
        let source = reviewer.label();
        transact(self.store(), Durability::Immediate, || {
            let stored = load::<Proposal>(self.store(), Table::Proposals, id)?
                .ok_or_else(|| MemError::not_found("proposal", id))?;
            let mut p = stored.value.clone();
            require_queued(&p)?;
            p.status = ProposalStatus::Rejected;
            p.decided_by = source.clone();
            p.decided_at = Some(now());
            p.decision_reason = Some(reason.to_string());
            let mut batch = Batch::new();
            batch.expect(Table::Proposals, id, Some(stored.raw));
            batch.put(Table::Proposals, id, encode(&p)?);
            let mut draft = self.proposal_audit(&p, reviewer, "reject", "rejected", &source);
            draft.reasons.push(format!("reviewer: {reason}"));
            self.seal_audit(&mut batch, vec![draft])?;
            Ok((batch, p))
        })
    }
}

/// A tentative approval: only a new memory with a source and no
/// supporting evidence (with evidence, approve it normally).
fn make_tentative(p: &mut Proposal) -> MemResult<()> {
    let refuse = |why: &str| {
        Err(MemError::bad_request(format!(
            "proposal {} cannot be approved as tentative: {why}",
            p.id
        ))
        .with_hint("approve it without --tentative, or reject it")
        .with_details(json!({ "id": p.id, "field": "tentative" })))
    };
    let supported = p
        .evidence
        .iter()
        .any(|e| e.stance == super::EvidenceStance::Supports);
    let Some(m) = p.memory.as_mut() else {
        return refuse("it writes no new memory");
    };
    let pv = &m.provenance;
    if pv.source_type.is_none() && pv.source_ref.is_none() && pv.source_file_id.is_none() {
        return refuse("it does not say where the claim comes from (source)");
    }
    if supported {
        return refuse("it has supporting evidence");
    }
    m.confidence = super::TENTATIVE_CONFIDENCE;
    p.tentative = true;
    Ok(())
}

fn require_queued(p: &Proposal) -> MemResult<()> {
    if p.status != ProposalStatus::Queued {
        return Err(MemError::new(
            ErrorCode::InvalidState,
            format!("proposal {} is {}, not queued", p.id, p.status.as_str()),
        )
        .with_hint("only queued proposals can be approved or rejected")
        .with_details(json!({ "id": p.id, "status": p.status })));
    }
    Ok(())
}

fn ensure_newline(s: &str) -> String {
    if s.is_empty() || s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n")
    }
}

#[cfg(test)]
mod tests {
    use crate::gate::{EvidenceStance, ProposalOp};
    use crate::{Actor, Evidence, ProposalRequest, RememberRequest, WorkspaceConfig};

    /// A PDF's bytes are not its text: the excerpt of `p2:L1-2` is page 2
    /// as the processor read it.
    #[test]
    fn a_page_locator_excerpt_is_the_processed_page_text() {
        let mut config = WorkspaceConfig::default();
        config.gate.default = crate::config::WriteMode::Review;
        let (_dir, svc, file) = crate::tests::paged_service(config);
        let request = ProposalRequest {
            op: ProposalOp::Create,
            targets: vec![],
            memory: Some(
                RememberRequest {
                    content: "the port is 8443".into(),
                    kind: "fact".into(),
                    path: "/ops".into(),
                    ..Default::default()
                }
                .draft(),
            ),
            evidence: vec![Evidence {
                stance: EvidenceStance::Supports,
                memory_id: None,
                file_id: Some(file.clone()),
                locator: Some("p2:L1-2".into()),
                observation: None,
            }],
            reason: None,
            idempotency_key: "p1".into(),
        };
        let proposal = svc
            .propose(&request, &Actor::agent(Some("a".into()), None))
            .unwrap()
            .proposal;
        let item = svc.review_show(&proposal.id).unwrap();
        assert_eq!(
            item.evidence[0].reference,
            format!("mem://file/{file}#p2:L1-2")
        );
        assert_eq!(
            item.evidence[0].text.as_deref(),
            Some("the port is 8443\nfor TLS")
        );
    }
}
