//! Memory commands: remember (one, or many with --jsonl) and the
//! `memory` group (get, list, feedback, archive, restore, forget).

use super::output::{Out, preview, to_json};
use clap::{Args, Subcommand};
use mem_core::model::{FeedbackAction, Memory};
use mem_core::time::to_rfc3339;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::{Actor, ListMemories, RememberOutcome, RememberRequest, Service};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

/// Lines written per durable group in `remember --jsonl`: results of a
/// group are printed only after the group is flushed.
const JSONL_GROUP: usize = 512;

#[derive(Debug, Args)]
pub struct RememberArgs {
    /// What to remember (`-` reads stdin). Not used with --jsonl.
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
    pub content: Option<String>,
    /// Write many memories: one JSON object a line (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
    /// observation, decision, preference, task_state, fact, note or artifact.
    #[arg(long, required_unless_present = "jsonl")]
    pub kind: Option<String>,
    /// Path scope, e.g. /projects/api.
    #[arg(long, required_unless_present = "jsonl")]
    pub path: Option<String>,
    /// Required: same key + same request returns the original; a different
    /// request conflicts. (In --jsonl, each line carries its own.)
    #[arg(long, required_unless_present = "jsonl")]
    pub idempotency_key: Option<String>,
    #[arg(long)]
    pub agent_id: Option<String>,
    #[arg(long)]
    pub session_id: Option<String>,
    #[command(flatten)]
    pub fields: MemoryFields,
}

/// The optional fields of a new memory, shared by `remember` and the
/// proposals that write one.
#[derive(Debug, Args)]
pub struct MemoryFields {
    /// When it happened (RFC 3339).
    #[arg(long)]
    pub event_at: Option<String>,
    #[arg(long)]
    pub source_type: Option<String>,
    #[arg(long)]
    pub source_ref: Option<String>,
    #[arg(long)]
    pub source_file_id: Option<String>,
    #[arg(long)]
    pub task_id: Option<String>,
    /// 0..1 (default from mem.toml).
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Attribute KEY=VALUE (a typed memory's fields); repeatable.
    #[arg(long = "attr", value_name = "KEY=VALUE")]
    pub attrs: Vec<String>,
}

impl MemoryFields {
    /// The request these fields describe, with the caller's required parts.
    pub fn request(
        self,
        content: String,
        kind: String,
        path: String,
        idempotency_key: Option<String>,
        agent_id: Option<String>,
        session_id: Option<String>,
    ) -> MemResult<RememberRequest> {
        Ok(RememberRequest {
            content,
            kind,
            path,
            idempotency_key,
            event_at: self.event_at,
            source_type: self.source_type,
            source_ref: self.source_ref,
            source_file_id: self.source_file_id,
            agent_id,
            session_id,
            task_id: self.task_id,
            confidence: self.confidence,
            attributes: parse_attrs(&self.attrs)?,
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Show one memory.
    Get { id: String },
    /// List memories, newest first.
    List(ListArgs),
    /// Record feedback: useful, not_useful, pin or unpin.
    Feedback {
        id: String,
        action: String,
        #[arg(long)]
        expected_version: u64,
    },
    /// Archive an active memory (hidden from recall, restorable).
    Archive {
        id: String,
        #[arg(long)]
        expected_version: u64,
    },
    /// Restore an archived memory.
    Restore {
        id: String,
        #[arg(long)]
        expected_version: u64,
    },
    /// Purge a memory's content for good; a tombstone remains.
    Forget {
        id: String,
        #[arg(long)]
        expected_version: u64,
        #[arg(long)]
        reason: String,
        /// Required: forgetting cannot be undone.
        #[arg(long)]
        confirm: bool,
    },
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only memories at or below this path.
    #[arg(long)]
    pub path: Option<String>,
    #[arg(long)]
    pub kind: Option<String>,
    /// active (default), archived, superseded, forgotten or all.
    #[arg(long)]
    pub lifecycle: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Continue after a previous page's next_cursor.
    #[arg(long)]
    pub cursor: Option<String>,
}

fn parse_attrs(raw: &[String]) -> MemResult<BTreeMap<String, String>> {
    raw.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .ok_or_else(|| {
                    MemError::bad_request(format!("bad --attr {kv:?}"))
                        .with_hint("use --attr KEY=VALUE")
                })
        })
        .collect()
}

pub fn memory_details(m: &Memory) -> String {
    let mut lines = vec![
        format!("id:          {}", m.id),
        format!("kind:        {}", m.kind),
        format!("path:        {}", m.path),
        format!("lifecycle:   {}", m.lifecycle.as_str()),
        format!("version:     {}", m.state_version),
        format!("confidence:  {:.2}", m.confidence),
        format!(
            "feedback:    {} useful, {} not useful{}",
            m.feedback.useful,
            m.feedback.not_useful,
            if m.pinned { ", pinned" } else { "" }
        ),
        format!("created:     {}", to_rfc3339(&m.created_at)),
        format!("sha256:      {}", m.content_sha256),
    ];
    let p = &m.provenance;
    let prov: Vec<String> = [
        ("source_type", &p.source_type),
        ("source_ref", &p.source_ref),
        ("source_file_id", &p.source_file_id),
        ("agent_id", &p.agent_id),
        ("session_id", &p.session_id),
        ("task_id", &p.task_id),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
    .chain(
        p.event_at
            .as_ref()
            .map(|t| format!("event_at={}", to_rfc3339(t))),
    )
    .collect();
    if !prov.is_empty() {
        lines.push(format!("provenance:  {}", prov.join(" ")));
    }
    for (k, v) in &m.attributes {
        lines.push(format!("attr:        {k}={v}"));
    }
    if let Some(t) = &m.tombstone {
        lines.push(format!("forgotten:   {} ({})", to_rfc3339(&t.at), t.reason));
    }
    if let Some(c) = &m.content {
        lines.push(String::new());
        lines.push(c.clone());
    }
    lines.join("\n")
}

fn outcome_line(o: &RememberOutcome) -> String {
    match (&o.memory, &o.proposal) {
        (Some(m), _) => format!(
            "{} {} (version {}, {} {})",
            if o.replayed { "replayed" } else { "remembered" },
            m.id,
            m.state_version,
            m.kind,
            m.path
        ),
        (None, Some(p)) => format!(
            "{} as proposal {} ({}: {}); `mem-host review show {}` shows it",
            if o.replayed {
                "replayed"
            } else {
                "queued for review"
            },
            p.id,
            p.status.as_str(),
            p.decided_by,
            p.id
        ),
        (None, None) => "nothing stored".into(),
    }
}

pub fn remember(svc: &Service, out: &Out, a: RememberArgs) -> MemResult<()> {
    if let Some(file) = &a.jsonl {
        return remember_jsonl(svc, out, file);
    }
    let mut content = a.content.unwrap_or_default();
    if content == "-" {
        content.clear();
        std::io::stdin()
            .read_to_string(&mut content)
            .map_err(|e| MemError::io("cannot read stdin", &e))?;
    }
    let req = a.fields.request(
        content,
        a.kind.unwrap_or_default(),
        a.path.unwrap_or_default(),
        a.idempotency_key,
        a.agent_id,
        a.session_id,
    )?;
    let outcome = svc.remember(&req)?;
    out.emit(&outcome, outcome_line)
}

/// One request per line; results in input order, each printed once its
/// group is durable. A bad line fails alone, naming its line number.
fn remember_jsonl(svc: &Service, out: &Out, file: &PathBuf) -> MemResult<()> {
    let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(file)
            .map_err(|e| MemError::io(&format!("cannot read {}", file.display()), &e))?;
        Box::new(BufReader::new(f))
    };
    let mut failed = 0usize;
    let mut total = 0usize;
    let mut group: Vec<(usize, Result<RememberRequest, MemError>)> = Vec::new();
    let mut lines = reader.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let line_no = i + 1;
        let line = line.map_err(|e| MemError::io(&format!("cannot read line {line_no}"), &e))?;
        if !line.trim().is_empty() {
            let parsed = serde_json::from_str::<RememberRequest>(&line).map_err(|e| {
                MemError::bad_request(format!("line {line_no}: not a valid request: {e}"))
                    .with_hint("each line is a JSON object with content, kind, path, idempotency_key and optional event_at, source_type, source_ref, source_file_id, agent_id, session_id, task_id, confidence, attributes")
                    .with_details(serde_json::json!({ "line": line_no }))
            });
            group.push((line_no, parsed));
        }
        if group.len() >= JSONL_GROUP || (lines.peek().is_none() && !group.is_empty()) {
            total += group.len();
            failed += write_group(svc, out, std::mem::take(&mut group))?;
        }
    }
    if failed > 0 {
        return Err(MemError::new(
            ErrorCode::BadRequest,
            format!("{failed} of {total} lines failed"),
        )
        .with_hint("fix the lines reported above and resend them; the other lines were stored"));
    }
    Ok(())
}

fn write_group(
    svc: &Service,
    out: &Out,
    group: Vec<(usize, Result<RememberRequest, MemError>)>,
) -> MemResult<usize> {
    let valid: Vec<RememberRequest> = group
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().cloned())
        .collect();
    let mut results = svc.remember_many(&valid).into_iter();
    let mut failed = 0;
    for (line_no, parsed) in group {
        let result = match parsed {
            Ok(_) => results
                .next()
                .unwrap_or_else(|| Err(MemError::internal("a result went missing")))
                .map_err(|e| MemError {
                    message: format!("line {line_no}: {}", e.message),
                    ..e
                }),
            Err(e) => Err(e),
        };
        match result {
            Ok(o) if out.json() => {
                let mut doc =
                    serde_json::json!({ "line": line_no, "ok": true, "replayed": o.replayed });
                if let Some(m) = &o.memory {
                    doc["memory"] =
                        serde_json::to_value(m).map_err(|e| MemError::internal(e.to_string()))?;
                }
                if let Some(p) = &o.proposal {
                    doc["proposal"] =
                        serde_json::to_value(p).map_err(|e| MemError::internal(e.to_string()))?;
                }
                out.line(&to_json(&doc)?)?
            }
            Ok(o) => out.line(&format!("line {line_no}: {}", outcome_line(&o)))?,
            Err(e) => {
                failed += 1;
                if out.json() {
                    out.line(&to_json(
                        &serde_json::json!({ "line": line_no, "ok": false, "error": e }),
                    )?)?;
                } else {
                    out.line(&format!("line {line_no}: error[{}]: {}", e.code, e.message))?;
                }
            }
        }
    }
    Ok(failed)
}

pub fn run(svc: &Service, out: &Out, cmd: MemoryCommand) -> MemResult<()> {
    let show = |m: Memory| out.emit(&m, memory_details);
    // The local CLI is the workspace owner.
    let owner = Actor::owner();
    match cmd {
        MemoryCommand::Get { id } => show(svc.memory(&id)?),
        MemoryCommand::List(a) => {
            let page = svc.list_memories(&ListMemories {
                path: a.path,
                kind: a.kind,
                lifecycle: a.lifecycle,
                limit: Some(a.limit),
                cursor: a.cursor,
            })?;
            out.emit(&page, |p| {
                let mut lines: Vec<String> = p
                    .items
                    .iter()
                    .map(|m| {
                        format!(
                            "{}  {:<11} {:<9} v{:<3} {:<24} {}",
                            m.id,
                            m.kind,
                            m.lifecycle.as_str(),
                            m.state_version,
                            m.path.as_str(),
                            m.content
                                .as_deref()
                                .map(|c| preview(c, 60))
                                .unwrap_or_else(|| "(forgotten)".into())
                        )
                    })
                    .collect();
                if lines.is_empty() {
                    lines.push("no memories match".into());
                }
                if let Some(c) = &p.next_cursor {
                    lines.push(format!("more: --cursor {c}"));
                }
                lines.join("\n")
            })
        }
        MemoryCommand::Feedback {
            id,
            action,
            expected_version,
        } => {
            let action = FeedbackAction::parse(&action).ok_or_else(|| {
                MemError::bad_request(format!("unknown feedback {action:?}"))
                    .with_hint("use useful, not_useful, pin or unpin")
            })?;
            show(svc.feedback(&id, action, expected_version, &owner)?)
        }
        MemoryCommand::Archive {
            id,
            expected_version,
        } => show(svc.archive(&id, expected_version, &owner)?),
        MemoryCommand::Restore {
            id,
            expected_version,
        } => show(svc.restore(&id, expected_version, &owner)?),
        MemoryCommand::Forget {
            id,
            expected_version,
            reason,
            confirm,
        } => show(svc.forget(&id, expected_version, &reason, confirm, &owner)?),
    }
}
