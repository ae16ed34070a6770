//! Search and context: a query box with filters, hits with their lane
//! ranks, and a context pack shown as its lanes with citations linking to
//! their sources, what the budget omitted, and the trace.

use super::html::{arg, esc, field, input, qp, text};
use super::{Session, num_or_text};
use crate::AppState;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use mem_service::recall::{ContextRequest, SearchQuery};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/search", get(search))
        .route("/context", get(context))
}

/// The page of a hit's or citation's source.
fn source_href(item: &Value) -> String {
    let id = qp(&text(&item["id"]));
    match item["source"].as_str() {
        Some("file") => format!("/drive/file?target={id}"),
        _ => format!("/memories/{id}"),
    }
}

async fn search(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let query = arg(&q, "q").unwrap_or_default();
    let form = format!(
        r#"<form method="get" action="/search" class="filters" role="search">{}{}{}<button type="submit">Search</button></form>"#,
        input("q", "Query", &query, r#"type="search" autofocus"#),
        input(
            "path",
            "Folder",
            &arg(&q, "path").unwrap_or_default(),
            r#"placeholder="/""#
        ),
        input(
            "kinds",
            "Types (comma-separated)",
            &arg(&q, "kinds").unwrap_or_default(),
            ""
        ),
    );
    if query.is_empty() {
        return s.page("Search", &form);
    }
    let mut args = Map::new();
    args.insert("query".into(), query.clone().into());
    if let Some(p) = arg(&q, "path") {
        args.insert("path".into(), p.into());
    }
    if let Some(k) = arg(&q, "kinds") {
        args.insert(
            "kinds".into(),
            k.split(',').map(|x| Value::from(x.trim())).collect(),
        );
    }
    let r = match s.run::<SearchQuery>(&st, Value::Object(args)).await {
        Ok(r) => r,
        Err(e) => return s.fail("Search", &e),
    };
    let mut hits = String::new();
    for h in r["hits"].as_array().into_iter().flatten() {
        let _ = write!(
            hits,
            r#"<li class="hit"><a href="{href}">{cite}</a> <span class="meta">{src} · {kind} · {path} · score {score} · lexical #{lex} · semantic #{sem}</span><p>{ex}</p></li>"#,
            href = esc(&source_href(h)),
            cite = field(h, "citation"),
            src = field(h, "source"),
            kind = field(h, "kind"),
            path = field(h, "path"),
            score = field(h, "score"),
            lex = field(h, "lexical_rank"),
            sem = field(h, "semantic_rank"),
            ex = field(h, "excerpt"),
        );
    }
    let hits = if hits.is_empty() {
        r#"<p class="empty">No hits.</p>"#.to_string()
    } else {
        format!(r#"<ol class="hits">{hits}</ol>"#)
    };
    let body = format!(
        r#"{form}<p class="meta">{lanes} · {took} ms · <a href="/context?q={q}">Context pack for this query</a></p>{warn}{hits}"#,
        lanes = lanes(&r["lanes"]),
        took = field(&r, "took_ms"),
        q = esc(&qp(&query)),
        warn = warnings(&r["warnings"]),
    );
    s.page("Search", &body)
}

fn lanes(v: &Value) -> String {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            format!(
                "{} lane: {} ({} candidates)",
                field(l, "lane"),
                field(l, "status"),
                field(l, "candidates")
            )
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn warnings(v: &Value) -> String {
    let items: String = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| format!("<li>{}</li>", esc(&text(w))))
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!(r#"<ul class="warnings">{items}</ul>"#)
    }
}

/// One lane of a pack: its items, each citation linking to its source.
fn pack_lane(title: &str, items: &Value) -> String {
    let mut out = String::new();
    for it in items.as_array().into_iter().flatten() {
        let _ = write!(
            out,
            r#"<li><a class="cite" href="{href}">{cite}</a> <span class="meta">{kind} · {chars} chars · {reason}</span><p>{text}</p></li>"#,
            href = esc(&source_href(it)),
            cite = field(it, "citation"),
            kind = field(it, "kind"),
            chars = field(it, "chars"),
            reason = field(it, "reason"),
            text = field(it, "text"),
        );
    }
    if out.is_empty() {
        return String::new();
    }
    format!(
        r#"<section class="lane"><h2>{}</h2><ol>{out}</ol></section>"#,
        esc(title)
    )
}

async fn context(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let query = arg(&q, "q").unwrap_or_default();
    let budget = arg(&q, "max_chars").unwrap_or_else(|| "4000".into());
    let form = format!(
        r#"<form method="get" action="/context" class="filters" role="search">{}{}{}<button type="submit">Build the pack</button></form>"#,
        input("q", "Question or task", &query, r#"type="search""#),
        input(
            "scope",
            "Folder",
            &arg(&q, "scope").unwrap_or_default(),
            r#"placeholder="/""#
        ),
        input(
            "max_chars",
            "Budget (characters)",
            &budget,
            r#"inputmode="numeric""#
        ),
    );
    if query.is_empty() {
        return s.page("Context pack", &form);
    }
    let mut args = Map::new();
    args.insert("query".into(), query.into());
    args.insert("max_chars".into(), num_or_text(&budget));
    if let Some(p) = arg(&q, "scope") {
        args.insert("scope".into(), p.into());
    }
    let p = match s.run::<ContextRequest>(&st, Value::Object(args)).await {
        Ok(p) => p,
        Err(e) => return s.fail("Context pack", &e),
    };
    let mut lanes_html = String::new();
    for (key, title) in [
        ("must", "Must"),
        ("should", "Should"),
        ("context", "Context"),
        ("provisional", "Provisional"),
        ("conflict", "In conflict"),
    ] {
        lanes_html.push_str(&pack_lane(title, &p[key]));
    }
    if lanes_html.is_empty() {
        lanes_html = r#"<p class="empty">Nothing relevant was found.</p>"#.into();
    }
    let omitted: String = p["omitted"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            format!(
                "<li>{} ({} lane, {} chars): {}</li>",
                field(o, "citation"),
                field(o, "lane"),
                field(o, "chars"),
                field(o, "reason")
            )
        })
        .collect();
    let omitted = if omitted.is_empty() {
        String::new()
    } else {
        format!("<h2>Omitted for the budget</h2><ul>{omitted}</ul>")
    };
    let t = &p["trace"];
    let hidden: String = t["hidden_by_filter"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            format!(
                "<li>{} hidden by {}</li>",
                field(h, "citation"),
                field(h, "filter")
            )
        })
        .collect();
    let rejected: String = t["rejected_by_gate"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "<li>{} rejected by the read gate: {} — {}</li>",
                field(r, "citation"),
                field(r, "rule"),
                field(r, "detail")
            )
        })
        .collect();
    let period = match t["query"]["period"]["text"].as_str() {
        Some(p) => format!(
            "<p>The query names the period “{}” ({} to {}).</p>",
            esc(p),
            field(&t["query"]["period"], "from"),
            field(&t["query"]["period"], "until")
        ),
        None => String::new(),
    };
    let body = format!(
        r#"{form}<p class="meta">{used} of {max} characters used · {lanes}</p>{warn}{lanes_html}{omitted}
<details class="trace"><summary>Trace</summary>{period}<p>{before} candidates before filters, {after} after; {packed} packed, {om} omitted.</p><ul>{hidden}{rejected}</ul></details>"#,
        used = field(&p, "used_chars"),
        max = field(&p, "max_chars"),
        lanes = lanes(&t["lanes"]),
        warn = warnings(&p["warnings"]),
        before = field(t, "candidates_before_filters"),
        after = field(t, "candidates_after_filters"),
        packed = field(t, "packed"),
        om = field(t, "omitted"),
    );
    s.page("Context pack", &body)
}
