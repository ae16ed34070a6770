//! The write path of a memory: a draft validated into its normalized
//! form, idempotency, the workspace's write policy and gate, relation
//! detection on a direct write, and the staged records of a new memory.

use super::{RememberOutcome, field, memory_path_key};
use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::budget::UsageChange;
use crate::config::{RememberRoute, WriteMode};
use crate::gate::WriteRoute;
use crate::records::{encode, load, transact};
use crate::requests::{
    MAX_ATTR_KEY_CHARS, MAX_ATTR_VALUE_CHARS, MAX_ATTRS, MemoryDraft, ProposalOp, ProposalRequest,
    RememberRequest,
};
use mem_core::hash::sha256_hex;
use mem_core::id::{self, new_id};
use mem_core::model::{FileRecord, Governance, Lifecycle, Memory, Provenance, Relation};
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::{Timestamp, now, parse_rfc3339};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

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
}
