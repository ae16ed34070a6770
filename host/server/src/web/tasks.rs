//! Tasks: the tasks this token may see, a task's checkpoint history, and
//! the preview of what resuming it hands an agent; bundles below them
//! ([`super::bundles`]).

use super::Session;
use super::html::{esc, field, next_link, qp, text};
use crate::AppState;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use mem_service::ops::tasks::{ListCheckpoints, ListTasks, ResumeTask};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt::Write;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/tasks", get(list))
        .route("/tasks/task", get(show))
}

async fn list(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut args = Map::new();
    args.insert("limit".into(), 50.into());
    if let Some(c) = q.get("cursor").filter(|c| !c.is_empty()) {
        args.insert("cursor".into(), c.clone().into());
    }
    let page = match s.run::<ListTasks>(&st, Value::Object(args)).await {
        Ok(p) => p,
        Err(e) => return s.fail("Tasks", &e),
    };
    let mut rows = String::new();
    for t in page["tasks"].as_array().into_iter().flatten() {
        let _ = write!(
            rows,
            r#"<tr><td><a href="/tasks/task?key={}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td><time>{}</time></td></tr>"#,
            esc(&qp(&text(&t["key"]))),
            field(t, "key"),
            field(t, "goal"),
            field(t, "scope"),
            field(t, "checkpoints"),
            field(t, "updated_at"),
        );
    }
    let body = if rows.is_empty() {
        r#"<p class="empty">No tasks yet: agents create them with their first checkpoint.</p>"#
            .to_string()
    } else {
        format!(
            r#"<div class="scroll"><table><caption>Tasks</caption><thead><tr><th scope="col">Task</th><th scope="col">Goal</th><th scope="col">Folder</th><th scope="col">Checkpoints</th><th scope="col">Updated</th></tr></thead><tbody>{rows}</tbody></table></div>{}"#,
            next_link("/tasks", &page["next_cursor"])
        )
    };
    s.page("Tasks", &format!("{body}{}", super::bundles::section(&s)))
}

fn bullets(v: &Value) -> String {
    let items: String = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| format!("<li>{}</li>", esc(&text(x))))
        .collect();
    if items.is_empty() {
        "<p class=\"empty\">None.</p>".into()
    } else {
        format!("<ul>{items}</ul>")
    }
}

async fn show(
    s: Session,
    State(st): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let key = q.get("key").cloned().unwrap_or_default();
    let page = match s
        .run::<ListCheckpoints>(&st, json!({ "task": key, "limit": 50 }))
        .await
    {
        Ok(p) => p,
        Err(e) => return s.fail("Task", &e),
    };
    let resume = match s
        .run::<ResumeTask>(&st, json!({ "task": key, "max_chars": 2000 }))
        .await
    {
        Ok(r) => r,
        Err(e) => return s.fail("Task", &e),
    };
    let mut history = String::new();
    for c in page["checkpoints"].as_array().into_iter().flatten() {
        let _ = write!(
            history,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><time>{}</time></td></tr>",
            field(c, "seq"),
            field(c, "id"),
            field(&c["handoff"], "progress"),
            field(c, "created_at"),
        );
    }
    let h = &resume["checkpoint"]["handoff"];
    let refs: String = resume["references"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "<li>{} ({}): {}</li>",
                field(r, "uri"),
                field(r, "kind"),
                field(r, "excerpt")
            )
        })
        .chain(resume["missing"].as_array().into_iter().flatten().map(|m| {
            format!(
                "<li>{} missing: {}</li>",
                field(m, "uri"),
                field(m, "reason")
            )
        }))
        .collect();
    let body = format!(
        r#"<p class="meta">Goal: {goal} · folder {scope}</p>
<section aria-labelledby="resume-h"><h2 id="resume-h">Resume preview</h2>
<p>From checkpoint {cp} (head: {head}). Progress: {progress}</p>
<h3>Next steps</h3>{next}<h3>Blockers</h3>{blockers}<h3>Decisions</h3>{decisions}
<h3>References</h3><ul>{refs}</ul><p class="meta">{note}</p></section>
<h2>Checkpoints, newest first</h2><div class="scroll"><table><thead><tr><th scope="col">Seq</th><th scope="col">Checkpoint</th><th scope="col">Progress</th><th scope="col">Written</th></tr></thead><tbody>{history}</tbody></table></div>"#,
        goal = field(&page["task"], "goal"),
        scope = field(&page["task"], "scope"),
        cp = field(&resume["checkpoint"], "id"),
        head = field(&resume, "is_head"),
        progress = field(h, "progress"),
        next = bullets(&h["next_steps"]),
        blockers = bullets(&h["blockers"]),
        decisions = bullets(&h["decisions"]),
        note = field(&resume, "context_note"),
    );
    s.page(&format!("Task {key}"), &body)
}
