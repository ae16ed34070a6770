//! The audit log, newest first, filtered by target, with the hash chain's
//! verification state.

use super::html::{esc, field, input, qp, text};
use super::{Session, num_or_text};
use crate::AppState;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use mem_service::AuditQuery;
use mem_service::ops::govern::AuditVerify;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/audit", get(log))
}

async fn log(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let target = get("target");
    let action = get("action");
    let mut args = Map::new();
    if let Some(t) = target {
        args.insert("target".into(), t.into());
    }
    if let Some(a) = action {
        args.insert("action".into(), a.into());
    }
    if let Some(b) = get("before") {
        args.insert("before".into(), num_or_text(b));
    }
    let limit = get("limit").unwrap_or("100");
    args.insert("limit".into(), num_or_text(limit));
    let verified = match s.run::<AuditVerify>(&st, json!({})).await {
        Ok(v) => v,
        Err(e) => return s.fail("Audit", &e),
    };
    let entries = match s.run::<AuditQuery>(&st, Value::Object(args)).await {
        Ok(v) => v,
        Err(e) => return s.fail("Audit", &e),
    };
    let chain = if verified["ok"] == true {
        format!(
            r#"<p class="ok" role="status" id="chain">Chain verified: {} entries, every hash links.</p>"#,
            field(&verified, "entries")
        )
    } else {
        format!(
            r#"<p class="error" role="alert" id="chain">Chain broken at entry {}: {}</p>"#,
            field(&verified, "first_bad_seq"),
            field(&verified, "problem")
        )
    };
    let shown = entries.as_array().map_or(0, Vec::len);
    // A full page may have older entries: the next page starts below its last seq.
    let next = match entries.as_array().and_then(|a| a.last()) {
        Some(last) if limit.parse::<usize>().is_ok_and(|l| l == shown) => {
            let mut keep: Vec<String> = [("target", target), ("action", action)]
                .iter()
                .filter_map(|(k, v)| v.map(|v| format!("{k}={}", qp(v))))
                .collect();
            keep.push(format!("limit={}", qp(limit)));
            keep.push(format!("before={}", text(&last["seq"])));
            format!(
                r#"<p class="pager"><a rel="next" href="{}">Older entries</a></p>"#,
                esc(&format!("/audit?{}", keep.join("&")))
            )
        }
        _ => String::new(),
    };
    let mut rows = String::new();
    for e in entries.as_array().into_iter().flatten() {
        let actor = e["actor"]
            .as_object()
            .map(|a| {
                a.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| format!("{k}={}", text(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let _ = write!(
            rows,
            "<tr><td>{}</td><td><time>{}</time></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            field(e, "seq"),
            field(e, "at"),
            field(e, "action"),
            field(e, "target"),
            esc(&actor),
            field(e, "verdict"),
        );
    }
    let form = format!(
        r#"<form method="get" action="/audit" class="filters">{}{}<button type="submit">Filter</button></form>"#,
        input(
            "target",
            "Target",
            target.unwrap_or(""),
            r#"placeholder="mem_…""#
        ),
        input(
            "action",
            "Action",
            action.unwrap_or(""),
            r#"placeholder="forget""#
        )
    );
    let body = format!(
        r#"{chain}{form}<div class="scroll"><table><caption>Audit entries, newest first</caption><thead><tr><th scope="col">Seq</th><th scope="col">At</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Actor</th><th scope="col">Verdict</th></tr></thead><tbody>{rows}</tbody></table></div>{next}"#
    );
    s.page("Audit", &body)
}
