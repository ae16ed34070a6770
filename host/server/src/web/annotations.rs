//! A file's annotations on its drive page: what processors suggested (a
//! description, tags), each pending one with accept and reject for a
//! caller who may write the file. The decision is the door's
//! `files.annotation.decide`, as on the other surfaces.

use super::html::{esc, qp, text};
use super::{Session, see};
use crate::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use mem_service::access::Scope;
use mem_service::ops::annotations::DecideAnnotation;
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/drive/annotation", post(decide))
}

/// The "Suggestions" section of a file's page (`file` is its details as
/// `files.read` answers them); empty when nothing was suggested.
pub(super) fn section(s: &Session, file: &Value) -> String {
    let items = file["annotations"].as_array().cloned().unwrap_or_default();
    let notes = file["annotation_notes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if items.is_empty() && notes.is_empty() {
        return String::new();
    }
    let id = text(&file["id"]);
    let version = text(&file["state_version"]);
    let may_decide = s.can(Scope::Write);
    let mut rows = String::new();
    for a in &items {
        let status = text(&a["status"]);
        let decided = match a["decided_by"].as_str() {
            Some(by) => format!(
                " by {}{}",
                esc(by),
                a["reason"]
                    .as_str()
                    .map(|r| format!(": {}", esc(r)))
                    .unwrap_or_default()
            ),
            None => String::new(),
        };
        let controls = if status == "pending" && may_decide {
            format!(
                r#"<form method="post" action="/drive/annotation" class="inline">{csrf}<input type="hidden" name="target" value="{id}"><input type="hidden" name="annotation_id" value="{aid}"><input type="hidden" name="expected_version" value="{version}"><input name="reason" placeholder="Reason (optional)" maxlength="2000" aria-label="Reason"><button type="submit" name="decision" value="accept">Accept</button><button type="submit" name="decision" value="reject">Reject</button></form>"#,
                csrf = s.csrf_field(),
                id = esc(&id),
                aid = esc(&text(&a["id"])),
                version = esc(&version),
            )
        } else {
            String::new()
        };
        let _ = write!(
            rows,
            r#"<tr data-annotation="{aid}" data-status="{st}"><td>{kind}</td><td>{value}</td><td>{producer}</td><td>{st}{decided}</td><td>{controls}</td></tr>"#,
            aid = esc(&text(&a["id"])),
            st = esc(&status),
            kind = esc(&text(&a["kind"])),
            value = esc(&text(&a["value"])),
            producer = esc(&text(&a["producer"])),
        );
    }
    let mut noted = String::new();
    for n in &notes {
        let _ = write!(noted, "<li>{}</li>", esc(&text(n)));
    }
    if !noted.is_empty() {
        noted = format!(r#"<ul class="meta" id="annotation-notes">{noted}</ul>"#);
    }
    format!(
        r#"<section aria-labelledby="ann-h"><h2 id="ann-h">Suggestions</h2><p class="meta">What processors suggested; nothing changes until a person accepts it.</p><table id="annotations"><thead><tr><th scope="col">Kind</th><th scope="col">Suggestion</th><th scope="col">From</th><th scope="col">Status</th><th scope="col"></th></tr></thead><tbody>{rows}</tbody></table>{noted}</section>"#
    )
}

async fn decide(State(st): State<AppState>, f: super::WebForm) -> Response {
    let target = f.get("target").unwrap_or("").to_string();
    let version = f
        .get("expected_version")
        .and_then(|v| v.parse::<u64>().ok());
    let reason = f.get("reason").map(str::trim).filter(|r| !r.is_empty());
    let mut args = json!({
        "target": target,
        "annotation_id": f.get("annotation_id").unwrap_or(""),
        "decision": f.get("decision").unwrap_or(""),
        "expected_version": version,
    });
    if let Some(r) = reason {
        args["reason"] = json!(r);
    }
    match f.session.run::<DecideAnnotation>(&st, args).await {
        Ok(_) => see(&format!("/drive/file?target={}", qp(&target))),
        Err(e) => f.session.fail("Decide a suggestion", &e),
    }
}
