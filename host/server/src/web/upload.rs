//! Multipart forms of the signed-in page (a bundle to check or import, a
//! plugin to install): the session, then the fields in order. The CSRF
//! field comes first in every such form, and the origin and token are
//! checked before a file's bytes are read; a file is read only up to the
//! server's upload limit.

use super::{Session, check_write};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Multipart, Request};
use axum::response::{IntoResponse, Response};
use mem_core::{ErrorCode, MemError};

/// A checked multipart form: its text fields and its files.
pub(crate) struct Upload {
    pub session: Session,
    fields: Vec<(String, String)>,
    files: Vec<(String, String, Bytes)>,
}

impl Upload {
    /// Reads the form `req` carries, refusing it unless it comes from this
    /// session's page.
    pub async fn read(st: &AppState, req: Request) -> Result<Upload, Response> {
        let (mut parts, body) = req.into_parts();
        let session = Session::from_request_parts(&mut parts, st).await?;
        let headers = parts.headers.clone();
        let mut mp = Multipart::from_request(Request::from_parts(parts, body), st)
            .await
            .map_err(IntoResponse::into_response)?;
        let bad = |m: String| {
            MemError::bad_request(m).with_hint("choose the file again and submit the form")
        };
        let limit = st.opts.file_body_limit;
        let mut up = Upload {
            session,
            fields: Vec::new(),
            files: Vec::new(),
        };
        let mut checked = false;
        loop {
            let mut field = match mp.next_field().await {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    let e = bad(format!("cannot read the form: {e}"));
                    return Err(up.session.fail("Upload", &e));
                }
            };
            let name = field.name().unwrap_or("").to_string();
            let Some(file_name) = field.file_name().map(str::to_string) else {
                let value = field.text().await.unwrap_or_default();
                up.fields.push((name, value));
                continue;
            };
            if !checked {
                check_write(&up.session, &headers, up.get("csrf"))?;
                checked = true;
            }
            let mut bytes = Vec::new();
            loop {
                match field.chunk().await {
                    Ok(Some(c)) if bytes.len() + c.len() <= limit => bytes.extend_from_slice(&c),
                    Ok(Some(_)) => {
                        let e = MemError::new(ErrorCode::PayloadTooLarge, "the file is too large")
                            .with_hint("raise the limit with `serve --max-upload`")
                            .with_details(serde_json::json!({ "limit": limit }));
                        return Err(up.session.fail("Upload", &e));
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let e = bad(format!("cannot read the file: {e}"));
                        return Err(up.session.fail("Upload", &e));
                    }
                }
            }
            up.files.push((name, file_name, Bytes::from(bytes)));
        }
        if !checked {
            check_write(&up.session, &headers, up.get("csrf"))?;
        }
        Ok(up)
    }

    /// The text field `name`, trimmed; empty counts as absent.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// The non-empty file chosen for `name`, with its file name.
    pub fn file(&self, name: &str) -> Option<(&str, &Bytes)> {
        self.files
            .iter()
            .find(|(k, f, b)| k == name && !(f.is_empty() && b.is_empty()))
            .map(|(_, f, b)| (f.as_str(), b))
    }

    /// The file `name`, or the page saying the form carries none.
    pub fn require_file(&self, name: &str, title: &str) -> Result<&Bytes, Response> {
        self.file(name).map(|(_, b)| b).ok_or_else(|| {
            let e = MemError::bad_request(format!("the form carries no {name} file"))
                .with_hint("choose the file and submit the form again")
                .with_details(serde_json::json!({ "field": name }));
            self.session.fail(title, &e)
        })
    }
}
