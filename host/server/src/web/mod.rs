//! The web page at `/`: server-rendered HTML over the same service
//! operations as REST, MCP and the CLI, run through the door as the
//! session's token. Sign-in is a one-time link from `mem-host web`; the
//! session lives in the workspace, its cookie is HttpOnly and
//! SameSite=Strict, every POST carries the session's CSRF token and a
//! same-origin `Origin`, and every response a strict CSP.

mod admin;
mod annotations;
mod audit;
mod bundles;
mod drive;
mod html;
mod memories;
mod plugins;
mod recall;
mod review;
mod status;
mod tasks;
mod timeline;
mod upload;

use crate::AppState;
use crate::error::ApiError;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use html::Viewer;
use mem_core::{ErrorCode, MemError};
use mem_service::access::{Access, Scope};
use mem_service::door::{Operation, entry};
use serde_json::Value;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "mem_session";

/// What every page response carries: no inline script, no framing, no
/// sniffing, no caching of pages that show workspace content.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");

/// The page's routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/signin/{nonce}", get(sign_in))
        .route("/signout", post(sign_out))
        .route(
            "/assets/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .merge(memories::routes())
        .merge(recall::routes())
        .merge(review::routes())
        .merge(audit::routes())
        .merge(drive::routes())
        .merge(annotations::routes())
        .merge(status::routes())
        .merge(tasks::routes())
        .merge(timeline::routes())
        .merge(bundles::routes())
        .merge(admin::routes())
        .merge(plugins::routes())
        .layer(middleware::from_fn(security_headers))
}

fn asset(mime: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, mime),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it browsers send `Origin: null` on the
    // page's own form posts, which the Origin check must then refuse.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    resp
}

/// A signed-in request: the session's id, access and CSRF token.
pub(crate) struct Session {
    id: String,
    pub access: Access,
    csrf: String,
}

impl Session {
    pub fn can(&self, s: Scope) -> bool {
        self.access.has(s)
    }

    /// Renders `body` in the layout for this viewer.
    pub fn page(&self, title: &str, body: &str) -> Response {
        let can = |s: Scope| self.access.has(s);
        let who = match self.access.token_name() {
            Some(name) => format!("token {name}"),
            None => "the owner".into(),
        };
        let v = Viewer {
            who,
            csrf: &self.csrf,
            can: &can,
        };
        html_response(StatusCode::OK, html::page(title, Some(&v), body))
    }

    /// A one-button POST form (with this session's CSRF token).
    pub fn button(&self, action: &str, label: &str, fields: &[(&str, &str)]) -> String {
        self.viewer_do(|v| v.button(action, label, fields))
    }

    /// The hidden CSRF field of a form.
    pub fn csrf_field(&self) -> String {
        self.viewer_do(|v| v.csrf_field())
    }

    fn viewer_do(&self, f: impl FnOnce(&Viewer<'_>) -> String) -> String {
        let can = |s: Scope| self.access.has(s);
        f(&Viewer {
            who: String::new(),
            csrf: &self.csrf,
            can: &can,
        })
    }

    /// An error shown as a page, with the status its code maps to.
    pub fn fail(&self, title: &str, e: &MemError) -> Response {
        let mut r = self.page(title, &html::error_box(e));
        *r.status_mut() = ApiError(e.clone()).status();
        r
    }

    /// Runs operation `O` with `args` (validated by its schema) as this
    /// session's caller: the same door every other surface uses.
    pub async fn run<O: Operation>(&self, st: &AppState, args: Value) -> Result<Value, MemError> {
        let op = entry::<O>();
        crate::rest::call(st, self.access.clone(), move |c| {
            op.run_json(&c, args).map(|d| d.value)
        })
        .await
        .map_err(|e| e.0)
    }
}

fn html_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The page a signed-out visitor sees, with why.
fn signed_out(e: &MemError) -> Response {
    let body = format!(
        "{}<p>The page opens with a one-time sign-in link. On the machine that holds the workspace run</p>\
         <pre>mem-host web</pre><p>and open the link it prints (<code>--token NAME</code> signs in as a token).</p>",
        html::error_box(e)
    );
    html_response(StatusCode::UNAUTHORIZED, html::page("Sign in", None, &body))
}

async fn resolve(st: &AppState, headers: &HeaderMap) -> Result<Session, Response> {
    let Some(id) = cookie_value(headers, COOKIE) else {
        return Err(signed_out(
            &MemError::new(ErrorCode::Unauthorized, "not signed in")
                .with_hint("open a sign-in link from `mem-host web`"),
        ));
    };
    let svc = st.svc.clone();
    let sid = id.clone();
    match tokio::task::spawn_blocking(move || svc.web_session(&sid)).await {
        Ok(Ok(s)) => Ok(Session {
            id,
            access: s.access,
            csrf: s.csrf,
        }),
        Ok(Err(e)) => Err(signed_out(&e)),
        Err(e) => Err(ApiError(MemError::internal(e.to_string())).into_response()),
    }
}

impl FromRequestParts<AppState> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, Response> {
        resolve(st, &parts.headers).await
    }
}

/// A refused write: the form did not come from this session's page.
fn forged(message: &str) -> Response {
    let e = MemError::new(ErrorCode::Forbidden, message.to_string())
        .with_hint("submit the form from the page itself; reload the page if the session changed");
    let body = html::error_box(&e);
    html_response(StatusCode::FORBIDDEN, html::page("Refused", None, &body))
}

/// The `Origin` of a POST must be this server's own (`http://{Host}`).
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (origin, host) {
        (Some(o), Some(h)) => o == format!("http://{h}") || o == format!("https://{h}"),
        _ => false,
    }
}

/// Compares without an early exit, so timing says nothing of the token.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Checks a write: same origin, then the session's CSRF token.
pub(crate) fn check_write(
    s: &Session,
    headers: &HeaderMap,
    csrf: Option<&str>,
) -> Result<(), Response> {
    if !same_origin(headers) {
        return Err(forged("the request did not come from this page (Origin)"));
    }
    match csrf {
        Some(t) if same_secret(t, &s.csrf) => Ok(()),
        Some(_) => Err(forged("the form's CSRF token is wrong")),
        None => Err(forged("the form carries no CSRF token")),
    }
}

/// A POSTed form from the signed-in page, its origin and CSRF token checked.
pub(crate) struct WebForm {
    pub session: Session,
    pub fields: Vec<(String, String)>,
}

impl WebForm {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `name`'s value, trimmed; empty counts as absent.
    pub fn text(&self, name: &str) -> Option<String> {
        self.get(name)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}

impl FromRequest<AppState> for WebForm {
    type Rejection = Response;

    async fn from_request(req: Request, st: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let session = Session::from_request_parts(&mut parts, st).await?;
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), st)
            .await
            .map_err(IntoResponse::into_response)?;
        let fields: Vec<(String, String)> = form_urlencoded::parse(&bytes).into_owned().collect();
        let csrf = fields
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str());
        check_write(&session, &parts.headers, csrf)?;
        Ok(WebForm { session, fields })
    }
}

/// 303 to `to`: after a write, the browser shows the result page.
pub(crate) fn see(to: &str) -> Response {
    Redirect::to(to).into_response()
}

async fn home(State(st): State<AppState>, headers: HeaderMap) -> Response {
    match resolve(&st, &headers).await {
        Ok(s) if s.can(Scope::Read) => see("/memories"),
        Ok(_) => see("/search"),
        Err(r) => r,
    }
}

/// Trades the link's nonce for a session cookie, then opens the page.
async fn sign_in(State(st): State<AppState>, Path(nonce): Path<String>) -> Response {
    let svc = st.svc.clone();
    match tokio::task::spawn_blocking(move || svc.open_web_session(&nonce)).await {
        Ok(Ok(session)) => {
            let cookie = format!(
                "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
                session.id,
                mem_service::web::SESSION_TTL_SECS
            );
            let mut r = see("/");
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Ok(Err(e)) => signed_out(&e),
        Err(e) => ApiError(MemError::internal(e.to_string())).into_response(),
    }
}

async fn sign_out(State(st): State<AppState>, form: WebForm) -> Response {
    let svc = st.svc.clone();
    let id = form.session.id.clone();
    match tokio::task::spawn_blocking(move || svc.end_web_session(&id)).await {
        Ok(Ok(())) => {
            let mut r = see("/");
            r.headers_mut().insert(
                header::SET_COOKIE,
                HeaderValue::from_static(
                    "mem_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
                ),
            );
            r
        }
        Ok(Err(e)) => form.session.fail("Sign out", &e),
        Err(e) => ApiError(MemError::internal(e.to_string())).into_response(),
    }
}

/// A form value as JSON: a whole number when it reads as one (versions,
/// limits), else the string, so the operation's schema judges it.
pub(crate) fn num_or_text(s: &str) -> Value {
    s.trim()
        .parse::<u64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::String(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_a_same_origin_post_passes() {
        assert!(same_origin(&headers(&[
            ("host", "127.0.0.1:7373"),
            ("origin", "http://127.0.0.1:7373")
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:7373"),
            ("origin", "http://evil.example")
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:7373"),
            ("origin", "null")
        ])));
        assert!(
            !same_origin(&headers(&[("host", "127.0.0.1:7373")])),
            "a missing Origin is refused"
        );
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; mem_session=abc ; b=2")]);
        assert_eq!(cookie_value(&h, COOKIE).as_deref(), Some("abc"));
        assert_eq!(
            cookie_value(&headers(&[("cookie", "mem_session=")]), COOKIE),
            None
        );
        assert_eq!(
            cookie_value(&headers(&[("cookie", "xmem_session=1")]), COOKIE),
            None
        );
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
        assert!(!same_secret("", "a"));
    }

    #[test]
    fn form_numbers_become_numbers_and_the_rest_stays_text() {
        assert_eq!(num_or_text("3"), Value::from(3u64));
        assert_eq!(num_or_text("three"), Value::from("three"));
    }
}
