//! Routes whose body or answer is raw bytes: file uploads and downloads
//! stream (bounded memory, whatever the size), documents travel as text.
//! They reach the same operations as every other surface.

use super::table::{Kind, Route};
use super::{answer, call, params, path_params, request_args};
use crate::AppState;
use crate::error::ApiError;
use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{RawPathParams, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, get, post};
use futures_util::StreamExt;
use mem_core::{MemError, MemResult};
use mem_service::access::Access;
use mem_service::door::Done;
use mem_service::ops::admin::{ExportDocument, ImportDocument};
use mem_service::ops::bundles::{ExportBundle, ImportBundle, VerifyBundle};
use mem_service::ops::files::PutFileRequest;
use serde_json::Value;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes a download reads ahead of the client.
const CHUNK: usize = 64 * 1024;

/// An upload: the body streams into the operation, at most `limit` bytes.
pub(super) fn upload_route(route: Route) -> MethodRouter<AppState> {
    let types = Arc::new(params::param_types(&route.op));
    post(
        move |State(st): State<AppState>,
              Extension(access): Extension<Access>,
              p: Result<RawPathParams, RawPathParamsRejection>,
              uri: Uri,
              headers: HeaderMap,
              body: Body| {
            let types = types.clone();
            async move {
                let run = async {
                    let args = request_args(&route, &types, path_params(p)?, &uri, &headers, &[])?;
                    let form = route.kind == Kind::Upload && super::form::is_multipart(&headers);
                    let file_limit = st.opts.file_body_limit;
                    // A form's framing and source part come on top of its file.
                    let limit = if form {
                        file_limit.saturating_add(super::form::FRAMING_BYTES)
                    } else {
                        file_limit
                    };
                    let over = Arc::new(AtomicBool::new(false));
                    let stream = limited(body, limit, over.clone());
                    let done = match route.kind {
                        Kind::DocumentIn => {
                            let bytes = collect(stream).await;
                            if over.load(Ordering::SeqCst) {
                                return Err(super::too_large(true));
                            }
                            let bytes = bytes.map_err(|e| {
                                ApiError(MemError::bad_request(format!(
                                    "cannot read the body: {e}"
                                )))
                            })?;
                            let results = call(&st, access, move |c| {
                                let req: ImportDocument = c.decode(Value::Object(args))?;
                                c.import_document(req, &bytes)
                            })
                            .await?;
                            Done {
                                value: serde_json::to_value(results)
                                    .map_err(|e| MemError::internal(e.to_string()))?,
                                replayed: false,
                            }
                        }
                        Kind::BundleIn => {
                            let reader = tokio_util::io::StreamReader::new(stream);
                            let name = route.op.name;
                            let result = call(&st, access, move |c| {
                                let mut sync = tokio_util::io::SyncIoBridge::new(reader);
                                let run = || -> MemResult<Value> {
                                    let value = if name == "bundle.import" {
                                        let _: ImportBundle = c.decode(Value::Object(args))?;
                                        serde_json::to_value(c.import_bundle(&mut sync)?)
                                    } else {
                                        let _: VerifyBundle = c.decode(Value::Object(args))?;
                                        serde_json::to_value(c.verify_bundle(&mut sync)?)
                                    };
                                    value.map_err(|e| MemError::internal(e.to_string()))
                                };
                                let result = run();
                                // A replay or a refusal is decided before the
                                // upload ends: read the rest (the limit still
                                // holds) so the client receives this answer
                                // instead of a reset on its send.
                                let _ = std::io::copy(&mut sync, &mut std::io::sink());
                                result
                            })
                            .await;
                            if over.load(Ordering::SeqCst) {
                                return Err(super::too_large(true));
                            }
                            let value = result?;
                            let replayed = value.get("replayed") == Some(&Value::Bool(true));
                            Done { value, replayed }
                        }
                        _ if form => {
                            let form = super::form::read(&headers, stream, file_limit).await;
                            if over.load(Ordering::SeqCst) {
                                return Err(super::too_large(true));
                            }
                            let mut form = form?;
                            let mut args = args;
                            if let Some(text) = form.source_metadata.take() {
                                super::add_source(&mut args, text)?;
                            }
                            let done = call(&st, access, move |c| {
                                let req: PutFileRequest = c.decode(Value::Object(args))?;
                                c.put_stream(req, &mut form.file)
                            })
                            .await?;
                            Done {
                                value: serde_json::to_value(done.value)
                                    .map_err(|e| MemError::internal(e.to_string()))?,
                                replayed: done.replayed,
                            }
                        }
                        _ => {
                            let reader = tokio_util::io::StreamReader::new(stream);
                            let result = call(&st, access, move |c| {
                                let req: PutFileRequest = c.decode(Value::Object(args))?;
                                let mut sync = tokio_util::io::SyncIoBridge::new(reader);
                                c.put_stream(req, &mut sync)
                            })
                            .await;
                            if over.load(Ordering::SeqCst) {
                                return Err(super::too_large(true));
                            }
                            let done = result?;
                            Done {
                                value: serde_json::to_value(done.value)
                                    .map_err(|e| MemError::internal(e.to_string()))?,
                                replayed: done.replayed,
                            }
                        }
                    };
                    Ok::<_, ApiError>(answer(&route, done))
                };
                let mut resp = run.await.unwrap_or_else(IntoResponse::into_response);
                // A bundle upload refused before the service read it (its
                // access, its size) leaves bytes unread: the connection
                // cannot carry another request, and the client is told so.
                if route.kind == Kind::BundleIn {
                    resp.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                resp
            }
        },
    )
}

type ByteStream = futures_util::stream::BoxStream<'static, Result<Bytes, std::io::Error>>;

/// The body as a stream that fails once it passes `limit` bytes (and says
/// so through `over`).
fn limited(body: Body, limit: usize, over: Arc<AtomicBool>) -> ByteStream {
    let mut seen = 0usize;
    body.into_data_stream()
        .map(move |chunk| {
            let chunk = chunk.map_err(std::io::Error::other)?;
            seen += chunk.len();
            if seen > limit {
                over.store(true, Ordering::SeqCst);
                return Err(std::io::Error::other(
                    "the body is larger than the upload limit",
                ));
            }
            Ok(chunk)
        })
        .boxed()
}

async fn collect(mut stream: ByteStream) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

/// A file's bytes, streamed from the store as the client reads them.
pub(super) fn download_route(_route: Route) -> MethodRouter<AppState> {
    get(
        |State(st): State<AppState>,
         Extension(access): Extension<Access>,
         p: Result<RawPathParams, RawPathParamsRejection>| async move {
            let run = async {
                let target = path_params(p)?
                    .into_iter()
                    .find(|(k, _)| k == "target")
                    .map(|(_, v)| v)
                    .unwrap_or_default();
                let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
                let (file, reader) = call(&st, access, move |c| c.open_file(&target)).await?;
                tokio::task::spawn_blocking(move || pump(reader, tx));
                let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|chunk| (chunk, rx))
                });
                let mut resp = Body::from_stream(stream).into_response();
                let h = resp.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_str(&file.mime)
                        .unwrap_or(HeaderValue::from_static("application/octet-stream")),
                );
                h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.size));
                if let Ok(v) = HeaderValue::from_str(&file.sha256) {
                    h.insert("x-content-sha256", v);
                }
                Ok::<_, ApiError>(resp)
            };
            run.await.unwrap_or_else(IntoResponse::into_response)
        },
    )
}

/// Reads a blob into the response channel until it ends or the client
/// goes away.
fn pump(
    mut reader: Box<dyn Read + Send>,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if tx
                    .blocking_send(Ok(Bytes::copy_from_slice(&buf[..n])))
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
}

/// An exported document as text; a split export (a folder of notes) as
/// JSON, since it is several documents.
pub(super) fn export_route(route: Route) -> MethodRouter<AppState> {
    let types = Arc::new(params::param_types(&route.op));
    get(
        move |State(st): State<AppState>,
              Extension(access): Extension<Access>,
              uri: Uri,
              headers: HeaderMap| {
            let types = types.clone();
            async move {
                let run = async {
                    let args = request_args(&route, &types, Vec::new(), &uri, &headers, &[])?;
                    let doc = call(&st, access, move |c| {
                        let req: ExportDocument = c.decode(Value::Object(args))?;
                        c.run(req)
                    })
                    .await?
                    .value;
                    if !doc.documents.is_empty() {
                        return Ok(axum::Json(doc).into_response());
                    }
                    let mime = if doc.name.to_ascii_lowercase().ends_with(".md") {
                        "text/markdown; charset=utf-8"
                    } else {
                        "text/plain; charset=utf-8"
                    };
                    Ok::<_, ApiError>(([(header::CONTENT_TYPE, mime)], doc.content).into_response())
                };
                run.await.unwrap_or_else(IntoResponse::into_response)
            }
        },
    )
}

/// Hands what a blocking writer writes to the response body, in chunks;
/// says once when the first bytes (or the end) are there, so an error
/// before that is still a JSON error answer.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    started: Option<tokio::sync::oneshot::Sender<mem_core::MemResult<()>>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if let Some(s) = self.started.take() {
            let _ = s.send(Ok(()));
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::other("the client went away"))
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A workspace bundle, streamed as it is written.
pub(super) fn bundle_route(route: Route) -> MethodRouter<AppState> {
    let types = Arc::new(params::param_types(&route.op));
    get(
        move |State(st): State<AppState>,
              Extension(access): Extension<Access>,
              uri: Uri,
              headers: HeaderMap| {
            let types = types.clone();
            async move {
                let run = async {
                    let args = request_args(&route, &types, Vec::new(), &uri, &headers, &[])?;
                    export_bundle(&st, access, Value::Object(args)).await
                };
                run.await.unwrap_or_else(IntoResponse::into_response)
            }
        },
    )
}

/// Streams the bundle `args` asks for, exported as `access` (REST and the
/// web page's download alike); an error before the first byte is an
/// ordinary error answer.
pub(crate) async fn export_bundle(
    st: &AppState,
    access: Access,
    args: Value,
) -> Result<axum::response::Response, ApiError> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let (started, first) = tokio::sync::oneshot::channel();
    let svc = st.svc.clone();
    tokio::task::spawn_blocking(move || {
        let c = svc.caller(&access);
        let mut w = ChannelWriter {
            tx: tx.clone(),
            started: Some(started),
            buf: Vec::new(),
        };
        let result = c
            .decode::<ExportBundle>(args)
            .and_then(|req| c.export_bundle(&req, &mut w));
        match result {
            Ok(_) => {
                let _ = w.send();
            }
            Err(e) => match w.started.take() {
                Some(s) => {
                    let _ = s.send(Err(e));
                }
                // Bytes went out: the body ends in an error.
                None => {
                    let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
                }
            },
        }
    });
    match first.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(ApiError(e)),
        Err(_) => {
            return Err(ApiError(MemError::internal("the export worker failed")));
        }
    }
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    let mut resp = Body::from_stream(stream).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zstd"),
    );
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"workspace.mem-bundle\""),
    );
    Ok(resp)
}
