//! The handoff v1 document: what one agent leaves for the next (goal,
//! progress, decisions, steps, blockers, references, producer). It is
//! decoded strictly: an unknown field or an oversize value is a
//! `bad_handoff` naming the field, never silently dropped or cut, because
//! the next agent acts on exactly what was written. The same bounds make
//! the published schema (`schemas/handoff.v1.json`) and [`Handoff::check`].

use mem_core::locator::Locator;
use mem_core::{ErrorCode, MemError, MemResult};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// The document's format version.
pub const HANDOFF_VERSION: &str = "handoff.v1";
/// Longest goal.
pub const MAX_GOAL_CHARS: usize = 2_000;
/// Longest progress summary.
pub const MAX_PROGRESS_CHARS: usize = 8_000;
/// Most entries of one list (decisions, steps, blockers).
pub const MAX_ITEMS: usize = 50;
/// Longest list entry.
pub const MAX_ITEM_CHARS: usize = 1_000;
/// Most references.
pub const MAX_REFERENCES: usize = 100;
/// Longest reference URI.
pub const MAX_URI_CHARS: usize = 2_048;
/// Longest note on a reference, and longest producer name or session.
pub const MAX_NOTE_CHARS: usize = 512;
/// A task key: short, URL-safe, starts with a letter or digit.
pub const TASK_KEY_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$";
/// What a reference may name: a memory, a file (optionally a locator, see
/// `mem_core::locator`; `#L3-L9` is read as `#L3-9`), or an external
/// http(s) URL.
pub const REFERENCE_PATTERN: &str = "^(mem://memory/mem_[0-9a-z]{26}|mem://file/file_[0-9a-z]{26}(#(p[1-9][0-9]{0,8}:)?L[1-9][0-9]{0,8}(-L?[1-9][0-9]{0,8})?)?|https?://[^\\s]+)$";

/// A handoff, version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Handoff v1",
    extend("x-mem-code" = "bad_handoff")
)]
pub struct Handoff {
    /// Always `handoff.v1`.
    #[schemars(schema_with = "version")]
    pub version: String,
    /// The task this hands off; filled in from the checkpoint when absent,
    /// and must equal it when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "opt_task_key")]
    pub task: Option<String>,
    /// What the task is for, in a sentence or two.
    #[schemars(schema_with = "goal")]
    pub goal: String,
    /// Where the work stands.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "progress")]
    pub progress: String,
    /// Decisions taken, each with its reason.
    #[serde(default)]
    #[schemars(schema_with = "items")]
    pub decisions: Vec<String>,
    #[serde(default)]
    #[schemars(schema_with = "items")]
    pub completed_steps: Vec<String>,
    /// What the next agent should do, in order.
    #[serde(default)]
    #[schemars(schema_with = "items")]
    pub next_steps: Vec<String>,
    /// What stops progress and who or what can lift it.
    #[serde(default)]
    #[schemars(schema_with = "items")]
    pub blockers: Vec<String>,
    /// Artifacts the work depends on; resume resolves each one.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub references: Vec<Reference>,
    /// Who wrote it (the agent's own claim; the token is recorded apart).
    #[serde(default)]
    pub producer: Producer,
    /// When the producer wrote it, by its clock, RFC 3339 with a zone (the
    /// host records its own time beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_time")]
    pub written_at: Option<String>,
}

/// One referenced artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// `mem://memory/ID`, `mem://file/ID`, `mem://file/ID#L10-20` or an http(s) URL.
    #[schemars(schema_with = "uri")]
    pub uri: String,
    /// Why it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub note: Option<String>,
}

/// The agent and session that wrote a handoff.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Producer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub session: Option<String>,
}

fn version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "const": HANDOFF_VERSION })
}

/// A task key.
pub fn task_key(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "The task's key: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit.",
        "pattern": TASK_KEY_PATTERN,
        "minLength": 1,
        "maxLength": 128,
    })
}

fn opt_task_key(g: &mut SchemaGenerator) -> Schema {
    let mut s = task_key(g);
    s.insert("type".into(), serde_json::json!(["string", "null"]));
    s
}

fn goal(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "minLength": 1, "maxLength": MAX_GOAL_CHARS, "pattern": "\\S" })
}

fn progress(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "maxLength": MAX_PROGRESS_CHARS })
}

fn items(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": MAX_ITEMS,
        "items": { "type": "string", "minLength": 1, "maxLength": MAX_ITEM_CHARS, "pattern": "\\S" },
    })
}

fn uri(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_URI_CHARS,
        "pattern": REFERENCE_PATTERN,
    })
}

/// A `bad_handoff` about `field` (a JSON pointer inside the handoff),
/// named as the request's field (`/handoff/...`), as the door names it.
pub(crate) fn bad_handoff(field: &str, why: impl std::fmt::Display) -> MemError {
    let field = format!("/handoff{field}");
    MemError::new(
        ErrorCode::BadHandoff,
        format!("the handoff's {field} {why}"),
    )
    .with_hint(
        "correct that field of the handoff document (schemas/handoff.v1.json) and send it again",
    )
    .with_details(serde_json::json!({ "field": field }))
}

/// A rule of the handoff that no schema states (a field agreeing with the
/// request, a range running forward): well-formed, refused, the field named.
fn unprocessable(field: &str, why: impl std::fmt::Display) -> MemError {
    let field = format!("/handoff{field}");
    MemError::new(
        ErrorCode::Unprocessable,
        format!("the handoff's {field} {why}"),
    )
    .with_details(serde_json::json!({ "field": field }))
}

/// A file reference's fragment as a locator of either order (`#L3-L9` is
/// `L3-9`); `None` without one or when it is not a locator.
fn fragment(uri: &str) -> Option<Locator> {
    let (_, at) = uri.strip_prefix("mem://file/")?.split_once('#')?;
    Locator::parse_shape(&at.replacen("-L", "-", 1))
}

/// A file reference whose locator is well-formed but runs backwards.
fn reversed_range(uri: &str) -> bool {
    fragment(uri).is_some_and(|l| l.lines.start > l.lines.end)
}

/// What a reference names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target<'a> {
    Memory(&'a str),
    File {
        id: &'a str,
        /// The cited lines (of a page, for a paged document).
        at: Option<Locator>,
    },
    External(&'a str),
}

/// Parses a reference URI (the shapes [`REFERENCE_PATTERN`] admits).
pub fn parse_reference(uri: &str) -> Option<Target<'_>> {
    if let Some(id) = uri.strip_prefix("mem://memory/") {
        return mem_core::id::has_prefix(id, mem_core::id::MEMORY).then_some(Target::Memory(id));
    }
    if let Some(rest) = uri.strip_prefix("mem://file/") {
        let (id, range) = match rest.split_once('#') {
            Some((id, r)) => (id, Some(r)),
            None => (rest, None),
        };
        if !mem_core::id::has_prefix(id, mem_core::id::FILE) {
            return None;
        }
        let at = match range {
            None => None,
            Some(_) => Some(fragment(uri).filter(|l| l.lines.start <= l.lines.end)?),
        };
        return Some(Target::File { id, at });
    }
    // The schema's pattern keeps whitespace out of URLs.
    (uri.starts_with("https://") || uri.starts_with("http://")).then_some(Target::External(uri))
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

impl Handoff {
    /// Every bound of the schema, checked again here so that a request
    /// reaching the service by any path is held to them, plus the rules no
    /// schema states (the task matches, a line range runs forward).
    pub fn check(&self, task: &str) -> MemResult<()> {
        if self.version != HANDOFF_VERSION {
            return Err(bad_handoff(
                "/version",
                format!("must be {HANDOFF_VERSION:?}"),
            ));
        }
        if let Some(t) = &self.task
            && t != task
        {
            return Err(unprocessable(
                "/task",
                format!("is {t:?} but the checkpoint is for task {task:?}"),
            ));
        }
        if self.goal.trim().is_empty() || chars(&self.goal) > MAX_GOAL_CHARS {
            return Err(bad_handoff(
                "/goal",
                format!("must hold 1 to {MAX_GOAL_CHARS} characters besides whitespace"),
            ));
        }
        if chars(&self.progress) > MAX_PROGRESS_CHARS {
            return Err(bad_handoff(
                "/progress",
                format!("is longer than {MAX_PROGRESS_CHARS} characters"),
            ));
        }
        for (name, list) in [
            ("decisions", &self.decisions),
            ("completed_steps", &self.completed_steps),
            ("next_steps", &self.next_steps),
            ("blockers", &self.blockers),
        ] {
            if list.len() > MAX_ITEMS {
                return Err(bad_handoff(
                    &format!("/{name}"),
                    format!("has more than {MAX_ITEMS} entries"),
                ));
            }
            for (i, item) in list.iter().enumerate() {
                if item.trim().is_empty() || chars(item) > MAX_ITEM_CHARS {
                    return Err(bad_handoff(
                        &format!("/{name}/{i}"),
                        format!("must hold 1 to {MAX_ITEM_CHARS} characters besides whitespace"),
                    ));
                }
            }
        }
        if self.references.len() > MAX_REFERENCES {
            return Err(bad_handoff(
                "/references",
                format!("has more than {MAX_REFERENCES} entries"),
            ));
        }
        for (i, r) in self.references.iter().enumerate() {
            if chars(&r.uri) <= MAX_URI_CHARS && reversed_range(&r.uri) {
                return Err(unprocessable(
                    &format!("/references/{i}/uri"),
                    "names a line range that runs backwards; write #L<from>-<to> with from <= to",
                ));
            }
            if chars(&r.uri) > MAX_URI_CHARS || parse_reference(&r.uri).is_none() {
                return Err(bad_handoff(
                    &format!("/references/{i}/uri"),
                    "must be mem://memory/ID, mem://file/ID, mem://file/ID#L<from>-<to> or #p<page>:L<from>-<to> (from <= to), or an http(s) URL",
                ));
            }
            if r.note.as_deref().is_some_and(|n| chars(n) > MAX_NOTE_CHARS) {
                return Err(bad_handoff(
                    &format!("/references/{i}/note"),
                    format!("is longer than {MAX_NOTE_CHARS} characters"),
                ));
            }
        }
        if let Some(t) = &self.written_at
            && let Err(e) = mem_core::time::parse_rfc3339(t)
        {
            return Err(bad_handoff("/written_at", e.message));
        }
        for (name, v) in [
            ("agent", &self.producer.agent),
            ("session", &self.producer.session),
        ] {
            if v.as_deref().is_some_and(|n| chars(n) > MAX_NOTE_CHARS) {
                return Err(bad_handoff(
                    &format!("/producer/{name}"),
                    format!("is longer than {MAX_NOTE_CHARS} characters"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handoff() -> Handoff {
        serde_json::from_value(serde_json::json!({
            "version": "handoff.v1",
            "goal": "Ship the importer",
            "next_steps": ["write the tests"],
            "references": [{"uri": "mem://file/file_01jd0000000000000000000000#L3-9"}],
        }))
        .unwrap()
    }

    #[test]
    fn references_parse_by_kind_and_range() {
        let id = "file_01jd0000000000000000000000";
        assert_eq!(
            parse_reference(&format!("mem://file/{id}#L3-L9")),
            Some(Target::File {
                id,
                at: Some(Locator::lines(3, 9))
            })
        );
        assert_eq!(
            parse_reference(&format!("mem://file/{id}#L4")),
            Some(Target::File {
                id,
                at: Some(Locator::lines(4, 4))
            })
        );
        assert_eq!(
            parse_reference(&format!("mem://file/{id}#p2:L1-5")),
            Some(Target::File {
                id,
                at: Locator::parse("p2:L1-5")
            })
        );
        assert!(reversed_range(&format!("mem://file/{id}#p2:L5-1")));
        assert_eq!(parse_reference(&format!("mem://file/{id}#L9-3")), None);
        assert_eq!(parse_reference("mem://memory/nope"), None);
        assert_eq!(parse_reference("ftp://x"), None);
        assert_eq!(
            parse_reference("https://example.org/a"),
            Some(Target::External("https://example.org/a"))
        );
    }

    #[test]
    fn check_names_the_field_it_refuses() {
        let ok = handoff();
        assert!(ok.check("t1").is_ok());
        let mut h = ok.clone();
        h.task = Some("other".into());
        let e = h.check("t1").unwrap_err();
        assert_eq!(e.code, ErrorCode::Unprocessable, "well-formed, refused");
        assert_eq!(e.details["field"], "/handoff/task");
        let mut h = ok.clone();
        h.next_steps.push("x".repeat(MAX_ITEM_CHARS + 1));
        let e = h.check("t1").unwrap_err();
        assert_eq!(e.code, ErrorCode::BadHandoff);
        assert_eq!(e.details["field"], "/handoff/next_steps/1");
        let mut h = ok.clone();
        h.references[0].uri = "mem://file/file_01jd0000000000000000000000#L9-2".into();
        let e = h.check("t1").unwrap_err();
        assert_eq!(e.code, ErrorCode::Unprocessable);
        assert_eq!(e.details["field"], "/handoff/references/0/uri");
        h.references[0].uri = "mem://file/nope".into();
        assert_eq!(h.check("t1").unwrap_err().code, ErrorCode::BadHandoff);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = serde_json::from_value::<Handoff>(serde_json::json!({
            "version": "handoff.v1", "goal": "g", "secret_field": 1
        }))
        .unwrap_err();
        assert!(e.to_string().contains("secret_field"), "{e}");
    }
}
