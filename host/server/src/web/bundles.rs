//! Workspace bundles on the tasks page: export (a download, the owner's),
//! check a bundle (anyone who may read) and import one into this empty
//! workspace (the owner's), each shown with what the bundle's verified
//! manifest holds. The same `bundle.*` operations as every other surface.

use super::Session;
use super::html::{esc, field, input, text};
use super::upload::Upload;
use crate::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use mem_service::access::Scope;
use mem_service::ops::bundles::{ImportBundle, VerifyBundle};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route(
        "/tasks/bundle",
        get(export)
            .post(check_or_import)
            .layer(DefaultBodyLimit::disable()),
    )
}

/// The bundle section of the tasks page: what this viewer may do.
pub(super) fn section(s: &Session) -> String {
    if !s.can(Scope::Read) {
        return String::new();
    }
    let export = if s.can(Scope::Admin) {
        format!(
            r#"<h3>Export</h3><p>The workspace (or one folder) as a bundle another machine imports.</p><form method="get" action="/tasks/bundle" class="filters" id="bundle">{}<button type="submit">Download the bundle</button></form>"#,
            input(
                "scope",
                "Folder (empty: everything)",
                "",
                r#"placeholder="/""#
            )
        )
    } else {
        String::new()
    };
    let (what, import) = if s.can(Scope::Admin) {
        (
            "Check a bundle, or import it into this workspace (an empty one: an import never merges)",
            r#"<button type="submit" name="action" value="import" class="danger">Import</button>"#,
        )
    } else {
        ("Check a bundle without importing it", "")
    };
    format!(
        r#"<section aria-labelledby="bundle-h"><h2 id="bundle-h">Bundles</h2>{export}<h3>{what}</h3><form method="post" action="/tasks/bundle" enctype="multipart/form-data" class="stack" id="bundle-in">{csrf}<label>Bundle file<input type="file" name="bundle" required></label><div class="actions"><button type="submit" name="action" value="verify">Check</button>{import}</div></form></section>"#,
        csrf = s.csrf_field(),
    )
}

/// The bundle as a download, through the same export as `GET /v1/bundle`.
async fn export(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut args = Map::new();
    if let Some(scope) = q.get("scope").map(|v| v.trim()).filter(|v| !v.is_empty()) {
        args.insert("scope".into(), scope.into());
    }
    match crate::rest::raw::export_bundle(&st, s.access.clone(), Value::Object(args)).await {
        Ok(r) => r.into_response(),
        Err(e) => s.fail("Export a bundle", &e.0),
    }
}

async fn check_or_import(State(st): State<AppState>, req: Request) -> Response {
    let up = match Upload::read(&st, req).await {
        Ok(u) => u,
        Err(r) => return r,
    };
    let s = &up.session;
    let import = up.get("action") == Some("import");
    let title = if import {
        "Import a bundle"
    } else {
        "Check a bundle"
    };
    let bytes = match up.require_file("bundle", title) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let args = json!({
        "content_base64": base64::engine::general_purpose::STANDARD.encode(bytes),
    });
    let done = if import {
        s.run::<ImportBundle>(&st, args).await
    } else {
        s.run::<VerifyBundle>(&st, args).await
    };
    match done {
        Ok(r) => s.page(title, &report(&r, import)),
        Err(e) => s.fail(title, &e),
    }
}

/// A bundle report (import or verify) with its manifest's counts.
fn report(r: &Value, import: bool) -> String {
    let mut facts = String::new();
    let outcome = if import {
        field(r, "message")
    } else {
        "Every entry, record and blob matches the manifest.".to_string()
    };
    for (label, v) in [
        ("Bundle (manifest SHA-256)", &r["bundle"]),
        ("Format version", &r["format_version"]),
        ("Written", &r["created_at"]),
        ("From workspace", &r["source"]["workspace"]),
        ("By mem-host", &r["source"]["mem_host_version"]),
        ("Folder", &r["scope"]),
        ("Entries checked", &r["entries"]),
        ("Records checked", &r["records"]),
        ("Imported", &r["imported"]),
        ("Replayed", &r["replayed"]),
        ("Records reindexed", &r["reindexed_records"]),
    ] {
        if !v.is_null() {
            let _ = write!(facts, "<dt>{label}</dt><dd>{}</dd>", esc(&text(v)));
        }
    }
    let c = &r["counts"];
    let mut rows = String::new();
    for (group, key) in [("records", "records"), ("log", "logs")] {
        for (name, n) in c[key].as_object().into_iter().flatten() {
            let _ = write!(
                rows,
                "<tr><th scope=\"row\">{} {group}</th><td>{}</td></tr>",
                esc(name),
                esc(&text(n))
            );
        }
    }
    for (label, key) in [
        ("blobs", "blobs"),
        ("blob bytes", "blob_bytes"),
        ("plugins", "plugins"),
    ] {
        let _ = write!(
            rows,
            "<tr><th scope=\"row\">{label}</th><td>{}</td></tr>",
            field(c, key)
        );
    }
    let plugins: Vec<String> = r["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let installed = if plugins.is_empty() {
        String::new()
    } else {
        format!(
            "<p>Plugins installed from the bundle: {}</p>",
            esc(&plugins.join(", "))
        )
    };
    format!(
        r#"<section class="ok" role="status" id="bundle-result"><p>{outcome}</p></section><dl>{facts}</dl><div class="scroll"><table id="bundle-counts"><caption>What the manifest holds</caption><tbody>{rows}</tbody></table></div>{installed}<p><a href="/tasks">Back to the tasks</a></p>"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_shows_every_count_escaped() {
        let r = json!({
            "ok": true, "bundle": "abc", "format_version": 1,
            "created_at": "2026-01-01T00:00:00Z",
            "source": {"workspace": "<ws>", "mem_host_version": "0.1"},
            "counts": {"records": {"memories": 3}, "logs": {"audit": 5},
                       "blobs": 2, "blob_bytes": 10, "plugins": 0},
            "entries": 9, "records": 8,
        });
        let html = report(&r, false);
        assert!(html.contains("memories records</th><td>3"), "{html}");
        assert!(html.contains("audit log</th><td>5"), "{html}");
        assert!(html.contains("&lt;ws&gt;"));
        assert!(!html.contains("<ws>"));
        assert!(!html.contains("Replayed"), "absent facts are left out");
    }
}
