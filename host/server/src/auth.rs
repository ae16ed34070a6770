//! Bearer-token authentication for REST and MCP over HTTP. The token's
//! [`Access`] travels in the request extensions to the handlers (and,
//! through rmcp's injected request parts, to MCP tools).

use crate::AppState;
use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mem_core::{ErrorCode, MemError};

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, secret) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| secret.trim().to_string())
        .filter(|s| !s.is_empty())
}

pub(crate) async fn require_token(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(secret) = bearer(req.headers()) else {
        return ApiError(
            MemError::new(ErrorCode::Unauthorized, "missing bearer token").with_hint(
                "send `Authorization: Bearer <secret>`; the owner creates one with `mem-host token create`",
            ),
        )
        .into_response();
    };
    let svc = state.svc.clone();
    // On the embedded store a token check is a few reads of cached pages
    // (microseconds): done here, it spares every request a hop to the
    // blocking pool and back, which under load cost more CPU than the
    // check. A shared store's check is a database round trip: that one
    // waits on the pool.
    let checked = if svc.store_is_shared() {
        tokio::task::spawn_blocking(move || svc.authenticate(&secret))
            .await
            .unwrap_or_else(|e| Err(MemError::internal(format!("auth worker failed: {e}"))))
    } else {
        svc.authenticate(&secret)
    };
    match checked {
        Ok(access) => {
            req.extensions_mut().insert(access);
            next.run(req).await
        }
        Err(e) => ApiError(e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_bearer_credentials_are_taken() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  memtok_x "),
        );
        assert_eq!(bearer(&h).as_deref(), Some("memtok_x"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(bearer(&h), None);
    }
}
