//! Status: the processing queue, the index, plugins, budgets and usage.

use super::Session;
use super::html::esc;
use crate::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use mem_service::ops::govern::Budgets;
use mem_service::ops::recall::Status;
use serde_json::{Value, json};
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/status", get(status))
}

/// A JSON document as nested definition lists.
fn tree(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut out = String::from("<dl>");
            for (k, v) in o {
                let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), tree(v));
            }
            out.push_str("</dl>");
            out
        }
        Value::Array(a) if a.is_empty() => "none".into(),
        Value::Array(a) => {
            let items: String = a.iter().map(|x| format!("<li>{}</li>", tree(x))).collect();
            format!("<ul>{items}</ul>")
        }
        other => esc(&super::html::text(other)),
    }
}

async fn status(s: Session, State(st): State<AppState>) -> Response {
    let status = match s.run::<Status>(&st, json!({})).await {
        Ok(v) => v,
        Err(e) => return s.fail("Status", &e),
    };
    let budgets = if s.can(mem_service::access::Scope::Admin) {
        match s.run::<Budgets>(&st, json!({})).await {
            Ok(b) => format!("<h2>Budgets</h2>{}", tree(&b)),
            Err(e) => super::html::error_box(&e),
        }
    } else {
        String::new()
    };
    s.page("Status", &format!("{}{budgets}", tree(&status)))
}
