//! Memory commands: remember (one, or many with --jsonl) and the
//! `memory` group (get, list, feedback, archive, restore, forget).

use super::lines::Lines;
use super::output::{Out, preview, read_text, to_json};
use crate::client::Client;
use clap::{Args, Subcommand};
use mem_core::model::{FeedbackAction, Memory};
use mem_core::time::to_rfc3339;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::ops::memories::{Archive, Feedback, Forget, GetMemory, RememberBatch, Restore};
use mem_service::{ListMemories, MemoryDraft, RememberOutcome};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Lines written per durable group in `remember --jsonl`: a group's
/// results are printed once it is durable, so acknowledgements stream.
const JSONL_GROUP: usize = 64;
/// A group also closes after this long, so a slow producer's lines are
/// acknowledged without waiting for a full group.
const JSONL_GROUP_TIME: Duration = Duration::from_millis(250);

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
    /// The new memory these fields describe, with the caller's required parts.
    pub fn draft(
        self,
        content: String,
        kind: String,
        path: String,
        agent_id: Option<String>,
        session_id: Option<String>,
    ) -> MemResult<MemoryDraft> {
        Ok(MemoryDraft {
            content,
            kind,
            path,
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
        /// Makes a retry safe: it returns the first answer.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Archive an active memory (hidden from recall, restorable).
    Archive {
        id: String,
        #[arg(long)]
        expected_version: u64,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Restore an archived memory.
    Restore {
        id: String,
        #[arg(long)]
        expected_version: u64,
        #[arg(long)]
        idempotency_key: Option<String>,
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
        #[arg(long)]
        idempotency_key: Option<String>,
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
    /// Only memories this agent wrote (provenance agent_id).
    #[arg(long)]
    pub agent: Option<String>,
    /// Only pinned (true) or only unpinned (false) memories.
    #[arg(long)]
    pub pinned: Option<bool>,
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

pub fn remember(c: &Client, out: &Out, a: RememberArgs) -> MemResult<()> {
    if let Some(file) = &a.jsonl {
        return remember_jsonl(c, out, file);
    }
    let mut content = a.content.unwrap_or_default();
    if content == "-" {
        content = read_text(&mut std::io::stdin(), "stdin")?;
    }
    let req = a
        .fields
        .draft(
            content,
            a.kind.unwrap_or_default(),
            a.path.unwrap_or_default(),
            a.agent_id,
            a.session_id,
        )?
        .remember(a.idempotency_key.unwrap_or_default());
    let outcome = c.run(req)?.value;
    out.emit(&outcome, outcome_line)
}

/// One request per line; one result line per input line, in order,
/// errors included, each printed as soon as its group is durable. A line
/// that is not UTF-8 or not a request fails alone and reading goes on.
fn remember_jsonl(c: &Client, out: &Out, file: &std::path::Path) -> MemResult<()> {
    let mut lines = Lines::open(file)?;
    let mut failed = 0usize;
    let mut total = 0usize;
    let _indexing = c.index_alongside()?;
    while let Some(group) = lines.next_group(JSONL_GROUP, JSONL_GROUP_TIME)? {
        let group: Vec<(usize, MemResult<Item>)> = group
            .into_iter()
            .map(|l| (l.no, l.text.and_then(|t| parse_line(l.no, &t))))
            .collect();
        total += group.len();
        failed += write_group(c, out, group)?;
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

/// One request of a batch, as JSON: the door checks and decodes it.
type Item = serde_json::Map<String, serde_json::Value>;

/// One input line as a JSON object.
fn parse_line(line_no: usize, text: &str) -> MemResult<Item> {
    serde_json::from_str::<Item>(text).map_err(|e| {
        MemError::bad_request(format!("line {line_no}: not a JSON object: {e}"))
            .with_hint("each line is a JSON object with content, kind, path, idempotency_key and optional event_at, source_type, source_ref, source_file_id, agent_id, session_id, task_id, confidence, attributes")
            .with_details(serde_json::json!({ "line": line_no }))
    })
}

fn write_group(c: &Client, out: &Out, group: Vec<(usize, MemResult<Item>)>) -> MemResult<usize> {
    let valid: Vec<Item> = group
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().cloned())
        .collect();
    let mut results = if valid.is_empty() {
        Vec::new().into_iter()
    } else {
        c.run(RememberBatch { items: valid })?.value.into_iter()
    };
    let mut failed = 0;
    for (line_no, parsed) in group {
        let result = match parsed {
            Ok(_) => match results.next() {
                Some(r) if r.ok => r
                    .result
                    .ok_or_else(|| MemError::internal("a batch result has no outcome")),
                Some(r) => Err(r
                    .error
                    .unwrap_or_else(|| MemError::internal("a failed batch item has no error"))),
                None => Err(MemError::internal("a result went missing")),
            }
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

pub fn run(c: &Client, out: &Out, cmd: MemoryCommand) -> MemResult<()> {
    let show = |m: Memory| out.emit(&m, memory_details);
    match cmd {
        MemoryCommand::Get { id } => show(c.run(GetMemory { id })?.value),
        MemoryCommand::List(a) => {
            let page = c
                .run(ListMemories {
                    path: a.path,
                    kind: a.kind,
                    lifecycle: a.lifecycle,
                    agent: a.agent,
                    pinned: a.pinned,
                    limit: Some(a.limit),
                    cursor: a.cursor,
                })?
                .value;
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
            idempotency_key,
        } => {
            let action = FeedbackAction::parse(&action).ok_or_else(|| {
                MemError::bad_request(format!("unknown feedback {action:?}"))
                    .with_hint("use useful, not_useful, pin or unpin")
            })?;
            show(
                c.run(Feedback {
                    id,
                    action,
                    expected_version,
                    agent_id: None,
                    idempotency_key,
                })?
                .value,
            )
        }
        MemoryCommand::Archive {
            id,
            expected_version,
            idempotency_key,
        } => show(
            c.run(Archive {
                id,
                expected_version,
                idempotency_key,
            })?
            .value,
        ),
        MemoryCommand::Restore {
            id,
            expected_version,
            idempotency_key,
        } => show(
            c.run(Restore {
                id,
                expected_version,
                idempotency_key,
            })?
            .value,
        ),
        MemoryCommand::Forget {
            id,
            expected_version,
            reason,
            confirm,
            idempotency_key,
        } => show(
            c.run(Forget {
                id,
                expected_version,
                reason,
                confirm,
                idempotency_key,
            })?
            .value,
        ),
    }
}
