//! The owner's socket: while `serve` holds a workspace, the owner's CLI
//! sends its operations here and gets the same answers it would get
//! running them itself. The socket lives inside the workspace, `0600`,
//! and a connection from another user is refused (its peer credentials
//! are checked against the socket's owner), so it grants nothing the
//! workspace folder does not.
//!
//! Routes: `POST /ops/{name}` (an operation's JSON request → `{value,
//! replayed}` or the error document), `POST /files?request=` (a streamed
//! upload), `GET /files/content?target=` (a streamed download) and
//! `POST /documents?request=` (a document import).

use crate::error::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::StreamExt;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::Service;
use mem_service::access::Access;
use mem_service::door::find;
use mem_service::ops::admin::ImportDocument;
use mem_service::ops::files::PutFileRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

/// The socket's file name inside a workspace folder.
pub const SOCKET_FILE: &str = "serve.sock";

/// An operation's answer over the socket.
#[derive(Debug, Serialize, Deserialize)]
pub struct Answer {
    pub value: Value,
    pub replayed: bool,
}

/// Who is on the other end of a connection.
#[derive(Debug, Clone, Copy)]
struct Peer {
    uid: Option<u32>,
}

impl Connected<axum::serve::IncomingStream<'_, UnixListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, UnixListener>) -> Self {
        Peer {
            uid: stream.io().peer_cred().ok().map(|c| c.uid()),
        }
    }
}

#[derive(Clone)]
struct SocketState {
    svc: Arc<Service>,
    owner_uid: u32,
}

/// Binds the socket at `path` (replacing a stale one), restricts it to
/// the owner, and serves it until `cancel`. The returned task ends when
/// the socket is closed and removed.
pub fn listen(
    path: &FsPath,
    svc: Arc<Service>,
    cancel: CancellationToken,
) -> MemResult<tokio::task::JoinHandle<()>> {
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(MemError::new(
                ErrorCode::StoreLocked,
                format!("another server answers on {}", path.display()),
            )
            .with_hint("stop the other `mem-host serve` of this workspace first"));
        }
        std::fs::remove_file(path).map_err(|e| {
            MemError::io(&format!("cannot remove the stale {}", path.display()), &e)
        })?;
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| MemError::io(&format!("cannot listen on {}", path.display()), &e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| MemError::io(&format!("cannot restrict {}", path.display()), &e))?;
    let owner_uid = std::fs::metadata(path)
        .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))?
        .uid();
    let state = SocketState { svc, owner_uid };
    let app = Router::new()
        .route("/ops/{name}", post(op))
        .route("/files", post(upload))
        .route("/files/content", get(download))
        .route("/documents", post(import))
        // The owner's own requests: the operations enforce the workspace's
        // limits (file size, memory length), not axum's 2 MiB default.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(middleware::from_fn_with_state(
            state.clone(),
            only_the_owner,
        ))
        .with_state(state);
    let path: PathBuf = path.to_path_buf();
    Ok(tokio::spawn(async move {
        let served = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the owner's socket failed");
        }
        let _ = std::fs::remove_file(&path);
    }))
}

async fn only_the_owner(
    State(st): State<SocketState>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    req: Request,
    next: Next,
) -> Response {
    if peer.uid != Some(st.owner_uid) {
        return ApiError(
            MemError::new(
                ErrorCode::Forbidden,
                "this socket serves the workspace's owner only",
            )
            .with_hint("connect as the user who runs `mem-host serve`, or use REST with a token"),
        )
        .into_response();
    }
    next.run(req).await
}

async fn blocking<T: Send + 'static>(
    svc: &Arc<Service>,
    f: impl FnOnce(&Service, &Access) -> MemResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    let svc = svc.clone();
    tokio::task::spawn_blocking(move || f(&svc, &Access::owner()))
        .await
        .map_err(|e| MemError::internal(format!("request worker failed: {e}")))?
        .map_err(ApiError)
}

/// Runs one operation as the owner, or as the token a bearer header
/// names (an agent's stdio session started with `MEM_TOKEN` while the
/// server runs keeps that token's limits).
async fn op(
    State(st): State<SocketState>,
    Path(name): Path<String>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let run = async {
        let entry = find(&name).map_err(ApiError)?;
        let args: Value = serde_json::from_slice(&body).map_err(|e| {
            ApiError(MemError::bad_request(format!(
                "the request is not JSON: {e}"
            )))
        })?;
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let done = blocking(&st.svc, move |svc, owner| {
            let access = match &bearer {
                Some(secret) => svc.authenticate(secret)?,
                None => owner.clone(),
            };
            entry.run_json(&svc.caller(&access), args)
        })
        .await?;
        Ok::<_, ApiError>(Json(Answer {
            value: done.value,
            replayed: done.replayed,
        }))
    };
    run.await.into_response()
}

#[derive(Debug, Deserialize)]
struct RequestQuery {
    request: String,
}

/// The operation's request the query carries, as JSON (decoded, and
/// checked against its schema, by the door).
fn request_of(
    q: Result<Query<RequestQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Value, ApiError> {
    let Query(q) = q.map_err(|e| ApiError(MemError::bad_request(e.body_text())))?;
    serde_json::from_str(&q.request).map_err(|e| {
        ApiError(MemError::bad_request(format!(
            "the request is not JSON: {e}"
        )))
    })
}

async fn upload(
    State(st): State<SocketState>,
    q: Result<Query<RequestQuery>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Response {
    let run = async {
        let args = request_of(q)?;
        let stream = body
            .into_data_stream()
            .map(|c| c.map_err(std::io::Error::other))
            .boxed();
        let reader = tokio_util::io::StreamReader::new(stream);
        let done = blocking(&st.svc, move |svc, a| {
            let c = svc.caller(a);
            let req: PutFileRequest = c.decode(args)?;
            let mut sync = tokio_util::io::SyncIoBridge::new(reader);
            c.put_stream(req, &mut sync)
        })
        .await?;
        let value = serde_json::to_value(done.value)
            .map_err(|e| ApiError(MemError::internal(e.to_string())))?;
        Ok::<_, ApiError>(Json(Answer {
            value,
            replayed: done.replayed,
        }))
    };
    run.await.into_response()
}

#[derive(Debug, Deserialize)]
struct TargetQuery {
    target: String,
}

async fn download(
    State(st): State<SocketState>,
    q: Result<Query<TargetQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let run =
        async {
            let Query(q) = q.map_err(|e| ApiError(MemError::bad_request(e.body_text())))?;
            let (file, mut reader) =
                blocking(&st.svc, move |svc, a| svc.caller(a).open_file(&q.target)).await?;
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
            tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let sent = match reader.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => tx.blocking_send(Ok(Bytes::copy_from_slice(&buf[..n]))),
                        Err(e) => tx.blocking_send(Err(e)),
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            });
            let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|c| (c, rx))
            });
            let record = serde_json::to_string(&file)
                .map_err(|e| ApiError(MemError::internal(e.to_string())))?;
            let mut resp = Body::from_stream(stream).into_response();
            // The record travels as a header: the body is the bytes alone.
            let record = HeaderValue::from_str(&percent(&record))
                .map_err(|e| ApiError(MemError::internal(e.to_string())))?;
            resp.headers_mut().insert("x-mem-file", record);
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            Ok::<_, ApiError>(resp)
        };
    run.await.into_response()
}

/// Percent-encodes everything outside visible ASCII (header-safe JSON).
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x21..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn import(
    State(st): State<SocketState>,
    q: Result<Query<RequestQuery>, axum::extract::rejection::QueryRejection>,
    body: Bytes,
) -> Response {
    let run = async {
        let args = request_of(q)?;
        let results = blocking(&st.svc, move |svc, a| {
            let c = svc.caller(a);
            let req: ImportDocument = c.decode(args)?;
            c.import_document(req, &body)
        })
        .await?;
        let value = serde_json::to_value(results)
            .map_err(|e| ApiError(MemError::internal(e.to_string())))?;
        Ok::<_, ApiError>(Json(Answer {
            value,
            replayed: false,
        }))
    };
    run.await.into_response()
}
