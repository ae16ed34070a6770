//! `put --url`: fetching a file over HTTP(S) before it is stored.
//!
//! The fetch is I/O the CLI does, like reading a local file: the service
//! only stores the bytes it is streamed (and sniffs their MIME type from
//! them, so a server's `Content-Type` is never trusted). Every limit here
//! defends against a hostile or broken server: the workspace's file size
//! limit (checked against `Content-Length` up front and again while the
//! body streams), one timeout for the whole exchange (a server that
//! trickles bytes forever), a bounded number of redirects (a loop), and
//! only `http`/`https` (no `file:` or other schemes reaching local data).

use super::files::{self, PutArgs};
use super::output::Out;
use crate::client::Client;
use mem_core::model::MAX_SOURCE_TEXT_CHARS;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde_json::json;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Redirects followed before the fetch is refused (a loop or a maze).
pub const MAX_REDIRECTS: u32 = 5;

/// A response being fetched: its body as a reader, and what went wrong
/// while it streamed (read after the reader is done).
pub struct Fetch {
    /// The URL as given, without credentials (what source metadata keeps).
    pub url: String,
    /// The last path segment of the URL, when it makes a file name.
    pub name: Option<String>,
    pub reader: Watched,
}

/// The body reader; a failure while reading (too large, timeout, reset)
/// is kept as a structured error, since the reader's consumer only sees
/// an I/O error.
pub struct Watched {
    inner: Box<dyn Read + Send>,
    url: String,
    limit: Option<u64>,
    seen: u64,
    failure: Arc<Mutex<Option<MemError>>>,
}

impl Watched {
    /// Why reading failed, if it did.
    pub fn failure(&self) -> Option<MemError> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }
}

impl Read for Watched {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.seen += n as u64;
                if let Some(limit) = self.limit.filter(|l| self.seen > *l) {
                    let e = too_large(&self.url, limit, None);
                    self.remember(e.clone());
                    return Err(std::io::Error::other(e.message));
                }
                Ok(n)
            }
            Err(io) => {
                let e = match io.get_ref().and_then(|x| x.downcast_ref::<ureq::Error>()) {
                    Some(ureq::Error::BodyExceedsLimit(_)) => {
                        too_large(&self.url, self.limit.unwrap_or(0), None)
                    }
                    Some(u) => classify(&self.url, u),
                    None => failed(
                        &self.url,
                        "read",
                        format!("reading {} failed: {io}", self.url),
                    ),
                };
                self.remember(e);
                Err(io)
            }
        }
    }
}

impl Watched {
    fn remember(&self, e: MemError) {
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert(e);
        }
    }
}

fn failed(url: &str, reason: &str, message: String) -> MemError {
    MemError::new(ErrorCode::FetchFailed, message).with_details(json!({
        "url": url, "reason": reason,
    }))
}

fn too_large(url: &str, limit: u64, announced: Option<u64>) -> MemError {
    let message = match announced {
        Some(n) => format!(
            "{url} is {n} bytes, larger than the workspace's file size limit of {limit} bytes"
        ),
        None => format!("{url} is larger than the workspace's file size limit of {limit} bytes"),
    };
    MemError::new(ErrorCode::PayloadTooLarge, message)
        .with_hint("raise limits.max_file_bytes in mem.toml, or fetch a smaller file")
        .with_details(json!({ "url": url, "limit": limit, "size": announced }))
}

/// A structured error for a failed exchange.
fn classify(url: &str, e: &ureq::Error) -> MemError {
    match e {
        ureq::Error::Timeout(_) => failed(url, "timeout", format!("fetching {url} timed out"))
            .with_hint("the server is slow or stalled; retry, or raise --timeout"),
        ureq::Error::TooManyRedirects => failed(
            url,
            "too_many_redirects",
            format!("{url} redirected more than {MAX_REDIRECTS} times"),
        )
        .with_hint("the redirects may loop; fetch the final URL directly"),
        ureq::Error::RedirectFailed | ureq::Error::BadUri(_) => failed(
            url,
            "bad_redirect",
            format!("{url} redirected to a location that cannot be fetched: {e}"),
        )
        .with_hint("only http and https locations are followed"),
        ureq::Error::HostNotFound => failed(
            url,
            "unreachable",
            format!("the host of {url} is not found"),
        )
        .with_hint("check the host name and your network"),
        ureq::Error::Io(_) | ureq::Error::ConnectionFailed => {
            failed(url, "unreachable", format!("{url} is unreachable: {e}"))
                .with_hint("check the URL, that the server is up, and your network")
        }
        other => failed(url, "protocol", format!("fetching {url} failed: {other}")),
    }
}

/// The URL without credentials (`user:pass@`) and fragment; refuses a
/// scheme other than http and https.
fn checked_url(url: &str) -> MemResult<(String, Option<String>)> {
    let bad = |why: String| {
        MemError::bad_request(why)
            .with_hint("give an http:// or https:// URL")
            .with_details(json!({ "field": "url" }))
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad(format!("{url:?} is not a URL")))?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(bad(format!(
            "the scheme {scheme:?} cannot be fetched; only http and https can"
        )));
    }
    let rest = rest.split('#').next().unwrap_or("");
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() {
        return Err(bad(format!("{url:?} names no host")));
    }
    let clean = format!("{scheme}://{host}{path}");
    let name = path
        .split('?')
        .next()
        .unwrap_or("")
        .rsplit('/')
        .find(|s| !s.is_empty())
        .map(percent_decode)
        .filter(|n| {
            !n.is_empty()
                && n != "."
                && n != ".."
                && !n.contains('/')
                && !n.contains(char::is_control)
        });
    Ok((clean, name))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Starts fetching `url`: the status is checked and the body is ready to
/// stream. `limit` is the workspace's file size limit when known (the
/// service enforces it again as the bytes arrive).
/// `location` read against `base` (absolute, scheme-relative,
/// host-relative or relative to `base`'s folder).
fn join(base: &str, location: &str) -> String {
    let scheme_end = location.find(':');
    let has_scheme = scheme_end.is_some_and(|i| {
        let scheme = &location[..i];
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if has_scheme {
        return location.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    if let Some(tail) = location.strip_prefix("//") {
        return format!("{scheme}://{tail}");
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let origin = &base[..scheme.len() + 3 + end];
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let path = rest[end..].split(['?', '#']).next().unwrap_or("");
    let folder = path.rsplit_once('/').map_or("", |(d, _)| d);
    format!("{origin}{folder}/{location}")
}

pub fn open(url: &str, timeout: Duration, limit: Option<u64>) -> MemResult<Fetch> {
    let (clean, name) = checked_url(url)?;
    // Redirects are followed here, not by the client, so that every
    // location is checked like the first URL (a `file:` or other scheme
    // is refused, never requested as if it were http).
    let agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .user_agent(format!("mem-host/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent();
    let mut at = url.to_string();
    let mut redirects = 0;
    let resp = loop {
        let resp = agent.get(&at).call().map_err(|e| classify(&clean, &e))?;
        if !resp.status().is_redirection() {
            break resp;
        }
        let Some(location) = resp.headers().get("location").and_then(|v| v.to_str().ok()) else {
            break resp;
        };
        if redirects == MAX_REDIRECTS {
            return Err(failed(
                &clean,
                "too_many_redirects",
                format!("{clean} redirected more than {MAX_REDIRECTS} times"),
            )
            .with_hint("the redirects may loop; fetch the final URL directly"));
        }
        redirects += 1;
        let next = join(&at, location.trim());
        if checked_url(&next).is_err() {
            return Err(failed(
                &clean,
                "bad_redirect",
                format!("{clean} redirected to {next:?}, which cannot be fetched"),
            )
            .with_hint("only http and https locations are followed"));
        }
        at = next;
    };
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(
            failed(&clean, "status", format!("{clean} answered HTTP {status}"))
                .with_hint(if status == 404 {
                    "the server has no such page; check the URL"
                } else if status >= 500 {
                    "the server failed; retry later"
                } else {
                    "the server refused the request; check the URL and whether it needs a login"
                })
                .with_details(json!({ "url": clean, "reason": "status", "status": status })),
        );
    }
    let announced = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let (Some(limit), Some(n)) = (limit, announced)
        && n > limit
    {
        return Err(too_large(&clean, limit, Some(n)));
    }
    let body = resp.into_body().into_with_config();
    let body = match limit {
        Some(l) => body.limit(l.saturating_add(1)),
        None => body,
    };
    Ok(Fetch {
        reader: Watched {
            inner: Box::new(body.reader()),
            url: clean.clone(),
            limit,
            seen: 0,
            failure: Arc::new(Mutex::new(None)),
        },
        url: clean,
        name,
    })
}

/// `put --url`: fetches the URL and streams its body into the store. The
/// URL is kept as source metadata (`source_kind` url, `source_name` the
/// URL without credentials) unless the flags say otherwise.
pub fn put(c: &Client, out: &Out, url: &str, folder: &VPath, a: &PutArgs) -> MemResult<()> {
    let timeout = std::time::Duration::from_secs(a.timeout.max(1));
    // A destination given is checked before anything is fetched.
    let given = match (&a.source, &a.name) {
        (Some(dest), _) => Some(VPath::parse(&dest.to_string_lossy())?),
        (None, Some(name)) => Some(folder.join(name)?),
        (None, None) => None,
    };
    let mut fetch = open(url, timeout, c.max_file_bytes())?;
    let path = match given {
        Some(path) => path,
        None => match &fetch.name {
            Some(name) => folder.join(name)?,
            None => {
                return Err(MemError::bad_request(format!(
                    "{} names no file; say where to store it",
                    fetch.url
                ))
                .with_hint("pass a destination path (put --url URL /web/page.html) or --name"));
            }
        },
    };
    let mut req = files::put_request(&path, a);
    let mut source = a.source_meta.to_meta();
    source.source_kind.get_or_insert_with(|| "url".to_string());
    if source.source_name.is_none() && fetch.url.chars().count() <= MAX_SOURCE_TEXT_CHARS {
        source.source_name = Some(fetch.url.clone());
    }
    req.source_metadata = Some(source.to_text());
    let stored = c.put_stream(req, &mut fetch.reader);
    // A failure while the body streamed reads as an I/O error to the
    // store; the fetch knows what really happened.
    let r = match (stored, fetch.reader.failure()) {
        (Ok(done), _) => done.value,
        (Err(_), Some(why)) => return Err(why),
        (Err(e), None) => return Err(e),
    };
    out.emit(&r, files::put_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_locations_are_read_against_the_url_they_came_from() {
        let base = "http://h:8/a/b.html?q=1";
        assert_eq!(join(base, "https://x/y"), "https://x/y");
        assert_eq!(join(base, "file:///etc/passwd"), "file:///etc/passwd");
        assert_eq!(join(base, "//x/y"), "http://x/y");
        assert_eq!(join(base, "/c"), "http://h:8/c");
        assert_eq!(join(base, "c.html"), "http://h:8/a/c.html");
        assert_eq!(join("http://h", "c"), "http://h/c");
        assert!(checked_url(&join(base, "file:///etc/passwd")).is_err());
    }

    #[test]
    fn urls_lose_credentials_and_fragments_and_name_their_file() {
        let (u, n) =
            checked_url("https://ann:secret@example.org/a/Report%202012.pdf?x=1#p2").expect("ok");
        assert_eq!(u, "https://example.org/a/Report%202012.pdf?x=1");
        assert_eq!(n.as_deref(), Some("Report 2012.pdf"));
        let (u, n) = checked_url("http://example.org").expect("ok");
        assert_eq!(u, "http://example.org");
        assert_eq!(n, None);
        let (_, n) = checked_url("http://example.org/docs/").expect("ok");
        assert_eq!(n.as_deref(), Some("docs"));
    }

    #[test]
    fn only_http_and_https_are_fetched() {
        for bad in [
            "file:///etc/passwd",
            "ftp://x/y",
            "notaurl",
            "http://",
            "javascript://x",
        ] {
            let e = checked_url(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadRequest, "{bad}");
        }
        assert!(checked_url("HTTPS://example.org/x").is_ok());
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%20b%2"), "a b%2");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }
}
