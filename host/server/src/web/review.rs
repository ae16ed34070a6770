//! The review queue: each queued proposal shown the way approving what
//! you see demands (old text, new text, the diff, evidence, the gate's
//! findings), approved or rejected with a reason.

use super::html::{esc, field, qp, text};
use super::{Session, WebForm, see};
use crate::AppState;
use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use mem_service::access::Scope;
use mem_service::ops::govern::{ReviewApprove, ReviewList, ReviewReject, ReviewShow};
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/review", get(queue))
        .route("/review/{id}", get(show))
        .route("/review/{id}/approve", post(approve))
        .route("/review/{id}/reject", post(reject))
}

async fn queue(s: Session, State(st): State<AppState>) -> Response {
    let list = match s.run::<ReviewList>(&st, json!({})).await {
        Ok(l) => l,
        Err(e) => return s.fail("Review", &e),
    };
    let mut rows = String::new();
    for p in list.as_array().into_iter().flatten() {
        let _ = write!(
            rows,
            r#"<tr><td><a href="/review/{id}">{idt}</a></td><td>{op}</td><td>{content}</td><td>{reason}</td><td><time>{at}</time></td></tr>"#,
            id = esc(&qp(&text(&p["id"]))),
            idt = field(p, "id"),
            op = field(p, "op"),
            content = field(&p["memory"], "content"),
            reason = field(p, "reason"),
            at = field(p, "created_at"),
        );
    }
    let body = if rows.is_empty() {
        r#"<p class="empty">Nothing waits for review.</p>"#.to_string()
    } else {
        format!(
            r#"<div class="scroll"><table><caption>Queued proposals</caption><thead><tr><th scope="col">Proposal</th><th scope="col">Change</th><th scope="col">New text</th><th scope="col">Why</th><th scope="col">Proposed</th></tr></thead><tbody>{rows}</tbody></table></div>"#
        )
    };
    s.page("Review", &body)
}

fn list_items(v: &Value, f: impl Fn(&Value) -> String) -> String {
    let items: String = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| format!("<li>{}</li>", f(x)))
        .collect();
    if items.is_empty() {
        "<p class=\"empty\">None.</p>".into()
    } else {
        format!("<ul>{items}</ul>")
    }
}

async fn show(s: Session, State(st): State<AppState>, Path(id): Path<String>) -> Response {
    let item = match s.run::<ReviewShow>(&st, json!({ "id": id })).await {
        Ok(i) => i,
        Err(e) => return s.fail("Proposal", &e),
    };
    let p = &item["proposal"];
    let old = list_items(&item["old"], |m| {
        format!(
            r#"<a href="/memories/{}">{}</a> (version {}): <blockquote>{}</blockquote>"#,
            esc(&qp(&text(&m["id"]))),
            field(m, "id"),
            field(m, "state_version"),
            field(m, "content")
        )
    });
    let evidence = list_items(&item["evidence"], |e| {
        format!(
            "{} {} — found: {} <blockquote>{}</blockquote>",
            field(&e["evidence"], "stance"),
            field(e, "reference"),
            field(e, "found"),
            field(e, "text")
        )
    });
    let findings = list_items(&p["findings"], |f| {
        format!(
            "<strong>{}</strong> ({}, {}): {}",
            field(f, "code"),
            field(f, "effect"),
            field(f, "source"),
            field(f, "message")
        )
    });
    let queued = p["status"] == "queued";
    let decide = if queued && s.can(Scope::Admin) {
        let base = format!("/review/{}", qp(&text(&p["id"])));
        format!(
            r#"<section aria-labelledby="decide-h"><h2 id="decide-h">Decide</h2>
<form method="post" action="{base}/approve" class="stack">{csrf}<label>Note (optional)<input name="note"></label><button type="submit">Approve</button></form>
<form method="post" action="{base}/reject" class="stack">{csrf}<label>Reason for rejecting<input name="reason" required></label><button type="submit" class="danger">Reject</button></form></section>"#,
            base = esc(&base),
            csrf = s.csrf_field(),
        )
    } else {
        format!(
            "<p>Status: <strong>{}</strong> {}</p>",
            field(p, "status"),
            field(p, "decision_reason")
        )
    };
    let body = format!(
        r#"<p class="meta">{op} · status {status} · why: {reason}</p>
<h2>Old text</h2>{old}
<h2>New text</h2><blockquote class="content">{new}</blockquote>
<h2>Diff</h2><pre class="diff">{diff}</pre>
<h2>Evidence</h2>{evidence}
<h2>The gate's findings</h2>{findings}{decide}"#,
        op = field(p, "op"),
        status = field(p, "status"),
        reason = field(p, "reason"),
        new = field(&item, "new_text"),
        diff = field(&item, "diff"),
    );
    s.page(&format!("Proposal {}", text(&p["id"])), &body)
}

async fn approve(State(st): State<AppState>, Path(id): Path<String>, f: WebForm) -> Response {
    let mut args = json!({ "id": id });
    if let Some(n) = f.text("note") {
        args["note"] = n.into();
    }
    match f.session.run::<ReviewApprove>(&st, args).await {
        Ok(_) => see(&format!("/review/{}", qp(&id))),
        Err(e) => f.session.fail("Approve", &e),
    }
}

async fn reject(State(st): State<AppState>, Path(id): Path<String>, f: WebForm) -> Response {
    let args = json!({ "id": id, "reason": f.get("reason").unwrap_or("") });
    match f.session.run::<ReviewReject>(&st, args).await {
        Ok(_) => see(&format!("/review/{}", qp(&id))),
        Err(e) => f.session.fail("Reject", &e),
    }
}
