//! REST under `/v1`: a thin adapter. Each route of [`table`] turns its
//! path, query, body and `Idempotency-Key` header into the one service
//! operation it names and runs it through the caller's door; the answer
//! is the operation's answer. The OpenAPI document is built from the
//! same table.

pub(crate) mod form;
mod params;
pub(crate) mod raw;
pub(crate) mod table;

use crate::error::ApiError;
use crate::{AppState, auth, metrics::Metrics};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, RawPathParamsRejection};
use axum::extract::{DefaultBodyLimit, MatchedPath, RawPathParams, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, on};
use axum::{Extension, Json, Router};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::access::Access;
use mem_service::door::{Caller, Done};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use table::{Kind, Route};

/// Runs `f` as `access` on a blocking thread, once the admission queue
/// lets it start: the service does disk and model work, which must not
/// stall the async workers.
pub(crate) async fn call<T: Send + 'static>(
    state: &AppState,
    access: Access,
    f: impl FnOnce(Caller<'_>) -> MemResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    let svc = state.svc.clone();
    state
        .admission
        .run(move || f(svc.caller(&access)))
        .await?
        .map_err(|e| ApiError(over_http(e)))
}

/// Says an error the way an HTTP client fixes it: a missing idempotency
/// key is a header to send.
fn over_http(e: MemError) -> MemError {
    let field = e.details.get("field").and_then(Value::as_str);
    if e.code == mem_core::ErrorCode::BadRequest && field == Some("/idempotency_key") {
        return e.with_hint(
            "send an Idempotency-Key header (or idempotency_key in the body): unique per intended write, reused only to retry it",
        );
    }
    e
}

/// The answer of a route: 201 when it made something, 200 for a replay
/// (marked `replayed` and by the `Idempotent-Replayed` header).
pub(crate) fn answer(route: &Route, done: Done<Value>) -> Response {
    let Done {
        mut value,
        replayed,
    } = done;
    let status = if route.created && !replayed {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    if replayed && let Some(o) = value.as_object_mut() {
        o.entry("replayed").or_insert(Value::Bool(true));
    }
    let mut resp = (status, Json(value)).into_response();
    if replayed {
        resp.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    resp
}

/// The hint of a 413: which `serve` flag raises the limit.
fn too_large(upload: bool) -> ApiError {
    let flag = if upload { "--max-upload" } else { "--max-body" };
    ApiError(
        MemError::new(ErrorCode::PayloadTooLarge, "request body is too large").with_hint(format!(
            "split the request, or raise the limit with `serve {flag}`"
        )),
    )
}

fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(false)
        } else {
            ApiError(
                MemError::bad_request(format!("cannot read the request body: {r}"))
                    .with_hint("send the whole body"),
            )
        }
    })
}

fn path_params(
    p: Result<RawPathParams, RawPathParamsRejection>,
) -> Result<Vec<(String, String)>, ApiError> {
    let p = p.map_err(|e| {
        ApiError(
            MemError::bad_request(format!("bad path: {}", e.body_text()))
                .with_hint("percent-encode path parameters as UTF-8"),
        )
    })?;
    Ok(p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

fn key_header(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    headers
        .get("idempotency-key")
        .map(|v| {
            v.to_str().map(|s| s.trim().to_string()).map_err(|_| {
                ApiError(
                    MemError::bad_request("Idempotency-Key must be visible ASCII")
                        .with_hint("use a UUID or another ASCII key"),
                )
            })
        })
        .transpose()
}

/// The header a raw upload carries its source metadata in (a JSON object
/// as text; the service decodes it strictly).
pub(crate) const SOURCE_HEADER: &str = "x-mem-source-metadata";

fn add_source_header(args: &mut Map<String, Value>, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(v) = headers.get(SOURCE_HEADER) else {
        return Ok(());
    };
    let text = String::from_utf8(v.as_bytes().to_vec()).map_err(|_| {
        ApiError(
            MemError::new(
                mem_core::ErrorCode::BadSourceMetadata,
                "X-Mem-Source-Metadata is not UTF-8",
            )
            .with_hint("send the source metadata as UTF-8 JSON text"),
        )
    })?;
    add_source(args, text)
}

/// Adds an upload's source metadata text (from its header or its form),
/// refusing it twice.
pub(crate) fn add_source(args: &mut Map<String, Value>, text: String) -> Result<(), ApiError> {
    // Both are well-formed on their own (no schema can say "not both"):
    // the metadata as sent is ambiguous, so it is unprocessable.
    if args.contains_key("source_metadata") {
        return Err(ApiError(
            MemError::new(
                mem_core::ErrorCode::BadSourceMetadata,
                "source metadata is given twice",
            )
            .with_hint("send it once: in the X-Mem-Source-Metadata header or the form's source_metadata part"),
        ));
    }
    args.insert("source_metadata".into(), Value::String(text));
    Ok(())
}

/// The request of a route: path and query parameters, the JSON body of a
/// POST, and the idempotency key header, as one JSON object.
pub(crate) fn request_args(
    route: &Route,
    types: &BTreeMap<String, params::ParamType>,
    path: Vec<(String, String)>,
    uri: &Uri,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Map<String, Value>, ApiError> {
    let mut args = Map::new();
    if route.takes_query() {
        params::add_query(&mut args, types, uri.query())?;
    } else if !bytes.iter().all(u8::is_ascii_whitespace) {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| {
            ApiError(
                MemError::bad_request(format!("the body is not JSON: {e}")).with_hint(
                    "send a JSON object matching the operation's schema in /v1/openapi.json",
                ),
            )
        })?;
        match v {
            Value::Object(o) => args = o,
            _ => {
                return Err(ApiError(
                    MemError::bad_request("the body must be a JSON object")
                        .with_hint("send the operation's fields as a JSON object"),
                ));
            }
        }
    }
    for (name, raw) in path {
        params::add_path(&mut args, types, &name, &raw)?;
    }
    if types.contains_key("idempotency_key") {
        params::add_key(&mut args, key_header(headers)?.as_deref())?;
    }
    if route.kind == Kind::Upload {
        add_source_header(&mut args, headers)?;
    }
    Ok(args)
}

/// The handler of a JSON route.
fn json_route(route: Route) -> MethodRouter<AppState> {
    let types = Arc::new(params::param_types(&route.op));
    let handler = move |State(st): State<AppState>,
                        Extension(access): Extension<Access>,
                        p: Result<RawPathParams, RawPathParamsRejection>,
                        uri: Uri,
                        headers: HeaderMap,
                        b: Result<Bytes, BytesRejection>| {
        let types = types.clone();
        async move {
            let run = async {
                let bytes = body(b)?;
                let args = request_args(&route, &types, path_params(p)?, &uri, &headers, &bytes)?;
                let op = route.op;
                let done = call(&st, access, move |c| op.run_json(&c, Value::Object(args))).await?;
                Ok::<_, ApiError>(answer(&route, done))
            };
            run.await.unwrap_or_else(IntoResponse::into_response)
        }
    };
    on(method_filter(route.method), handler)
}

fn method_filter(m: &str) -> axum::routing::MethodFilter {
    use axum::routing::MethodFilter;
    match m {
        "get" => MethodFilter::GET,
        "delete" => MethodFilter::DELETE,
        "put" => MethodFilter::PUT,
        _ => MethodFilter::POST,
    }
}

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

async fn wrong_method() -> ApiError {
    ApiError(
        MemError::new(
            ErrorCode::MethodNotAllowed,
            "this route does not take that method",
        )
        .with_hint("the methods of each route are described at /v1/openapi.json"),
    )
}

async fn metrics_text(State(st): State<AppState>) -> Response {
    let svc = st.svc.clone();
    let m = st.metrics.clone();
    let queue = st.admission.clone();
    match tokio::task::spawn_blocking(move || m.render(&svc) + &queue.render()).await {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(e) => ApiError(MemError::internal(e.to_string())).into_response(),
    }
}

/// The `/v1` routes.
fn api(state: &AppState) -> Router<AppState> {
    let mut by_path: BTreeMap<&'static str, MethodRouter<AppState>> = BTreeMap::new();
    for route in table::routes() {
        let handler = match route.kind {
            Kind::Json => {
                json_route(route).layer(DefaultBodyLimit::max(state.opts.json_body_limit))
            }
            Kind::Upload | Kind::DocumentIn | Kind::BundleIn => {
                raw::upload_route(route).layer(DefaultBodyLimit::disable())
            }
            Kind::Download => raw::download_route(route),
            Kind::DocumentOut => raw::export_route(route),
            Kind::BundleOut => raw::bundle_route(route),
        };
        let entry = by_path.remove(route.path).unwrap_or_default();
        by_path.insert(route.path, entry.merge(handler));
    }
    by_path
        .into_iter()
        .fold(Router::new(), |r, (path, handler)| {
            r.route(path, handler.fallback(wrong_method))
        })
}

/// The whole HTTP application (REST, OpenAPI, metrics, MCP).
pub(crate) fn app(state: AppState, cancel: tokio_util::sync::CancellationToken) -> Router {
    let spec = Arc::new(crate::openapi::document(
        &table::routes(),
        &state.svc.config(),
    ));
    let mcp = crate::mcp::http_service(state.svc.clone(), state.admission.clone(), cancel);
    let authed = api(&state)
        .nest_service("/mcp", mcp)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    Router::new()
        .merge(authed)
        .merge(crate::web::router())
        .route(
            "/v1/openapi.json",
            axum::routing::get(move || {
                let spec = spec.clone();
                async move { Json(spec.as_ref().clone()) }
            }),
        )
        .route("/metrics", axum::routing::get(metrics_text))
        .route("/healthz", axum::routing::get(|| async { "ok" }))
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
