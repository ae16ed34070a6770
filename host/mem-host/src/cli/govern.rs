//! Governance commands: `propose`, `review`, `audit`, `types`, `lint`,
//! `check`, `budgets`, `rebuild`. The review queue, audit verification and
//! rebuilds are owner commands: no agent-facing surface offers them.

use super::lines::{Line, Lines};
use super::memory::MemoryFields;
use super::output::{Out, preview, set_exit_status, to_json};
use crate::client::Client;
use clap::{Args, Subcommand};
use mem_core::time::to_rfc3339;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::check::{CheckRequest, CheckStatus};
use mem_service::door::Operation;
use mem_service::gate::ProposalOp;
use mem_service::ops::govern::{
    AuditShow, AuditVerify, Budgets, Lint, Rebuild, ReviewApprove, ReviewList, ReviewReject,
    ReviewShow,
};
use mem_service::ops::recall::Types;
use mem_service::{
    AuditQuery, Evidence, EvidenceStance, MemoryDraft, Proposal, ProposalOutcome, ProposalRequest,
};
use std::path::PathBuf;

/// The new memory of a create/replace/consolidate proposal.
#[derive(Debug, Args)]
pub struct NewMemoryArgs {
    #[arg(long)]
    pub kind: String,
    #[arg(long)]
    pub path: String,
    #[command(flatten)]
    pub fields: MemoryFields,
}

/// What every proposal carries.
#[derive(Debug, Args)]
pub struct ProposalCommon {
    /// Required: the same key and request replays; a different request conflicts.
    #[arg(long)]
    pub idempotency_key: String,
    /// STANCE:REF with STANCE supports|weakens|contradicts and REF a memory
    /// id, a file id (optionally #L10-24) or any other text (an observation).
    #[arg(long = "evidence", value_name = "STANCE:REF")]
    pub evidence: Vec<String>,
    /// Why (required for remove).
    #[arg(long)]
    pub reason: Option<String>,
    /// The proposing agent (audited as the actor).
    #[arg(long)]
    pub agent_id: Option<String>,
    #[arg(long)]
    pub session_id: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ProposeCommand {
    /// Propose a new memory.
    Create {
        content: String,
        #[command(flatten)]
        memory: NewMemoryArgs,
        #[command(flatten)]
        common: ProposalCommon,
    },
    /// Propose a new memory that supersedes TARGET.
    Replace {
        target: String,
        content: String,
        #[command(flatten)]
        memory: NewMemoryArgs,
        #[command(flatten)]
        common: ProposalCommon,
    },
    /// Propose retracting TARGET (needs --reason).
    Remove {
        target: String,
        #[command(flatten)]
        common: ProposalCommon,
    },
    /// Propose one memory (--content) superseding every TARGET.
    Consolidate {
        #[arg(required = true, num_args = 2..)]
        targets: Vec<String>,
        #[arg(long)]
        content: String,
        #[command(flatten)]
        memory: NewMemoryArgs,
        #[command(flatten)]
        common: ProposalCommon,
    },
    /// Many proposals, one JSON document a line (`-` for stdin); one result a line.
    Batch { file: PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Queued proposals, oldest first.
    List,
    /// Everything a reviewer needs: old and new text, diff, evidence, findings.
    Show { id: String },
    /// Apply a queued proposal.
    Approve {
        id: String,
        #[arg(long)]
        note: Option<String>,
        /// A new memory with a source but no supporting evidence: write it
        /// at confidence 0.3, served as provisional until feedback raises it.
        #[arg(long)]
        tentative: bool,
    },
    /// Refuse a queued proposal.
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Entries, newest first.
    List {
        #[arg(long)]
        target: Option<String>,
        /// RFC 3339.
        #[arg(long)]
        since: Option<String>,
        /// Only entries of this action, as listed (remember, forgotten, ...).
        #[arg(long)]
        action: Option<String>,
        /// Only entries older than this seq (the last seq of a page: the next page).
        #[arg(long)]
        before: Option<u64>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// One entry by sequence number.
    Show { seq: u64 },
    /// Check the hash chain; exit 1 and name the first bad entry if broken.
    Verify,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The planned action or text.
    #[arg(long)]
    pub text: String,
    /// Where it happens (also matched by when_any guards).
    #[arg(long)]
    pub context: Option<String>,
    /// Only constraints scoped at this path or above.
    #[arg(long)]
    pub path: Option<String>,
}

#[derive(Debug, Args)]
pub struct RebuildArgs {
    /// Report what differs without writing.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_evidence(raw: &str) -> MemResult<Evidence> {
    let bad = || {
        MemError::bad_request(format!("bad --evidence {raw:?}"))
            .with_hint("use STANCE:REF, e.g. supports:mem_01j..., contradicts:file_01j...#L3-9, weakens:\"seen in logs\"")
    };
    let (stance, reference) = raw.split_once(':').ok_or_else(bad)?;
    let stance = match stance.trim() {
        "supports" => EvidenceStance::Supports,
        "weakens" => EvidenceStance::Weakens,
        "contradicts" => EvidenceStance::Contradicts,
        _ => return Err(bad()),
    };
    let reference = reference.trim();
    let mut e = Evidence {
        stance,
        memory_id: None,
        file_id: None,
        locator: None,
        observation: None,
    };
    if mem_core::id::has_prefix(reference, mem_core::id::MEMORY) {
        e.memory_id = Some(reference.to_string());
    } else if let Some((file, locator)) = reference
        .split_once('#')
        .filter(|(f, _)| mem_core::id::has_prefix(f, mem_core::id::FILE))
    {
        e.file_id = Some(file.to_string());
        e.locator = Some(locator.to_string());
    } else if mem_core::id::has_prefix(reference, mem_core::id::FILE) {
        e.file_id = Some(reference.to_string());
    } else {
        e.observation = Some(reference.to_string());
    }
    Ok(e)
}

fn new_memory(content: String, m: NewMemoryArgs, c: &ProposalCommon) -> MemResult<MemoryDraft> {
    m.fields.draft(
        content,
        m.kind,
        m.path,
        c.agent_id.clone(),
        c.session_id.clone(),
    )
}

fn request(
    op: ProposalOp,
    targets: Vec<String>,
    memory: Option<MemoryDraft>,
    c: &ProposalCommon,
) -> MemResult<ProposalRequest> {
    Ok(ProposalRequest {
        op,
        targets,
        memory,
        evidence: c
            .evidence
            .iter()
            .map(|e| parse_evidence(e))
            .collect::<MemResult<_>>()?,
        reason: c.reason.clone(),
        idempotency_key: c.idempotency_key.clone(),
    })
}

fn proposal_line(p: &Proposal) -> String {
    let mut lines = vec![
        format!(
            "proposal {}: {} ({:?}) — decided by {}",
            p.id,
            p.status.as_str(),
            p.op,
            p.decided_by
        )
        .to_lowercase(),
    ];
    for f in &p.findings {
        lines.push(format!(
            "  {} [{}] {}: {}",
            f.effect, f.source, f.code, f.message
        ));
    }
    if !p.result_ids.is_empty() {
        lines.push(format!("  wrote {}", p.result_ids.join(", ")));
    }
    lines.join("\n")
}

pub fn propose(c: &Client, out: &Out, cmd: ProposeCommand) -> MemResult<()> {
    let req = match cmd {
        ProposeCommand::Create {
            content,
            memory,
            common,
        } => request(
            ProposalOp::Create,
            vec![],
            Some(new_memory(content, memory, &common)?),
            &common,
        )?,
        ProposeCommand::Replace {
            target,
            content,
            memory,
            common,
        } => request(
            ProposalOp::Replace,
            vec![target],
            Some(new_memory(content, memory, &common)?),
            &common,
        )?,
        ProposeCommand::Remove { target, common } => {
            request(ProposalOp::Remove, vec![target], None, &common)?
        }
        ProposeCommand::Consolidate {
            targets,
            content,
            memory,
            common,
        } => request(
            ProposalOp::Consolidate,
            targets,
            Some(new_memory(content, memory, &common)?),
            &common,
        )?,
        ProposeCommand::Batch { file } => return propose_batch(c, out, &file),
    };
    let outcome = c.run(req)?.value;
    out.emit(&outcome, |o| proposal_line(&o.proposal))
}

/// One ProposalRequest a line; each line is proposed on its own, durably,
/// and answered in order (the actor is the line's memory agent, else the
/// owner). A line that is not UTF-8 or not a proposal fails alone.
fn propose_batch(c: &Client, out: &Out, file: &std::path::Path) -> MemResult<()> {
    let mut lines = Lines::open(file)?;
    let mut failed = 0;
    while let Some(Line { no: line_no, text }) = lines.next_line()? {
        let result = text.and_then(|line| {
            let args: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
                MemError::bad_request(format!("line {line_no}: not JSON: {e}"))
                    .with_hint("each line is one ProposalRequest as a JSON object")
            })?;
            // The door checks the line against the proposal's schema and
            // keeps its code, hint and details.
            let done = c
                .run_json(ProposalRequest::NAME, &args)
                .map_err(|e| MemError {
                    message: format!("line {line_no}: {}", e.message),
                    ..e
                })?;
            serde_json::from_value::<ProposalOutcome>(done.value)
                .map_err(|e| MemError::internal(format!("cannot read the answer: {e}")))
        });
        let doc = match result {
            Ok(o) => {
                serde_json::json!({ "line": line_no, "ok": true, "replayed": o.replayed, "proposal": o.proposal })
            }
            Err(e) => {
                failed += 1;
                serde_json::json!({ "line": line_no, "ok": false, "error": e })
            }
        };
        out.line(&to_json(&doc)?)?;
    }
    if failed > 0 {
        return Err(
            MemError::new(ErrorCode::BadRequest, format!("{failed} proposals failed"))
                .with_hint("the other lines were processed; see the per-line errors above"),
        );
    }
    Ok(())
}

pub fn review(c: &Client, out: &Out, cmd: ReviewCommand) -> MemResult<()> {
    match cmd {
        ReviewCommand::List => {
            let items = c.run(ReviewList {})?.value;
            out.emit(&items, |items| {
                if items.is_empty() {
                    return "the review queue is empty".into();
                }
                items
                    .iter()
                    .map(|p| {
                        let text = p
                            .memory
                            .as_ref()
                            .and_then(|m| m.content.as_deref())
                            .or(p.reason.as_deref())
                            .unwrap_or("");
                        format!(
                            "{}  {:<11} {:<24} {}",
                            p.id,
                            format!("{:?}", p.op).to_lowercase(),
                            p.proposer.label(),
                            preview(text, 60)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        ReviewCommand::Show { id } => {
            let item = c.run(ReviewShow { id })?.value;
            out.emit(&item, |r| {
                let mut lines = vec![
                    proposal_line(&r.proposal),
                    format!("proposed by {}", r.proposal.proposer.label()),
                ];
                for m in &r.old {
                    lines.push(format!(
                        "old {} ({}):\n{}",
                        m.id,
                        m.lifecycle.as_str(),
                        m.content.as_deref().unwrap_or("(forgotten)")
                    ));
                }
                if let Some(t) = &r.new_text {
                    lines.push(format!("new:\n{t}"));
                }
                if !r.diff.is_empty() {
                    lines.push(format!("diff:\n{}", r.diff.trim_end()));
                }
                for e in &r.evidence {
                    lines.push(format!(
                        "evidence {:?} {}{}: {}",
                        e.evidence.stance,
                        e.reference,
                        if e.found { "" } else { " (missing)" },
                        e.text
                            .as_deref()
                            .map(|t| preview(t, 200))
                            .unwrap_or_default()
                    ));
                }
                lines.join("\n")
            })
        }
        ReviewCommand::Approve {
            id,
            note,
            tentative,
        } => {
            let p = c
                .run(ReviewApprove {
                    id,
                    note,
                    tentative,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&p, proposal_line)
        }
        ReviewCommand::Reject { id, reason } => {
            let p = c
                .run(ReviewReject {
                    id,
                    reason,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&p, proposal_line)
        }
    }
}

pub fn audit(c: &Client, out: &Out, cmd: AuditCommand) -> MemResult<()> {
    match cmd {
        AuditCommand::List {
            target,
            since,
            action,
            before,
            limit,
        } => {
            let entries = c
                .run(AuditQuery {
                    target,
                    since,
                    action,
                    before,
                    limit: Some(limit),
                })?
                .value;
            out.emit(&entries, |es| {
                if es.is_empty() {
                    return "no audit entries".into();
                }
                es.iter()
                    .map(|e| {
                        format!(
                            "{:>6}  {}  {:<16} {:<32} {:<14} {}",
                            e.seq,
                            to_rfc3339(&e.at),
                            e.action,
                            e.target,
                            e.verdict,
                            e.actor.label()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        AuditCommand::Show { seq } => {
            let e = c.run(AuditShow { seq })?.value;
            out.emit(&e, |e| serde_json::to_string_pretty(e).unwrap_or_default())
        }
        AuditCommand::Verify => {
            let v = c.run(AuditVerify {})?.value;
            if !v.ok {
                set_exit_status(1);
            }
            out.emit(&v, |v| match (&v.first_bad_seq, &v.problem) {
                (Some(seq), Some(p)) => format!("audit log BROKEN at entry {seq}: {p}"),
                _ => format!("audit log intact: {} entries", v.entries),
            })
        }
    }
}

pub fn types(c: &Client, out: &Out) -> MemResult<()> {
    let list = c.run(Types {})?.value;
    out.emit(&list, |l| {
        l.types
            .iter()
            .map(|t| {
                let fields: Vec<String> = t
                    .fields
                    .iter()
                    .map(|(n, f)| {
                        let mut s = n.clone();
                        if f.required {
                            s.push('*');
                        }
                        if !f.allowed.is_empty() {
                            s.push_str(&format!("={}", f.allowed.join("|")));
                        }
                        s
                    })
                    .collect();
                format!(
                    "{:<28} {:<10} {}",
                    t.name,
                    t.role,
                    if t.builtin {
                        "(built-in)".into()
                    } else {
                        fields.join(" ")
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

pub fn lint(c: &Client, out: &Out) -> MemResult<()> {
    let report = c.run(Lint {})?.value;
    if report.status == "errors" {
        set_exit_status(1);
    }
    out.emit(&report, |r| {
        let mut lines = vec![format!(
            "{}: {} memories, {} types, {} issues",
            r.status,
            r.memories,
            r.types,
            r.issues.len()
        )];
        lines.extend(
            r.issues
                .iter()
                .map(|i| format!("  {:?} {}: {}", i.severity, i.code, i.message).to_lowercase()),
        );
        lines.join("\n")
    })
}

pub fn check(c: &Client, out: &Out, a: CheckArgs) -> MemResult<()> {
    let result = c
        .run(CheckRequest {
            text: a.text,
            context: a.context,
            path: a.path,
        })?
        .value;
    if result.status != CheckStatus::Allow {
        set_exit_status(1);
    }
    out.emit(&result, |r| {
        let mut lines = vec![
            format!("{:?} ({} constraints considered)", r.status, r.constraints).to_uppercase(),
        ];
        for h in &r.blocked_by {
            lines.push(format!(
                "  blocked by {}: {} — {}",
                h.citation,
                preview(&h.content, 80),
                h.reason
            ));
        }
        for h in &r.needs_review {
            lines.push(format!(
                "  needs review {}: {} — {}",
                h.citation,
                preview(&h.content, 80),
                h.reason
            ));
        }
        lines.join("\n")
    })
}

pub fn budgets(c: &Client, out: &Out) -> MemResult<()> {
    let b = c.run(Budgets {})?.value;
    out.emit(&b, |b| {
        if b.is_empty() {
            return "no budgets configured (mem.toml [budgets])".into();
        }
        b.iter()
            .map(|u| format!("{:<32} {:>10} / {:<10}", u.budget, u.usage, u.limit))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

pub fn rebuild(c: &Client, out: &Out, a: RebuildArgs) -> MemResult<()> {
    let r = c.run(Rebuild { dry_run: a.dry_run })?.value;
    out.emit(&r, |r| {
        format!(
            "{} events, {} memories; {} {}",
            r.events,
            r.memories,
            r.repaired.len(),
            if r.applied {
                "records repaired"
            } else {
                "records differ (dry run)"
            }
        )
    })
}
