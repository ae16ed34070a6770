//! Memories: immutable statements with provenance, an idempotent write
//! path, and a compare-and-swap lifecycle (feedback, archive, restore,
//! forget). Every lifecycle action appends a change-log event.

use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::budget::UsageChange;
use crate::config::{RememberRoute, WriteMode};
use crate::gate::{WriteRoute, authority};
use crate::records::{Stored, decode, encode, load, push_event, transact};
use crate::requests::{
    MAX_ATTR_KEY_CHARS, MAX_ATTR_VALUE_CHARS, MAX_ATTRS, MAX_FIELD_CHARS, MemoryDraft, ProposalOp,
    ProposalRequest, RememberRequest,
};
use mem_core::hash::sha256_hex;
use mem_core::id::{self, new_id};
use mem_core::model::{
    FeedbackAction, FileRecord, Governance, Lifecycle, Memory, Provenance, Relation, Tombstone,
};
use mem_core::store::{Batch, Durability, Scan, Table};
use mem_core::time::{Timestamp, now, parse_rfc3339};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// Largest page of `memory list`.
pub const MAX_LIST_LIMIT: usize = 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RememberOutcome {
    /// True when the idempotency key matched an earlier identical request
    /// and the original record is returned.
    pub replayed: bool,
    /// The stored memory; absent when the write waits in the review queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    /// Set when the write went through the gate as a proposal (the
    /// workspace's write policy asks for review, or routes `remember`
    /// through the gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<crate::gate::Proposal>,
}

/// `memory.list`: memories newest first, filtered, a page at a time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemories {
    /// Only memories at or below this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub path: Option<String>,
    /// Only this memory type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_kind")]
    pub kind: Option<String>,
    /// `active` (default), `archived`, `superseded`, `deprecated`,
    /// `forgotten` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["active", "archived", "superseded", "deprecated", "forgotten", "all", null]))]
    pub lifecycle: Option<String>,
    /// Only memories this agent wrote (their provenance's `agent_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub agent: Option<String>,
    /// Only pinned (`true`) or only unpinned (`false`) memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// Page size, 1 to 1000 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// A previous page's `next_cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_cursor")]
    pub cursor: Option<String>,
}

/// Memories read at most for one page of `memory list` (bounds the time a
/// page takes when its filters match few; measured by the serve bench).
pub const MAX_LIST_SCAN: usize = 4096;

/// A page of a listing; pass `next_cursor` back to continue (a page may be
/// short, or empty, while more follow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// A memory in its normalized form: what idempotency compares.
#[derive(Serialize)]
struct Normalized<'a> {
    content: &'a str,
    kind: &'a str,
    path: &'a str,
    provenance: &'a Provenance,
    confidence: Option<f64>,
    attributes: &'a BTreeMap<String, String>,
}

/// What the relation detectors said about a direct write.
#[derive(Debug, Clone, Default)]
struct Detected {
    relations: Vec<Relation>,
    /// Audit reasons: each relation recorded, each detector that failed.
    notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct IdempotencyRecord {
    request_sha256: String,
    memory_id: String,
    created_at: Timestamp,
}

fn field(name: &str, value: &Option<String>) -> MemResult<Option<String>> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > MAX_FIELD_CHARS => Err(MemError::bad_request(format!(
            "{name} is longer than {MAX_FIELD_CHARS} characters"
        ))
        .with_details(json!({ "field": name }))),
        Some(v) => Ok(Some(v.to_string())),
    }
}

pub(crate) fn memory_path_key(path: &VPath, id: &str) -> String {
    format!("{}\0{id}", path.as_str())
}

/// The lifecycles a `lifecycle` (memory list) or `status` (catalog) value
/// selects; `field` names it in the error.
pub(crate) fn lifecycle_filter(raw: Option<&str>, field: &str) -> MemResult<Vec<Lifecycle>> {
    Ok(match raw.unwrap_or("active") {
        "active" => vec![Lifecycle::Active],
        "archived" => vec![Lifecycle::Archived],
        "superseded" => vec![Lifecycle::Superseded],
        "deprecated" => vec![Lifecycle::Deprecated],
        "forgotten" => vec![Lifecycle::Forgotten],
        "all" => vec![
            Lifecycle::Active,
            Lifecycle::Archived,
            Lifecycle::Superseded,
            Lifecycle::Deprecated,
            Lifecycle::Forgotten,
        ],
        other => {
            return Err(MemError::bad_request(format!("unknown {field} {other:?}"))
                .with_hint(format!(
                    "{field} is active, archived, superseded, deprecated, forgotten or all"
                ))
                .with_details(json!({ "field": field })));
        }
    })
}

impl Service {
    /// Validates a draft into the memory it would create (without id).
    /// The content is kept exactly as sent: a client's own SHA-256 of what
    /// it sent matches `content_sha256`.
    pub(crate) fn prepare_memory(&self, req: &MemoryDraft) -> MemResult<(Memory, String)> {
        let content = req.content.as_str();
        if content.trim().is_empty() {
            return Err(MemError::bad_request("content is empty")
                .with_hint("say what to remember")
                .with_details(json!({ "field": "content" })));
        }
        let config = self.config();
        let limit = config.limits.max_memory_chars;
        let chars = content.chars().count();
        if chars > limit {
            return Err(MemError::new(
                ErrorCode::PayloadTooLarge,
                format!("content is {chars} characters; the limit is {limit}"),
            )
            .with_hint("split it into smaller memories, or store it as a file and remember a summary citing it")
            .with_details(json!({ "size": chars, "limit": limit })));
        }
        let kind = req.kind.clone();
        let registry = &config.types.registry;
        let def = registry.resolve(&kind)?;
        let path = VPath::parse(&req.path)?;
        let confidence = match req.confidence {
            Some(c) if !(0.0..=1.0).contains(&c) || c.is_nan() => {
                return Err(
                    MemError::bad_request(format!("confidence {c} is outside 0..1"))
                        .with_hint("give a confidence between 0 and 1")
                        .with_details(json!({ "field": "confidence" })),
                );
            }
            Some(c) => c,
            None => config.memory.default_confidence,
        };
        if req.attributes.len() > MAX_ATTRS {
            return Err(MemError::bad_request(format!(
                "too many attributes (at most {MAX_ATTRS})"
            ))
            .with_hint("keep the fields the memory's type defines"));
        }
        for (k, v) in &req.attributes {
            let key_ok = !k.is_empty()
                && k.chars().count() <= MAX_ATTR_KEY_CHARS
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
            if !key_ok || v.chars().count() > MAX_ATTR_VALUE_CHARS {
                return Err(MemError::bad_request(format!("bad attribute {k:?}"))
                    .with_hint(format!("attribute keys are ASCII letters, digits or - _ . : (at most {MAX_ATTR_KEY_CHARS}); values at most {MAX_ATTR_VALUE_CHARS} characters"))
                    .with_details(json!({ "attribute": k })));
            }
        }
        registry.validate(def, &req.attributes)?;
        let event_at = match field("event_at", &req.event_at)? {
            Some(s) => Some(parse_rfc3339(&s)?),
            None => None,
        };
        let provenance = Provenance {
            source_type: field("source_type", &req.source_type)?,
            source_ref: field("source_ref", &req.source_ref)?,
            source_file_id: field("source_file_id", &req.source_file_id)?,
            agent_id: field("agent_id", &req.agent_id)?,
            session_id: field("session_id", &req.session_id)?,
            task_id: field("task_id", &req.task_id)?,
            event_at,
        };
        let normalized = Normalized {
            content,
            kind: &kind,
            path: path.as_str(),
            provenance: &provenance,
            confidence: req.confidence,
            attributes: &req.attributes,
        };
        let request_sha = sha256_hex(&encode(&normalized)?);
        let at = now();
        let memory = Memory {
            id: String::new(),
            kind,
            content: Some(content.to_string()),
            content_sha256: sha256_hex(content.as_bytes()),
            path,
            lifecycle: Lifecycle::Active,
            state_version: 1,
            confidence,
            feedback: Default::default(),
            pinned: false,
            provenance,
            attributes: req.attributes.clone(),
            relations: Vec::new(),
            created_at: at,
            updated_at: at,
            tombstone: None,
            governance: None,
        };
        Ok((memory, request_sha))
    }

    /// Remembers one thing, durably (flushed before returning), as `actor`.
    pub(crate) fn remember_as(
        &self,
        req: &RememberRequest,
        actor: &Actor,
    ) -> MemResult<RememberOutcome> {
        let out = self.remember_with(
            req,
            Durability::Immediate,
            actor,
            true,
            WriteRoute::Remember,
            &[],
        )?;
        self.after_write();
        Ok(out)
    }

    /// Remembers many; each succeeds or fails on its own, and every success
    /// is durable before this returns. The search index catches up after
    /// the acknowledgement (the event log is its durable queue): the
    /// running process's worker, or [`Service::settle`], brings it up.
    ///
    /// Bulk writes skip relation detection: comparing each line with every
    /// memory already in its scope makes an import into one scope O(n²)
    /// in store reads and plugin calls. A gated line (review policy, or
    /// `remember = "gate"`) still goes through the gate's detectors; `lint`
    /// reports verbatim duplicates either way.
    pub(crate) fn remember_many(
        &self,
        reqs: &[(RememberRequest, Actor)],
        route: WriteRoute,
    ) -> Vec<MemResult<RememberOutcome>> {
        self.remember_related(reqs.iter().map(|(r, a)| (r, a, &[][..])), route)
    }

    /// [`Self::remember_many`], each new memory carrying the relations its
    /// writer already knows (an imported note's wiki links). A replay keeps
    /// the original's relations; a gated line gets the gate's.
    pub(crate) fn remember_related<'a>(
        &self,
        reqs: impl IntoIterator<Item = (&'a RememberRequest, &'a Actor, &'a [Relation])>,
        route: WriteRoute,
    ) -> Vec<MemResult<RememberOutcome>> {
        let results: Vec<_> = reqs
            .into_iter()
            .map(|(r, actor, given)| {
                self.remember_with(r, Durability::Deferred, actor, false, route, given)
            })
            .collect();
        if let Err(err) = self.store().flush().map_err(MemError::from) {
            return results
                .into_iter()
                .map(|r| r.and(Err(err.clone())))
                .collect();
        }
        self.after_write();
        results
    }

    fn remember_with(
        &self,
        req: &RememberRequest,
        durability: Durability,
        actor: &Actor,
        detect: bool,
        route: WriteRoute,
        given: &[Relation],
    ) -> MemResult<RememberOutcome> {
        let denied = |e: &MemError| AuditDraft {
            actor: actor.clone(),
            action: "remember-denied".into(),
            target: req.path.clone(),
            before_sha256: None,
            after_sha256: None,
            verdict: "denied".into(),
            verdict_source: "host".into(),
            reasons: vec![format!("{}: {}", e.code.as_str(), e.message)],
        };
        let result = self.remember_checked(req, durability, actor, detect, route, given);
        match result {
            Err(e)
                if e.code != ErrorCode::WriteRejected
                    && e.code != ErrorCode::IdempotencyConflict =>
            {
                self.audit_denied(denied(&e))?;
                Err(e)
            }
            other => other,
        }
    }

    /// `detect`: run the workspace's relation detectors on a direct write.
    /// The write policy plugins judge every direct write (on its `route`);
    /// one that does not allow it sends it through the gate as a proposal.
    fn remember_checked(
        &self,
        req: &RememberRequest,
        durability: Durability,
        actor: &Actor,
        detect: bool,
        route: WriteRoute,
        given: &[Relation],
    ) -> MemResult<RememberOutcome> {
        let (template, request_sha) = self.prepare_memory(&req.draft())?;
        let key = crate::door::checked_key(Some(&req.idempotency_key))?
            .unwrap_or_default()
            .to_string();
        let key_hash = sha256_hex(key.as_bytes());
        let store = self.store();
        if let Some(file_id) = &template.provenance.source_file_id
            && load::<FileRecord>(store, Table::Files, file_id)?.is_none()
        {
            return Err(MemError::not_found("file", file_id)
                .with_hint("source_file_id must name a stored file; `ls` lists them"));
        }
        let config = self.config();
        let role = config.types.registry.resolve(&template.kind)?.role.clone();
        let (mode, rule) = config.gate.mode_for(
            &template.kind,
            &role,
            template.provenance.agent_id.as_deref(),
        );
        if mode == WriteMode::Never {
            let reason = format!(
                "the workspace's write policy ({rule}) refuses {} writes",
                template.kind
            );
            self.audit_denied(AuditDraft {
                actor: actor.clone(),
                action: "remember-denied".into(),
                target: template.path.as_str().to_string(),
                before_sha256: None,
                after_sha256: Some(template.content_sha256.clone()),
                verdict: "rejected".into(),
                verdict_source: format!("mem.toml {rule}"),
                reasons: vec![reason.clone()],
            })?;
            return Err(MemError::new(ErrorCode::WriteRejected, reason)
                .with_hint("this kind of memory cannot be written here; ask the workspace owner")
                .with_details(json!({ "rule": rule })));
        }
        let proposal = ProposalRequest {
            op: ProposalOp::Create,
            targets: Vec::new(),
            memory: Some(req.draft()),
            evidence: Vec::new(),
            reason: None,
            idempotency_key: key,
        };
        let gated = mode == WriteMode::Review || config.gate.remember == RememberRoute::Gate;
        let objected = !gated
            && load::<IdempotencyRecord>(store, Table::Idempotency, &key_hash)?.is_none()
            && self.policies_object(&proposal, &template, actor, route)?;
        if gated || objected {
            let route = if gated { WriteRoute::Propose } else { route };
            let outcome = self.propose_via(&proposal, actor, route)?;
            let memory = match outcome.proposal.result_ids.first() {
                Some(id) => Some(self.memory(id)?),
                None => None,
            };
            return Ok(RememberOutcome {
                replayed: outcome.replayed,
                memory,
                proposal: Some(outcome.proposal),
            });
        }
        // Detectors run once, outside the transaction (a retry reuses their
        // answer), and not for a replay of an earlier write.
        let detected = if detect
            && load::<IdempotencyRecord>(store, Table::Idempotency, &key_hash)?.is_none()
        {
            self.detect_relations(&template)
        } else {
            Detected::default()
        };
        transact(store, durability, || {
            let mut batch = Batch::new();
            if let Some(rec) = load::<IdempotencyRecord>(store, Table::Idempotency, &key_hash)? {
                if rec.value.request_sha256 != request_sha {
                    return Err(MemError::new(
                        ErrorCode::IdempotencyConflict,
                        "this idempotency key was already used for a different request",
                    )
                    .with_hint(
                        "use a new key for a new memory, or resend exactly the original request",
                    )
                    .with_details(json!({ "memory_id": rec.value.memory_id })));
                }
                let memory = self.memory(&rec.value.memory_id)?;
                return Ok((
                    batch,
                    RememberOutcome {
                        replayed: true,
                        memory: Some(memory),
                        proposal: None,
                    },
                ));
            }
            let mut memory = template.clone();
            memory.id = new_id(id::MEMORY);
            memory.relations = detected.relations.clone();
            memory.relations.extend(given.iter().cloned());
            memory.governance = Some(Governance {
                proposal_id: None,
                proposed_by: actor.label(),
                approved_by: format!("mem.toml {rule}"),
                tentative: false,
            });
            let rec = IdempotencyRecord {
                request_sha256: request_sha.clone(),
                memory_id: memory.id.clone(),
                created_at: memory.created_at,
            };
            batch.expect(Table::Idempotency, key_hash.clone(), None);
            batch.put(Table::Idempotency, key_hash.clone(), encode(&rec)?);
            let mut usage = UsageChange::new();
            usage.add(&memory, 1);
            self.apply_usage(&mut batch, &usage)?;
            self.stage_new_memory(&mut batch, &memory)?;
            self.seal_audit(
                &mut batch,
                vec![AuditDraft {
                    actor: actor.clone(),
                    action: "remember".into(),
                    target: memory.id.clone(),
                    before_sha256: None,
                    after_sha256: Some(memory.content_sha256.clone()),
                    verdict: "applied".into(),
                    verdict_source: format!("mem.toml {rule}"),
                    reasons: detected.notes.clone(),
                }],
            )?;
            Ok((
                batch,
                RememberOutcome {
                    replayed: false,
                    memory: Some(memory),
                    proposal: None,
                },
            ))
        })
    }

    /// Runs the workspace's relation detectors on a direct write, against
    /// the active memories of its scope (the candidates the gate uses), and
    /// keeps the `conflicts_with` and `duplicate_of` relations they find.
    /// Nothing is deleted or hidden. A failing detector (or a failure to
    /// read the candidates) never fails the write: it becomes a note in
    /// the write's audit entry.
    fn detect_relations(&self, m: &Memory) -> Detected {
        let mut out = Detected::default();
        let findings = match self.conflict_findings(m, &[]) {
            Ok(f) => f,
            Err(e) => {
                out.notes.push(format!(
                    "relation detection skipped: {}: {}",
                    e.code.as_str(),
                    e.message
                ));
                return out;
            }
        };
        for f in findings {
            match (&f.target, f.code.as_str()) {
                (Some(target), "conflicts_with" | "duplicate_of") => {
                    if out
                        .relations
                        .iter()
                        .any(|r| r.kind == f.code && &r.target == target)
                    {
                        continue;
                    }
                    out.notes
                        .push(format!("{} {target} ({}): {}", f.code, f.source, f.message));
                    out.relations.push(Relation {
                        kind: f.code.clone(),
                        target: target.clone(),
                        score: f.score.map(f64::from),
                        difference: f.difference.clone(),
                    });
                }
                (_, "plugin_failed") => out
                    .notes
                    .push(format!("{} failed: {}", f.source, f.message)),
                _ => {}
            }
        }
        out
    }

    /// Stages a new memory (with a content blob taken by `put_blob` first,
    /// its folder, path index and creation event) into `batch`.
    pub(crate) fn stage_new_memory(&self, batch: &mut Batch, memory: &Memory) -> MemResult<()> {
        if self.file_at_path(&memory.path)?.is_none() {
            self.ensure_folder(batch, &memory.path, memory.created_at)?;
        }
        if let Some(content) = &memory.content {
            self.store()
                .put_blob(&memory.content_sha256, content.as_bytes())?;
            batch.blob_ref(memory.content_sha256.clone(), 1);
        }
        batch.expect(Table::Memories, memory.id.clone(), None);
        batch.put(Table::Memories, memory.id.clone(), encode(memory)?);
        batch.put(
            Table::MemoryPaths,
            memory_path_key(&memory.path, &memory.id),
            Vec::new(),
        );
        self.stage_memory_event(batch, "memory.created", memory, json!({}))
    }

    /// Appends a memory event carrying the memory's state after the change
    /// (without content: that lives in a blob, so `forget` can purge it).
    /// Replaying these events rebuilds every memory record.
    pub(crate) fn stage_memory_event(
        &self,
        batch: &mut Batch,
        action: &str,
        m: &Memory,
        extra: serde_json::Value,
    ) -> MemResult<()> {
        let mut snapshot = m.clone();
        snapshot.content = None;
        push_event(
            batch,
            action,
            &m.id,
            Some(m.state_version),
            json!({ "memory": snapshot, "detail": extra }),
        )
    }

    fn file_at_path(&self, path: &VPath) -> MemResult<Option<Vec<u8>>> {
        Ok(self.store().get(Table::FilePaths, path.as_str())?)
    }

    fn load_memory(&self, id: &str) -> MemResult<Stored<Memory>> {
        load(self.store(), Table::Memories, id)?.ok_or_else(|| MemError::not_found("memory", id))
    }

    pub(crate) fn memory(&self, id: &str) -> MemResult<Memory> {
        Ok(self.load_memory(id)?.value)
    }

    /// A page of the ledger, newest first. A page may hold fewer than
    /// `limit` memories and still have a `next_cursor`: at most
    /// [`MAX_LIST_SCAN`] are read for one page.
    pub(crate) fn list_memories(&self, q: &ListMemories) -> MemResult<Page<Memory>> {
        let limit = q.limit.unwrap_or(50);
        if limit == 0 || limit > MAX_LIST_LIMIT {
            return Err(MemError::bad_request(format!(
                "limit must be 1..={MAX_LIST_LIMIT}"
            )));
        }
        let lifecycles = lifecycle_filter(q.lifecycle.as_deref(), "lifecycle")?;
        let path = q.path.as_deref().map(VPath::parse).transpose()?;
        let kind = q.kind.as_deref().map(|k| k.trim().to_ascii_lowercase());
        // Normalized as `remember` stores it: trimmed, empty is no filter.
        let agent = field("agent", &q.agent)?;
        if let Some(c) = &q.cursor
            && !id::has_prefix(c, id::MEMORY)
        {
            return Err(MemError::bad_request(format!("bad cursor {c:?}"))
                .with_hint("pass back the next_cursor of a previous page"));
        }
        const PAGE: usize = 512;
        let mut items = Vec::new();
        let mut after = q.cursor.clone();
        let mut scanned = 0;
        loop {
            // A filter few memories match would scan the whole ledger for
            // one page: past the budget the page ends short, with a cursor.
            if scanned >= MAX_LIST_SCAN {
                return Ok(Page {
                    items,
                    next_cursor: after,
                });
            }
            scanned += PAGE;
            let page = self.store().scan(
                Table::Memories,
                &Scan {
                    prefix: "",
                    after: after.as_deref(),
                    limit: PAGE,
                    reverse: true,
                },
            )?;
            let exhausted = page.len() < PAGE;
            for (key, raw) in page {
                after = Some(key.clone());
                let m: Memory = decode(Table::Memories, &key, &raw)?;
                let keep = lifecycles.contains(&m.lifecycle)
                    && kind.as_ref().is_none_or(|k| &m.kind == k)
                    && path.as_ref().is_none_or(|p| m.path.is_within(p))
                    && agent
                        .as_ref()
                        .is_none_or(|a| m.provenance.agent_id.as_ref() == Some(a))
                    && q.pinned.is_none_or(|p| m.pinned == p);
                if keep {
                    items.push(m);
                    if items.len() == limit {
                        let next = items.last().map(|m| m.id.clone());
                        return Ok(Page {
                            items,
                            next_cursor: next,
                        });
                    }
                }
            }
            if exhausted {
                return Ok(Page {
                    items,
                    next_cursor: None,
                });
            }
        }
    }

    /// Loads a memory, checks the caller's expected version, applies
    /// `change`, and commits under compare-and-swap with its event, its
    /// budget counters and an audit entry.
    fn change_memory(
        &self,
        id: &str,
        expected_version: u64,
        action: &str,
        actor: &Actor,
        change: impl Fn(&mut Memory) -> MemResult<serde_json::Value>,
    ) -> MemResult<Memory> {
        let store = self.store();
        let m = transact(store, Durability::Immediate, || {
            let stored = self.load_memory(id)?;
            let current = stored.value.state_version;
            if current != expected_version {
                return Err(MemError::new(
                    ErrorCode::VersionConflict,
                    format!("memory {id} is at version {current}, not {expected_version}"),
                )
                .with_hint("read the memory again and retry with its current state_version")
                .with_details(json!({ "id": id, "expected_version": expected_version, "current_version": current })));
            }
            let before = stored.value.clone();
            let mut m = before.clone();
            let mut data = change(&mut m)?;
            m.state_version += 1;
            m.updated_at = now();
            let mut batch = Batch::new();
            // Coming back while a standing memory supersedes it: it stays
            // hidden behind that one.
            if m.lifecycle == Lifecycle::Active
                && !authority::stands(&before)
                && let Some(by) = self.standing_superseder(&mut batch, &m, "")?
            {
                m.lifecycle = Lifecycle::Superseded;
                if let Some(obj) = data.as_object_mut() {
                    obj.insert("superseded_by".into(), json!(by));
                }
            }
            let mut usage = UsageChange::new();
            usage.transition(&before, &m);
            batch.expect(Table::Memories, id, Some(stored.raw));
            batch.put(Table::Memories, id, encode(&m)?);
            if m.lifecycle == Lifecycle::Forgotten {
                batch.delete(Table::MemoryPaths, memory_path_key(&m.path, id));
                batch.blob_ref(before.content_sha256.clone(), -1);
            }
            self.stage_memory_event(&mut batch, action, &m, data.clone())?;
            // What it superseded lapses (or is hidden again) in the same batch.
            let lapses = self.stage_supersede_authority(
                &mut batch,
                &mut usage,
                &before,
                &m,
                actor,
                &actor.label(),
            )?;
            self.apply_usage(&mut batch, &usage)?;
            let verb = action.trim_start_matches("memory.");
            let mut drafts = vec![AuditDraft {
                actor: actor.clone(),
                action: verb.to_string(),
                target: id.to_string(),
                before_sha256: before
                    .content
                    .as_ref()
                    .map(|_| before.content_sha256.clone()),
                after_sha256: m.content.as_ref().map(|_| m.content_sha256.clone()),
                verdict: "applied".into(),
                verdict_source: actor.label(),
                reasons: data
                    .get("reason")
                    .and_then(|r| r.as_str())
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
            }];
            drafts.extend(lapses);
            self.seal_audit(&mut batch, drafts)?;
            Ok((batch, m))
        })?;
        self.after_write();
        Ok(m)
    }

    /// Records a vote (moving confidence by the workspace's deltas; enough
    /// `not_useful` votes in a row deprecate the memory) or a pin.
    pub(crate) fn feedback(
        &self,
        id: &str,
        action: FeedbackAction,
        expected_version: u64,
        actor: &Actor,
    ) -> MemResult<Memory> {
        let settings = self.config().memory.clone();
        self.change_memory(id, expected_version, "memory.feedback", actor, |m| {
            require_not_forgotten(m, "give feedback on")?;
            let before = m.confidence;
            match action {
                FeedbackAction::Useful => {
                    m.feedback.useful += 1;
                    m.feedback.consecutive_not_useful = 0;
                    m.confidence = (m.confidence + settings.useful_delta).min(1.0);
                }
                FeedbackAction::NotUseful => {
                    m.feedback.not_useful += 1;
                    m.feedback.consecutive_not_useful += 1;
                    m.confidence = (m.confidence + settings.not_useful_delta).max(0.0);
                    if m.feedback.consecutive_not_useful >= settings.deprecate_after
                        && m.lifecycle == Lifecycle::Active
                    {
                        m.lifecycle = Lifecycle::Deprecated;
                    }
                }
                FeedbackAction::Pin => m.pinned = true,
                FeedbackAction::Unpin => m.pinned = false,
            }
            // Rounded so repeated votes do not drift by float error.
            m.confidence = (m.confidence * 1e6).round() / 1e6;
            Ok(json!({
                "feedback": action.as_str(),
                "confidence_before": before,
                "confidence_after": m.confidence,
                "stale": m.confidence <= settings.stale_at,
                "lifecycle": m.lifecycle,
            }))
        })
    }

    pub(crate) fn archive(
        &self,
        id: &str,
        expected_version: u64,
        actor: &Actor,
    ) -> MemResult<Memory> {
        self.change_memory(id, expected_version, "memory.archived", actor, |m| {
            if m.lifecycle != Lifecycle::Active {
                return Err(invalid_transition(
                    m,
                    "archive",
                    "only an active memory can be archived",
                ));
            }
            m.lifecycle = Lifecycle::Archived;
            Ok(json!({}))
        })
    }

    /// Brings an archived or deprecated memory back (budgets apply again).
    pub(crate) fn restore(
        &self,
        id: &str,
        expected_version: u64,
        actor: &Actor,
    ) -> MemResult<Memory> {
        self.change_memory(id, expected_version, "memory.restored", actor, |m| {
            if !matches!(m.lifecycle, Lifecycle::Archived | Lifecycle::Deprecated) {
                return Err(invalid_transition(
                    m,
                    "restore",
                    "only an archived or deprecated memory can be restored",
                ));
            }
            m.lifecycle = Lifecycle::Active;
            m.feedback.consecutive_not_useful = 0;
            Ok(json!({}))
        })
    }

    /// Purges a memory's payload; a tombstone with the reason remains.
    pub(crate) fn forget(
        &self,
        id: &str,
        expected_version: u64,
        reason: &str,
        confirm: bool,
        actor: &Actor,
    ) -> MemResult<Memory> {
        if !confirm {
            return Err(MemError::new(
                ErrorCode::ConfirmationRequired,
                "forgetting purges the memory's content for good",
            )
            .with_hint("repeat with --confirm (REST/MCP: \"confirm\": true) to proceed"));
        }
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(
                MemError::bad_request("a reason is required to forget a memory")
                    .with_hint("pass --reason, e.g. --reason \"user asked to delete\""),
            );
        }
        self.change_memory(id, expected_version, "memory.forgotten", actor, |m| {
            require_not_forgotten(m, "forget")?;
            m.lifecycle = Lifecycle::Forgotten;
            m.content = None;
            m.attributes.clear();
            m.provenance.source_ref = None;
            m.tombstone = Some(Tombstone {
                at: now(),
                reason: reason.to_string(),
            });
            Ok(json!({ "reason": reason }))
        })
    }
}

/// A forgotten memory takes no more lifecycle changes.
fn require_not_forgotten(m: &Memory, verb: &str) -> MemResult<()> {
    if m.lifecycle == Lifecycle::Forgotten {
        return Err(invalid_transition(m, verb, "the memory was forgotten"));
    }
    Ok(())
}

fn invalid_transition(m: &Memory, verb: &str, why: &str) -> MemError {
    MemError::new(
        ErrorCode::InvalidState,
        format!("cannot {verb} memory {}: {why}", m.id),
    )
    .with_hint(format!("it is {}", m.lifecycle.as_str()))
    .with_details(json!({ "id": m.id, "lifecycle": m.lifecycle }))
}
