//! Status: the processing queue (with the owner's retry of failed files
//! and processing of pending ones), the search index, budgets and their
//! usage, plugin failures and consolidation, all from `workspace.status`
//! (a caller confined to folders sees only theirs).

use super::html::{esc, field, text};
use super::{Session, WebForm};
use crate::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use mem_service::access::Scope;
use mem_service::ops::admin::Reindex;
use mem_service::ops::recall::Status;
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/status", get(status))
        .route("/status/reindex", post(reindex))
}

/// The processing states in the order a file moves through them.
const STATES: &[(&str, &str)] = &[
    ("pending", "waiting for a processor"),
    ("processing", "being processed now"),
    ("done", "processed"),
    ("partial", "processed in part (see the file's error)"),
    ("failed", "failed (retry them below)"),
];

fn queue(s: &Session, st: &Value) -> String {
    let counts = &st["index_status"];
    let mut rows = String::new();
    let mut seen = Vec::new();
    for (state, what) in STATES {
        let n = counts[*state].as_u64().unwrap_or(0);
        seen.push(*state);
        let _ = write!(
            rows,
            r#"<tr data-state="{state}"><th scope="row">{state}</th><td>{n}</td><td>{what}</td></tr>"#
        );
    }
    for (state, n) in counts.as_object().into_iter().flatten() {
        if !seen.contains(&state.as_str()) {
            let _ = write!(
                rows,
                r#"<tr><th scope="row">{}</th><td>{}</td><td></td></tr>"#,
                esc(state),
                esc(&text(n))
            );
        }
    }
    let pending = counts["pending"].as_u64().unwrap_or(0);
    let failed = counts["failed"].as_u64().unwrap_or(0) + counts["partial"].as_u64().unwrap_or(0);
    let mut actions = String::new();
    if s.can(Scope::Admin) {
        if pending > 0 {
            actions.push_str(&s.button(
                "/status/reindex",
                "Process pending files",
                &[("mode", "pending")],
            ));
        }
        if failed > 0 {
            actions.push_str(&s.button(
                "/status/reindex",
                "Retry failed and partial files",
                &[("mode", "failed")],
            ));
        }
    }
    format!(
        r#"<section aria-labelledby="queue-h"><h2 id="queue-h">Processing queue</h2><p>{files} files.</p><div class="scroll"><table id="queue"><thead><tr><th scope="col">State</th><th scope="col">Files</th><th scope="col"></th></tr></thead><tbody>{rows}</tbody></table></div><div class="actions">{actions}</div></section>"#,
        files = field(st, "files"),
    )
}

fn index(st: &Value) -> String {
    let i = &st["index"];
    let body = if i.is_null() {
        r#"<p class="empty">The index reports nothing to this caller.</p>"#.to_string()
    } else {
        let model = match i["model"].as_str() {
            Some(m) => esc(m),
            None => "none: the semantic lane is unavailable, the lexical lane still works".into(),
        };
        format!(
            r#"<dl id="index"><dt>Documents</dt><dd>{}</dd><dt>Vectors</dt><dd>{}</dd><dt>Lexical index</dt><dd>{} bytes</dd><dt>Vector index</dt><dd>{} bytes</dd><dt>Embedding model</dt><dd>{model}</dd><dt>Log watermark</dt><dd>{}</dd></dl>"#,
            field(i, "documents"),
            field(i, "vectors"),
            field(i, "lexical_bytes"),
            field(i, "vector_bytes"),
            field(i, "watermark"),
        )
    };
    format!(
        r#"<section aria-labelledby="index-h"><h2 id="index-h">Search index</h2>{body}</section>"#
    )
}

fn budgets(st: &Value) -> String {
    let mut rows = String::new();
    for b in st["budgets"].as_array().into_iter().flatten() {
        let usage = b["usage"].as_u64().unwrap_or(0);
        let limit = b["limit"].as_u64().unwrap_or(0);
        let pct = usage.saturating_mul(100).checked_div(limit).unwrap_or(100);
        let _ = write!(
            rows,
            r#"<tr><th scope="row">{name}</th><td>{usage}</td><td>{limit}</td><td><meter min="0" max="{limit}" value="{usage}" high="{high}" aria-label="{name}: {pct}% used"></meter> {pct}%</td></tr>"#,
            name = field(b, "budget"),
            high = limit.saturating_mul(9) / 10,
        );
    }
    let body = if rows.is_empty() {
        r#"<p class="empty">No budgets are set (<code>[budgets]</code> in mem.toml).</p>"#
            .to_string()
    } else {
        format!(
            r#"<div class="scroll"><table id="budgets"><thead><tr><th scope="col">Budget</th><th scope="col">Used</th><th scope="col">Limit</th><th scope="col">Usage</th></tr></thead><tbody>{rows}</tbody></table></div>"#
        )
    };
    format!(
        r#"<section aria-labelledby="budgets-h"><h2 id="budgets-h">Budgets</h2>{body}</section>"#
    )
}

fn plugins(st: &Value) -> String {
    let mut rows = String::new();
    for p in st["plugins"].as_array().into_iter().flatten() {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            field(p, "name"),
            field(p, "world"),
            field(p, "failures")
        );
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        r#"<section aria-labelledby="plugins-h"><h2 id="plugins-h">Plugins</h2><div class="scroll"><table><thead><tr><th scope="col">Plugin</th><th scope="col">World</th><th scope="col">Failures</th></tr></thead><tbody>{rows}</tbody></table></div></section>"#
    )
}

fn consolidation(st: &Value) -> String {
    let mut rows = String::new();
    for c in st["consolidation"].as_array().into_iter().flatten() {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            field(c, "scope"),
            field(c, "since_last"),
            field(c, "due_after"),
            if c["due"] == true { "due" } else { "not yet" },
            field(c, "last_consolidated_at"),
        );
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        r#"<section aria-labelledby="cons-h"><h2 id="cons-h">Consolidation</h2><div class="scroll"><table><thead><tr><th scope="col">Folder</th><th scope="col">New memories</th><th scope="col">Due after</th><th scope="col">State</th><th scope="col">Last</th></tr></thead><tbody>{rows}</tbody></table></div></section>"#
    )
}

/// How far the worker has computed relations (a bulk import's backlog).
fn relations(st: &Value) -> String {
    let r = &st["relations"];
    if r.is_null() {
        return String::new();
    }
    let state = if r["pending"] == true {
        "Pending: the background worker computes them a step at a time, yielding to requests."
    } else {
        "Up to date."
    };
    format!(
        r#"<section aria-labelledby="relations-h"><h2 id="relations-h">Relations</h2><dl id="relations"><dt>Computed up to event</dt><dd>{to}</dd><dt>Newest event</dt><dd>{head}</dd></dl><p>{state}</p></section>"#,
        to = field(r, "computed_to"),
        head = field(r, "log_head"),
    )
}

async fn status(s: Session, State(st): State<AppState>) -> Response {
    let v = match s.run::<Status>(&st, json!({})).await {
        Ok(v) => v,
        Err(e) => return s.fail("Status", &e),
    };
    let review = if s.can(Scope::Admin) {
        format!(
            r#"<a href="/review">{} queued</a>"#,
            field(&v, "queued_proposals")
        )
    } else {
        format!("{} queued", field(&v, "queued_proposals"))
    };
    let body = format!(
        r#"<dl id="summary"><dt>Workspace</dt><dd>{ws}</dd><dt>Files</dt><dd>{files}</dd><dt>Memories</dt><dd>{mems}</dd><dt>Proposals</dt><dd>{review}</dd></dl>{queue}{index}{budgets}{plugins}{cons}{rel}"#,
        ws = field(&v, "workspace"),
        files = field(&v, "files"),
        mems = field(&v, "memories"),
        queue = queue(&s, &v),
        index = index(&v),
        budgets = budgets(&v),
        plugins = plugins(&v),
        cons = consolidation(&v),
        rel = relations(&v),
    );
    s.page("Status", &body)
}

/// The owner's "process pending" / "retry failed": `index.reindex`.
async fn reindex(State(st): State<AppState>, f: WebForm) -> Response {
    let mode = f.get("mode").unwrap_or("pending").to_string();
    match f.session.run::<Reindex>(&st, json!({ "mode": mode })).await {
        Ok(r) => {
            let p = &r["processing"];
            f.session.page(
                "Status",
                &format!(
                    r#"<section class="ok" role="status" id="reindexed"><p>Processed {} files: {} done, {} partial, {} failed, {} no processor accepts.</p></section><p><a href="/status">Back to the status</a></p>"#,
                    field(p, "processed"),
                    field(p, "done"),
                    field(p, "partial"),
                    field(p, "failed"),
                    field(p, "unhandled"),
                ),
            )
        }
        Err(e) => f.session.fail("Status", &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_show_usage_against_their_limit() {
        let html = budgets(&json!({"budgets": [
            {"budget": "path:/team", "usage": 50, "limit": 200},
            {"budget": "kind:<b>", "usage": 3, "limit": 0},
        ]}));
        assert!(html.contains(r#"max="200" value="50""#), "{html}");
        assert!(html.contains("25%"), "{html}");
        assert!(html.contains("kind:&lt;b&gt;"), "{html}");
        assert!(budgets(&json!({"budgets": []})).contains("No budgets"));
    }
}
