//! The owner's plugins: each one's world, version, digest, requested and
//! granted capabilities, limits and failures, with grant and revoke;
//! install (a `.wasm` and the manifest that names its digest) and remove.
//! Every control is a `plugin.*` operation, which the door keeps to the
//! owner (`admin`); the page offers them to no one else.

use super::html::{esc, field, text};
use super::upload::Upload;
use super::{Session, WebForm, see};
use crate::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use base64::Engine;
use mem_core::MemError;
use mem_service::access::Scope;
use mem_service::ops::plugins::{
    PluginGrant, PluginInstall, PluginList, PluginRemove, PluginRevoke,
};
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/plugins", get(plugins))
        .route("/plugins/grant", post(grant))
        .route("/plugins/revoke", post(revoke))
        .route("/plugins/remove", post(remove))
        .route(
            "/plugins/install",
            post(install).layer(DefaultBodyLimit::disable()),
        )
}

fn joined(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".into())
}

/// A flat JSON object as `key: value` pairs (limits, failures by reason).
fn pairs(v: &Value) -> String {
    let items: Vec<String> = v
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{}: {}", esc(k), esc(&text(v))))
        .collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(" · ")
    }
}

fn plugin_card(s: &Session, p: &Value) -> String {
    let m = &p["manifest"];
    let name = text(&m["name"]);
    let mut actions = String::new();
    for c in p["missing"].as_array().into_iter().flatten() {
        let c = text(c);
        actions.push_str(&s.button(
            "/plugins/grant",
            &format!("Grant {c}"),
            &[("name", &name), ("capability", &c)],
        ));
    }
    for c in p["granted"].as_array().into_iter().flatten() {
        let c = text(c);
        actions.push_str(&s.button(
            "/plugins/revoke",
            &format!("Revoke {c}"),
            &[("name", &name), ("capability", &c)],
        ));
    }
    let _ = write!(
        actions,
        r#"<form method="post" action="/plugins/remove" class="inline remove">{csrf}<input type="hidden" name="name" value="{n}"><label class="check"><input type="checkbox" name="force" value="true"> also take it out of mem.toml</label> <button type="submit" class="danger">Remove {n}</button></form>"#,
        csrf = s.csrf_field(),
        n = esc(&name),
    );
    let f = &p["failures"];
    let last = if f["last"].is_null() {
        String::new()
    } else {
        format!(
            "<dt>Last failure</dt><dd>{} at {}: {}</dd>",
            field(&f["last"], "reason"),
            field(&f["last"], "at"),
            field(&f["last"], "message")
        )
    };
    let fs = p["fs_paths"]
        .as_array()
        .filter(|a| !a.is_empty())
        .map(|_| {
            format!(
                "<dt>Readable folders</dt><dd>{}</dd>",
                esc(&joined(&p["fs_paths"]))
            )
        })
        .unwrap_or_default();
    format!(
        r#"<section class="plugin" id="plugin-{id}"><h2>{n} <span class="meta">{v}</span></h2><dl><dt>World</dt><dd>{w} (WIT {wit})</dd><dt>Digest</dt><dd><code>{d}</code></dd><dt>Enabled</dt><dd>{en}</dd><dt>Requested</dt><dd>{rq}</dd><dt>Granted</dt><dd class="granted">{gr}</dd><dt>Not granted</dt><dd>{mi}</dd>{fs}<dt>Limits</dt><dd>{lim}</dd><dt>Calls (this process)</dt><dd>{calls}</dd><dt>Failures</dt><dd class="failures">{fails} ({by}); {consec} since the last success</dd>{last}</dl><div class="actions">{actions}</div></section>"#,
        id = esc(&name),
        n = esc(&name),
        v = field(m, "version"),
        w = field(m, "world"),
        wit = field(m, "wit_version"),
        d = field(m, "sha256"),
        en = field(p, "enabled"),
        rq = esc(&joined(&p["requested"])),
        gr = esc(&joined(&p["granted"])),
        mi = esc(&joined(&p["missing"])),
        lim = pairs(&p["limits"]),
        calls = field(f, "calls"),
        fails = field(f, "total"),
        by = pairs(&f["by_reason"]),
        consec = field(f, "consecutive"),
    )
}

fn install_form(s: &Session) -> String {
    format!(
        r#"<section aria-labelledby="install-h"><h2 id="install-h">Install a plugin</h2><p>The component and the manifest that names its world, WIT version, capabilities and SHA-256; the host refuses bytes that do not match the digest. Capabilities are granted afterwards, one by one.</p><form method="post" action="/plugins/install" enctype="multipart/form-data" class="stack" id="install">{}<label>Component (.wasm)<input type="file" name="wasm" accept=".wasm,application/wasm" required></label><label>Manifest (manifest.json)<input type="file" name="manifest" accept=".json,application/json" required></label><label class="check"><input type="checkbox" name="replace" value="true"> replace an installed plugin of the same name</label><button type="submit">Install</button></form></section>"#,
        s.csrf_field()
    )
}

async fn plugins(s: Session, State(st): State<AppState>) -> Response {
    let list = match s.run::<PluginList>(&st, json!({})).await {
        Ok(l) => l,
        Err(e) => return s.fail("Plugins", &e),
    };
    let mut out: String = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| plugin_card(&s, p))
        .collect();
    if out.is_empty() {
        out = r#"<p class="empty">No plugins are installed.</p>"#.into();
    }
    if s.can(Scope::Admin) {
        out.push_str(&install_form(&s));
    }
    s.page("Plugins", &out)
}

async fn change(st: &AppState, f: &WebForm, grant: bool) -> Response {
    let args = json!({
        "name": f.get("name").unwrap_or(""),
        "capabilities": [f.get("capability").unwrap_or("")],
    });
    let done = if grant {
        f.session.run::<PluginGrant>(st, args).await
    } else {
        f.session.run::<PluginRevoke>(st, args).await
    };
    match done {
        Ok(_) => see("/plugins"),
        Err(e) => f.session.fail("Plugins", &e),
    }
}

async fn grant(State(st): State<AppState>, f: WebForm) -> Response {
    change(&st, &f, true).await
}

async fn revoke(State(st): State<AppState>, f: WebForm) -> Response {
    change(&st, &f, false).await
}

async fn remove(State(st): State<AppState>, f: WebForm) -> Response {
    let args = json!({
        "name": f.get("name").unwrap_or(""),
        "force": f.get("force") == Some("true"),
    });
    match f.session.run::<PluginRemove>(&st, args).await {
        Ok(r) => {
            let dropped: Vec<String> = r["unconfigured"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect();
            let note = if dropped.is_empty() {
                String::new()
            } else {
                format!(" It was also taken out of: {}.", esc(&dropped.join(", ")))
            };
            f.session.page(
                "Plugins",
                &format!(
                    r#"<section class="ok" role="status"><p>Removed plugin {}.{note}</p></section><p><a href="/plugins">Back to the plugins</a></p>"#,
                    field(&r, "removed")
                ),
            )
        }
        Err(e) => f.session.fail("Remove a plugin", &e),
    }
}

async fn install(State(st): State<AppState>, req: Request) -> Response {
    let up = match Upload::read(&st, req).await {
        Ok(u) => u,
        Err(r) => return r,
    };
    let s = &up.session;
    let title = "Install a plugin";
    let wasm = match up.require_file("wasm", title) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let manifest = match up.require_file("manifest", title) {
        Ok(b) => b,
        Err(r) => return r,
    };
    // Only JSON is read here; the operation's schema judges the manifest.
    let manifest: Value = match serde_json::from_slice(manifest) {
        Ok(m) => m,
        Err(e) => {
            let e = MemError::bad_request(format!("the manifest is not JSON: {e}"))
                .with_hint("choose the manifest.json that ships beside the .wasm")
                .with_details(json!({ "field": "manifest" }));
            return s.fail(title, &e);
        }
    };
    let args = json!({
        "manifest": manifest,
        "wasm_base64": base64::engine::general_purpose::STANDARD.encode(wasm),
        "replace": up.get("replace") == Some("true"),
    });
    match s.run::<PluginInstall>(&st, args).await {
        Ok(info) => {
            let body = format!(
                r#"<section class="ok" role="status"><p>Installed plugin {} {}; its digest matched. Grant what it requests below.</p></section>{}"#,
                field(&info["manifest"], "name"),
                field(&info["manifest"], "version"),
                plugin_card(s, &info)
            );
            s.page(title, &body)
        }
        Err(e) => s.fail(title, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_objects_read_as_pairs_and_empty_as_none() {
        assert_eq!(
            pairs(&json!({"timeout_ms": 5000, "trap": 2})),
            "timeout_ms: 5000 · trap: 2"
        );
        assert_eq!(pairs(&json!({})), "none");
        assert_eq!(pairs(&Value::Null), "none");
        assert_eq!(pairs(&json!({"<k>": "<v>"})), "&lt;k&gt;: &lt;v&gt;");
    }
}
