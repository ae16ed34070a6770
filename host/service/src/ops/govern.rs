//! Governance: proposals through the write gate, the review queue, the
//! audit log, budgets, lint and rebuilds. Everything but proposing and
//! reading one's own proposal needs the `admin` scope.

use super::fields;
use crate::access::Scope;
use crate::audit::{AuditEntry, AuditQuery, AuditVerification};
use crate::door::{Caller, Operation, Replay};
use crate::lint::{LintReport, RebuildReport};
use crate::requests::ProposalRequest;
use crate::{BudgetUsage, Proposal, ProposalOutcome, ReviewItem};
use mem_core::{MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

impl Operation for ProposalRequest {
    const NAME: &'static str = "memory.propose";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Own;
    type Output = ProposalOutcome;

    fn idempotency_key(&self) -> Option<&str> {
        Some(&self.idempotency_key)
    }

    fn replayed(out: &ProposalOutcome) -> bool {
        out.replayed
    }

    fn run(self, c: &Caller<'_>) -> MemResult<ProposalOutcome> {
        c.require(Scope::Write)?;
        for t in &self.targets {
            c.memory_for(Scope::Write, t)?;
        }
        if let Some(m) = &self.memory {
            c.access.may_write_at(&VPath::parse(&m.path)?)?;
        }
        let (agent, session) = self
            .memory
            .as_ref()
            .map(|m| (m.agent_id.clone(), m.session_id.clone()))
            .unwrap_or_default();
        c.svc.propose(&self, &c.actor(agent, session))
    }
}

/// `proposal.get`: a proposal the caller made (any, for admin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetProposal {
    /// The proposal id (`prop_...`).
    #[schemars(length(min = 1))]
    pub id: String,
}

impl Operation for GetProposal {
    const NAME: &'static str = "proposal.get";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::None;
    type Output = Proposal;

    fn run(self, c: &Caller<'_>) -> MemResult<Proposal> {
        let p = c
            .svc
            .proposal(&self.id)
            .map_err(|e| c.hide(e, "proposal", &self.id))?;
        let mine =
            c.access.token_id().is_some() && p.proposer.token_id.as_deref() == c.access.token_id();
        if c.access.has(Scope::Admin) || (mine && c.access.has(Scope::Write)) {
            Ok(p)
        } else {
            Err(MemError::not_found("proposal", &self.id))
        }
    }
}

/// `review.list`: queued proposals, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewList {}

impl Operation for ReviewList {
    const NAME: &'static str = "review.list";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = Vec<Proposal>;

    fn run(self, c: &Caller<'_>) -> MemResult<Vec<Proposal>> {
        c.admin()?.review_list()
    }
}

/// `review.show`: old and new text, diff, evidence, findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewShow {
    #[schemars(length(min = 1))]
    pub id: String,
}

impl Operation for ReviewShow {
    const NAME: &'static str = "review.show";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = ReviewItem;

    fn run(self, c: &Caller<'_>) -> MemResult<ReviewItem> {
        c.admin()?.review_show(&self.id)
    }
}

/// `review.approve`: apply a queued proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewApprove {
    #[schemars(length(min = 1))]
    pub id: String,
    /// A note kept with the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Approve a new memory that has a source but no supporting evidence
    /// as tentative: confidence 0.3, served as provisional until feedback
    /// raises it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tentative: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for ReviewApprove {
    const NAME: &'static str = "review.approve";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = Proposal;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<Proposal> {
        let svc = c.admin()?;
        svc.review_approve(
            &self.id,
            &c.actor(None, None),
            self.note.as_deref(),
            self.tentative,
        )
    }
}

/// `review.reject`: refuse a queued proposal, with the reason the proposer
/// sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewReject {
    #[schemars(length(min = 1))]
    pub id: String,
    #[schemars(schema_with = "fields::text")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for ReviewReject {
    const NAME: &'static str = "review.reject";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = Proposal;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<Proposal> {
        let svc = c.admin()?;
        svc.review_reject(&self.id, &c.actor(None, None), &self.reason)
    }
}

impl Operation for AuditQuery {
    const NAME: &'static str = "audit.list";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = Vec<AuditEntry>;

    fn run(self, c: &Caller<'_>) -> MemResult<Vec<AuditEntry>> {
        c.admin()?.audit_list(&self)
    }
}

/// `audit.show`: one entry by sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditShow {
    #[schemars(range(min = 1))]
    pub seq: u64,
}

impl Operation for AuditShow {
    const NAME: &'static str = "audit.show";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = AuditEntry;

    fn run(self, c: &Caller<'_>) -> MemResult<AuditEntry> {
        c.admin()?.audit_show(self.seq)
    }
}

/// `audit.verify`: check the hash chain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditVerify {}

impl Operation for AuditVerify {
    const NAME: &'static str = "audit.verify";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = AuditVerification;

    fn run(self, c: &Caller<'_>) -> MemResult<AuditVerification> {
        c.admin()?.audit_verify()
    }
}

/// `workspace.budgets`: character budgets and their usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budgets {}

impl Operation for Budgets {
    const NAME: &'static str = "workspace.budgets";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = Vec<BudgetUsage>;

    fn run(self, c: &Caller<'_>) -> MemResult<Vec<BudgetUsage>> {
        c.admin()?.budgets()
    }
}

/// `workspace.lint`: consistency issues in memories and types.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lint {}

impl Operation for Lint {
    const NAME: &'static str = "workspace.lint";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = LintReport;

    fn run(self, c: &Caller<'_>) -> MemResult<LintReport> {
        c.admin()?.lint()
    }
}

/// `workspace.rebuild`: recompute memory records from the event log
/// (`dry_run` reports what differs without writing). Audited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rebuild {
    #[serde(default)]
    pub dry_run: bool,
}

impl Operation for Rebuild {
    const NAME: &'static str = "workspace.rebuild";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = RebuildReport;

    fn run(self, c: &Caller<'_>) -> MemResult<RebuildReport> {
        let svc = c.admin()?;
        let report = svc.rebuild_memories(!self.dry_run)?;
        if !self.dry_run {
            svc.audit_admin(
                &c.actor(None, None),
                "rebuild",
                "memories",
                vec![format!(
                    "{} events replayed, {} records repaired",
                    report.events,
                    report.repaired.len()
                )],
            )?;
        }
        Ok(report)
    }
}
