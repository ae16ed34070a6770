//! The write requests the memory ledger and the write gate share: a new
//! memory's fields, `remember`, and proposals. They sit below both
//! `memories` and `gate`, so neither imports the other for its input.

use crate::ops::fields;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest free-text provenance field (source ref, agent id, ...).
pub const MAX_FIELD_CHARS: usize = 512;
/// Attribute bounds.
pub const MAX_ATTRS: usize = 64;
pub const MAX_ATTR_KEY_CHARS: usize = 256;
pub const MAX_ATTR_VALUE_CHARS: usize = 4096;

/// Declares a request type with the fields of a new memory (written once
/// here) plus the request's own fields.
macro_rules! memory_request {
    ($(#[$attr:meta])* pub struct $name:ident { $($(#[$fattr:meta])* pub $field:ident : $ty:ty,)* }) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// The statement, stored exactly as sent (its SHA-256 is
            /// `content_sha256`); it must hold more than whitespace.
            #[schemars(schema_with = "fields::content")]
            pub content: String,
            /// A memory type (see `types`): a built-in kind or a workspace type.
            #[schemars(schema_with = "fields::kind")]
            pub kind: String,
            /// The folder the memory belongs to, e.g. `/projects/api`.
            #[schemars(schema_with = "fields::path")]
            pub path: String,
            /// When it happened (RFC 3339 with a zone).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(schema_with = "fields::opt_time")]
            pub event_at: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 512))]
            pub source_type: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 512))]
            pub source_ref: Option<String>,
            /// A stored file the statement comes from.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 512))]
            pub source_file_id: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 512))]
            pub agent_id: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 512))]
            pub session_id: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 512))]
            pub task_id: Option<String>,
            /// 0..1 (default from the workspace settings).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 0.0, max = 1.0))]
            pub confidence: Option<f64>,
            /// A typed memory's fields.
            #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
            #[schemars(schema_with = "fields::attributes")]
            pub attributes: BTreeMap<String, String>,
            $($(#[$fattr])* pub $field: $ty,)*
        }

        impl $name {
            /// The new memory's fields alone.
            pub fn draft(&self) -> MemoryDraft {
                MemoryDraft {
                    content: self.content.clone(),
                    kind: self.kind.clone(),
                    path: self.path.clone(),
                    event_at: self.event_at.clone(),
                    source_type: self.source_type.clone(),
                    source_ref: self.source_ref.clone(),
                    source_file_id: self.source_file_id.clone(),
                    agent_id: self.agent_id.clone(),
                    session_id: self.session_id.clone(),
                    task_id: self.task_id.clone(),
                    confidence: self.confidence,
                    attributes: self.attributes.clone(),
                }
            }
        }
    };
}

memory_request! {
    /// A new memory's fields: what a proposal creates.
    pub struct MemoryDraft {}
}

memory_request! {
    /// `memory.remember`: write one memory. Field names are the JSONL, REST
    /// and MCP wire format.
    pub struct RememberRequest {
        /// Required: the same key and request return the original
        /// (`replayed: true`); the same key with another request is an
        /// `idempotency_conflict`.
        #[schemars(schema_with = "fields::key")]
        pub idempotency_key: String,
    }
}

impl MemoryDraft {
    /// `remember` of this draft under `key`.
    pub fn remember(self, idempotency_key: String) -> RememberRequest {
        RememberRequest {
            content: self.content,
            kind: self.kind,
            path: self.path,
            event_at: self.event_at,
            source_type: self.source_type,
            source_ref: self.source_ref,
            source_file_id: self.source_file_id,
            agent_id: self.agent_id,
            session_id: self.session_id,
            task_id: self.task_id,
            confidence: self.confidence,
            attributes: self.attributes,
            idempotency_key,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalOp {
    /// A new memory.
    Create,
    /// A new memory supersedes one target (old archived as superseded, new
    /// written, in one atomic step).
    Replace,
    /// Retract one target (archived).
    Remove,
    /// N targets → one new memory superseding each.
    Consolidate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceStance {
    Supports,
    Weakens,
    Contradicts,
}

/// One piece of evidence: exactly one of a memory, a file (with an optional
/// line locator) or a raw observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = evidence_rules)]
pub struct Evidence {
    pub stance: EvidenceStance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// `L10-24`, or `p3:L10-24` on a page of a paged document (with `file_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = mem_core::locator::PATTERN))]
    pub locator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
}

impl Evidence {
    /// `mem://memory/ID`, `mem://file/ID#L1-3` or `observation`.
    pub fn reference(&self) -> String {
        match (&self.memory_id, &self.file_id) {
            (Some(m), _) => format!("mem://memory/{m}"),
            (None, Some(f)) => match &self.locator {
                Some(l) => format!("mem://file/{f}#{l}"),
                None => format!("mem://file/{f}"),
            },
            _ => "observation".into(),
        }
    }
}

/// `memory.propose`: what an agent (or a person) asks the gate to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = op_rules)]
pub struct ProposalRequest {
    pub op: ProposalOp,
    /// Memories the op acts on: one for replace/remove, two or more for consolidate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("uniqueItems" = true))]
    pub targets: Vec<String>,
    /// The new memory (create, replace, consolidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryDraft>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub evidence: Vec<Evidence>,
    /// Why (required for remove).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[schemars(schema_with = "fields::key")]
    pub idempotency_key: String,
}

/// Evidence names exactly one of a memory, a file or an observation (the
/// other two absent or null), as the gate checks it.
fn evidence_rules(schema: &mut schemars::Schema) {
    let fields = ["memory_id", "file_id", "observation"];
    let one = |named: &str| {
        let mut properties = serde_json::Map::new();
        for f in fields {
            let t = if f == named { "string" } else { "null" };
            properties.insert(f.into(), serde_json::json!({ "type": t }));
        }
        serde_json::json!({ "required": [named], "properties": properties })
    };
    schema.insert(
        "oneOf".into(),
        serde_json::Value::Array(fields.iter().map(|f| one(f)).collect()),
    );
}

/// What each op needs, as the gate checks it: create and consolidate and
/// replace carry the new memory, remove a reason; replace and remove name
/// one target, consolidate two to a hundred, create none.
fn op_rules(schema: &mut schemars::Schema) {
    let rule = |op: &str, min: u32, max: u32, required: &str| {
        let mut then = serde_json::json!({
            "required": [required],
            "properties": {
                "targets": { "minItems": min, "maxItems": max },
                "memory": { "type": "object" },
            },
        });
        if min > 0 {
            then["required"] = serde_json::json!([required, "targets"]);
        }
        if required == "reason" {
            then["properties"]["reason"] =
                serde_json::json!({ "type": "string", "pattern": "\\S" });
            then["properties"]["memory"] = serde_json::json!(false);
        }
        serde_json::json!({
            "if": { "properties": { "op": { "const": op } }, "required": ["op"] },
            "then": then,
        })
    };
    schema.insert(
        "allOf".into(),
        serde_json::json!([
            rule("create", 0, 0, "memory"),
            rule("replace", 1, 1, "memory"),
            rule("remove", 1, 1, "reason"),
            rule("consolidate", 2, 100, "memory"),
        ]),
    );
}
