//! The drive: a folder's listing with its breadcrumbs, upload (a plain
//! multipart form, enhanced with drag-and-drop and progress by app.js),
//! and a file's page with its processing status and text.

use super::html::{esc, field, next_link, qp, text};
use super::{Session, see};
use crate::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use base64::Engine;
use mem_core::MemError;
use mem_service::access::Scope;
use mem_service::ops::admin::Reprocess;
use mem_service::ops::files::{ListFolder, Mkdir, Move, PutFileRequest, ReadFile, Remove};
use mem_service::ops::related::GetRelated;
use serde_json::json;
use std::collections::HashMap;
use std::fmt::Write;

/// Entries a page of a folder shows; the rest follow the "Next page" link.
const PAGE: usize = 100;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/drive", get(folder))
        .route(
            "/drive/upload",
            post(upload).layer(DefaultBodyLimit::disable()),
        )
        .route("/drive/file", get(file))
        .route("/drive/reprocess", post(reprocess))
        .route("/drive/mkdir", post(mkdir))
        .route("/drive/move", post(move_entry))
        .route("/drive/remove", post(remove))
}

/// `/a/b` as links to `/`, `/a`, `/a/b`.
fn crumbs(path: &str) -> String {
    let mut out =
        r#"<nav aria-label="Folder" class="crumbs"><a href="/drive?path=%2F">/</a>"#.to_string();
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        let _ = write!(
            out,
            r#" <a href="/drive?path={}">{}</a> /"#,
            esc(&qp(&at)),
            esc(part)
        );
    }
    out.push_str("</nav>");
    out
}

async fn folder(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let path = q
        .get("path")
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .unwrap_or("/")
        .to_string();
    // `limit` (at most a page) keeps its value along the pages.
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .map(|l| l.clamp(1, PAGE));
    let mut args = json!({ "path": path, "limit": limit.unwrap_or(PAGE) });
    let cursor = q.get("cursor").filter(|c| !c.is_empty());
    if let Some(c) = cursor {
        args["cursor"] = json!(c);
    }
    let listing = match s.run::<ListFolder>(&st, args).await {
        Ok(l) => l,
        Err(e) => return s.fail("Drive", &e),
    };
    let mut rows = String::new();
    for e in listing["entries"].as_array().into_iter().flatten() {
        let p = text(&e["path"]);
        if e["type"] == "folder" {
            let _ = write!(
                rows,
                r#"<tr><td><a href="/drive?path={}">{}/</a></td><td>folder</td><td></td><td></td></tr>"#,
                esc(&qp(&p)),
                field(e, "name")
            );
        } else {
            let _ = write!(
                rows,
                r#"<tr><td><a href="/drive/file?target={}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                esc(&qp(&text(&e["id"]))),
                field(e, "name"),
                field(e, "mime"),
                field(e, "size"),
                field(e, "index_status")
            );
        }
    }
    let table = if rows.is_empty() {
        r#"<p class="empty">This folder is empty.</p>"#.to_string()
    } else {
        format!(
            r#"<div class="scroll"><table id="listing"><caption>Contents of {}</caption><thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Bytes</th><th scope="col">Processing</th></tr></thead><tbody>{rows}</tbody></table></div>{first}{next}"#,
            esc(&path),
            first = if cursor.is_some() {
                format!(
                    r#"<p class="pager"><a href="/drive?path={}">First page</a></p>"#,
                    esc(&qp(&path))
                )
            } else {
                String::new()
            },
            next = next_link(
                &match limit {
                    Some(l) => format!("/drive?path={}&limit={l}", qp(&path)),
                    None => format!("/drive?path={}", qp(&path)),
                },
                &listing["next_cursor"]
            ),
        )
    };
    let upload = if s.can(Scope::Write) {
        format!(
            r#"<section aria-labelledby="up-h"><h2 id="up-h">Upload</h2>
<form method="post" action="/drive/upload" enctype="multipart/form-data" class="stack upload" data-drop>{csrf}
<input type="hidden" name="folder" value="{folder}">
<label>File<input type="file" name="file" required></label>
<label>Source metadata (optional JSON, e.g. {{"captured_at":"2012-03-04T10:00:00+01:00","place":"Lisbon"}})<input type="text" name="source_metadata" maxlength="4096"></label>
<progress hidden max="100" value="0"></progress>
<button type="submit">Upload</button></form></section>"#,
            csrf = s.csrf_field(),
            folder = esc(&path),
        )
    } else {
        String::new()
    };
    let manage = if s.can(Scope::Write) {
        format!(
            r#"<section aria-labelledby="org-h"><h2 id="org-h">Organise</h2>
<form method="post" action="/drive/mkdir" class="filters" id="mkdir">{csrf}<input type="hidden" name="folder" value="{folder}">{name}<button type="submit">Create folder</button></form>
<form method="post" action="/drive/move" class="filters" id="move">{csrf}<input type="hidden" name="folder" value="{folder}">{from}{to}<button type="submit">Move or rename</button></form>{remove}</section>"#,
            csrf = s.csrf_field(),
            folder = esc(&path),
            name = super::html::input("name", "New folder name", "", "required"),
            from = super::html::input("from", "From (path)", "", "required"),
            to = super::html::input("to", "To (path)", "", "required"),
            remove = if s.can(Scope::Delete) {
                format!(
                    r#"<form method="post" action="/drive/remove" class="filters" id="remove">{csrf}<input type="hidden" name="folder" value="{folder}">{target}<label class="check"><input type="checkbox" name="recursive" value="true"> with everything inside</label><button type="submit" class="danger">Remove</button></form>"#,
                    csrf = s.csrf_field(),
                    folder = esc(&path),
                    target = super::html::input("target", "Remove (path)", "", "required"),
                )
            } else {
                String::new()
            },
        )
    } else {
        String::new()
    };
    s.page(
        "Drive",
        &format!("{}{table}{upload}{manage}", crumbs(&path)),
    )
}

/// The upload form: the CSRF token (checked before the file is read),
/// the folder, optional source metadata, then the file.
async fn upload(State(st): State<AppState>, req: Request) -> Response {
    let up = match super::upload::Upload::read(&st, req).await {
        Ok(u) => u,
        Err(r) => return r,
    };
    let s = &up.session;
    let Some((name, bytes)) = up.file("file").filter(|(n, _)| !n.is_empty()) else {
        let e = MemError::bad_request("the form carries no file")
            .with_hint("choose a file and submit the form again");
        return s.fail("Upload", &e);
    };
    let folder = up.get("folder").unwrap_or("/");
    let path = format!("{}/{name}", folder.trim_end_matches('/'));
    let mut args = json!({
        "path": path,
        "content_base64": base64::engine::general_purpose::STANDARD.encode(bytes),
        "wait": false,
    });
    if let Some(text) = up.get("source_metadata") {
        args["source_metadata"] = json!(text);
    }
    match s.run::<PutFileRequest>(&st, args).await {
        Ok(r) => see(&format!(
            "/drive/file?target={}",
            qp(&text(&r["file"]["id"]))
        )),
        Err(e) => s.fail("Upload", &e),
    }
}

async fn file(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let target = q.get("target").cloned().unwrap_or_default();
    let from: u32 = q
        .get("chunks_from")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let r = match s
        .run::<ReadFile>(
            &st,
            json!({ "target": target, "max_chars": 20000, "chunks_from": from }),
        )
        .await
    {
        Ok(r) => r,
        Err(e) => return s.fail("File", &e),
    };
    let f = &r["file"];
    let status = text(&f["index_status"]);
    let mut facts = String::new();
    for (label, key) in [
        ("Path", "path"),
        ("Type", "mime"),
        ("Bytes", "size"),
        ("SHA-256", "sha256"),
        ("Version", "state_version"),
        ("Attempts", "index_attempts"),
        ("Error", "index_error"),
        ("Created", "created_at"),
        ("Updated", "updated_at"),
    ] {
        let _ = write!(facts, "<dt>{label}</dt><dd>{}</dd>", field(f, key));
    }
    let retry = if status == "failed" && s.can(Scope::Write) {
        s.button(
            "/drive/reprocess",
            "Retry processing",
            &[("target", &text(&f["id"]))],
        )
    } else {
        String::new()
    };
    let content = match r["content"].as_str() {
        Some(c) => format!(r#"<h2>Text</h2><pre class="file-text">{}</pre>"#, esc(c)),
        None => format!("<p>{}</p>", field(&r, "note")),
    };
    let folder = text(&f["path"]);
    let parent = folder
        .rsplit_once('/')
        .map(|(p, _)| if p.is_empty() { "/" } else { p })
        .unwrap_or("/");
    if let Some(d) = f["description"].as_str() {
        let _ = write!(facts, "<dt>Description</dt><dd>{}</dd>", esc(d));
    }
    if let Some(tags) = f["tags"].as_array().filter(|t| !t.is_empty()) {
        let tags: Vec<String> = tags.iter().map(text).collect();
        let _ = write!(facts, "<dt>Tags</dt><dd>{}</dd>", esc(&tags.join(", ")));
    }
    let id = text(&f["id"]);
    let processed = processed(&id, &f["processed"]);
    let suggestions = super::annotations::section(&s, f);
    // Relations are the `related` operation's; a file without any (or a
    // caller that may not see them) shows none rather than failing the page.
    let related = s
        .run::<GetRelated>(&st, json!({ "id": id, "limit": 20 }))
        .await
        .map(|r| relations(&r))
        .unwrap_or_default();
    let body = format!(
        r#"<p>Processing: <strong id="index-status" data-status="{st}">{st}</strong> {retry}</p><p class="meta">Cite as {cite} · <a href="/drive?path={parent}">Back to the folder</a></p><dl>{facts}</dl>{suggestions}{processed}{related}{content}"#,
        st = esc(&status),
        cite = field(&r, "citation"),
        parent = esc(&qp(parent)),
    );
    s.page(&format!("File {}", text(&f["name"])), &body)
}

/// What the processors made of the file: metadata, entities, suggested
/// tags and a page of chunks with their locators.
fn processed(id: &str, p: &serde_json::Value) -> String {
    if p.is_null() {
        return r#"<section aria-labelledby="proc-h"><h2 id="proc-h">Processed</h2><p class="empty">Not processed yet.</p></section>"#.into();
    }
    let mut meta = String::new();
    if let Some(t) = p["title"].as_str() {
        let _ = write!(meta, "<dt>Title</dt><dd>{}</dd>", esc(t));
    }
    for (k, v) in p["metadata"].as_object().into_iter().flatten() {
        let _ = write!(meta, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&text(v)));
    }
    let suggested: Vec<String> = p["suggested_tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    if !suggested.is_empty() {
        let _ = write!(
            meta,
            "<dt>Suggested tags</dt><dd>{}</dd>",
            esc(&suggested.join(", "))
        );
    }
    let mut entities = String::new();
    for e in p["entities"].as_array().into_iter().flatten() {
        let _ = write!(
            entities,
            "<li>{} <span class=\"meta\">{}</span></li>",
            field(e, "value"),
            field(e, "kind")
        );
    }
    if !entities.is_empty() {
        let more = p["entity_count"]
            .as_u64()
            .unwrap_or(0)
            .saturating_sub(p["entities"].as_array().map_or(0, |a| a.len() as u64));
        entities = format!(
            r#"<h3>Entities ({})</h3><ul class="entities">{entities}</ul>{}"#,
            field(p, "entity_count"),
            if more > 0 {
                format!("<p class=\"meta\">and {more} more</p>")
            } else {
                String::new()
            }
        );
    }
    let mut rows = String::new();
    for c in p["chunks"].as_array().into_iter().flatten() {
        let section: Vec<String> = c["section"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        let _ = write!(
            rows,
            r#"<tr id="chunk-{n}"><td>{n}</td><td><code>{loc}</code></td><td>{sec}</td><td><pre class="chunk">{body}</pre></td></tr>"#,
            n = field(c, "index"),
            loc = field(c, "locator"),
            sec = esc(&section.join(" › ")),
            body = field(c, "text"),
        );
    }
    let chunks = if rows.is_empty() {
        r#"<p class="empty">No chunks.</p>"#.to_string()
    } else {
        format!(
            r#"<div class="scroll"><table id="chunks"><caption>Chunks ({count})</caption><thead><tr><th scope="col">#</th><th scope="col">Locator</th><th scope="col">Section</th><th scope="col">Text</th></tr></thead><tbody>{rows}</tbody></table></div>"#,
            count = field(p, "chunk_count")
        )
    };
    let next = match p["next_chunk"].as_u64() {
        Some(n) => format!(
            r#"<p class="pager"><a rel="next" href="/drive/file?target={}&amp;chunks_from={n}">Next chunks</a></p>"#,
            esc(&qp(id))
        ),
        None => String::new(),
    };
    format!(
        r#"<section aria-labelledby="proc-h"><h2 id="proc-h">Processed</h2><dl id="processed-meta">{meta}</dl>{entities}{chunks}{next}</section>"#
    )
}

/// The file's relations, each linking to the other end.
fn relations(r: &serde_json::Value) -> String {
    let mut items = String::new();
    for e in r["relations"].as_array().into_iter().flatten() {
        let id = text(&e["id"]);
        let href = if e["item"] == "file" {
            format!("/drive/file?target={}", qp(&id))
        } else {
            format!("/memories/{}", qp(&id))
        };
        let _ = write!(
            items,
            r#"<li><span class="tag">{kind}</span> <a href="{href}">{label}</a> <span class="meta">{reason} · {score:.2}</span></li>"#,
            kind = field(e, "type"),
            href = esc(&href),
            label = field(e, "label"),
            reason = field(e, "reason"),
            score = e["score"].as_f64().unwrap_or(0.0),
        );
    }
    let body = if items.is_empty() {
        r#"<p class="empty">No relations found.</p>"#.to_string()
    } else {
        format!(r#"<ul id="relations">{items}</ul>"#)
    };
    format!(r#"<section aria-labelledby="rel-h"><h2 id="rel-h">Related</h2>{body}</section>"#)
}

async fn reprocess(State(st): State<AppState>, f: super::WebForm) -> Response {
    let target = f.get("target").unwrap_or("").to_string();
    match f
        .session
        .run::<Reprocess>(&st, json!({ "target": target }))
        .await
    {
        Ok(_) => see(&format!("/drive/file?target={}", qp(&target))),
        Err(e) => f.session.fail("Retry", &e),
    }
}

/// Back to the folder the form was on, or its error (the folder rules').
async fn organise<O: mem_service::door::Operation>(
    st: &AppState,
    f: &super::WebForm,
    args: serde_json::Value,
    title: &str,
) -> Response {
    let folder = f.get("folder").unwrap_or("/").to_string();
    match f.session.run::<O>(st, args).await {
        Ok(_) => see(&format!("/drive?path={}", qp(&folder))),
        Err(e) => f.session.fail(title, &e),
    }
}

async fn mkdir(State(st): State<AppState>, f: super::WebForm) -> Response {
    let folder = f.get("folder").unwrap_or("/");
    let path = format!(
        "{}/{}",
        folder.trim_end_matches('/'),
        f.get("name").unwrap_or("").trim()
    );
    organise::<Mkdir>(&st, &f, json!({ "path": path }), "Create folder").await
}

async fn move_entry(State(st): State<AppState>, f: super::WebForm) -> Response {
    let args = json!({ "from": f.get("from").unwrap_or(""), "to": f.get("to").unwrap_or("") });
    organise::<Move>(&st, &f, args, "Move").await
}

async fn remove(State(st): State<AppState>, f: super::WebForm) -> Response {
    let args = json!({
        "target": f.get("target").unwrap_or(""),
        "recursive": f.get("recursive") == Some("true"),
    });
    organise::<Remove>(&st, &f, args, "Remove").await
}
