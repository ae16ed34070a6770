//! The owner's controls: plugins (world, version, digest, requested and
//! granted capabilities, limits, failures; grant and revoke) and tokens
//! (scopes, paths, expiry, today's calls; create, with the secret shown
//! once, and revoke).

use super::html::{esc, field, input, qp, text};
use super::{Session, WebForm, see};
use crate::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use mem_service::ops::admin::{TokenList, TokenRevoke};
use mem_service::ops::plugins::{PluginGrant, PluginList, PluginRevoke};
use mem_service::tokens::TokenRequest;
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/plugins", get(plugins))
        .route("/plugins/grant", post(grant))
        .route("/plugins/revoke", post(revoke))
        .route("/tokens", get(tokens).post(create_token))
        .route("/tokens/revoke", post(revoke_token))
}

fn joined(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".into())
}

async fn plugins(s: Session, State(st): State<AppState>) -> Response {
    let list = match s.run::<PluginList>(&st, json!({})).await {
        Ok(l) => l,
        Err(e) => return s.fail("Plugins", &e),
    };
    let mut out = String::new();
    for p in list.as_array().into_iter().flatten() {
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
            out,
            r#"<section class="plugin"><h2>{n} {v}</h2><dl><dt>World</dt><dd>{w}</dd><dt>Digest</dt><dd>{d}</dd><dt>Enabled</dt><dd>{en}</dd><dt>Requested</dt><dd>{rq}</dd><dt>Granted</dt><dd>{gr}</dd><dt>Limits</dt><dd>{lim}</dd><dt>Calls</dt><dd>{calls}</dd><dt>Failures</dt><dd>{fails}</dd></dl><div class="actions">{actions}</div></section>"#,
            n = esc(&name),
            v = field(m, "version"),
            w = field(m, "world"),
            d = field(m, "sha256"),
            en = field(p, "enabled"),
            rq = esc(&joined(&p["requested"])),
            gr = esc(&joined(&p["granted"])),
            lim = esc(&p["limits"].to_string()),
            calls = field(&p["failures"], "calls"),
            fails = field(&p["failures"], "total"),
        );
    }
    if out.is_empty() {
        out = r#"<p class="empty">No plugins are installed.</p>"#.into();
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

fn token_table(s: &Session, list: &Value) -> String {
    let mut rows = String::new();
    for t in list.as_array().into_iter().flatten() {
        let live = t["revoked_at"].is_null();
        let action = if live {
            s.button("/tokens/revoke", "Revoke", &[("id", &text(&t["id"]))])
        } else {
            format!("revoked {}", field(t, "revoked_at"))
        };
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{action}</td></tr>",
            field(t, "name"),
            field(t, "id"),
            esc(&joined(&t["scopes"])),
            esc(&joined(&t["paths"])),
            field(t, "expires_at"),
            field(t, "calls_today"),
            t["quota_per_day"]
                .as_u64()
                .map(|q| format!(" / {q}"))
                .unwrap_or_default(),
        );
    }
    format!(
        r#"<div class="scroll"><table><caption>Tokens (never their secrets)</caption><thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Scopes</th><th scope="col">Folders</th><th scope="col">Expires</th><th scope="col">Calls today</th><th scope="col"></th></tr></thead><tbody>{rows}</tbody></table></div>"#
    )
}

fn token_form(s: &Session) -> String {
    format!(
        r#"<section aria-labelledby="tok-h"><h2 id="tok-h">Create a token</h2><form method="post" action="/tokens" class="stack" id="new-token">{}{}{}{}{}{}<button type="submit">Create</button></form></section>"#,
        s.csrf_field(),
        input("name", "Name", "", "required"),
        input(
            "scopes",
            "Scopes (comma-separated: search, read, write, delete, admin)",
            "search,read",
            "required"
        ),
        input("paths", "Folders (comma-separated, empty: all)", "", ""),
        input(
            "expires",
            "Expires (30d, 12h, or RFC 3339; empty: never)",
            "",
            ""
        ),
        input("quota", "Calls per day (empty: unlimited)", "", ""),
    )
}

async fn tokens(s: Session, State(st): State<AppState>) -> Response {
    let list = match s.run::<TokenList>(&st, json!({})).await {
        Ok(l) => l,
        Err(e) => return s.fail("Tokens", &e),
    };
    s.page(
        "Tokens",
        &format!("{}{}", token_table(&s, &list), token_form(&s)),
    )
}

fn csv(v: Option<String>) -> Value {
    v.map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(Value::from)
            .collect()
    })
    .unwrap_or_else(|| Value::Array(vec![]))
}

async fn create_token(State(st): State<AppState>, f: WebForm) -> Response {
    let s = &f.session;
    let mut args = json!({
        "name": f.get("name").unwrap_or(""),
        "scopes": csv(f.text("scopes")),
        "paths": csv(f.text("paths")),
    });
    for k in ["expires", "quota"] {
        if let Some(v) = f.text(k) {
            args[k] = v.into();
        }
    }
    let created = match s.run::<TokenRequest>(&st, args).await {
        Ok(c) => c,
        Err(e) => return s.fail("Create a token", &e),
    };
    // The only time the secret is visible: shown here, never stored.
    let list = s
        .run::<TokenList>(&st, json!({}))
        .await
        .unwrap_or(Value::Null);
    let body = format!(
        r#"<section class="ok" role="status"><p>Created token {}. Its secret is shown once; store it now:</p><pre id="secret">{}</pre></section>{}{}"#,
        field(&created["token"], "name"),
        field(&created, "secret"),
        token_table(s, &list),
        token_form(s)
    );
    s.page("Tokens", &body)
}

async fn revoke_token(State(st): State<AppState>, f: WebForm) -> Response {
    let id = f.get("id").unwrap_or("").to_string();
    match f.session.run::<TokenRevoke>(&st, json!({ "id": id })).await {
        Ok(_) => see(&format!("/tokens#{}", qp(&id))),
        Err(e) => f.session.fail("Revoke", &e),
    }
}
