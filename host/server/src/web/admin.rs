//! The owner's tokens: scopes, paths, expiry and today's calls; create
//! (the secret shown once) and revoke. Plugins are [`super::plugins`].

use super::html::{esc, field, input, qp, text};
use super::{Session, WebForm, see};
use crate::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use mem_service::ops::admin::{TokenList, TokenRevoke};
use mem_service::tokens::TokenRequest;
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/tokens", get(tokens).post(create_token))
        .route("/tokens/revoke", post(revoke_token))
}

fn joined(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".into())
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
