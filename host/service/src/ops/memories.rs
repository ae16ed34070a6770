//! Memory operations: remember (one or a batch), get, list, and the
//! compare-and-swap lifecycle (feedback, archive, restore, forget).

use super::fields;
use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::requests::RememberRequest;
use crate::{ListMemories, Page, RememberOutcome};
use mem_core::model::{FeedbackAction, Memory};
use mem_core::{MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

impl Operation for RememberRequest {
    const NAME: &'static str = "memory.remember";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Own;
    type Output = RememberOutcome;

    fn idempotency_key(&self) -> Option<&str> {
        Some(&self.idempotency_key)
    }

    fn replayed(out: &RememberOutcome) -> bool {
        out.replayed
    }

    fn run(self, c: &Caller<'_>) -> MemResult<RememberOutcome> {
        c.may_remember(&self)?;
        let actor = c.actor(self.agent_id.clone(), self.session_id.clone());
        c.svc.remember_as(&self, &actor)
    }
}

impl Caller<'_> {
    /// The checks of one remembered item.
    fn may_remember(&self, req: &RememberRequest) -> MemResult<()> {
        self.require(Scope::Write)?;
        self.access.may_write_at(&VPath::parse(&req.path)?)
    }
}

/// Most memories one batch may carry.
pub const MAX_BATCH: usize = 1000;

/// `memory.remember_batch`: many memories, each checked, stored or
/// refused on its own (a malformed item is that item's error, not the
/// batch's), every success durable when the answer comes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberBatch {
    /// Requests of `memory.remember`, one result each, in order.
    #[schemars(length(min = 1, max = 1000))]
    pub items: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// One item's outcome, in request order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(bound(deserialize = "T: serde::de::DeserializeOwned"))]
pub struct ItemResult<T> {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MemError>,
}

impl<T> From<MemResult<T>> for ItemResult<T> {
    fn from(r: MemResult<T>) -> Self {
        match r {
            Ok(v) => Self {
                ok: true,
                result: Some(v),
                error: None,
            },
            Err(e) => Self {
                ok: false,
                result: None,
                error: Some(e),
            },
        }
    }
}

impl Operation for RememberBatch {
    const NAME: &'static str = "memory.remember_batch";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Own;
    type Output = Vec<ItemResult<RememberOutcome>>;

    fn run(self, c: &Caller<'_>) -> MemResult<Self::Output> {
        c.require(Scope::Write)?;
        if self.items.is_empty() || self.items.len() > MAX_BATCH {
            return Err(
                MemError::bad_request(format!("a batch holds 1 to {MAX_BATCH} memories"))
                    .with_hint("split the batch"),
            );
        }
        let mut results: Vec<Option<MemResult<RememberOutcome>>> = Vec::new();
        let mut allowed = Vec::new();
        for item in self.items {
            let checked = c
                .decode::<RememberRequest>(serde_json::Value::Object(item))
                .and_then(|req| c.may_remember(&req).map(|()| req));
            match checked {
                Ok(req) => {
                    let actor = c.actor(req.agent_id.clone(), req.session_id.clone());
                    allowed.push((req, actor));
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        let mut written = c
            .svc
            .remember_many(&allowed, crate::gate::WriteRoute::Batch)
            .into_iter();
        Ok(results
            .into_iter()
            .map(|r| {
                r.or_else(|| written.next())
                    .unwrap_or_else(|| Err(MemError::internal("a batch result went missing")))
                    .into()
            })
            .collect())
    }
}

/// `memory.get`: one memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMemory {
    /// The memory id (`mem_...`).
    #[schemars(length(min = 1))]
    pub id: String,
}

impl Operation for GetMemory {
    const NAME: &'static str = "memory.get";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = Memory;

    fn run(self, c: &Caller<'_>) -> MemResult<Memory> {
        c.memory_for(Scope::Read, &self.id)
    }
}

impl Caller<'_> {
    /// A memory the caller may act on with `scope`, else `not_found`.
    pub(crate) fn memory_for(&self, scope: Scope, id: &str) -> MemResult<Memory> {
        let m = self
            .svc
            .memory(id)
            .map_err(|e| self.hide(e, "memory", id))?;
        self.object(scope, "memory", id, &m.path)?;
        Ok(m)
    }
}

impl Operation for ListMemories {
    const NAME: &'static str = "memory.list";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = Page<Memory>;

    /// Over a multi-folder boundary a page can hold fewer than `limit`
    /// items; follow `next_cursor`.
    fn run(mut self, c: &Caller<'_>) -> MemResult<Page<Memory>> {
        c.require(Scope::Read)?;
        let paths = c.access.paths();
        if self.path.is_none() && paths.len() == 1 {
            self.path = Some(paths[0].as_str().to_string());
        }
        let mut page = c.svc.list_memories(&self)?;
        page.items.retain(|m| c.access.sees(&m.path));
        Ok(page)
    }
}

/// `memory.feedback`: useful / not useful / pin / unpin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    /// The memory id (`mem_...`).
    #[schemars(length(min = 1))]
    pub id: String,
    /// `useful`, `not_useful`, `pin` or `unpin`.
    pub action: FeedbackAction,
    #[schemars(schema_with = "fields::version")]
    pub expected_version: u64,
    /// The agent giving the feedback (recorded with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for Feedback {
    const NAME: &'static str = "memory.feedback";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = Memory;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<Memory> {
        c.memory_for(Scope::Write, &self.id)?;
        let actor = c.actor(self.agent_id, None);
        c.svc
            .feedback(&self.id, self.action, self.expected_version, &actor)
    }
}

/// `memory.archive`: an active memory leaves recall (restorable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Archive {
    /// The memory id (`mem_...`).
    #[schemars(length(min = 1))]
    pub id: String,
    #[schemars(schema_with = "fields::version")]
    pub expected_version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for Archive {
    const NAME: &'static str = "memory.archive";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = Memory;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<Memory> {
        c.memory_for(Scope::Write, &self.id)?;
        c.svc
            .archive(&self.id, self.expected_version, &c.actor(None, None))
    }
}

/// `memory.restore`: an archived (or deprecated) memory becomes active.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Restore {
    /// The memory id (`mem_...`).
    #[schemars(length(min = 1))]
    pub id: String,
    #[schemars(schema_with = "fields::version")]
    pub expected_version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for Restore {
    const NAME: &'static str = "memory.restore";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = Memory;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<Memory> {
        c.memory_for(Scope::Write, &self.id)?;
        c.svc
            .restore(&self.id, self.expected_version, &c.actor(None, None))
    }
}

/// `memory.forget`: purge a memory's content for good (a tombstone stays).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = require_confirm)]
pub struct Forget {
    /// The memory id (`mem_...`).
    #[schemars(length(min = 1))]
    pub id: String,
    #[schemars(schema_with = "fields::version")]
    pub expected_version: u64,
    /// Why it is forgotten (kept in the audit log; the content is not).
    #[schemars(schema_with = "fields::text")]
    pub reason: String,
    /// Must be `true`: forgetting erases the content for good.
    #[serde(default)]
    #[schemars(extend("const" = true))]
    pub confirm: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

/// `confirm` is required in the schema; it has a serde default only so that
/// leaving it out reaches the service, whose refusal says what to do.
fn require_confirm(schema: &mut schemars::Schema) {
    match schema.get_mut("required").and_then(|r| r.as_array_mut()) {
        Some(required) => required.push("confirm".into()),
        None => {
            schema.insert("required".into(), serde_json::json!(["confirm"]));
        }
    }
}

impl Operation for Forget {
    const NAME: &'static str = "memory.forget";
    const SCOPE: Scope = Scope::Delete;
    const REPLAY: Replay = Replay::Kept;
    type Output = Memory;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<Memory> {
        c.memory_for(Scope::Delete, &self.id)?;
        c.svc.forget(
            &self.id,
            self.expected_version,
            &self.reason,
            self.confirm,
            &c.actor(None, None),
        )
    }
}
