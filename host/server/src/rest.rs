//! REST under `/v1`. Every route is declared once in [`routes`] with its
//! scope and schemas; the axum router and the OpenAPI document are both
//! built from that table, so they cannot disagree.

use crate::error::ApiError;
use crate::openapi::{self, Body, RouteDoc};
use crate::{AppState, ServeOptions, auth, metrics::Metrics};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, post};
use axum::{Extension, Json, Router};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use mem_service::access::{Access, Caller, Scope};
use mem_service::{ListMemories, PutFile, RememberRequest, Service};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Reply = Result<Response, ApiError>;

/// Runs `f` as `access` on a blocking thread: the service does disk and
/// model work, which must not stall the async workers.
async fn call<T: Send + 'static>(
    state: &AppState,
    access: Access,
    f: impl FnOnce(Caller<'_>) -> MemResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    let svc = state.svc.clone();
    tokio::task::spawn_blocking(move || f(svc.caller(&access)))
        .await
        .map_err(|e| MemError::internal(format!("request worker failed: {e}")))?
        .map_err(ApiError)
}

fn ok<T: Serialize>(v: &T) -> Reply {
    Ok(Json(v).into_response())
}

fn created<T: Serialize>(v: &T, replayed: bool) -> Reply {
    let status = if replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(v)).into_response())
}

/// A JSON body, with our error shape for oversized and malformed input.
fn json<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = bytes(body)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError(
            MemError::new(ErrorCode::BadRequest, format!("bad request body: {e}"))
                .with_hint("send JSON matching the operation's schema in /v1/openapi.json"),
        )
    })
}

fn bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError(
                MemError::new(ErrorCode::PayloadTooLarge, "request body is too large")
                    .with_hint("split the request, or raise the limit with `serve --max-body`"),
            )
        } else {
            ApiError(MemError::bad_request(format!(
                "cannot read request body: {r}"
            )))
        }
    })
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(v)| v).map_err(|e| {
        ApiError(
            MemError::bad_request(format!("bad query string: {}", e.body_text()))
                .with_hint("see the operation's parameters in /v1/openapi.json"),
        )
    })
}

/// The `Idempotency-Key` header, checked against a key in the body.
fn idempotency_key(headers: &HeaderMap, body_key: Option<&str>) -> Result<String, ApiError> {
    let header = headers
        .get("idempotency-key")
        .map(|v| v.to_str().map(str::trim).map(str::to_string))
        .transpose()
        .map_err(|_| {
            ApiError(MemError::bad_request(
                "Idempotency-Key must be visible ASCII",
            ))
        })?;
    match (header, body_key.map(str::trim).filter(|k| !k.is_empty())) {
        (Some(h), Some(b)) if h != b => Err(ApiError(
            MemError::bad_request("Idempotency-Key header and body idempotency_key differ")
                .with_hint("send the key once, in the header"),
        )),
        (Some(h), _) if !h.is_empty() => Ok(h),
        (_, Some(b)) => Ok(b.to_string()),
        _ => Err(ApiError(
            MemError::bad_request("writes need an Idempotency-Key header").with_hint(
                "send a unique Idempotency-Key per intended write; resending it replays the result",
            ),
        )),
    }
}

// Most routes are "decode, call one Caller method, encode": these build
// such handlers from the method, so each route is one line in the table.

/// The boxed future of a generated handler.
type Fut = std::pin::Pin<Box<dyn std::future::Future<Output = Reply> + Send>>;
type Op<T> = fn(Caller<'_>) -> MemResult<T>;
type IdOp<T> = fn(Caller<'_>, String) -> MemResult<T>;
type BodyOp<B, T> = fn(Caller<'_>, B) -> MemResult<T>;
type IdBodyOp<B, T> = fn(Caller<'_>, String, B) -> MemResult<T>;

// The handler signature is axum's extractor list; naming it would not help.
#[allow(clippy::type_complexity)]
fn plain<T: Serialize + Send + 'static>(
    f: Op<T>,
) -> impl Fn(State<AppState>, Extension<Access>) -> Fut + Clone + Send + Sync + 'static {
    move |State(st), Extension(a)| Box::pin(async move { ok(&call(&st, a, f).await?) })
}

// The handler signature is axum's extractor list; naming it would not help.
#[allow(clippy::type_complexity)]
fn by_id<T: Serialize + Send + 'static>(
    f: IdOp<T>,
) -> impl Fn(State<AppState>, Extension<Access>, Path<String>) -> Fut + Clone + Send + Sync + 'static
{
    move |State(st), Extension(a), Path(id)| {
        Box::pin(async move { ok(&call(&st, a, move |c| f(c, id)).await?) })
    }
}

// The handler signature is axum's extractor list; naming it would not help.
#[allow(clippy::type_complexity)]
fn with_body<B: DeserializeOwned + Send + 'static, T: Serialize + Send + 'static>(
    f: BodyOp<B, T>,
) -> impl Fn(State<AppState>, Extension<Access>, Result<Bytes, BytesRejection>) -> Fut
+ Clone
+ Send
+ Sync
+ 'static {
    move |State(st), Extension(a), body| {
        Box::pin(async move {
            let b: B = json(body)?;
            ok(&call(&st, a, move |c| f(c, b)).await?)
        })
    }
}

// The handler signature is axum's extractor list; naming it would not help.
#[allow(clippy::type_complexity)]
fn by_id_with_body<B: DeserializeOwned + Send + 'static, T: Serialize + Send + 'static>(
    f: IdBodyOp<B, T>,
) -> impl Fn(State<AppState>, Extension<Access>, Path<String>, Result<Bytes, BytesRejection>) -> Fut
+ Clone
+ Send
+ Sync
+ 'static {
    move |State(st), Extension(a), Path(id), body| {
        Box::pin(async move {
            let b: B = json(body)?;
            ok(&call(&st, a, move |c| f(c, id, b)).await?)
        })
    }
}

// ---------------------------------------------------------------- handlers

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct PutFileQuery {
    /// Full virtual path of the file.
    path: String,
    /// Comma-separated tags.
    #[serde(default)]
    tags: Option<String>,
    /// Replace the content of an existing file at `path`.
    #[serde(default)]
    replace: bool,
}

async fn put_file(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<PutFileQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let q = query(q)?;
    let body = bytes(body)?.to_vec();
    let r = call(&st, a, move |c| {
        c.put_file(PutFile {
            path: VPath::parse(&q.path)?,
            bytes: body,
            tags: q
                .tags
                .as_deref()
                .map(|t| t.split(',').map(|s| s.trim().to_string()).collect())
                .unwrap_or_default(),
            replace: q.replace,
        })
    })
    .await?;
    st.work.notify_one();
    created(&r, false)
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct FolderQuery {
    /// A folder path (default `/`).
    #[serde(default)]
    path: Option<String>,
    /// Remove a non-empty folder with everything below it.
    #[serde(default)]
    recursive: bool,
}

async fn list_folder(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<FolderQuery>, QueryRejection>,
) -> Reply {
    let q = query(q)?;
    let path = q.path.unwrap_or_else(|| "/".into());
    ok(&call(&st, a, move |c| c.list_folder(&VPath::parse(&path)?)).await?)
}

async fn file_content(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    Path(id): Path<String>,
) -> Reply {
    let (rec, bytes) = call(&st, a, move |c| c.read_file(&id)).await?;
    let mime = HeaderValue::from_str(&rec.mime)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    Ok(([(header::CONTENT_TYPE, mime)], bytes).into_response())
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MkdirBody {
    path: String,
    /// Create missing parents (`mkdir -p`).
    #[serde(default)]
    parents: bool,
}

async fn mkdir(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let b: MkdirBody = json(body)?;
    let r = call(&st, a, move |c| c.mkdir(&VPath::parse(&b.path)?, b.parents)).await?;
    created(&r, false)
}

async fn remove_folder(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<FolderQuery>, QueryRejection>,
) -> Reply {
    let q = query(q)?;
    let path = q
        .path
        .ok_or_else(|| ApiError(MemError::bad_request("path is required")))?;
    ok(&call(&st, a, move |c| c.remove_path(&path, q.recursive)).await?)
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MoveBody {
    /// File id, file path or folder path.
    from: String,
    to: String,
}

async fn remember(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let mut req: RememberRequest = json(body)?;
    req.idempotency_key = Some(idempotency_key(&headers, req.idempotency_key.as_deref())?);
    let out = call(&st, a, move |c| c.remember(&req)).await?;
    created(&out, out.replayed)
}

async fn list_memories(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<ListMemories>, QueryRejection>,
) -> Reply {
    let q = query(q)?;
    ok(&call(&st, a, move |c| c.list_memories(&q)).await?)
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeedbackBody {
    action: mem_core::model::FeedbackAction,
    /// The `state_version` the caller saw (optimistic concurrency).
    expected_version: u64,
    #[serde(default)]
    agent_id: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VersionBody {
    /// The `state_version` the caller saw (optimistic concurrency).
    expected_version: u64,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForgetBody {
    expected_version: u64,
    reason: String,
    /// Must be true: forgetting purges the content for good.
    #[serde(default)]
    confirm: bool,
}

async fn propose(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let mut req: mem_service::ProposalRequest = json(body)?;
    req.idempotency_key = idempotency_key(&headers, Some(&req.idempotency_key))?;
    let out = call(&st, a, move |c| c.propose(&req)).await?;
    created(&out, out.replayed)
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionBody {
    /// Approval note, or the reason of a rejection (required to reject).
    #[serde(default)]
    note: Option<String>,
}

async fn audit_list(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<mem_service::AuditQuery>, QueryRejection>,
) -> Reply {
    let q = query(q)?;
    ok(&call(&st, a, move |c| c.admin()?.audit_list(&q)).await?)
}

async fn audit_show(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    Path(seq): Path<String>,
) -> Reply {
    let seq: u64 = seq
        .parse()
        .map_err(|_| ApiError(MemError::bad_request(format!("bad audit sequence {seq:?}"))))?;
    ok(&call(&st, a, move |c| c.admin()?.audit_show(seq)).await?)
}

fn plugin_host(svc: &Service) -> MemResult<&Arc<dyn mem_core::plugin::PluginHost>> {
    svc.plugins()
        .ok_or_else(|| MemError::internal("this server runs without a plugin runtime"))
}

async fn create_token(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let req: mem_service::tokens::TokenRequest = json(body)?;
    let t = call(&st, a, move |c| c.admin()?.create_token(&req)).await?;
    created(&t, false)
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct DocumentQuery {
    /// Folder the memories go to (import) or come from (export).
    path: String,
    /// The adapter plugin (default `agents-md`).
    #[serde(default)]
    adapter: Option<String>,
    /// Document name (default `AGENTS.md`).
    #[serde(default)]
    name: Option<String>,
}

const DEFAULT_ADAPTER: &str = "agents-md";
const DEFAULT_DOCUMENT: &str = "AGENTS.md";

/// One result per imported entry, like `remember --jsonl`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct ImportLine {
    entry: usize,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<mem_service::RememberOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<MemError>,
}

async fn import(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<DocumentQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let q = query(q)?;
    let body = bytes(body)?.to_vec();
    let results = call(&st, a, move |c| {
        c.import_document(
            q.adapter.as_deref().unwrap_or(DEFAULT_ADAPTER),
            q.name.as_deref().unwrap_or(DEFAULT_DOCUMENT),
            &body,
            &q.path,
        )
    })
    .await?;
    let lines: Vec<ImportLine> = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Ok(o) => ImportLine {
                entry: i + 1,
                ok: true,
                result: Some(o),
                error: None,
            },
            Err(e) => ImportLine {
                entry: i + 1,
                ok: false,
                result: None,
                error: Some(e),
            },
        })
        .collect();
    ok(&lines)
}

async fn export(
    State(st): State<AppState>,
    Extension(a): Extension<Access>,
    q: Result<Query<DocumentQuery>, QueryRejection>,
) -> Reply {
    let q = query(q)?;
    let bytes = call(&st, a, move |c| {
        c.export_document(
            q.adapter.as_deref().unwrap_or(DEFAULT_ADAPTER),
            q.name.as_deref().unwrap_or(DEFAULT_DOCUMENT),
            &q.path,
        )
    })
    .await?;
    Ok((
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        bytes,
    )
        .into_response())
}

/// A claimed idempotency key, released when dropped (also when the request
/// fails, panics or its client goes away).
struct InFlight {
    set: Arc<parking_lot::Mutex<std::collections::HashSet<String>>>,
    key: String,
}

impl InFlight {
    fn claim(st: &AppState, key: String) -> Option<Self> {
        st.in_flight.lock().insert(key.clone()).then(|| Self {
            set: st.in_flight.clone(),
            key,
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.set.lock().remove(&self.key);
    }
}

/// `Idempotency-Key` on writes the service does not dedupe itself: the
/// first successful answer is kept and replayed (200, `replayed: true`);
/// the same key with a different request is 409 `idempotency_conflict`.
/// A second request with a key whose first is still running is 409 too.
/// Without the header the write simply runs.
async fn replayable(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let Some(key) = req
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
    else {
        return next.run(req).await;
    };
    let caller = req
        .extensions()
        .get::<Access>()
        .and_then(|a| a.token_id().map(str::to_string))
        .unwrap_or_else(|| "owner".into());
    // One request per key at a time, claimed before its body is read and
    // held until its reply is kept: a duplicate arriving later finds the
    // kept reply instead of running again.
    let Some(_running) = InFlight::claim(&st, format!("{caller}\0{key}")) else {
        return ApiError(
            MemError::new(
                ErrorCode::IdempotencyConflict,
                "a request with this Idempotency-Key is still in progress",
            )
            .with_hint("retry once it has finished: the retry gets its answer"),
        )
        .into_response();
    };
    let (parts, body) = req.into_parts();
    let limit = st.opts.file_body_limit.max(st.opts.json_body_limit);
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError(
                MemError::new(ErrorCode::PayloadTooLarge, "request body is too large")
                    .with_hint("split the request, or raise the limit with `serve --max-body`"),
            )
            .into_response();
        }
    };
    let mut fingerprint = format!("{} {}\n", parts.method, parts.uri).into_bytes();
    fingerprint.extend_from_slice(&bytes);
    let request_sha = mem_core::hash::sha256_hex(&fingerprint);
    let svc = st.svc.clone();
    let (c, k) = (caller.clone(), key.clone());
    let stored = match tokio::task::spawn_blocking(move || svc.stored_reply(&c, &k)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return ApiError(e).into_response(),
        Err(e) => return ApiError(MemError::internal(e.to_string())).into_response(),
    };
    if let Some(reply) = stored {
        if reply.request_sha256 != request_sha {
            return ApiError(
                MemError::new(
                    ErrorCode::IdempotencyConflict,
                    "this Idempotency-Key was used for a different request",
                )
                .with_hint(
                    "use a new key for a new write; reuse a key only to retry the same request",
                ),
            )
            .into_response();
        }
        let mut body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
        if let Some(o) = body.as_object_mut() {
            o.insert("replayed".into(), Value::Bool(true));
        }
        return (StatusCode::OK, Json(body)).into_response();
    }
    let resp = next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    if !resp.status().is_success() {
        return resp;
    }
    let (rparts, rbody) = resp.into_parts();
    let Ok(out) = axum::body::to_bytes(rbody, usize::MAX).await else {
        return ApiError(MemError::internal("cannot buffer the response")).into_response();
    };
    let svc = st.svc.clone();
    let (status, kept) = (rparts.status.as_u16(), out.to_vec());
    match tokio::task::spawn_blocking(move || {
        svc.store_reply(&caller, &key, request_sha, status, kept)
    })
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e.message, "cannot keep an idempotent reply"),
        Err(e) => tracing::warn!(error = %e, "cannot keep an idempotent reply"),
    }
    Response::from_parts(rparts, axum::body::Body::from(out))
}

// ------------------------------------------------------------------ table

fn r(doc: RouteDoc, handler: MethodRouter<AppState>) -> (RouteDoc, MethodRouter<AppState>) {
    (doc, handler)
}

/// Every `/v1` route: its documentation and its handler, side by side.
pub(crate) fn routes() -> Vec<(RouteDoc, MethodRouter<AppState>)> {
    use mem_service as s;
    use openapi::doc;
    vec![
        r(
            doc::<PutFileQuery, (), s::PutFileResult>("post", "/v1/files", "putFile", Scope::Write)
                .summary("Upload a file (raw bytes) to a virtual path")
                .body(Body::Bytes)
                .created(),
            post(put_file),
        ),
        r(
            doc::<FolderQuery, (), s::Listing>("get", "/v1/files", "listFolder", Scope::Read)
                .summary("List a folder"),
            get(list_folder),
        ),
        r(
            doc::<(), (), mem_core::model::FileRecord>(
                "get",
                "/v1/files/{id}",
                "fileInfo",
                Scope::Read,
            )
            .summary("A file's record (id or path)"),
            get(by_id(|c, id| c.file_info(&id))),
        ),
        r(
            doc::<(), (), ()>("get", "/v1/files/{id}/content", "fileContent", Scope::Read)
                .summary("A file's bytes")
                .raw_response(),
            get(file_content),
        ),
        r(
            doc::<(), (), s::RemoveResult>("delete", "/v1/files/{id}", "removeFile", Scope::Delete)
                .summary("Remove a file"),
            delete(by_id(|c, id| c.remove_path(&id, false))),
        ),
        r(
            doc::<(), MkdirBody, s::MkdirResult>("post", "/v1/folders", "mkdir", Scope::Write)
                .summary("Create a folder")
                .created(),
            post(mkdir),
        ),
        r(
            doc::<FolderQuery, (), s::RemoveResult>(
                "delete",
                "/v1/folders",
                "removeFolder",
                Scope::Delete,
            )
            .summary("Remove a folder"),
            delete(remove_folder),
        ),
        r(
            doc::<(), MoveBody, s::MoveResult>("post", "/v1/move", "move", Scope::Write)
                .summary("Move or rename a file or folder"),
            post(with_body(|c, b: MoveBody| {
                c.move_path(&b.from, &VPath::parse(&b.to)?)
            })),
        ),
        r(
            doc::<(), RememberRequest, s::RememberOutcome>(
                "post",
                "/v1/memories",
                "remember",
                Scope::Write,
            )
            .summary("Remember (Idempotency-Key header required)")
            .idempotent()
            .created(),
            post(remember),
        ),
        r(
            doc::<ListMemories, (), s::Page<mem_core::model::Memory>>(
                "get",
                "/v1/memories",
                "listMemories",
                Scope::Read,
            )
            .summary("List memories, newest first"),
            get(list_memories),
        ),
        r(
            doc::<(), (), mem_core::model::Memory>(
                "get",
                "/v1/memories/{id}",
                "getMemory",
                Scope::Read,
            )
            .summary("One memory"),
            get(by_id(|c, id| c.memory(&id))),
        ),
        r(
            doc::<(), FeedbackBody, mem_core::model::Memory>(
                "post",
                "/v1/memories/{id}/feedback",
                "feedback",
                Scope::Write,
            )
            .summary("Useful / not useful / wrong / outdated"),
            post(by_id_with_body(|c, id, b: FeedbackBody| {
                c.feedback(&id, b.action, b.expected_version, b.agent_id)
            })),
        ),
        r(
            doc::<(), VersionBody, mem_core::model::Memory>(
                "post",
                "/v1/memories/{id}/archive",
                "archive",
                Scope::Write,
            )
            .summary("Archive a memory"),
            post(by_id_with_body(|c, id, b: VersionBody| {
                c.archive(&id, b.expected_version)
            })),
        ),
        r(
            doc::<(), VersionBody, mem_core::model::Memory>(
                "post",
                "/v1/memories/{id}/restore",
                "restore",
                Scope::Write,
            )
            .summary("Restore an archived memory"),
            post(by_id_with_body(|c, id, b: VersionBody| {
                c.restore(&id, b.expected_version)
            })),
        ),
        r(
            doc::<(), ForgetBody, mem_core::model::Memory>(
                "post",
                "/v1/memories/{id}/forget",
                "forget",
                Scope::Delete,
            )
            .summary("Purge a memory's content (confirm: true)"),
            post(by_id_with_body(|c, id, b: ForgetBody| {
                c.forget(&id, b.expected_version, &b.reason, b.confirm)
            })),
        ),
        r(
            doc::<(), s::recall::SearchQuery, s::recall::SearchResult>(
                "post",
                "/v1/search",
                "search",
                Scope::Search,
            )
            .summary("Hybrid lexical + semantic search")
            .reads(),
            post(with_body(|c, q: s::recall::SearchQuery| c.search(&q))),
        ),
        r(
            doc::<(), s::recall::ContextRequest, s::recall::ContextPack>(
                "post",
                "/v1/context",
                "context",
                Scope::Search,
            )
            .summary("A cited, budgeted context pack")
            .reads(),
            post(with_body(|c, q: s::recall::ContextRequest| c.context(&q))),
        ),
        r(
            doc::<(), s::check::CheckRequest, s::check::CheckResult>(
                "post",
                "/v1/check",
                "check",
                Scope::Search,
            )
            .summary("Check an intended action against constraints")
            .reads(),
            post(with_body(|c, q: s::check::CheckRequest| c.check(&q))),
        ),
        r(
            doc::<(), (), Vec<s::types::TypeDef>>("get", "/v1/types", "types", Scope::Read)
                .summary("Memory types and their roles"),
            get(plain(|c| c.types())),
        ),
        r(
            doc::<(), (), s::processing::WorkspaceStatus>(
                "get",
                "/v1/status",
                "status",
                Scope::Read,
            )
            .summary("Processing, index and plugin status"),
            get(plain(|c| c.status())),
        ),
        r(
            doc::<(), s::ProposalRequest, s::ProposalOutcome>(
                "post",
                "/v1/proposals",
                "propose",
                Scope::Write,
            )
            .summary("Propose a memory change through the write gate")
            .idempotent()
            .created(),
            post(propose),
        ),
        r(
            doc::<(), (), s::Proposal>("get", "/v1/proposals/{id}", "getProposal", Scope::Write)
                .summary("A proposal this token made"),
            get(by_id(|c, id| c.proposal(&id))),
        ),
        r(
            doc::<(), (), Vec<s::Proposal>>("get", "/v1/review", "reviewList", Scope::Admin)
                .summary("Queued proposals"),
            get(plain(|c| c.admin()?.review_list())),
        ),
        r(
            doc::<(), (), s::ReviewItem>("get", "/v1/review/{id}", "reviewShow", Scope::Admin)
                .summary("Old and new text, diff, evidence, findings"),
            get(by_id(|c, id| c.admin()?.review_show(&id))),
        ),
        r(
            doc::<(), DecisionBody, s::Proposal>(
                "post",
                "/v1/review/{id}/approve",
                "reviewApprove",
                Scope::Admin,
            )
            .summary("Approve a queued proposal"),
            post(by_id_with_body(|c, id, b: DecisionBody| {
                let actor = c.access().actor(None, None);
                c.admin()?.review_approve(&id, &actor, b.note.as_deref())
            })),
        ),
        r(
            doc::<(), DecisionBody, s::Proposal>(
                "post",
                "/v1/review/{id}/reject",
                "reviewReject",
                Scope::Admin,
            )
            .summary("Reject a queued proposal (note = reason)"),
            post(by_id_with_body(|c, id, b: DecisionBody| {
                let actor = c.access().actor(None, None);
                c.admin()?
                    .review_reject(&id, &actor, &b.note.unwrap_or_default())
            })),
        ),
        r(
            doc::<s::AuditQuery, (), Vec<s::AuditEntry>>(
                "get",
                "/v1/audit",
                "auditList",
                Scope::Admin,
            )
            .summary("Audit entries"),
            get(audit_list),
        ),
        r(
            doc::<(), (), s::AuditEntry>("get", "/v1/audit/{seq}", "auditShow", Scope::Admin)
                .summary("One audit entry"),
            get(audit_show),
        ),
        r(
            doc::<(), (), s::AuditVerification>(
                "post",
                "/v1/audit/verify",
                "auditVerify",
                Scope::Admin,
            )
            .summary("Verify the audit hash chain")
            .reads(),
            post(plain(|c| c.admin()?.audit_verify())),
        ),
        r(
            doc::<(), (), Vec<s::BudgetUsage>>("get", "/v1/budgets", "budgets", Scope::Admin)
                .summary("Character budgets and their usage"),
            get(plain(|c| c.admin()?.budgets())),
        ),
        r(
            doc::<(), (), s::lint::LintReport>("get", "/v1/lint", "lint", Scope::Admin)
                .summary("Consistency issues in memories and types"),
            get(plain(|c| c.admin()?.lint())),
        ),
        r(
            doc::<(), (), Vec<mem_core::plugin::PluginInfo>>(
                "get",
                "/v1/plugins",
                "plugins",
                Scope::Admin,
            )
            .summary("Installed plugins"),
            get(plain(|c| plugin_host(c.admin()?)?.list())),
        ),
        r(
            doc::<(), (), mem_core::plugin::PluginInfo>(
                "get",
                "/v1/plugins/{name}",
                "plugin",
                Scope::Admin,
            )
            .summary("One plugin: capabilities, limits, failures"),
            get(by_id(|c, name| plugin_host(c.admin()?)?.inspect(&name))),
        ),
        r(
            doc::<(), (), Vec<s::tokens::TokenInfo>>("get", "/v1/tokens", "tokens", Scope::Admin)
                .summary("API tokens (never their secrets)"),
            get(plain(|c| c.admin()?.list_tokens())),
        ),
        r(
            doc::<(), s::tokens::TokenRequest, s::tokens::CreatedToken>(
                "post",
                "/v1/tokens",
                "createToken",
                Scope::Admin,
            )
            .summary("Create a token; the secret is shown once")
            .created(),
            post(create_token),
        ),
        r(
            doc::<(), (), s::tokens::TokenInfo>(
                "delete",
                "/v1/tokens/{id}",
                "revokeToken",
                Scope::Admin,
            )
            .summary("Revoke a token"),
            delete(by_id(|c, id| c.admin()?.revoke_token(&id))),
        ),
        r(
            doc::<DocumentQuery, (), Vec<ImportLine>>("post", "/v1/import", "import", Scope::Write)
                .summary("Import a document (AGENTS.md...) as memories")
                .body(Body::Bytes),
            post(import),
        ),
        r(
            doc::<DocumentQuery, (), ()>("get", "/v1/export", "export", Scope::Read)
                .summary("Export memories of a folder as a document")
                .raw_response(),
            get(export),
        ),
    ]
}

// ----------------------------------------------------------------- server

/// Records every request in the metrics, labelled by its route template
/// (never the raw path, which would explode label cardinality).
async fn observe(State(metrics): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let started = Instant::now();
    let resp = next.run(req).await;
    metrics.record(&method, &route, resp.status().as_u16(), started.elapsed());
    resp
}

async fn no_route() -> ApiError {
    ApiError(
        MemError::new(ErrorCode::NotFound, "no such route")
            .with_hint("the API is described at /v1/openapi.json"),
    )
}

async fn metrics_text(State(st): State<AppState>) -> Response {
    let svc = st.svc.clone();
    let m = st.metrics.clone();
    match tokio::task::spawn_blocking(move || m.render(&svc)).await {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(e) => ApiError(MemError::internal(e.to_string())).into_response(),
    }
}

/// The whole HTTP application (REST, OpenAPI, metrics, MCP).
pub(crate) fn app(state: AppState, cancel: tokio_util::sync::CancellationToken) -> Router {
    let mut api: Router<AppState> = Router::new();
    let mut docs = Vec::new();
    for (doc, handler) in routes() {
        let limit = match doc.body {
            Body::Bytes => state.opts.file_body_limit,
            _ => state.opts.json_body_limit,
        };
        let mut handler = handler.layer(DefaultBodyLimit::max(limit));
        if doc.replayable() {
            handler = handler.layer(middleware::from_fn_with_state(state.clone(), replayable));
        }
        api = api.route(doc.path, handler);
        docs.push(doc);
    }
    let spec = Arc::new(openapi::document(&docs));
    let mcp = crate::mcp::http_service(state.svc.clone(), cancel);
    let authed = api
        .nest_service("/mcp", mcp)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    Router::new()
        .merge(authed)
        .route(
            "/v1/openapi.json",
            get(move || {
                let spec = spec.clone();
                async move { Json(spec.as_ref().clone()) }
            }),
        )
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(no_route)
        .layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            observe,
        ))
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(
                    tower_http::trace::DefaultMakeSpan::new().level(tracing::Level::INFO),
                )
                .on_response(
                    tower_http::trace::DefaultOnResponse::new().level(tracing::Level::INFO),
                ),
        )
        .with_state(state)
}

/// Runs `mem-host serve` until `shutdown` resolves, then stops accepting,
/// lets in-flight requests finish, and flushes the store: no acknowledged
/// write is lost. `on_bound` hears the actual address (for `:0`).
pub async fn serve(
    svc: Arc<Service>,
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(std::net::SocketAddr),
) -> MemResult<()> {
    let listener = tokio::net::TcpListener::bind(opts.bind)
        .await
        .map_err(|e| {
            MemError::new(
                ErrorCode::Io,
                format!("cannot listen on {}: {e}", opts.bind),
            )
            .with_hint("choose another address with --bind, e.g. 127.0.0.1:7374")
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| MemError::io("cannot read the bound address", &e))?;
    let state = AppState {
        svc: svc.clone(),
        metrics: Arc::new(Metrics::default()),
        opts: Arc::new(opts),
        work: Arc::new(tokio::sync::Notify::new()),
        in_flight: Default::default(),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let worker = tokio::spawn(process_files(state.clone(), cancel.clone()));
    let app = app(state, cancel.clone());
    on_bound(addr);
    tracing::info!(%addr, "listening");
    let stop = cancel.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: finishing in-flight requests");
            stop.cancel();
        })
        .await
        .map_err(|e| MemError::io("server failed", &e))?;
    cancel.cancel();
    let _ = worker.await;
    let flush = svc.clone();
    tokio::task::spawn_blocking(move || flush.flush())
        .await
        .map_err(|e| MemError::internal(e.to_string()))??;
    tracing::info!("stopped");
    Ok(())
}

/// Background processing of uploaded files by the processor plugins, and
/// saving what the index deferred.
async fn process_files(state: AppState, cancel: tokio_util::sync::CancellationToken) {
    const IDLE: Duration = Duration::from_secs(5);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = state.work.notified() => {}
            _ = tokio::time::sleep(IDLE) => {}
        }
        let svc = state.svc.clone();
        // Then persist what the index deferred (vectors are saved at most
        // every few seconds while writes arrive; this saves after the last).
        let work = move || {
            let processed = svc.process_pending(None);
            let flushed = svc.flush();
            processed.and(flushed)
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e.message, "background processing failed"),
            Err(e) => tracing::warn!(error = %e, "background processing worker failed"),
        }
    }
}
