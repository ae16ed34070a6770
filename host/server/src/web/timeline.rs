//! The timeline: a period's files and memories by month, with counts and
//! each month's earliest items linking to their pages. The answer is the
//! door's `timeline` operation, as on the other surfaces.

use super::Session;
use super::html::{arg, esc, input, qp, select, text};
use crate::AppState;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use mem_service::ops::timeline::Timeline;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/timeline", get(timeline))
}

async fn timeline(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let period = arg(&q, "period").unwrap_or_default();
    let kind = arg(&q, "type").unwrap_or_else(|| "any".into());
    let source = arg(&q, "source").unwrap_or_else(|| "all".into());
    let form = format!(
        r#"<form method="get" action="/timeline" class="filters">{}{}{}{}<button type="submit">Show</button></form>"#,
        input(
            "period",
            "Period",
            &period,
            r#"placeholder="2012 or 2012-03..2012-08" required autofocus"#
        ),
        input(
            "path",
            "Folder",
            &arg(&q, "path").unwrap_or_default(),
            r#"placeholder="/""#
        ),
        select(
            "source",
            "Items",
            &[
                ("all", "Files and memories"),
                ("file", "Files"),
                ("memory", "Memories")
            ],
            &source
        ),
        select(
            "type",
            "File type",
            &[
                ("any", "Any"),
                ("image", "Images"),
                ("doc", "Documents"),
                ("audio", "Audio")
            ],
            &kind
        ),
    );
    if period.is_empty() {
        return s.page("Timeline", &form);
    }
    let mut args = Map::new();
    args.insert("period".into(), period.into());
    if let Some(p) = arg(&q, "path") {
        args.insert("path".into(), p.into());
    }
    if source != "all" {
        args.insert("source".into(), source.into());
    }
    if kind != "any" {
        args.insert("type".into(), kind.into());
    }
    let t = match s.run::<Timeline>(&st, Value::Object(args)).await {
        Ok(t) => t,
        Err(e) => return s.fail("Timeline", &e),
    };
    let count = |c: &Value, k: &str| c[k].as_u64().unwrap_or(0);
    let mut months = String::new();
    for m in t["months"].as_array().into_iter().flatten() {
        let c = &m["counts"];
        let mut samples = String::new();
        for x in m["samples"].as_array().into_iter().flatten() {
            let id = qp(&text(&x["id"]));
            let href = match x["record"].as_str() {
                Some("file") => format!("/drive/file?target={id}"),
                _ => format!("/memories/{id}"),
            };
            let _ = write!(
                samples,
                r#"<li><a href="{href}">{title}</a> <span class="meta">{time} · {source} · {kind}</span></li>"#,
                title = esc(&text(&x["title"])),
                time = esc(&text(&x["time"])),
                source = esc(&text(&x["time_source"])),
                kind = esc(&text(&x["kind"])),
            );
        }
        let _ = write!(
            months,
            r#"<tr data-month="{month}"><th scope="row">{month}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><ul class="samples">{samples}</ul></td></tr>"#,
            count(c, "images"),
            count(c, "documents"),
            count(c, "audio"),
            count(c, "other_files"),
            count(c, "memories"),
            count(c, "total"),
            month = esc(&text(&m["month"])),
        );
    }
    let totals = &t["totals"];
    let body = if months.is_empty() {
        format!(
            r#"{form}<p id="timeline-empty">Nothing you may see is placed in {} to {}.</p>"#,
            esc(&text(&t["period"]["from"])),
            esc(&text(&t["period"]["to"]))
        )
    } else {
        format!(
            r#"{form}<p class="meta">{from} to {to} under {path}: <strong id="timeline-total">{total}</strong> items{cut}.</p><table id="timeline"><thead><tr><th scope="col">Month</th><th scope="col">Images</th><th scope="col">Documents</th><th scope="col">Audio</th><th scope="col">Other files</th><th scope="col">Memories</th><th scope="col">Total</th><th scope="col">Earliest</th></tr></thead><tbody>{months}</tbody></table>"#,
            from = esc(&text(&t["period"]["from"])),
            to = esc(&text(&t["period"]["to"])),
            path = esc(&text(&t["path"])),
            total = count(totals, "total"),
            cut = if t["samples_truncated"] == true {
                " (some months show no samples: the answer's bound)"
            } else {
                ""
            },
        )
    };
    s.page("Timeline", &body)
}
