//! Task handoff commands: `checkpoint` (and `checkpoint get`), `tasks`,
//! `checkpoints`, `resume`. The handoff document is sent as read, through
//! the operation's schema, so a bad one is the same `bad_handoff` naming
//! the same field on every surface.

use super::output::{Out, preview, read_text};
use crate::client::Client;
use clap::{Args, Subcommand};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::handoff::{CheckpointOutcome, ResumeResult};
use mem_service::ops::tasks::{
    CheckpointPage, GetCheckpoint, ListCheckpoints, ListTasks, ResumeTask, TaskPage,
};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CheckpointArgs {
    #[command(subcommand)]
    pub get: Option<CheckpointCommand>,
    /// The task's key.
    #[arg(long, value_name = "KEY", required = true)]
    pub task: Option<String>,
    /// The handoff document (handoff.v1 JSON), or `-` for stdin.
    #[arg(long, value_name = "FILE", required = true)]
    pub input: Option<PathBuf>,
    #[arg(long, value_name = "K", required = true)]
    pub idempotency_key: Option<String>,
    /// The task's current head; required after the first checkpoint.
    #[arg(long = "base", value_name = "ID")]
    pub base: Option<String>,
    /// The folder the task belongs to (first checkpoint only).
    #[arg(long, value_name = "P")]
    pub scope: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// Show one checkpoint of a task.
    Get { task: String, id: String },
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    /// Only tasks under this folder.
    #[arg(long, value_name = "P")]
    pub scope: Option<String>,
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Continue after this task key.
    #[arg(long, value_name = "KEY")]
    pub cursor: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckpointsArgs {
    pub task: String,
    /// Only checkpoints older than this seq (the previous page's next_before).
    #[arg(long, value_name = "N")]
    pub before: Option<u64>,
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    pub task: String,
    /// Resume at this checkpoint instead of the head.
    #[arg(long, value_name = "ID")]
    pub checkpoint: Option<String>,
    /// What the context pack is for (default: the goal).
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// Hard budget of the context pack's texts.
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
}

/// The handoff document in `path`, as JSON (not yet checked).
fn read_handoff(path: &PathBuf) -> MemResult<Value> {
    let text = if path.as_os_str() == "-" {
        read_text(&mut std::io::stdin(), "stdin")?
    } else {
        let mut f = std::fs::File::open(path)
            .map_err(|e| MemError::io(&format!("cannot open {}", path.display()), &e))?;
        read_text(&mut f, &path.display().to_string())?
    };
    serde_json::from_str(&text).map_err(|e| {
        MemError::new(
            ErrorCode::BadHandoff,
            format!("the handoff document is not JSON: {e}"),
        )
        .with_hint("write the handoff as one JSON object (schemas/handoff.v1.json)")
        .with_details(json!({ "field": "/handoff" }))
    })
}

pub fn checkpoint(c: &Client, out: &Out, a: CheckpointArgs) -> MemResult<()> {
    if let Some(CheckpointCommand::Get { task, id }) = a.get {
        let ck = c.run(GetCheckpoint { task, id })?.value;
        return out.emit(&ck, |k| {
            format!(
                "{} #{} of {} at {}\ngoal: {}",
                k.id, k.seq, k.task, k.created_at, k.handoff.goal
            )
        });
    }
    let (Some(task), Some(input), Some(key)) = (a.task, a.input, a.idempotency_key) else {
        return Err(MemError::bad_request(
            "checkpoint needs --task, --input and --idempotency-key",
        ));
    };
    let mut req = json!({
        "task": task,
        "handoff": read_handoff(&input)?,
        "idempotency_key": key,
    });
    if let Some(base) = a.base {
        req["base_checkpoint_id"] = base.into();
    }
    if let Some(scope) = a.scope {
        req["scope"] = scope.into();
    }
    let done = c.run_json("task.checkpoint", &req)?;
    let o: CheckpointOutcome = serde_json::from_value(done.value)
        .map_err(|e| MemError::internal(format!("cannot read the answer: {e}")))?;
    out.emit(&o, |o| {
        format!(
            "{} checkpoint {} (#{}) of task {} at {}",
            if o.replayed { "replayed" } else { "wrote" },
            o.checkpoint.id,
            o.checkpoint.seq,
            o.task.key,
            o.task.scope
        )
    })
}

pub fn tasks(c: &Client, out: &Out, a: TasksArgs) -> MemResult<()> {
    let page = c
        .run(ListTasks {
            scope: a.scope,
            limit: a.limit,
            cursor: a.cursor,
        })?
        .value;
    out.emit(&page, |p: &TaskPage| {
        let mut lines: Vec<String> = p
            .tasks
            .iter()
            .map(|t| {
                format!(
                    "{}  {}  #{}  {}  {}",
                    t.key,
                    t.scope,
                    t.checkpoints,
                    t.updated_at.format("%Y-%m-%d %H:%M"),
                    preview(&t.goal, 60)
                )
            })
            .collect();
        if lines.is_empty() {
            lines.push("no tasks".into());
        }
        if let Some(next) = &p.next_cursor {
            lines.push(format!("more: --cursor {next}"));
        }
        lines.join("\n")
    })
}

pub fn checkpoints(c: &Client, out: &Out, a: CheckpointsArgs) -> MemResult<()> {
    let page = c
        .run(ListCheckpoints {
            task: a.task,
            before: a.before,
            limit: a.limit,
        })?
        .value;
    out.emit(&page, |p: &CheckpointPage| {
        let mut lines: Vec<String> = p
            .checkpoints
            .iter()
            .map(|k| {
                format!(
                    "#{}  {}  {}  {}",
                    k.seq,
                    k.id,
                    k.created_at.format("%Y-%m-%d %H:%M"),
                    preview(&k.handoff.goal, 60)
                )
            })
            .collect();
        if let Some(n) = p.next_before {
            lines.push(format!("older: --before {n}"));
        }
        lines.join("\n")
    })
}

pub fn resume(c: &Client, out: &Out, a: ResumeArgs) -> MemResult<()> {
    let r = c
        .run(ResumeTask {
            task: a.task,
            checkpoint_id: a.checkpoint,
            focus: a.focus,
            max_chars: a.max_chars,
        })?
        .value;
    out.emit(&r, human_resume)
}

fn human_resume(r: &ResumeResult) -> String {
    let h = &r.checkpoint.handoff;
    let mut s = format!(
        "task {} ({}), checkpoint #{} {}{}\ngoal: {}\n",
        r.task.key,
        r.task.scope,
        r.checkpoint.seq,
        r.checkpoint.id,
        if r.is_head { " (head)" } else { "" },
        h.goal
    );
    if !h.progress.is_empty() {
        s.push_str(&format!("progress: {}\n", h.progress));
    }
    for (title, list) in [
        ("decisions", &h.decisions),
        ("done", &h.completed_steps),
        ("next", &h.next_steps),
        ("blockers", &h.blockers),
    ] {
        if !list.is_empty() {
            s.push_str(&format!("{title}:\n"));
            for item in list {
                s.push_str(&format!("  - {item}\n"));
            }
        }
    }
    for r in &r.references {
        s.push_str(&format!(
            "ref {} ({}, sha256 {}): {}\n",
            r.uri,
            r.path,
            &r.content_sha256[..12.min(r.content_sha256.len())],
            preview(r.excerpt.as_deref().unwrap_or(""), 60)
        ));
    }
    for m in &r.missing {
        s.push_str(&format!("missing {}: {}\n", m.uri, m.reason));
    }
    for e in &r.external {
        s.push_str(&format!("external {}\n", e.uri));
    }
    match (&r.context, &r.context_note) {
        (Some(pack), _) => s.push_str(&super::recall::human_pack(pack)),
        (None, Some(note)) => s.push_str(note),
        (None, None) => {}
    }
    s.trim_end().to_string()
}
