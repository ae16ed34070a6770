//! Memories: the ledger (filtered, a page at a time), a memory's page,
//! and its writes (remember, feedback and pin, archive, restore, forget
//! behind a confirmation), each with the version the page showed.

use super::html::{esc, field, input, next_link, qp, select, text};
use super::{Session, WebForm, num_or_text, see};
use crate::AppState;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use mem_core::hash::sha256_hex;
use mem_service::access::Scope;
use mem_service::ops::memories::{Archive, Feedback, Forget, GetMemory, Restore};
use mem_service::{ListMemories, RememberRequest};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/memories", get(ledger).post(remember))
        .route("/memories/{id}", get(show))
        .route("/memories/{id}/feedback", post(feedback))
        .route("/memories/{id}/archive", post(archive))
        .route("/memories/{id}/restore", post(restore))
        .route("/memories/{id}/forget", get(confirm_forget).post(forget))
}

/// Memories on one page of the ledger.
const PAGE: u64 = 50;

const LIFECYCLES: &[(&str, &str)] = &[
    ("active", "active"),
    ("archived", "archived"),
    ("superseded", "superseded"),
    ("deprecated", "deprecated"),
    ("forgotten", "forgotten"),
    ("all", "all"),
];

/// A short single-line excerpt of a memory's content.
fn excerpt(m: &Value) -> String {
    match m["content"].as_str() {
        Some(c) => {
            let one: String = c.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut: String = one.chars().take(140).collect();
            if cut.len() < one.len() {
                format!("{cut}…")
            } else {
                cut
            }
        }
        None => "(forgotten)".into(),
    }
}

async fn ledger(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let mut args = Map::new();
    for k in ["path", "kind", "lifecycle", "agent", "cursor"] {
        if let Some(v) = get(k) {
            args.insert(k.into(), Value::String(v.into()));
        }
    }
    if let Some(p) = get("pinned") {
        // Anything but the two offered values is the operation's to refuse.
        let v = match p {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => Value::String(other.into()),
        };
        args.insert("pinned".into(), v);
    }
    args.insert("limit".into(), PAGE.into());
    let filters = format!(
        r#"<form method="get" action="/memories" class="filters" role="search">{}{}{}{}{}<button type="submit">Filter</button></form>"#,
        input(
            "path",
            "Folder",
            get("path").unwrap_or(""),
            r#"placeholder="/project""#
        ),
        input(
            "kind",
            "Type",
            get("kind").unwrap_or(""),
            r#"placeholder="fact""#
        ),
        select(
            "lifecycle",
            "Lifecycle",
            LIFECYCLES,
            get("lifecycle").unwrap_or("active")
        ),
        input(
            "agent",
            "Agent",
            get("agent").unwrap_or(""),
            r#"placeholder="claude-code""#
        ),
        select(
            "pinned",
            "Pinned",
            &[("", "any"), ("true", "pinned"), ("false", "not pinned")],
            get("pinned").unwrap_or("")
        ),
    );
    let page = match s.run::<ListMemories>(&st, Value::Object(args)).await {
        Ok(p) => p,
        Err(e) => return s.fail("Memories", &e),
    };
    let mut rows = String::new();
    for m in page["items"].as_array().into_iter().flatten() {
        let _ = write!(
            rows,
            r#"<tr><td><a href="/memories/{id}">{ex}</a></td><td>{kind}</td><td>{path}</td><td>{lc}</td><td>{pin}</td><td><time>{at}</time></td></tr>"#,
            id = esc(&qp(&text(&m["id"]))),
            ex = esc(&excerpt(m)),
            kind = field(m, "kind"),
            path = field(m, "path"),
            lc = field(m, "lifecycle"),
            pin = if m["pinned"].as_bool() == Some(true) {
                "pinned"
            } else {
                ""
            },
            at = field(m, "updated_at"),
        );
    }
    let table = if rows.is_empty() {
        r#"<p class="empty">No memories match.</p>"#.to_string()
    } else {
        format!(
            r#"<div class="scroll"><table class="ledger"><caption>Memories, newest first</caption><thead><tr><th scope="col">Content</th><th scope="col">Type</th><th scope="col">Folder</th><th scope="col">Lifecycle</th><th scope="col">Pinned</th><th scope="col">Updated</th></tr></thead><tbody>{rows}</tbody></table></div>"#
        )
    };
    let base = {
        let keep: Vec<String> = ["path", "kind", "lifecycle", "agent", "pinned"]
            .iter()
            .filter_map(|k| get(k).map(|v| format!("{k}={}", qp(v))))
            .collect();
        format!("/memories?{}", keep.join("&"))
    };
    let write = if s.can(Scope::Write) {
        format!(
            r#"<section aria-labelledby="new-h"><h2 id="new-h">Remember</h2><form method="post" action="/memories" class="stack" id="remember">{csrf}<label>Content<textarea name="content" required rows="3"></textarea></label>{kind}{path}<button type="submit">Remember</button></form></section>"#,
            csrf = s.csrf_field(),
            kind = input("kind", "Type", "fact", "required"),
            path = input("path", "Folder", "/", "required"),
        )
    } else {
        String::new()
    };
    let body = format!(
        "{filters}{table}{}{write}",
        next_link(&base, &page["next_cursor"])
    );
    s.page("Memories", &body)
}

async fn remember(State(st): State<AppState>, f: WebForm) -> Response {
    let s = &f.session;
    let content = f.get("content").unwrap_or("").to_string();
    let kind = f.text("kind").unwrap_or_default();
    let path = f.text("path").unwrap_or_default();
    // A resubmitted form (back, reload) is the same write: its key is the
    // session's and the memory's, so the door dedupes it.
    let key = format!(
        "web:{}",
        sha256_hex(
            format!("{}\0{content}\0{kind}\0{path}", f.get("csrf").unwrap_or("")).as_bytes()
        )
    );
    let args = json!({
        "content": content, "kind": kind, "path": path,
        "source_type": "web", "idempotency_key": key,
    });
    match s.run::<RememberRequest>(&st, args).await {
        // The write gate may queue it as a proposal rather than store it.
        Ok(r) => match (r["memory"]["id"].as_str(), r["proposal"]["id"].as_str()) {
            (Some(id), _) => see(&format!("/memories/{}", qp(id))),
            (None, Some(p)) if s.can(Scope::Admin) => see(&format!("/review/{}", qp(p))),
            _ => see("/memories"),
        },
        Err(e) => s.fail("Remember", &e),
    }
}

async fn show(s: Session, State(st): State<AppState>, Path(id): Path<String>) -> Response {
    let m = match s.run::<GetMemory>(&st, json!({ "id": id })).await {
        Ok(m) => m,
        Err(e) => return s.fail("Memory", &e),
    };
    let id = text(&m["id"]);
    let version = text(&m["state_version"]);
    let content = match m["content"].as_str() {
        Some(c) => format!(r#"<blockquote class="content">{}</blockquote>"#, esc(c)),
        None => format!(
            r#"<p class="empty">Forgotten: {}</p>"#,
            field(&m["tombstone"], "reason")
        ),
    };
    let mut facts = String::new();
    for (label, v) in [
        ("Type", &m["kind"]),
        ("Folder", &m["path"]),
        ("Lifecycle", &m["lifecycle"]),
        ("Version", &m["state_version"]),
        ("Confidence", &m["confidence"]),
        ("Pinned", &m["pinned"]),
        ("Useful", &m["feedback"]["useful"]),
        ("Not useful", &m["feedback"]["not_useful"]),
        ("Content SHA-256", &m["content_sha256"]),
        ("Created", &m["created_at"]),
        ("Updated", &m["updated_at"]),
    ] {
        let _ = write!(facts, "<dt>{label}</dt><dd>{}</dd>", esc(&text(v)));
    }
    let mut prov = String::new();
    if let Some(p) = m["provenance"].as_object() {
        for (k, v) in p {
            let _ = write!(prov, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&text(v)));
        }
    }
    let mut rels = String::new();
    for r in m["relations"].as_array().into_iter().flatten() {
        let _ = write!(
            rels,
            r#"<li>{} <a href="/memories/{}">{}</a></li>"#,
            field(r, "type"),
            esc(&qp(&text(&r["target"]))),
            field(r, "target")
        );
    }
    let rels = if rels.is_empty() {
        String::new()
    } else {
        format!(r#"<h2>Relations</h2><ul>{rels}</ul>"#)
    };
    let mut actions = String::new();
    let live = m["content"].is_string();
    if s.can(Scope::Write) && live {
        let base = format!("/memories/{}", qp(&id));
        for (action, label) in [("useful", "Useful"), ("not_useful", "Not useful")] {
            actions.push_str(&s.button(
                &format!("{base}/feedback"),
                label,
                &[("action", action), ("expected_version", &version)],
            ));
        }
        let (pin, pin_label) = if m["pinned"].as_bool() == Some(true) {
            ("unpin", "Unpin")
        } else {
            ("pin", "Pin")
        };
        actions.push_str(&s.button(
            &format!("{base}/feedback"),
            pin_label,
            &[("action", pin), ("expected_version", &version)],
        ));
        let (to, label) = if m["lifecycle"] == "archived" {
            ("restore", "Restore")
        } else {
            ("archive", "Archive")
        };
        actions.push_str(&s.button(
            &format!("{base}/{to}"),
            label,
            &[("expected_version", &version)],
        ));
    }
    if s.can(Scope::Delete) && live {
        let _ = write!(
            actions,
            r#"<a class="danger" href="/memories/{}/forget?expected_version={}">Forget…</a>"#,
            esc(&qp(&id)),
            esc(&qp(&version))
        );
    }
    let actions = if actions.is_empty() {
        String::new()
    } else {
        format!(r#"<div class="actions" role="group" aria-label="Actions">{actions}</div>"#)
    };
    let body = format!(
        r#"{content}{actions}<h2>Record</h2><dl>{facts}</dl><h2>Provenance</h2><dl>{prov}</dl>{rels}<p><a href="/audit?target={}">Its audit events</a></p>"#,
        esc(&qp(&id))
    );
    s.page(&format!("Memory {id}"), &body)
}

/// Runs a write with the form's `expected_version`, then shows the memory.
async fn versioned<O: mem_service::door::Operation>(
    st: &AppState,
    f: &WebForm,
    id: &str,
    mut args: Map<String, Value>,
    title: &str,
) -> Response {
    args.insert("id".into(), id.into());
    args.insert(
        "expected_version".into(),
        num_or_text(f.get("expected_version").unwrap_or("")),
    );
    match f.session.run::<O>(st, Value::Object(args)).await {
        Ok(_) => see(&format!("/memories/{}", qp(id))),
        Err(e) => f.session.fail(title, &e),
    }
}

async fn feedback(State(st): State<AppState>, Path(id): Path<String>, f: WebForm) -> Response {
    let mut args = Map::new();
    args.insert("action".into(), f.get("action").unwrap_or("").into());
    versioned::<Feedback>(&st, &f, &id, args, "Feedback").await
}

async fn archive(State(st): State<AppState>, Path(id): Path<String>, f: WebForm) -> Response {
    versioned::<Archive>(&st, &f, &id, Map::new(), "Archive").await
}

async fn restore(State(st): State<AppState>, Path(id): Path<String>, f: WebForm) -> Response {
    versioned::<Restore>(&st, &f, &id, Map::new(), "Restore").await
}

/// The confirmation before forgetting: what will go, and why it goes.
async fn confirm_forget(
    s: Session,
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let m = match s.run::<GetMemory>(&st, json!({ "id": id })).await {
        Ok(m) => m,
        Err(e) => return s.fail("Forget", &e),
    };
    if !s.can(Scope::Delete) {
        return s.fail(
            "Forget",
            &mem_core::MemError::new(mem_core::ErrorCode::Forbidden, "this token may not forget")
                .with_hint("forgetting needs the delete scope"),
        );
    }
    let version = q
        .get("expected_version")
        .cloned()
        .unwrap_or_else(|| text(&m["state_version"]));
    let body = format!(
        r#"<p>Forgetting erases this memory's content for good; the audit log keeps the reason, not the content.</p>
<blockquote class="content">{content}</blockquote>
<form method="post" action="/memories/{id}/forget" class="stack">{csrf}
<input type="hidden" name="expected_version" value="{version}">
<label>Reason<textarea name="reason" required rows="2"></textarea></label>
<label class="check"><input type="checkbox" name="confirm" value="true" required> I understand the content cannot be recovered</label>
<div class="actions"><button type="submit" class="danger">Forget for good</button><a href="/memories/{id}">Cancel</a></div></form>"#,
        content = esc(&excerpt(&m)),
        id = esc(&qp(&id)),
        csrf = s.csrf_field(),
        version = esc(&version),
    );
    s.page("Forget this memory?", &body)
}

async fn forget(State(st): State<AppState>, Path(id): Path<String>, f: WebForm) -> Response {
    let mut args = Map::new();
    args.insert("reason".into(), f.get("reason").unwrap_or("").into());
    args.insert("confirm".into(), (f.get("confirm") == Some("true")).into());
    versioned::<Forget>(&st, &f, &id, args, "Forget").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_one_short_line() {
        let m = json!({"content": "a\n b   c"});
        assert_eq!(excerpt(&m), "a b c");
        let long = json!({"content": "x".repeat(300)});
        assert_eq!(excerpt(&long).chars().count(), 141);
        assert_eq!(excerpt(&json!({"content": null})), "(forgotten)");
    }
}
