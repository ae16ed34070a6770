//! The owner's administration, the same on every surface and audited:
//! API tokens, the search index, and documents moved through adapter
//! plugins (plugin administration is in `plugins`).

use super::fields;
use super::memories::ItemResult;
use crate::RememberOutcome;
use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::processing::{ProcessReport, Reindex as Which};
use crate::tokens::{CreatedToken, TokenInfo, TokenRequest};
use mem_core::index::IndexStats;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// `token.list`: API tokens, never their secrets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenList {}

impl Operation for TokenList {
    const NAME: &'static str = "token.list";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = Vec<TokenInfo>;

    fn run(self, c: &Caller<'_>) -> MemResult<Vec<TokenInfo>> {
        c.admin()?.list_tokens()
    }
}

impl Operation for TokenRequest {
    const NAME: &'static str = "token.create";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = CreatedToken;

    /// Not replayable: a kept answer would hold the secret.
    fn run(self, c: &Caller<'_>) -> MemResult<CreatedToken> {
        let svc = c.admin()?;
        let created = svc.create_token(&self)?;
        svc.audit_admin(
            &c.actor(None, None),
            "token-create",
            &format!("token:{}", created.token.id),
            vec![format!(
                "{} with {}",
                created.token.name,
                created
                    .token
                    .scopes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )],
        )?;
        Ok(created)
    }
}

/// `token.revoke`: the next call with the token is refused. A token
/// cannot revoke itself: an admin token revoking another leaves itself, so
/// a token-holding client can never revoke the last admin token (only the
/// owner, through the CLI, can).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRevoke {
    /// The token's id or name.
    #[schemars(length(min = 1))]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for TokenRevoke {
    const NAME: &'static str = "token.revoke";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = TokenInfo;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<TokenInfo> {
        let svc = c.admin()?;
        let target = svc.find_token(&self.id)?;
        if c.access.token_id() == Some(target.id.as_str()) {
            return Err(MemError::new(
                ErrorCode::InvalidState,
                "a token cannot revoke itself",
            )
            .with_hint("revoke it with another admin token, or as the owner with `mem-host token revoke`")
            .with_details(json!({ "token": target.id })));
        }
        let revoked = svc.revoke_token(&target.id)?;
        svc.audit_admin(
            &c.actor(None, None),
            "token-revoke",
            &format!("token:{}", revoked.id),
            vec![format!("revoked {}", revoked.name)],
        )?;
        Ok(revoked)
    }
}

/// Which files `index.reindex` sends back to the processors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReindexMode {
    /// Files still pending (after a crash or a stopped worker), and the
    /// index brought up to the log.
    #[default]
    Pending,
    /// Every file whose processing failed or was partial.
    Failed,
    /// Every file re-processed and the whole index rebuilt from the records.
    All,
}

/// `index.reindex`: re-process files and bring the search index up to date.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reindex {
    #[serde(default)]
    pub mode: ReindexMode,
}

/// `files.reprocess`: send one file back to the processors (a failed one,
/// or after a processor changed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reprocess {
    /// A file id or path.
    #[schemars(length(min = 1))]
    pub target: String,
}

/// What `index.reindex` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReindexReport {
    pub processing: ProcessReport,
    /// Events replayed into the index (an incremental sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_events: Option<u64>,
    /// Records re-indexed (a rebuild, `all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reindexed_records: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<IndexStats>,
}

impl Operation for Reindex {
    const NAME: &'static str = "index.reindex";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = ReindexReport;

    fn run(self, c: &Caller<'_>) -> MemResult<ReindexReport> {
        let svc = c.admin()?;
        let processing = match self.mode {
            ReindexMode::Failed => svc.reindex(Which::Failed)?,
            ReindexMode::All => svc.reindex(Which::All)?,
            ReindexMode::Pending => {
                svc.requeue_pending()?;
                svc.drain_processing()?
            }
        };
        let mut report = ReindexReport {
            processing,
            applied_events: None,
            reindexed_records: None,
            stats: None,
        };
        if self.mode == ReindexMode::All {
            report.reindexed_records = Some(svc.rebuild_index()?);
        } else {
            report.applied_events = Some(svc.sync_index()?);
        }
        report.stats = svc.index_stats()?;
        let mode = serde_json::to_value(self.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        svc.audit_admin(
            &c.actor(None, None),
            "reindex",
            &mode,
            vec![format!("{} files processed", report.processing.processed)],
        )?;
        Ok(report)
    }
}

impl Operation for Reprocess {
    const NAME: &'static str = "files.reprocess";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::None;
    type Output = ProcessReport;

    /// Re-processing derives state again from what is stored: a writer of
    /// the file may ask for it.
    fn run(self, c: &Caller<'_>) -> MemResult<ProcessReport> {
        let f = c
            .svc
            .file_info(&self.target)
            .map_err(|e| c.hide(e, "file", &self.target))?;
        c.object(Scope::Write, "file", &self.target, &f.path)?;
        c.svc.reindex(Which::File(f.id))
    }
}

/// Longest document a JSON caller (MCP `mem_import`) may send as
/// `content` (the request schema says so, the door enforces it); a larger
/// one is uploaded raw (`POST /v1/import`) or split.
pub const MAX_DOCUMENT_CHARS: usize = 1 << 20;

/// Adapter and document defaults of `import`/`export`.
pub const DEFAULT_ADAPTER: &str = "agents-md";
pub const DEFAULT_DOCUMENT: &str = "AGENTS.md";

/// `documents.import`: a document in another agent's format (CLAUDE.md,
/// AGENTS.md...) becomes memories through an adapter plugin; importing the
/// same document again replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportDocument {
    /// The folder the memories go to.
    #[schemars(schema_with = "fields::path")]
    pub path: String,
    /// The adapter plugin (default `agents-md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// The document's name (default `AGENTS.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The document as UTF-8 text (JSON callers, at most
    /// [`MAX_DOCUMENT_CHARS`] characters); a raw upload streams it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_DOCUMENT_CHARS))]
    pub content: Option<String>,
}

impl Operation for ImportDocument {
    const NAME: &'static str = "documents.import";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Own;
    type Output = Vec<ItemResult<RememberOutcome>>;

    fn run(mut self, c: &Caller<'_>) -> MemResult<Self::Output> {
        let bytes = self.content.take().unwrap_or_default().into_bytes();
        c.import_document(self, &bytes)
    }
}

impl Caller<'_> {
    /// Imports `bytes` as the document `req` describes: one result per
    /// entry, in order.
    pub fn import_document(
        &self,
        req: ImportDocument,
        bytes: &[u8],
    ) -> MemResult<Vec<ItemResult<RememberOutcome>>> {
        self.require(Scope::Write)?;
        let scope = VPath::parse(&req.path)?;
        self.access.may_write_at(&scope)?;
        if bytes.is_empty() {
            return Err(
                MemError::new(ErrorCode::Unprocessable, "the document is empty")
                    .with_hint("send the document's content"),
            );
        }
        if std::str::from_utf8(bytes).is_err() {
            return Err(
                MemError::new(ErrorCode::Unprocessable, "the document is not UTF-8 text")
                    .with_hint("convert the document to UTF-8 first"),
            );
        }
        let results = self.svc.import_document(
            req.adapter.as_deref().unwrap_or(DEFAULT_ADAPTER),
            req.name.as_deref().unwrap_or(DEFAULT_DOCUMENT),
            bytes,
            scope.as_str(),
            &self.actor(None, None),
        )?;
        Ok(results.into_iter().map(ItemResult::from).collect())
    }
}

/// `documents.export`: the active memories of a folder as a document in
/// another agent's format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportDocument {
    /// The folder whose memories are exported.
    #[schemars(schema_with = "fields::path")]
    pub path: String,
    /// The adapter plugin (default `agents-md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// The document's name (default `AGENTS.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One document per note, a folder of notes (an Obsidian vault):
    /// `documents` holds them, `content` lists their names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<bool>,
}

/// An exported document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExportedDocument {
    pub name: String,
    /// The document's text (a split export: the notes' names, one a line).
    pub content: String,
    /// A split export's notes, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<NamedDocument>,
}

/// One note of a split export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamedDocument {
    /// A file name (`Deploy checklist.md`): no folders.
    pub name: String,
    pub content: String,
}

fn utf8(bytes: Vec<u8>) -> MemResult<String> {
    String::from_utf8(bytes).map_err(|_| {
        MemError::new(
            ErrorCode::PluginFailed,
            "the adapter rendered a document that is not UTF-8 text",
        )
        .with_hint("report it to the adapter's author")
    })
}

impl Operation for ExportDocument {
    const NAME: &'static str = "documents.export";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = ExportedDocument;

    fn run(self, c: &Caller<'_>) -> MemResult<ExportedDocument> {
        let path = VPath::parse(&self.path)?;
        if !(c.access.has(Scope::Read) && c.access.sees(&path)) {
            return Err(MemError::not_found("folder", &self.path));
        }
        let adapter = self.adapter.as_deref().unwrap_or(DEFAULT_ADAPTER);
        if self.split == Some(true) {
            let documents = c
                .svc
                .export_notes(adapter, path.as_str())?
                .into_iter()
                .map(|(name, bytes)| {
                    Ok(NamedDocument {
                        name,
                        content: utf8(bytes)?,
                    })
                })
                .collect::<MemResult<Vec<_>>>()?;
            let content = documents.iter().map(|d| format!("{}\n", d.name)).collect();
            return Ok(ExportedDocument {
                name: self.name.unwrap_or_else(|| path.as_str().to_string()),
                content,
                documents,
            });
        }
        let name = self.name.unwrap_or_else(|| DEFAULT_DOCUMENT.into());
        let bytes = c.svc.export_document(adapter, &name, path.as_str())?;
        Ok(ExportedDocument {
            name,
            content: utf8(bytes)?,
            documents: Vec::new(),
        })
    }
}
