//! Task handoff operations: checkpoint (compare-and-swap on the task's
//! head), list tasks, list and get checkpoints, resume.
//!
//! A task lives at a scope path: a caller sees and checkpoints only the
//! tasks whose scope lies inside its paths; any other reads as not found.

use super::fields;
use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::handoff::doc::task_key;
use crate::handoff::{
    Checkpoint, CheckpointOutcome, Handoff, NewCheckpoint, ResumeResult, Task, replay_key,
};
use mem_core::hash::sha256_hex;
use mem_core::{MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `task.checkpoint`: an immutable handoff on the task's head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointTask {
    /// The task's key.
    #[schemars(schema_with = "task_key")]
    pub task: String,
    /// The handoff document (handoff.v1).
    pub handoff: Handoff,
    /// The task's current head (its `head_checkpoint_id`); required for
    /// every checkpoint but the first, and a stale one is a
    /// `checkpoint_conflict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub base_checkpoint_id: Option<String>,
    /// The folder the task belongs to, set by its first checkpoint
    /// (default: the caller's one path, else `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_path")]
    pub scope: Option<String>,
    #[schemars(schema_with = "fields::key")]
    pub idempotency_key: String,
}

impl Operation for CheckpointTask {
    const NAME: &'static str = "task.checkpoint";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Own;
    type Output = CheckpointOutcome;

    fn idempotency_key(&self) -> Option<&str> {
        Some(&self.idempotency_key)
    }

    fn replayed(out: &CheckpointOutcome) -> bool {
        out.replayed
    }

    fn run(self, c: &Caller<'_>) -> MemResult<CheckpointOutcome> {
        c.require(Scope::Write)?;
        let key = crate::door::checked_key(Some(&self.idempotency_key))?.unwrap_or_default();
        let replay = replay_key(&c.access.replay_identity(), key);
        let mut fingerprint = serde_json::to_value(&self)
            .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
        if let Some(o) = fingerprint.as_object_mut() {
            o.remove("idempotency_key");
        }
        let request_sha256 = sha256_hex(format!("task.checkpoint\n{fingerprint}").as_bytes());
        // A retry answers what the first request wrote, before anything
        // about the task's head is looked at again.
        if let Some((task, checkpoint)) = c.svc.checkpoint_replay(&replay, &request_sha256)? {
            c.object(Scope::Read, "task", &task.key, &task.scope)?;
            return Ok(CheckpointOutcome {
                replayed: true,
                task,
                checkpoint,
            });
        }
        self.handoff.check(&self.task)?;
        let existing = match c.svc.task(&self.task) {
            Ok(t) => Some(t),
            Err(e) if e.code == mem_core::ErrorCode::NotFound => None,
            Err(e) => return Err(e),
        };
        let scope = match (&self.scope, &existing) {
            (Some(s), _) => VPath::parse(s)?,
            (None, Some(t)) => t.scope.clone(),
            (None, None) => match c.access.paths() {
                [one] => one.clone(),
                _ => VPath::root(),
            },
        };
        if let Some(t) = &existing {
            c.object(Scope::Write, "task", &self.task, &t.scope)?;
        }
        c.access.may_write_at(&scope)?;
        let actor = c.actor(
            self.handoff.producer.agent.clone(),
            self.handoff.producer.session.clone(),
        );
        let new = NewCheckpoint {
            task: &self.task,
            scope,
            handoff: self.handoff.clone(),
            base: self.base_checkpoint_id.as_deref(),
            replay_key: replay,
            request_sha256,
        };
        let task_key = self.task.clone();
        c.svc.write_checkpoint(&new, &actor, &|t: &Task| {
            c.object(Scope::Write, "task", &task_key, &t.scope)
        })
    }
}

/// Most tasks one page lists.
pub const MAX_TASK_PAGE: usize = 1000;

/// `task.list`: the tasks the caller may see, by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasks {
    /// Only tasks whose scope lies under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_path")]
    pub scope: Option<String>,
    /// Most tasks, 1 to 1000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Continue after this task key (a page's `next_cursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub cursor: Option<String>,
}

/// A page of tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskPage {
    pub tasks: Vec<Task>,
    /// Pass back as `cursor` for the next page; absent on the last.
    pub next_cursor: Option<String>,
}

impl Operation for ListTasks {
    const NAME: &'static str = "task.list";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = TaskPage;

    fn run(self, c: &Caller<'_>) -> MemResult<TaskPage> {
        c.require(Scope::Read)?;
        let under = self.scope.as_deref().map(VPath::parse).transpose()?;
        let limit = self.limit.unwrap_or(100);
        if !(1..=MAX_TASK_PAGE).contains(&limit) {
            return Err(
                MemError::bad_request(format!("limit must be 1 to {MAX_TASK_PAGE}"))
                    .with_details(serde_json::json!({ "field": "limit" })),
            );
        }
        let keep = |t: &Task| {
            c.access.sees(&t.scope) && under.as_ref().is_none_or(|u| t.scope.is_within(u))
        };
        let (tasks, next_cursor) = c.svc.tasks(self.cursor.as_deref(), limit, &keep)?;
        Ok(TaskPage { tasks, next_cursor })
    }
}

impl Caller<'_> {
    /// A task the caller may see, else `not_found`.
    fn visible_task(&self, key: &str) -> MemResult<Task> {
        let hint = |e: MemError| {
            if e.code == mem_core::ErrorCode::NotFound {
                e.with_hint("list the tasks you may see with `mem-host tasks` (or mem_task_list)")
            } else {
                e
            }
        };
        let t = self
            .svc
            .task(key)
            .map_err(|e| hint(self.hide(e, "task", key)))?;
        self.object(Scope::Read, "task", key, &t.scope)
            .map_err(hint)?;
        Ok(t)
    }
}

/// Most checkpoints one page lists.
pub const MAX_CHECKPOINT_PAGE: usize = 100;

/// `task.checkpoints`: a task's checkpoints, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListCheckpoints {
    #[schemars(schema_with = "task_key")]
    pub task: String,
    /// Only checkpoints with a `seq` below this (a page's `next_before`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = fields::MAX_SAFE_INTEGER))]
    pub before: Option<u64>,
    /// Most checkpoints, 1 to 100 (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<usize>,
}

/// A page of checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointPage {
    pub task: Task,
    pub checkpoints: Vec<Checkpoint>,
    /// Pass back as `before` for older ones; absent on the last page.
    pub next_before: Option<u64>,
}

impl Operation for ListCheckpoints {
    const NAME: &'static str = "task.checkpoints";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = CheckpointPage;

    fn run(self, c: &Caller<'_>) -> MemResult<CheckpointPage> {
        let task = c.visible_task(&self.task)?;
        let limit = self.limit.unwrap_or(20);
        if !(1..=MAX_CHECKPOINT_PAGE).contains(&limit) {
            return Err(
                MemError::bad_request(format!("limit must be 1 to {MAX_CHECKPOINT_PAGE}"))
                    .with_details(serde_json::json!({ "field": "limit" })),
            );
        }
        let (checkpoints, next_before) = c.svc.checkpoints(&self.task, self.before, limit)?;
        Ok(CheckpointPage {
            task,
            checkpoints,
            next_before,
        })
    }
}

/// `task.checkpoint_get`: one checkpoint of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetCheckpoint {
    #[schemars(schema_with = "task_key")]
    pub task: String,
    /// The checkpoint id (`ckpt_...`).
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
}

impl Operation for GetCheckpoint {
    const NAME: &'static str = "task.checkpoint_get";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = Checkpoint;

    fn run(self, c: &Caller<'_>) -> MemResult<Checkpoint> {
        c.visible_task(&self.task)?;
        c.svc.checkpoint(&self.task, &self.id)
    }
}

/// `task.resume`: the head (or a named) handoff with its references
/// resolved and a context pack for what comes next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeTask {
    #[schemars(schema_with = "task_key")]
    pub task: String,
    /// Resume at this checkpoint instead of the head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub checkpoint_id: Option<String>,
    /// What the context pack is for (default: the handoff's goal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub focus: Option<String>,
    /// Hard budget of the context pack's texts, in characters (default 8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_chars: Option<usize>,
}

impl Operation for ResumeTask {
    const NAME: &'static str = "task.resume";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = ResumeResult;

    fn run(self, c: &Caller<'_>) -> MemResult<ResumeResult> {
        let task = c.visible_task(&self.task)?;
        let id = self
            .checkpoint_id
            .as_deref()
            .unwrap_or(&task.head_checkpoint_id)
            .to_string();
        let checkpoint = c.svc.checkpoint(&self.task, &id)?;
        c.resume(task, checkpoint, self.focus, self.max_chars)
    }
}
