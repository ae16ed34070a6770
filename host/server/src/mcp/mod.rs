//! The MCP surface: the agent-facing tools and `mem://` resources, over
//! stdio (`mem-host mcp`) and streamable HTTP (`/mcp` of `mem-host serve`).
//!
//! A tool is one service operation ([`tools`]): its arguments are the
//! operation's request, run through the caller's door like every other
//! surface. Over stdio the caller is fixed when the server starts (the
//! owner, or `MEM_TOKEN`'s); over HTTP it is the [`Access`] the auth layer
//! put into the request's extensions, and a request without one is refused.
//!
//! A failed call is a tool result with `isError: true` whose text is the
//! error document every surface uses, `{code, message, hint, details}`, so
//! an agent can read it and correct itself; protocol errors are kept for
//! malformed protocol messages.

mod tools;

use axum::http::request::Parts;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::Service;
use mem_service::WorkspaceConfig;
use mem_service::access::Access;
use mem_service::door::{Done, Operation, find};
use mem_service::navigation::catalog::Catalog;
use mem_service::ops::files::ReadFile;
use mem_service::ops::memories::GetMemory;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Extensions,
    Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tools::ToolDef;

use crate::admission::Admission;

/// What the agent is told at `initialize`.
pub const INSTRUCTIONS: &str = "\
mem-host is this workspace's long-term memory: files (documents, notes) and \
memories (small typed statements such as decisions, facts, preferences, \
constraints) with provenance.

How to work with it:
0. New to this workspace? Read the catalog first (mem_catalog, or the \
mem://catalog resource): what it holds by folder, type and subject, with \
exact counts, so you know where to look and what to ask for. mem_trace \
follows a memory's relations (what it supersedes, conflicts with, \
duplicates) when you need its history. For 'how many ... in <period>', \
mem_timeline counts files and memories by month with cited samples.
1. Before answering or acting on anything that may have history, call \
mem_context with the question in plain words. It returns a budgeted pack of \
cited items in lanes (must, should, context, provisional, conflict). Treat \
`must` items as binding, `conflict` items as unresolved.
2. Cite what you use: mem://memory/ID for a memory, mem://file/ID#L10-24 for \
lines of a file (the `citation` field of every item and hit). Read a cited \
item in full with resources/read or mem_memory_get / mem_get.
3. An empty or thin pack is a retry signal, not an answer: read its \
`suggestions`, `missing` terms and `trace.hidden_by_filter`, then rephrase, use \
synonyms, drop filters or widen `scope`, or try mem_search. Say so when \
memory still has nothing.
4. To record something new, prefer mem_propose (the workspace's gate decides \
whether it is stored now or reviewed by a person) over asserting it; use \
mem_remember for plain observations. Every write takes an `idempotency_key` \
that you choose and reuse on retries of the same write (never reuse it for \
different content); a retry returns the first answer.
5. Writes on an existing memory (mem_feedback, mem_archive, mem_restore, \
mem_forget) take its current `expected_version` (the memory's \
`state_version`); on a version_conflict, re-read and retry. mem_forget \
erases the content for good and needs `confirm: true` and a reason: prefer \
mem_archive unless the user asked to forget.
6. Before a consequential action, mem_check it against the workspace's \
constraints.
7. Picking up a task? mem_task_list, then mem_resume it: the handoff (goal, \
progress, decisions, next steps, blockers) with its references resolved. \
Before you stop, mem_checkpoint what you did and what is next, with the \
task's head as `base_checkpoint_id`; on checkpoint_conflict, resume again and \
merge.
8. A failed call returns {\"code\", \"message\", \"hint\"}: follow the hint.";

/// Where a session's operations run: this process's service, or the
/// `serve` that holds the workspace (a stdio session started while it
/// runs reaches it over the owner's socket).
pub trait Backend: Send + Sync + 'static {
    /// The workspace's settings: its types and limits tailor the tools' schemas.
    fn config(&self) -> Arc<WorkspaceConfig>;
    /// Runs the operation `name` with its JSON request, as `access`.
    fn run(&self, access: &Access, name: &str, args: Value) -> MemResult<Done<Value>>;
}

impl Backend for Service {
    fn config(&self) -> Arc<WorkspaceConfig> {
        Service::config(self)
    }

    fn run(&self, access: &Access, name: &str, args: Value) -> MemResult<Done<Value>> {
        find(name)?.run_json(&self.caller(access), args)
    }
}

/// The MCP handler: one per stdio session or HTTP session.
#[derive(Clone)]
pub struct MemMcp {
    backend: Arc<dyn Backend>,
    tools: Arc<Tools>,
    /// The caller of a stdio session. `None` over HTTP, where every request
    /// carries its own access (and a request without one is refused).
    local: Option<Access>,
    /// The server's admission queue (HTTP sessions share it with REST);
    /// a stdio session is one agent and runs its calls directly.
    admission: Option<Arc<Admission>>,
}

impl std::fmt::Debug for MemMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemMcp")
            .field("local", &self.local)
            .finish()
    }
}

/// Serves MCP over stdin/stdout as `access` until stdin closes; the
/// process's worker processes what the session's writes queue.
pub async fn serve_stdio(svc: Arc<Service>, access: Access) -> Result<(), MemError> {
    let worker = svc.spawn_worker()?;
    let result = serve_stdio_through(svc, access).await;
    tokio::task::spawn_blocking(move || worker.stop())
        .await
        .map_err(|e| MemError::internal(e.to_string()))??;
    result
}

/// Serves MCP over stdin/stdout as `access` until stdin closes, running
/// each operation on `backend` (whose owner processes what writes queue).
pub async fn serve_stdio_through(backend: Arc<dyn Backend>, access: Access) -> MemResult<()> {
    let running = MemMcp::local(backend, access)
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
pub(crate) fn http_service(
    svc: Arc<Service>,
    admission: Arc<Admission>,
    cancel: CancellationToken,
) -> StreamableHttpService<MemMcp, LocalSessionManager> {
    let handler = MemMcp::remote(svc).with_admission(admission);
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(cancel),
    )
}

/// The error document of every surface, as an agent reads it.
pub fn error_json(e: &MemError) -> Value {
    serde_json::to_value(e).unwrap_or_else(|_| serde_json::json!({ "code": e.code }))
}

/// A failure as a tool result (`isError: true`), not a protocol error.
pub fn tool_error(e: &MemError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error_json(e).to_string())])
}

/// A successful tool result: the JSON as text, and as structured content
/// when it is an object.
fn tool_ok(value: Value) -> CallToolResult {
    match value {
        v @ Value::Object(_) => CallToolResult::structured(v),
        v => CallToolResult::success(vec![ContentBlock::text(v.to_string())]),
    }
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

/// The tools with their input schemas, tailored to `backend`'s workspace.
type Tools = (Vec<ToolDef>, Vec<Tool>);

/// Built once per handler (an HTTP server's sessions share its handler's).
fn listed(backend: &dyn Backend) -> Tools {
    let config = backend.config();
    let defs = tools::tools();
    let listed = defs
        .iter()
        .map(|d| {
            let mut schema = d.op.request_schema(&config);
            if let Some(rule) = d.shape {
                rule(&mut schema);
            }
            if let Some(o) = schema.as_object_mut() {
                o.remove("$schema");
            }
            let object: JsonObject = match schema {
                Value::Object(o) => o,
                _ => JsonObject::new(),
            };
            Tool::new(d.name, d.description, Arc::new(object)).with_annotations(
                ToolAnnotations::new()
                    .read_only(d.read_only)
                    .destructive(d.destructive),
            )
        })
        .collect();
    (defs, listed)
}

impl MemMcp {
    /// A stdio session acting as `access`.
    pub fn local(backend: Arc<dyn Backend>, access: Access) -> Self {
        Self {
            tools: Arc::new(listed(backend.as_ref())),
            backend,
            local: Some(access),
            admission: None,
        }
    }

    /// An HTTP session: each request's access comes from its extensions.
    pub fn remote(backend: Arc<dyn Backend>) -> Self {
        Self {
            tools: Arc::new(listed(backend.as_ref())),
            backend,
            local: None,
            admission: None,
        }
    }

    /// Runs this session's calls through `admission`.
    pub(crate) fn with_admission(mut self, admission: Arc<Admission>) -> Self {
        self.admission = Some(admission);
        self
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

    /// Runs the operation `name` as the request's caller on the blocking pool.
    async fn run_op(
        &self,
        ext: &Extensions,
        name: &'static str,
        args: Value,
    ) -> MemResult<Done<Value>> {
        let access = self.access_of(ext)?;
        let backend = Arc::clone(&self.backend);
        let run = move || backend.run(&access, name, args);
        match &self.admission {
            Some(admission) => admission.run(run).await?,
            None => crate::admission::blocking(run).await?,
        }
    }

    /// Runs `op` as the request's caller.
    async fn run_typed<O: Operation>(&self, ext: &Extensions, op: O) -> MemResult<O::Output> {
        let args = serde_json::to_value(&op)
            .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
        let done = self.run_op(ext, O::NAME, args).await?;
        serde_json::from_value(done.value)
            .map_err(|e| MemError::internal(format!("cannot read the answer: {e}")))
    }

    /// Runs the tool `name` with `args`.
    async fn call(&self, name: &str, ext: &Extensions, args: JsonObject) -> CallToolResult {
        let (defs, _) = &*self.tools;
        let Some(def) = defs.iter().find(|d| d.name == name).copied() else {
            return tool_error(
                &MemError::new(ErrorCode::NotFound, format!("no tool {name:?}"))
                    .with_hint("list the tools with tools/list"),
            );
        };
        let result = self.run_op(ext, def.op.name, Value::Object(args)).await;
        match result {
            Ok(done) => tool_ok(done.value),
            Err(e) => tool_error(&e),
        }
    }
}

/// A `mem://` resource: a memory, a file, or the catalog's first page.
#[derive(Debug, PartialEq)]
enum MemUri<'a> {
    Memory(&'a str),
    File(&'a str),
    Catalog,
}

const CATALOG_URI: &str = "mem://catalog";

fn parse_uri(uri: &str) -> MemResult<MemUri<'_>> {
    // A file citation carries a line range (`#L10-24`); the resource is the file.
    let base = uri.split('#').next().unwrap_or(uri).trim();
    if base == CATALOG_URI {
        return Ok(MemUri::Catalog);
    }
    let bad = || {
        MemError::bad_request(format!("unknown resource {uri:?}"))
            .with_hint("resources are mem://catalog, mem://memory/ID and mem://file/ID")
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

fn pretty<T: Serialize>(v: &T) -> MemResult<String> {
    serde_json::to_string_pretty(v).map_err(|e| MemError::internal(format!("cannot encode: {e}")))
}

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

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.1.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.1.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(self
            .call(&request.name, &context.extensions, args)
            .await
            .into())
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
            .run_typed(
                &context.extensions,
                mem_service::ListMemories {
                    limit: Some(LISTED_RESOURCES),
                    ..Default::default()
                },
            )
            .await;
        // Listing is a convenience: a caller without the read scope sees none.
        let items = match page {
            Ok(p) => p.items,
            Err(e) if e.code == ErrorCode::Forbidden => Vec::new(),
            Err(e) => return Err(protocol_error(&e)),
        };
        let catalog = Resource::new(CATALOG_URI, "catalog")
            .with_description(
                "What the workspace holds by folder, type and subject: read it first.",
            )
            .with_mime_type("application/json");
        let resources = std::iter::once(catalog)
            .chain(items.into_iter().map(|m| {
                let text = m.content.as_deref().unwrap_or("");
                let name: String = text.chars().take(80).collect();
                Resource::new(format!("mem://memory/{}", m.id), name)
                    .with_description(format!("{} in {}", m.kind, m.path.as_str()))
                    .with_mime_type("application/json")
            }))
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let ext = &context.extensions;
        let text = async {
            match parse_uri(&request.uri)? {
                MemUri::Catalog => pretty(&self.run_typed(ext, Catalog::default()).await?),
                MemUri::Memory(id) => {
                    pretty(&self.run_typed(ext, GetMemory { id: id.into() }).await?)
                }
                MemUri::File(id) => {
                    let read = self
                        .run_typed(
                            ext,
                            ReadFile {
                                target: id.into(),
                                max_chars: None,
                                chunks_from: None,
                                chunks_limit: Some(1),
                            },
                        )
                        .await?;
                    read.content.ok_or_else(|| {
                        MemError::bad_request(format!(
                            "{} is binary ({}); it has no text to read",
                            read.file.file.path, read.file.file.mime
                        ))
                        .with_hint("search it with mem_search instead")
                    })
                }
            }
        }
        .await
        .map_err(|e| protocol_error(&e))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }
}

#[cfg(test)]
mod tests;
