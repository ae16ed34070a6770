//! File and folder operations.

use super::file_details::{ChunkWindow, FileDetails};
use super::{fields, yes};
use crate::access::Scope;
use crate::door::{Caller, Done, Operation, Replay};
use crate::files::PutFile;
use crate::listing::MAX_LISTING;
use crate::{Entry, Listing, MkdirResult, MoveResult, PutFileResult, RemoveResult};
use mem_core::model::{FileRecord, SourceMetadata};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Read;

/// `files.put`: store a file. Over JSON (MCP) the content is inline, as
/// text or base64; a raw upload (REST, the CLI) streams it instead
/// ([`Caller::put_stream`]) and leaves both absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutFileRequest {
    /// Full virtual path of the file, folder and name, e.g. `/notes/deploy.md`.
    #[schemars(schema_with = "fields::file_path")]
    pub path: String,
    /// The content as UTF-8 text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The content as base64 (binary files), instead of `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_base64")]
    pub content_base64: Option<String>,
    /// A MIME type hint, e.g. `text/markdown`. A hint only: the host
    /// sniffs the type from the bytes (magic bytes, then whether it is text
    /// or JSON); the hint only chooses among text types for text content,
    /// as a file name's extension would, and is ignored otherwise. The
    /// stored `mime` says what the host decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 127), extend("pattern" = crate::mime::HINT_PATTERN))]
    pub mime: Option<String>,
    /// Tags to attach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "fields::tags")]
    pub tags: Vec<String>,
    /// Replace the content of an existing file at `path` (it keeps its id);
    /// without it an existing path is `already_exists`.
    #[serde(default)]
    pub replace: bool,
    /// Answer once the processor plugins have run on the file (default),
    /// or at once, leaving `index_status` pending for the worker.
    #[serde(default = "yes")]
    pub wait: bool,
    /// Where and when the content comes from, as a JSON object in text
    /// (decoded from the text, so a repeated field is refused): any of
    /// `captured_at` (RFC 3339 with a zone), `lat`, `lon`,
    /// `location_accuracy` (metres), `place`, `source_kind`,
    /// `source_name`. It outranks what processors read from the content.
    /// On a replace, absent keeps the file's earlier source metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub source_metadata: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

/// The JSON Schema rule of a put whose content is inline (MCP `mem_put`):
/// exactly one of `content` and `content_base64`, as [`PutFileRequest`]'s
/// `run` enforces. (A streamed upload carries neither, so the shared
/// request schema cannot say it.)
pub fn inline_content_rule(schema: &mut serde_json::Value) {
    if let Some(o) = schema.as_object_mut() {
        o.insert(
            "oneOf".into(),
            json!([
                { "required": ["content"], "not": { "required": ["content_base64"] } },
                { "required": ["content_base64"], "not": { "required": ["content"] } },
            ]),
        );
    }
}

impl PutFileRequest {
    /// The request's source metadata, decoded strictly.
    fn source(&self) -> MemResult<Option<SourceMetadata>> {
        match self.source_metadata.as_deref() {
            None => Ok(None),
            Some(text) => {
                let m = SourceMetadata::parse(text)?;
                Ok((!m.is_empty()).then_some(m))
            }
        }
    }
}

impl Operation for PutFileRequest {
    const NAME: &'static str = "files.put";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::None; // replayed by `put_stream` once the content is hashed
    type Output = PutFileResult;

    fn run(mut self, c: &Caller<'_>) -> MemResult<PutFileResult> {
        let bytes = match (self.content.take(), self.content_base64.take()) {
            (Some(text), None) => text.into_bytes(),
            (None, Some(b64)) => fields::decode_base64("content_base64", &b64)?,
            (None, None) => {
                return Err(MemError::bad_request("the file has no content")
                    .with_hint("send `content` (text) or `content_base64` (binary)"));
            }
            (Some(_), Some(_)) => {
                return Err(
                    MemError::bad_request("content and content_base64 are both given")
                        .with_hint("send one of them"),
                );
            }
        };
        Ok(c.put_stream(self, &mut &bytes[..])?.value)
    }
}

/// What a put stores, once its content is in the blob store: the request
/// and its content's hash are what a replay is matched on.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PutStaged {
    request: PutFileRequest,
    sha256: String,
    size: u64,
    mime: String,
    /// Not part of the request: a retry finds its own first upload's bytes.
    #[serde(skip)]
    deduplicated: bool,
}

impl Operation for PutStaged {
    const NAME: &'static str = "files.put";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = PutFileResult;

    fn idempotency_key(&self) -> Option<&str> {
        self.request.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<PutFileResult> {
        let path = VPath::parse(&self.request.path)?;
        let source = self.request.source()?;
        let mut out = c.svc.put_file(PutFile {
            source,
            path,
            content: crate::content::Staged {
                sha256: self.sha256,
                size: self.size,
                mime: self.mime,
                deduplicated: self.deduplicated,
            },
            tags: self.request.tags,
            replace: self.request.replace,
        })?;
        if self.request.wait {
            // A processing failure is kept on the file (its index_status),
            // not the put's: the content is stored either way.
            if let Err(e) = c.svc.process_now(&out.file.id) {
                tracing::warn!(file = %out.file.id, error = %e.message, "processing failed");
            }
            out.file = c.svc.file_info(&out.file.id)?;
        }
        Ok(out)
    }
}

impl Caller<'_> {
    /// Stores a file whose content `reader` streams (bounded memory, the
    /// size limit enforced as it arrives). `req` carries no inline content.
    pub fn put_stream(
        &self,
        req: PutFileRequest,
        reader: &mut dyn Read,
    ) -> MemResult<Done<PutFileResult>> {
        self.require(Scope::Write)?;
        let path = VPath::parse(&req.path)?;
        self.access.may_write_at(&path)?;
        if req.content.is_some() || req.content_base64.is_some() {
            return Err(
                MemError::bad_request("a streamed upload carries its content in the body")
                    .with_hint("leave content and content_base64 out"),
            );
        }
        if path.is_root() {
            return Err(
                MemError::new(ErrorCode::BadPath, "a file cannot be stored at '/'")
                    .with_hint("name the file, e.g. /notes/today.md"),
            );
        }
        crate::files::validate_tags(&req.tags)?;
        req.source()?;
        let hint = match req.mime.as_deref() {
            None => None,
            Some(h) => Some(crate::mime::parse_hint(h).ok_or_else(|| {
                MemError::bad_request(format!("mime {h:?} is not a MIME type"))
                    .with_hint("give type/subtype, e.g. text/markdown, or leave mime out")
                    .with_details(json!({ "field": "mime" }))
            })?),
        };
        // The key is claimed before the content arrives, so a duplicate
        // sent while this upload still streams is refused, not run twice.
        let key = crate::door::checked_key(req.idempotency_key.as_deref())?.map(str::to_string);
        let _running = match &key {
            Some(k) => Some(self.svc.claim_key(&self.access.replay_identity(), k)?),
            None => None,
        };
        let staged = self
            .svc
            .stage_content(reader, path.name(), hint.as_deref())?;
        let op = PutStaged {
            request: req,
            sha256: staged.sha256,
            size: staged.size,
            mime: staged.mime,
            deduplicated: staged.deduplicated,
        };
        match &key {
            Some(k) => self.run_kept(op, k),
            None => Ok(Done {
                value: op.run(self)?,
                replayed: false,
            }),
        }
    }

    /// A file's record and a reader over its content (streams any size).
    pub fn open_file(&self, target: &str) -> MemResult<(FileRecord, Box<dyn Read + Send>)> {
        self.visible_file(target)?;
        self.svc.open_file(target)
    }

    /// The record of a file the caller may read; one it may not see is
    /// `not_found`, as a missing one.
    pub(crate) fn visible_file(&self, target: &str) -> MemResult<FileRecord> {
        let f = self
            .svc
            .file_info(target)
            .map_err(|e| self.hide(e, "file", target))?;
        self.object(Scope::Read, "file", target, &f.path)?;
        Ok(f)
    }

    /// A file id or path, or a folder path, that the caller may act on.
    fn visible_target(&self, scope: Scope, target: &str) -> MemResult<()> {
        if let Ok(info) = self.svc.file_info(target) {
            return self.object(scope, "path", target, &info.path);
        }
        match VPath::parse(target) {
            Ok(p) if self.access.has(scope) && self.access.sees(&p) && !p.is_root() => Ok(()),
            _ => Err(MemError::not_found("path", target)),
        }
    }
}

/// `files.info`: a file's record and what processing made of it (a page
/// of its chunks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileInfo {
    /// A file id (`file_...`) or a file's full path.
    #[schemars(length(min = 1))]
    pub target: String,
    /// Index of the first chunk shown (default 0; `next_chunk` of a page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_from: Option<u32>,
    /// Chunks shown (1 to 100, default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub chunks_limit: Option<u32>,
}

impl Operation for FileInfo {
    const NAME: &'static str = "files.info";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = FileDetails;

    fn run(self, c: &Caller<'_>) -> MemResult<FileDetails> {
        let f = c.visible_file(&self.target)?;
        c.file_details(
            f,
            ChunkWindow {
                from: self.chunks_from,
                limit: self.chunks_limit,
            },
        )
    }
}

/// Longest text `files.read` returns unless asked for more.
const DEFAULT_READ_CHARS: usize = 200_000;
/// Longest text `files.read` returns at all (a larger file streams as raw
/// content instead).
const MAX_READ_CHARS: usize = 10_000_000;

/// `files.read`: a file's record and its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    /// A file id (`file_...`) or a file's full path.
    #[schemars(length(min = 1))]
    pub target: String,
    /// Longest text returned (characters, default 200000); longer content
    /// is cut and `truncated` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub max_chars: Option<usize>,
    /// Index of the first chunk shown (default 0; `next_chunk` of a page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_from: Option<u32>,
    /// Chunks shown (1 to 100, default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub chunks_limit: Option<u32>,
}

/// A file's text, for agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileText {
    /// The record, with its processed chunks, metadata and entities.
    pub file: FileDetails,
    pub citation: String,
    /// The text, or absent for content that is not UTF-8 text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Operation for ReadFile {
    const NAME: &'static str = "files.read";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = FileText;

    fn run(self, c: &Caller<'_>) -> MemResult<FileText> {
        let max_chars = self.max_chars.unwrap_or(DEFAULT_READ_CHARS);
        if !(1..=MAX_READ_CHARS).contains(&max_chars) {
            return Err(MemError::bad_request(format!(
                "max_chars must be 1 to {MAX_READ_CHARS}"
            ))
            .with_hint("read a larger file as raw content (GET /v1/files/{id}/content, `mem-host cat`)"));
        }
        let details = FileInfo {
            target: self.target.clone(),
            chunks_from: self.chunks_from,
            chunks_limit: self.chunks_limit,
        }
        .run(c)?;
        // At most 4 bytes a character, one more character to know it was cut.
        let (_, bytes) = c
            .svc
            .read_file(&details.file.id, (max_chars as u64 + 1) * 4)?;
        let file = details.file.clone();
        let citation = format!("mem://file/{}", file.id);
        let complete = bytes.len() as u64 == file.size;
        let text = match std::str::from_utf8(&bytes) {
            Ok(t) => Some(t),
            // A read cut inside a character is still text.
            Err(e) if !complete && e.error_len().is_none() => {
                std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
            }
            Err(_) => None,
        };
        let Some(text) = text else {
            return Ok(FileText {
                note: Some(format!(
                    "{} is not text ({}); search it, or read its raw content",
                    file.path, file.mime
                )),
                file: details,
                citation,
                content: None,
                truncated: false,
            });
        };
        let cut = text.char_indices().nth(max_chars).map(|(i, _)| i);
        let truncated = cut.is_some() || !complete;
        Ok(FileText {
            content: Some(text[..cut.unwrap_or(text.len())].to_string()),
            note: truncated
                .then(|| format!("cut at {max_chars} characters; raise max_chars for more")),
            file: details,
            citation,
            truncated,
        })
    }
}

/// `files.list`: a folder's subfolders and files, a page at a time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFolder {
    /// A folder path (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_path")]
    pub path: Option<String>,
    /// Most entries, 1 to 1000 (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Continue after the previous page (its `next_cursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 4096), extend("pattern" = crate::listing::CURSOR_PATTERN))]
    pub cursor: Option<String>,
    /// Only files carrying every one of these tags, from the folder and
    /// every folder below it (no folder entries then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "fields::tags")]
    pub tags: Vec<String>,
}

impl Operation for ListFolder {
    const NAME: &'static str = "files.list";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = Listing;

    fn run(self, c: &Caller<'_>) -> MemResult<Listing> {
        c.require(Scope::Read)?;
        let path = VPath::parse(self.path.as_deref().unwrap_or("/"))?;
        let limit = self.limit.unwrap_or(MAX_LISTING);
        if !(1..=MAX_LISTING).contains(&limit) {
            return Err(
                MemError::bad_request(format!("limit must be 1 to {MAX_LISTING}"))
                    .with_details(json!({ "field": "limit" })),
            );
        }
        let cursor = self.cursor.as_deref();
        let tags = crate::files::validate_tags(&self.tags)?;
        let list = |p: &VPath| {
            if tags.is_empty() {
                c.svc.list_folder(p, cursor, limit)
            } else {
                c.svc.list_tagged(p, &tags, cursor, limit)
            }
        };
        if c.access.sees(&path) {
            return list(&path);
        }
        if !c.access.leads_to(&path) {
            return Err(MemError::not_found("folder", path.as_str()));
        }
        // A folder above the boundary shows only the way down to it (and
        // of tagged files, those inside the boundary).
        let mut listing = list(&path)?;
        listing.entries.retain(|e| {
            let p = match e {
                Entry::Folder { path, .. } => path,
                Entry::File(f) => &f.path,
            };
            c.access.sees(p) || c.access.leads_to(p)
        });
        Ok(listing)
    }
}

/// `files.mkdir`: create a folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mkdir {
    #[schemars(schema_with = "fields::path")]
    pub path: String,
    /// Create missing parents; an existing folder is then not an error.
    #[serde(default)]
    pub parents: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for Mkdir {
    const NAME: &'static str = "files.mkdir";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = MkdirResult;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<MkdirResult> {
        c.require(Scope::Write)?;
        let path = VPath::parse(&self.path)?;
        c.access.may_write_at(&path)?;
        c.svc.mkdir(&path, self.parents)
    }
}

/// `files.move`: move or rename a file or folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Move {
    /// A file id, a file path or a folder path.
    #[schemars(length(min = 1))]
    pub from: String,
    /// The new path, or an existing folder to move into.
    #[schemars(schema_with = "fields::path")]
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for Move {
    const NAME: &'static str = "files.move";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = MoveResult;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<MoveResult> {
        c.require(Scope::Write)?;
        let to = VPath::parse(&self.to)?;
        c.visible_target(Scope::Write, &self.from)?;
        c.access.may_write_at(&to)?;
        c.svc.move_path(&self.from, &to)
    }
}

/// `files.remove`: remove a file, or a folder (`recursive` for a
/// non-empty one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Remove {
    /// A file id, a file path or a folder path.
    #[schemars(length(min = 1))]
    pub target: String,
    /// Remove a non-empty folder with everything below it.
    #[serde(default)]
    pub recursive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for Remove {
    const NAME: &'static str = "files.remove";
    const SCOPE: Scope = Scope::Delete;
    const REPLAY: Replay = Replay::Kept;
    type Output = RemoveResult;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<RemoveResult> {
        if VPath::parse(&self.target).is_ok_and(|p| p.is_root()) {
            return Err(
                MemError::new(ErrorCode::BadPath, "the root folder cannot be removed")
                    .with_hint("remove the folders inside it one by one, with recursive")
                    .with_details(json!({ "path": "/" })),
            );
        }
        c.visible_target(Scope::Delete, &self.target)?;
        c.svc.remove_path(&self.target, self.recursive)
    }
}
