//! Errors on the wire: `{code, message, hint, details}` with the status
//! the code maps to; 429 and an overloaded 503 carry `retry-after`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mem_core::{ErrorCode, MemError};

/// A service error on its way to an HTTP client.
#[derive(Debug)]
pub struct ApiError(pub MemError);

impl From<MemError> for ApiError {
    fn from(e: MemError) -> Self {
        Self(e)
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.0.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = matches!(
            self.0.code,
            ErrorCode::QuotaExceeded | ErrorCode::Overloaded
        )
        .then(|| self.0.details["retry_after"].as_u64())
        .flatten();
        let mut resp = (status, axum::Json(&self.0)).into_response();
        if let Some(secs) = retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mem-host\""),
            );
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_errors_carry_retry_after() {
        let e = MemError::new(ErrorCode::QuotaExceeded, "spent")
            .with_details(serde_json::json!({ "retry_after": 42 }));
        let r = ApiError(e).into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "42");
    }

    #[test]
    fn an_overloaded_answer_is_503_with_retry_after() {
        let e = MemError::new(ErrorCode::Overloaded, "busy")
            .with_details(serde_json::json!({ "retry_after": 1 }));
        let r = ApiError(e).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    }
}
