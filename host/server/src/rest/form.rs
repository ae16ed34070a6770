//! `POST /v1/files` as `multipart/form-data`: a `file` part and an
//! optional `source_metadata` part (the JSON text the
//! `X-Mem-Source-Metadata` header carries on a raw upload), in either
//! order. The file part is spooled to an anonymous temporary file so a
//! part after it still counts; the whole form is bounded by the upload
//! limit like a raw body. Raw uploads stream straight through instead.

use super::ApiError;
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use futures_util::Stream;
use mem_core::MemError;
use std::io::{Seek, Write};

/// The parts a form may carry, as the OpenAPI document lists them.
pub(crate) const FILE_PART: &str = "file";
pub(crate) const SOURCE_PART: &str = "source_metadata";

/// What a form may carry besides its file's bytes (boundaries, part
/// headers, the source part of at most 4 KiB), over the upload limit.
pub(crate) const FRAMING_BYTES: usize = 16 * 1024;

/// A read form: its file, rewound, and its source metadata text.
pub(super) struct Form {
    pub file: std::fs::File,
    pub source_metadata: Option<String>,
}

/// True when the request says its body is a multipart form.
pub(super) fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

fn bad(message: String) -> ApiError {
    ApiError(MemError::bad_request(message).with_hint(format!(
        "send a multipart/form-data body with a `{FILE_PART}` part and optionally a `{SOURCE_PART}` part, or the raw bytes as application/octet-stream"
    )))
}

fn spool_failed(e: std::io::Error) -> ApiError {
    ApiError(MemError::internal(format!(
        "cannot spool the upload to a temporary file: {e}"
    )))
}

/// Reads the form in `body`, whose file part may hold at most `limit`
/// bytes. The body itself is bounded by the caller (`limit` plus
/// [`FRAMING_BYTES`]): a read error past that is the caller's to report.
pub(super) async fn read<S>(headers: &HeaderMap, body: S, limit: usize) -> Result<Form, ApiError>
where
    S: Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(ct).map_err(|e| {
        bad(format!(
            "the multipart Content-Type has no usable boundary: {e}"
        ))
    })?;
    let mut mp = multer::Multipart::new(body, boundary);
    let mut file = None;
    let mut source_metadata = None;
    while let Some(mut field) = mp
        .next_field()
        .await
        .map_err(|e| bad(format!("cannot read the form: {e}")))?
    {
        let name = field.name().unwrap_or_default().to_string();
        let seen = match name.as_str() {
            FILE_PART => file.is_some(),
            SOURCE_PART => source_metadata.is_some(),
            other => return Err(bad(format!("the form has an unknown part {other:?}"))),
        };
        if seen {
            return Err(bad(format!("the form has the `{name}` part twice")));
        }
        if name == SOURCE_PART {
            let text = field
                .text()
                .await
                .map_err(|e| bad(format!("cannot read the `{SOURCE_PART}` part: {e}")))?;
            source_metadata = Some(text);
            continue;
        }
        // A local temporary file: writes land in the page cache, short
        // enough to make here rather than on a blocking thread.
        let mut spool = tempfile::tempfile().map_err(spool_failed)?;
        let mut size = 0usize;
        while let Some(chunk) = field
            .chunk()
            .await
            .map_err(|e| bad(format!("cannot read the `{FILE_PART}` part: {e}")))?
        {
            size += chunk.len();
            if size > limit {
                return Err(super::too_large(true));
            }
            spool.write_all(&chunk).map_err(spool_failed)?;
        }
        spool.rewind().map_err(spool_failed)?;
        file = Some(spool);
    }
    let file = file.ok_or_else(|| bad(format!("the form has no `{FILE_PART}` part")))?;
    Ok(Form {
        file,
        source_metadata,
    })
}
