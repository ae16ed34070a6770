//! Tasks and their checkpoints: how one agent hands a task to another.
//!
//! A task is a key with a scope path and a head; a checkpoint is an
//! immutable handoff document chained to the head it was written on. The
//! next checkpoint names that head as its `base_checkpoint_id`, and the
//! head moves only by a conditional batch on the task record, so two agents
//! writing at once cannot both win: the loser gets `checkpoint_conflict`
//! with the head to resume from. Retries are safe the way `remember`'s are:
//! the idempotency record is written in the same batch as the checkpoint.

pub mod doc;
mod resume;

pub use doc::{HANDOFF_VERSION, Handoff, Producer, Reference};
pub use resume::{MissingReference, ResolvedReference, ResumeResult};

use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::records::{encode, load, push_event, transact};
use mem_core::hash::sha256_hex;
use mem_core::id::new_id;
use mem_core::store::{Batch, Durability, Scan, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Prefix of checkpoint ids.
pub const CHECKPOINT: &str = "ckpt";

/// A task: its scope and the head of its checkpoint chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    pub key: String,
    /// Who may see and checkpoint it: callers whose paths hold this folder.
    pub scope: VPath,
    /// The head checkpoint's goal.
    pub goal: String,
    pub head_checkpoint_id: String,
    /// Checkpoints written so far (the head's `seq`).
    pub checkpoints: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Who wrote the head (actor label).
    pub updated_by: String,
}

/// One immutable checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Checkpoint {
    /// `ckpt_...`
    pub id: String,
    pub task: String,
    /// 1 for the first checkpoint of the task, then 2, 3, ...
    pub seq: u64,
    /// The head it was written on (absent for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_checkpoint_id: Option<String>,
    pub handoff: Handoff,
    /// SHA-256 of the handoff as stored (canonical JSON).
    pub handoff_sha256: String,
    /// The host's time of the write.
    pub created_at: Timestamp,
    /// Who wrote it, as the host knows it (the token, and the agent's claim).
    pub written_by: Actor,
}

/// What `task.checkpoint` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointOutcome {
    /// True when this answers a retry of an earlier request with the same key.
    pub replayed: bool,
    pub task: Task,
    pub checkpoint: Checkpoint,
}

/// A checkpoint to write (checked by the caller's operation).
#[derive(Debug, Clone)]
pub(crate) struct NewCheckpoint<'a> {
    pub task: &'a str,
    pub scope: VPath,
    pub handoff: Handoff,
    pub base: Option<&'a str>,
    /// The idempotency record's key (already per caller).
    pub replay_key: String,
    pub request_sha256: String,
}

/// The kept link from an idempotency key to the checkpoint it wrote.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CheckpointReplay {
    request_sha256: String,
    task: String,
    checkpoint_id: String,
}

fn seq_key(task: &str, seq: u64) -> String {
    format!("{task}\0{seq:016}")
}

fn id_key(id: &str) -> String {
    format!("#{id}")
}

/// Where a caller's checkpoint idempotency key is kept: per caller, hashed.
pub(crate) fn replay_key(who: &str, key: &str) -> String {
    format!(
        "checkpoint:{}",
        sha256_hex(format!("{who}\0{key}").as_bytes())
    )
}

/// The conflict a stale (or missing, or superfluous) base gets.
fn conflict(task: &str, head: Option<&str>, base: Option<&str>) -> MemError {
    let message = match (head, base) {
        (Some(h), Some(b)) => format!("task {task:?} moved on: its head is {h}, not {b}"),
        (Some(h), None) => format!(
            "task {task:?} already has checkpoints (head {h}); name it as base_checkpoint_id"
        ),
        (None, _) => {
            format!("task {task:?} has no checkpoint yet, so there is no base to write on")
        }
    };
    MemError::new(ErrorCode::CheckpointConflict, message)
        .with_hint(match head {
            Some(_) => "resume the task at head_checkpoint_id, fold its handoff into yours, and checkpoint again with that base",
            None => "leave base_checkpoint_id out for the first checkpoint of a task",
        })
        .with_details(json!({
            "task": task,
            "head_checkpoint_id": head,
            "base_checkpoint_id": base,
        }))
}

impl Service {
    pub(crate) fn task(&self, key: &str) -> MemResult<Task> {
        load::<Task>(self.store(), Table::Tasks, key)?
            .map(|s| s.value)
            .ok_or_else(|| MemError::not_found("task", key))
    }

    /// A checkpoint of `task` by id.
    pub(crate) fn checkpoint(&self, task: &str, id: &str) -> MemResult<Checkpoint> {
        let missing = || MemError::not_found("checkpoint", id);
        let Some(at) = load::<String>(self.store(), Table::Checkpoints, &id_key(id))? else {
            return Err(missing());
        };
        if !at.value.starts_with(&format!("{task}\0")) {
            return Err(missing());
        }
        load::<Checkpoint>(self.store(), Table::Checkpoints, &at.value)?
            .map(|s| s.value)
            .ok_or_else(missing)
    }

    /// The checkpoint a replayed key wrote, if the key was used.
    pub(crate) fn checkpoint_replay(
        &self,
        replay_key: &str,
        request_sha256: &str,
    ) -> MemResult<Option<(Task, Checkpoint)>> {
        let Some(rec) = load::<CheckpointReplay>(self.store(), Table::Idempotency, replay_key)?
        else {
            return Ok(None);
        };
        if rec.value.request_sha256 != request_sha256 {
            return Err(crate::door::replay_conflict()
                .with_details(json!({ "checkpoint_id": rec.value.checkpoint_id })));
        }
        let task = self.task(&rec.value.task)?;
        let ckpt = self.checkpoint(&rec.value.task, &rec.value.checkpoint_id)?;
        Ok(Some((task, ckpt)))
    }

    /// Writes a checkpoint on the task's head (compare-and-swap), with its
    /// audit entry, change event and idempotency record in one batch. The
    /// caller has checked that it may write at `new.scope`, and
    /// `visible` says whether an existing task is the caller's to see.
    pub(crate) fn write_checkpoint(
        &self,
        new: &NewCheckpoint<'_>,
        actor: &Actor,
        visible: &dyn Fn(&Task) -> MemResult<()>,
    ) -> MemResult<CheckpointOutcome> {
        let store = self.store();
        let mut handoff = new.handoff.clone();
        handoff.task = Some(new.task.to_string());
        let handoff_sha256 = sha256_hex(&encode(&handoff)?);
        let result = transact(store, Durability::Immediate, || {
            if let Some((task, checkpoint)) =
                self.checkpoint_replay(&new.replay_key, &new.request_sha256)?
            {
                return Ok((
                    Batch::new(),
                    CheckpointOutcome {
                        replayed: true,
                        task,
                        checkpoint,
                    },
                ));
            }
            let current = load::<Task>(store, Table::Tasks, new.task)?;
            if let Some(t) = &current {
                visible(&t.value)?;
                if t.value.scope != new.scope {
                    return Err(MemError::new(
                        ErrorCode::Unprocessable,
                        format!(
                            "task {:?} is scoped to {}, not {}",
                            new.task, t.value.scope, new.scope
                        ),
                    )
                    .with_hint("leave scope out after the first checkpoint; a task keeps its scope")
                    .with_details(json!({ "field": "scope", "scope": t.value.scope })));
                }
            }
            let head = current
                .as_ref()
                .map(|t| t.value.head_checkpoint_id.as_str());
            if head != new.base {
                return Err(conflict(new.task, head, new.base));
            }
            let at = now();
            let seq = current.as_ref().map_or(0, |t| t.value.checkpoints) + 1;
            let checkpoint = Checkpoint {
                id: new_id(CHECKPOINT),
                task: new.task.to_string(),
                seq,
                base_checkpoint_id: new.base.map(str::to_string),
                handoff: handoff.clone(),
                handoff_sha256: handoff_sha256.clone(),
                created_at: at,
                written_by: actor.clone(),
            };
            let task = Task {
                key: new.task.to_string(),
                scope: new.scope.clone(),
                goal: handoff.goal.clone(),
                head_checkpoint_id: checkpoint.id.clone(),
                checkpoints: seq,
                created_at: current.as_ref().map_or(at, |t| t.value.created_at),
                updated_at: at,
                updated_by: actor.label(),
            };
            let mut batch = Batch::new();
            batch.expect(Table::Tasks, new.task, current.map(|t| t.raw));
            batch.expect(Table::Idempotency, new.replay_key.clone(), None);
            batch.put(Table::Tasks, new.task, encode(&task)?);
            let at_key = seq_key(new.task, seq);
            batch.put(Table::Checkpoints, at_key.clone(), encode(&checkpoint)?);
            batch.put(Table::Checkpoints, id_key(&checkpoint.id), encode(&at_key)?);
            batch.put(
                Table::Idempotency,
                new.replay_key.clone(),
                encode(&CheckpointReplay {
                    request_sha256: new.request_sha256.clone(),
                    task: new.task.to_string(),
                    checkpoint_id: checkpoint.id.clone(),
                })?,
            );
            push_event(
                &mut batch,
                "task.checkpointed",
                new.task,
                Some(seq),
                json!({
                    "checkpoint_id": checkpoint.id,
                    "base_checkpoint_id": checkpoint.base_checkpoint_id,
                    "handoff_sha256": handoff_sha256,
                    "scope": task.scope,
                }),
            )?;
            self.seal_audit(
                &mut batch,
                vec![AuditDraft {
                    actor: actor.clone(),
                    action: "checkpoint".into(),
                    target: format!("task:{}", new.task),
                    before_sha256: None,
                    after_sha256: Some(handoff_sha256.clone()),
                    verdict: "applied".into(),
                    verdict_source: "host".into(),
                    reasons: vec![format!("checkpoint {} (seq {seq})", checkpoint.id)],
                }],
            )?;
            Ok((
                batch,
                CheckpointOutcome {
                    replayed: false,
                    task,
                    checkpoint,
                },
            ))
        });
        if let Err(e) = &result
            && e.code == ErrorCode::CheckpointConflict
        {
            self.audit_denied(AuditDraft {
                actor: actor.clone(),
                action: "checkpoint-denied".into(),
                target: format!("task:{}", new.task),
                before_sha256: None,
                after_sha256: Some(handoff_sha256),
                verdict: "denied".into(),
                verdict_source: "host".into(),
                reasons: vec![format!("{}: {}", e.code.as_str(), e.message)],
            })?;
        }
        result
    }

    /// Tasks in key order after `after`, at most `limit` of those `keep`
    /// admits (scanned a page at a time).
    pub(crate) fn tasks(
        &self,
        after: Option<&str>,
        limit: usize,
        keep: &dyn Fn(&Task) -> bool,
    ) -> MemResult<(Vec<Task>, Option<String>)> {
        const PAGE: usize = 256;
        let mut out = Vec::new();
        let mut cursor = after.map(str::to_string);
        loop {
            let page = self.store().scan(
                Table::Tasks,
                &Scan {
                    prefix: "",
                    after: cursor.as_deref(),
                    limit: PAGE,
                    reverse: false,
                },
            )?;
            let done = page.len() < PAGE;
            for (k, raw) in page {
                cursor = Some(k.clone());
                let t: Task = crate::records::decode(Table::Tasks, &k, &raw)?;
                if keep(&t) {
                    out.push(t);
                    if out.len() == limit {
                        return Ok((out, cursor));
                    }
                }
            }
            if done {
                return Ok((out, None));
            }
        }
    }

    /// A task's checkpoints, newest first, with `seq` below `before`.
    pub(crate) fn checkpoints(
        &self,
        task: &str,
        before: Option<u64>,
        limit: usize,
    ) -> MemResult<(Vec<Checkpoint>, Option<u64>)> {
        let prefix = format!("{task}\0");
        let start = before.map(|b| seq_key(task, b));
        let page = self.store().scan(
            Table::Checkpoints,
            &Scan {
                prefix: &prefix,
                after: start.as_deref(),
                limit,
                reverse: true,
            },
        )?;
        let items = page
            .into_iter()
            .map(|(k, raw)| crate::records::decode::<Checkpoint>(Table::Checkpoints, &k, &raw))
            .collect::<MemResult<Vec<_>>>()?;
        let next = match items.last() {
            Some(last) if items.len() == limit && last.seq > 1 => Some(last.seq),
            _ => None,
        };
        Ok((items, next))
    }
}

#[cfg(test)]
mod tests;
