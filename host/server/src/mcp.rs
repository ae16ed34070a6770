//! The MCP surface: the agent-facing tools and `mem://` resources, over
//! stdio (`mem-host mcp`) and streamable HTTP (`/mcp` of `mem-host serve`).
//!
//! Every call goes through an access-checked [`Caller`]: over stdio the
//! access is fixed when the server starts (the owner, or `MEM_TOKEN`'s);
//! over HTTP it is the [`Access`] the auth layer put into the request's
//! extensions, and a request without one is refused. Governance (the review
//! queue, write policy), tokens and the audit log are not exposed here.
//!
//! A failed call is a tool result with `isError: true` whose text is
//! `{"error", "code", "hint"}` JSON, so an agent can read it and correct
//! itself; protocol errors are kept for malformed protocol messages.

use axum::http::request::Parts;
use mem_core::model::FeedbackAction;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use mem_service::access::{Access, Caller};
use mem_service::check::CheckRequest;
use mem_service::recall::{ContextRequest, SearchQuery};
use mem_service::{ListMemories, ProposalRequest, PutFile, RememberRequest, Service};
use rmcp::handler::server::common::{schema_for_empty_input, schema_for_input};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, Extensions, Implementation, JsonObject,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What the agent is told at `initialize`.
pub const INSTRUCTIONS: &str = "\
mem-host is this workspace's long-term memory: files (documents, notes) and \
memories (small typed statements such as decisions, facts, preferences, \
constraints) with provenance.

How to work with it:
1. Before answering or acting on anything that may have history, call \
mem_context with the question in plain words. It returns a budgeted pack of \
cited items in lanes (must, should, context, provisional, conflict). Treat \
`must` items as binding, `conflict` items as unresolved.
2. Cite what you use: mem://memory/ID for a memory, mem://file/ID#L10-24 for \
lines of a file (the `citation` field of every item and hit). Read a cited \
item in full with resources/read or mem_memory_get / mem_get.
3. An empty or thin pack is a retry signal, not an answer: read its `trace` \
(`missing` terms, `hidden_by_filter`, `suggestions`), then rephrase, use \
synonyms, drop filters or widen `scope`, or try mem_search. Say so when \
memory still has nothing.
4. To record something new, prefer mem_propose (the workspace's gate decides \
whether it is stored now or reviewed by a person) over asserting it; use \
mem_remember for plain observations. Every write needs an `idempotency_key` \
that you choose and reuse on retries of the same write (never reuse it for \
different content).
5. Writes on an existing memory (mem_feedback, mem_archive, mem_restore, \
mem_forget) take its current `expected_version` (the memory's \
`state_version`); on a version_conflict, re-read and retry. mem_forget \
erases the content for good and needs `confirm: true` and a reason: prefer \
mem_archive unless the user asked to forget.
6. Before a consequential action, mem_check it against the workspace's \
constraints.
7. A failed call returns {\"error\", \"code\", \"hint\"}: follow the hint.";

/// The MCP handler: one per stdio session or HTTP session.
#[derive(Clone)]
pub struct MemMcp {
    svc: Arc<Service>,
    /// The caller of a stdio session. `None` over HTTP, where every request
    /// carries its own access (and a request without one is refused).
    local: Option<Access>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for MemMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemMcp")
            .field("local", &self.local)
            .finish()
    }
}

/// Serves MCP over stdin/stdout as `access` until stdin closes.
pub async fn serve_stdio(svc: Arc<Service>, access: Access) -> Result<(), MemError> {
    let running = MemMcp::local(svc, access)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| MemError::internal(format!("MCP stdio session failed to start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| MemError::internal(format!("MCP stdio session failed: {e}")))?;
    Ok(())
}

/// The streamable HTTP MCP service, to mount at `/mcp` behind the auth
/// layer that puts the caller's [`Access`] into each request's extensions.
/// Accepts `Host: localhost`, `127.0.0.1` and `::1` on any port (rmcp's
/// DNS-rebinding guard).
pub fn http_service(
    svc: Arc<Service>,
    cancel: CancellationToken,
) -> StreamableHttpService<MemMcp, LocalSessionManager> {
    let handler = MemMcp::remote(svc);
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(cancel),
    )
}

// ---- tool arguments (the service's own request types are used directly
// where they derive JsonSchema) ----

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutArgs {
    /// Full virtual path of the file, folder and name, e.g. `/notes/deploy.md`.
    pub path: String,
    /// The file's text content (UTF-8).
    pub content: String,
    /// Tags to attach.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Replace the content of an existing file at `path` (keeping its id);
    /// without it an existing path is an `already_exists` error.
    #[serde(default)]
    pub replace: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// A file id (`file_...`) or a file's full path.
    pub target: String,
    /// Longest text returned (characters, default 200000); longer content
    /// is cut and `truncated` is set.
    #[serde(default)]
    pub max_chars: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Folder path (default `/`).
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory id (`mem_...`).
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackArgs {
    /// The memory id (`mem_...`).
    pub id: String,
    /// `useful`, `not_useful`, `pin` or `unpin`.
    pub action: FeedbackAction,
    /// The memory's current `state_version`.
    pub expected_version: u64,
    /// Your agent id, recorded with the feedback.
    #[serde(default)]
    pub agent_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionedArgs {
    /// The memory id (`mem_...`).
    pub id: String,
    /// The memory's current `state_version`.
    pub expected_version: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = require_confirm)]
pub struct ForgetArgs {
    /// The memory id (`mem_...`).
    pub id: String,
    /// The memory's current `state_version`.
    pub expected_version: u64,
    /// Why it is forgotten (kept in the audit log; the content is not).
    pub reason: String,
    /// Must be `true`: forgetting erases the content for good.
    #[serde(default)]
    #[schemars(extend("const" = true))]
    pub confirm: bool,
}

/// `confirm` is required in the schema; it has a serde default only so that
/// leaving it out reaches the service, whose refusal carries a hint.
fn require_confirm(schema: &mut schemars::Schema) {
    match schema.get_mut("required").and_then(|r| r.as_array_mut()) {
        Some(required) => required.push("confirm".into()),
        None => {
            schema.insert("required".into(), serde_json::json!(["confirm"]));
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The input schema of a tool taking `T`.
fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|_| schema_for_empty_input())
}

/// Arguments as `T`, or a `bad_request` the agent can act on.
fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> MemResult<T> {
    serde_json::from_value(serde_json::Value::Object(args)).map_err(|e| {
        MemError::bad_request(format!("invalid arguments for {tool}: {e}"))
            .with_hint(format!("check {tool}'s input schema (tools/list)"))
    })
}

/// A successful tool result: the JSON as text, and as structured content
/// when it is an object.
fn tool_ok<T: Serialize>(value: &T) -> CallToolResult {
    match serde_json::to_value(value) {
        Ok(v @ serde_json::Value::Object(_)) => CallToolResult::structured(v),
        Ok(v) => CallToolResult::success(vec![ContentBlock::text(v.to_string())]),
        Err(e) => tool_error(&MemError::internal(format!(
            "cannot encode the result: {e}"
        ))),
    }
}

/// The JSON an agent sees for a failure.
pub fn error_json(e: &MemError) -> serde_json::Value {
    let mut v = serde_json::json!({
        "error": e.message,
        "code": e.code,
        "hint": e.hint,
    });
    if !e.details.is_null() {
        v["details"] = e.details.clone();
    }
    v
}

/// A failure as a tool result (`isError: true`), not a protocol error.
pub fn tool_error(e: &MemError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error_json(e).to_string())])
}

/// A failure as a protocol error (resources have no error result).
fn protocol_error(e: &MemError) -> ErrorData {
    let data = Some(error_json(e));
    match e.code {
        ErrorCode::NotFound => ErrorData::resource_not_found(e.message.clone(), data),
        ErrorCode::Internal | ErrorCode::Io | ErrorCode::StoreCorrupt => {
            ErrorData::internal_error(e.message.clone(), data)
        }
        _ => ErrorData::invalid_params(e.message.clone(), data),
    }
}

fn unauthenticated() -> MemError {
    MemError::new(
        ErrorCode::Unauthorized,
        "this MCP request carries no authenticated caller",
    )
    .with_hint("send `Authorization: Bearer <token>` (create one with `mem-host token create`)")
}

impl MemMcp {
    /// A stdio session acting as `access`.
    pub fn local(svc: Arc<Service>, access: Access) -> Self {
        Self {
            svc,
            local: Some(access),
            tool_router: Self::tool_router(),
        }
    }

    /// An HTTP session: each request's access comes from its extensions.
    pub fn remote(svc: Arc<Service>) -> Self {
        Self {
            svc,
            local: None,
            tool_router: Self::tool_router(),
        }
    }

    /// The caller of one request.
    fn access_of(&self, ext: &Extensions) -> MemResult<Access> {
        if let Some(parts) = ext.get::<Parts>() {
            // An HTTP request: only what the auth layer established counts.
            return parts
                .extensions
                .get::<Access>()
                .cloned()
                .ok_or_else(unauthenticated);
        }
        self.local.clone().ok_or_else(unauthenticated)
    }

    /// Runs `f` as the request's caller on the blocking pool.
    async fn with_caller<T, F>(&self, ext: &Extensions, f: F) -> MemResult<T>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(Caller<'a>, &'a Service) -> MemResult<T> + Send + 'static,
    {
        let access = self.access_of(ext)?;
        let svc = Arc::clone(&self.svc);
        tokio::task::spawn_blocking(move || f(svc.caller(&access), &svc))
            .await
            .map_err(|e| MemError::internal(format!("the request's worker failed: {e}")))?
    }

    /// Parses the arguments, runs `f` as the caller, and maps the outcome
    /// to a tool result.
    async fn call<A, T, F>(
        &self,
        tool: &str,
        ext: &Extensions,
        args: JsonObject,
        f: F,
    ) -> CallToolResult
    where
        A: DeserializeOwned + Send + 'static,
        T: Serialize + Send + 'static,
        F: for<'a> FnOnce(Caller<'a>, &'a Service, A) -> MemResult<T> + Send + 'static,
    {
        let args: A = match parse(tool, args) {
            Ok(a) => a,
            Err(e) => return tool_error(&e),
        };
        match self.with_caller(ext, move |c, s| f(c, s, args)).await {
            Ok(v) => tool_ok(&v),
            Err(e) => tool_error(&e),
        }
    }
}

/// `mem_get`'s answer.
#[derive(Debug, Serialize)]
struct FileText {
    file: mem_core::model::FileRecord,
    citation: String,
    /// The text, or `None` for content that is not UTF-8.
    content: Option<String>,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

const DEFAULT_GET_CHARS: usize = 200_000;

fn file_text(file: mem_core::model::FileRecord, bytes: Vec<u8>, max_chars: usize) -> FileText {
    let citation = format!("mem://file/{}", file.id);
    match String::from_utf8(bytes) {
        Ok(text) => {
            let cut = text.char_indices().nth(max_chars).map(|(i, _)| i);
            let truncated = cut.is_some();
            let content = match cut {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            FileText {
                file,
                citation,
                content: Some(content),
                truncated,
                note: truncated
                    .then(|| format!("cut at {max_chars} characters; raise max_chars for more")),
            }
        }
        Err(_) => FileText {
            note: Some(format!(
                "{} is binary ({}); its text is not shown: search it with mem_search",
                file.path.as_str(),
                file.mime
            )),
            file,
            citation,
            content: None,
            truncated: false,
        },
    }
}

#[tool_router]
impl MemMcp {
    #[tool(
        description = "Store a text file in the workspace (notes, documents, transcripts). \
            `path` is the full virtual path including the file name (e.g. /notes/deploy.md); \
            folders are created as needed. An existing path is an error unless `replace` is true \
            (the file keeps its id). The file is chunked and indexed for mem_search/mem_context. \
            Returns the file record; cite it as mem://file/ID.",
        input_schema = input::<PutArgs>()
    )]
    async fn mem_put(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_put", &ext, args, move |c, svc, a: PutArgs| {
            let mut out = c.put_file(PutFile {
                path: VPath::parse(a.path.trim())?,
                bytes: a.content.into_bytes(),
                tags: a.tags,
                replace: a.replace,
            })?;
            // An agent searches for what it just stored: index this file now
            // (over stdio and HTTP alike) rather than leave it to the
            // server's background processor. A processing failure is kept on
            // the file (its index_status), not the put's.
            let id = out.file.id.clone();
            let _ = svc.process_pending(Some(std::slice::from_ref(&id)));
            if let Ok(file) = c.file_info(&id) {
                out.file = file;
            }
            Ok(out)
        })
        .await
    }

    #[tool(
        description = "Read a file: its record (id, path, mime, size, tags, index status) and its \
            text content. `target` is a file id (file_...) or the full path. Content longer than \
            `max_chars` (default 200000) is cut and `truncated` is set; binary files return no text.",
        input_schema = input::<GetArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_get(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_get", &ext, args, |c, _, a: GetArgs| {
            let (file, bytes) = c.read_file(a.target.trim())?;
            Ok(file_text(
                file,
                bytes,
                a.max_chars.unwrap_or(DEFAULT_GET_CHARS),
            ))
        })
        .await
    }

    #[tool(
        description = "List a folder: its subfolders and files (with ids, sizes, tags). \
            `path` defaults to the root `/`.",
        input_schema = input::<ListArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_list(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_list", &ext, args, |c, _, a: ListArgs| {
            let path = VPath::parse(a.path.as_deref().map(str::trim).unwrap_or("/"))?;
            c.list_folder(&path)
        })
        .await
    }

    #[tool(
        description = "Search files and memories (lexical and, when a model is installed, \
            semantic). Returns ranked hits with ids, citations (mem://memory/ID, \
            mem://file/ID#Lx-y), scores and matched terms. Filter by `kinds`, `path`, `tags`, \
            `since`/`until`, `lifecycle`, `source` (memory|file|all). A period named in the \
            query (\"in May 2023\", \"last week\") ranks hits from then higher without \
            filtering the rest. Prefer mem_context to gather evidence for an answer; use \
            mem_search to look things up or explore.",
        input_schema = input::<SearchQuery>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_search(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_search", &ext, args, |c, _, q: SearchQuery| {
            c.search(&q)
        })
        .await
    }

    #[tool(
        description = "Get a context pack for a question or task: the evidence to answer from, \
            selected, gated and packed under a character budget (`max_chars`), in lanes: `must` \
            (binding: constraints, pinned), `should`, `context`, `provisional` (low confidence), \
            `conflict` (contradicting items). Every item has a `citation` to quote. `missing` \
            lists query terms nothing covered and `trace` explains selection: when the pack is \
            empty or thin, rephrase or widen (drop `kinds`/`scope`) and call again. Call this \
            first, before answering from memory.",
        input_schema = input::<ContextRequest>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_context(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_context", &ext, args, |c, _, r: ContextRequest| {
            c.context(&r)
        })
        .await
    }

    #[tool(
        description = "Remember one small statement as a memory. `kind` is a memory type \
            (see mem_types: e.g. fact, decision, preference, constraint, observation, \
            task_state), `path` the folder it belongs to (e.g. /ops), `content` the statement \
            in one or two self-contained sentences. `idempotency_key` is required: choose a \
            unique key per statement and reuse it when retrying the same write. Add provenance \
            (`source_type`, `source_ref`, `agent_id`, `session_id`, `task_id`, `event_at`) when \
            known. The workspace's write policy may queue the write for review: then `memory` \
            is absent and `proposal` says so. For a change to what is already known, use \
            mem_propose.",
        input_schema = input::<RememberRequest>()
    )]
    async fn mem_remember(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_remember", &ext, args, |c, _, r: RememberRequest| {
            c.remember(&r)
        })
        .await
    }

    #[tool(
        description = "Get one memory by id (mem_...): content, kind, path, lifecycle, \
            state_version (the expected_version for writes), confidence, feedback, provenance \
            and relations.",
        input_schema = input::<IdArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_memory_get(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_memory_get", &ext, args, |c, _, a: IdArgs| {
            c.memory(a.id.trim())
        })
        .await
    }

    #[tool(
        description = "List memories, filtered by folder `path`, `kind` and `lifecycle` \
            (active by default; archived, superseded, forgotten or all). Paged: pass \
            `next_cursor` back as `cursor` to continue.",
        input_schema = input::<ListMemories>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_memory_list(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_memory_list", &ext, args, |c, _, q: ListMemories| {
            c.list_memories(&q)
        })
        .await
    }

    #[tool(
        description = "Give feedback on a memory you used: `useful` or `not_useful` (adjusts its \
            ranking and confidence), `pin` or `unpin` (pinned memories are always packed). \
            Needs the memory's current state_version as `expected_version`.",
        input_schema = input::<FeedbackArgs>()
    )]
    async fn mem_feedback(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_feedback", &ext, args, |c, _, a: FeedbackArgs| {
            c.feedback(a.id.trim(), a.action, a.expected_version, a.agent_id)
        })
        .await
    }

    #[tool(
        description = "Archive a memory that is no longer current: it leaves recall but is kept \
            and can be restored. Needs the memory's current state_version as `expected_version`.",
        input_schema = input::<VersionedArgs>()
    )]
    async fn mem_archive(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_archive", &ext, args, |c, _, a: VersionedArgs| {
            c.archive(a.id.trim(), a.expected_version)
        })
        .await
    }

    #[tool(
        description = "Restore an archived memory to active. Needs the memory's current \
            state_version as `expected_version`.",
        input_schema = input::<VersionedArgs>()
    )]
    async fn mem_restore(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_restore", &ext, args, |c, _, a: VersionedArgs| {
            c.restore(a.id.trim(), a.expected_version)
        })
        .await
    }

    #[tool(
        description = "Forget a memory for good: its content is erased and cannot be restored \
            (a tombstone and the reason stay in the audit log). Only when the user asks to \
            forget something; otherwise use mem_archive. Requires `confirm: true`, a `reason`, \
            and the memory's current state_version as `expected_version`.",
        input_schema = input::<ForgetArgs>(),
        annotations(destructive_hint = true)
    )]
    async fn mem_forget(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_forget", &ext, args, |c, _, a: ForgetArgs| {
            c.forget(a.id.trim(), a.expected_version, &a.reason, a.confirm)
        })
        .await
    }

    #[tool(
        description = "Propose a change to memory through the workspace's gate instead of \
            asserting it: `op` create (a new memory in `memory`), replace (one target with \
            `memory`), remove (one target, `reason` required) or consolidate (two or more \
            targets into `memory`). Attach `evidence` (citations) and an `idempotency_key`. \
            The gate auto-approves or queues it for a person to review; the outcome says which.",
        input_schema = input::<ProposalRequest>()
    )]
    async fn mem_propose(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_propose", &ext, args, |c, _, r: ProposalRequest| {
            c.propose(&r)
        })
        .await
    }

    #[tool(
        description = "List the memory types (kinds) this workspace accepts, with their \
            descriptions and required attributes. Use before mem_remember/mem_propose when \
            unsure which kind fits.",
        input_schema = input::<NoArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_types(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_types", &ext, args, |c, _, _: NoArgs| {
            c.types().map(|types| serde_json::json!({ "types": types }))
        })
        .await
    }

    #[tool(
        description = "Check an intended action against the workspace's constraints before doing \
            it: `text` describes the action, `context` where it happens, `path` limits to \
            constraints scoped there. Returns status ALLOW, BLOCK (with the constraints that \
            block it, cited) or NEEDS_REVIEW.",
        input_schema = input::<CheckRequest>(),
        annotations(read_only_hint = true)
    )]
    async fn mem_check(&self, ext: Extensions, args: JsonObject) -> CallToolResult {
        self.call("mem_check", &ext, args, |c, _, r: CheckRequest| c.check(&r))
            .await
    }
}

/// A `mem://` resource: a memory or a file.
#[derive(Debug, PartialEq)]
enum MemUri<'a> {
    Memory(&'a str),
    File(&'a str),
}

fn parse_uri(uri: &str) -> MemResult<MemUri<'_>> {
    // A file citation carries a line range (`#L10-24`); the resource is the file.
    let base = uri.split('#').next().unwrap_or(uri).trim();
    let bad = || {
        MemError::bad_request(format!("unknown resource {uri:?}"))
            .with_hint("resources are mem://memory/ID and mem://file/ID")
    };
    let (what, id) = base
        .strip_prefix("mem://")
        .and_then(|rest| rest.split_once('/'))
        .ok_or_else(bad)?;
    if id.is_empty() || id.contains('/') {
        return Err(bad());
    }
    match what {
        "memory" => Ok(MemUri::Memory(id)),
        "file" => Ok(MemUri::File(id)),
        _ => Err(bad()),
    }
}

/// Recent memories listed as resources.
const LISTED_RESOURCES: usize = 50;

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_instructions(INSTRUCTIONS)
        .with_server_info(Implementation::new("mem-host", env!("CARGO_PKG_VERSION")))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("mem://memory/{id}", "memory")
                .with_description("A memory as JSON (content, kind, path, provenance, versions).")
                .with_mime_type("application/json"),
            ResourceTemplate::new("mem://file/{id}", "file")
                .with_description("A file's text content (citations may add #Lx-y).")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let page = self
            .with_caller(&context.extensions, |c, _| {
                c.list_memories(&ListMemories {
                    limit: Some(LISTED_RESOURCES),
                    ..Default::default()
                })
            })
            .await;
        // Listing is a convenience: a caller without the read scope sees none.
        let items = match page {
            Ok(p) => p.items,
            Err(e) if e.code == ErrorCode::Forbidden => Vec::new(),
            Err(e) => return Err(protocol_error(&e)),
        };
        let resources = items
            .into_iter()
            .map(|m| {
                let text = m.content.as_deref().unwrap_or("");
                let name: String = text.chars().take(80).collect();
                Resource::new(format!("mem://memory/{}", m.id), name)
                    .with_description(format!("{} in {}", m.kind, m.path.as_str()))
                    .with_mime_type("application/json")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let text = self
            .with_caller(&context.extensions, move |c, _| {
                match parse_uri(&request.uri)? {
                    MemUri::Memory(id) => {
                        let m = c.memory(id)?;
                        serde_json::to_string_pretty(&m).map_err(|e| {
                            MemError::internal(format!("cannot encode the memory: {e}"))
                        })
                    }
                    MemUri::File(id) => {
                        let (file, bytes) = c.read_file(id)?;
                        String::from_utf8(bytes).map_err(|_| {
                            MemError::bad_request(format!(
                                "{} is binary ({}); it has no text to read",
                                file.path.as_str(),
                                file.mime
                            ))
                            .with_hint("search it with mem_search instead")
                        })
                    }
                }
            })
            .await
            .map_err(|e| protocol_error(&e))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_tool_results_an_agent_can_read() {
        let e = MemError::new(ErrorCode::ConfirmationRequired, "forgetting needs confirm")
            .with_hint("pass confirm: true");
        let r = tool_error(&e);
        assert_eq!(r.is_error, Some(true));
        let text = &r.content[0].as_text().unwrap().text;
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["code"], "confirmation_required");
        assert_eq!(v["error"], "forgetting needs confirm");
        assert_eq!(v["hint"], "pass confirm: true");
        assert!(v.get("details").is_none());
    }

    #[test]
    fn bad_arguments_are_bad_requests_with_a_hint() {
        let args: JsonObject = serde_json::from_value(serde_json::json!({"nope": 1})).unwrap();
        let e = parse::<IdArgs>("mem_memory_get", args).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        assert!(e.hint.contains("mem_memory_get"));
    }

    #[test]
    fn the_tool_list_is_the_agent_surface_only() {
        let tools = MemMcp::tool_router().list_all();
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "mem_archive",
                "mem_check",
                "mem_context",
                "mem_feedback",
                "mem_forget",
                "mem_get",
                "mem_list",
                "mem_memory_get",
                "mem_memory_list",
                "mem_propose",
                "mem_put",
                "mem_remember",
                "mem_restore",
                "mem_search",
                "mem_types",
            ]
        );
        for t in &tools {
            for banned in ["review", "token", "audit", "policy", "admin"] {
                assert!(!t.name.contains(banned), "{} is not for agents", t.name);
            }
            assert!(
                t.description.as_deref().is_some_and(|d| d.len() > 40),
                "{}",
                t.name
            );
            assert_eq!(
                t.input_schema.get("type").and_then(|v| v.as_str()),
                Some("object")
            );
        }
    }

    #[test]
    fn forget_requires_confirm_true_in_its_schema() {
        let tools = MemMcp::tool_router().list_all();
        let forget = tools.iter().find(|t| t.name == "mem_forget").unwrap();
        let required: Vec<&str> = forget.input_schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(required.contains(&"confirm"), "{required:?}");
        assert_eq!(forget.input_schema["properties"]["confirm"]["const"], true);
        let remember = tools.iter().find(|t| t.name == "mem_remember").unwrap();
        assert!(remember.input_schema["properties"]["idempotency_key"].is_object());
    }

    #[test]
    fn resource_uris_parse() {
        assert_eq!(
            parse_uri("mem://memory/mem_1").unwrap(),
            MemUri::Memory("mem_1")
        );
        assert_eq!(
            parse_uri("mem://file/file_1#L3-9").unwrap(),
            MemUri::File("file_1")
        );
        for bad in [
            "mem://memory/",
            "mem://other/x",
            "http://x/y",
            "mem://file/a/b",
        ] {
            assert_eq!(
                parse_uri(bad).unwrap_err().code,
                ErrorCode::BadRequest,
                "{bad}"
            );
        }
    }

    #[test]
    fn a_remote_request_without_access_is_refused() {
        let (_d, svc) = service();
        let remote = MemMcp::remote(Arc::clone(&svc));
        let mut ext = Extensions::new();
        assert_eq!(
            remote.access_of(&ext).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        // An HTTP request that skipped the auth layer: refused even though a
        // stdio session would fall back to its own caller.
        let (parts, ()) = axum::http::Request::new(()).into_parts();
        ext.insert(parts);
        let local = MemMcp::local(svc, Access::owner());
        assert_eq!(
            local.access_of(&ext).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        let mut req = axum::http::Request::new(());
        req.extensions_mut().insert(Access::owner());
        let (parts, ()) = req.into_parts();
        let mut ext = Extensions::new();
        ext.insert(parts);
        assert_eq!(remote.access_of(&ext).unwrap(), Access::owner());
    }

    fn service() -> (tempfile::TempDir, Arc<Service>) {
        let dir = tempfile::tempdir().unwrap();
        let store = mem_store::SledStore::open(&dir.path().join("store")).unwrap();
        let svc = Service::new(Arc::new(store), mem_service::WorkspaceConfig::default());
        (dir, Arc::new(svc))
    }
}
