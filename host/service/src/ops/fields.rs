//! JSON Schemas of the fields many requests share, stating exactly what
//! the service enforces (a client validating against the OpenAPI document
//! or an MCP tool's input schema is never surprised by the server).

use crate::door::MAX_IDEMPOTENCY_KEY_CHARS;
use mem_core::path::{INVISIBLE_CLASS, MAX_PATH_CHARS, path_pattern};
use schemars::{Schema, SchemaGenerator, json_schema};

/// Longest tag, and the most tags one file may carry.
pub const MAX_TAG_CHARS: usize = 64;
pub const MAX_TAGS: usize = 64;

/// A virtual path (the rules of `VPath::parse`).
pub fn path(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "Absolute virtual path: starts with '/', no trailing slash, no empty, '.' or '..' segment, no segment padded with whitespace, no control or invisible character.",
        "pattern": path_pattern(),
        "minLength": 1,
        "maxLength": MAX_PATH_CHARS,
        "x-mem-check": "path",
    })
}

/// An optional virtual path.
pub fn opt_path(g: &mut SchemaGenerator) -> Schema {
    let mut s = path(g);
    s.insert("type".into(), serde_json::json!(["string", "null"]));
    s
}

/// Tags: no whitespace, comma, control or invisible character.
pub fn tag_pattern() -> String {
    format!("^[^,\\s{INVISIBLE_CLASS}]+$")
}

pub fn tags(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": MAX_TAGS,
        "items": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TAG_CHARS,
            "pattern": tag_pattern(),
        },
    })
}

/// An idempotency key (see `door::checked_key`).
pub fn key(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "Chosen by the client, unique per intended write; resending it with the same request replays the first answer, with another request is an idempotency_conflict.",
        "minLength": 1,
        "maxLength": MAX_IDEMPOTENCY_KEY_CHARS,
        "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
    })
}

pub fn opt_key(g: &mut SchemaGenerator) -> Schema {
    let mut s = key(g);
    s.insert("type".into(), serde_json::json!(["string", "null"]));
    s
}

/// The largest whole number every JSON reader holds exactly (2^53 - 1):
/// the bound of every count, size and version a request carries.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A `state_version` a write expects (versions start at 1).
pub fn version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_SAFE_INTEGER,
        "description": "The state_version the caller last saw (optimistic concurrency): a stale one is a version_conflict.",
    })
}

/// Text that must hold something besides whitespace.
pub fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "minLength": 1, "pattern": "\\S" })
}

/// Memory content: more than whitespace, at most the workspace's
/// `limits.max_memory_chars` (filled in by [`tailor`]).
pub fn content(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "pattern": "\\S",
        "maxLength": crate::config::Limits::default().max_memory_chars,
        "x-mem-limit": "max_memory_chars",
    })
}

/// A memory type name: one of the workspace's types (filled in by
/// [`tailor`]).
pub fn kind(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "x-mem-enum": "types",
    })
}

pub fn opt_kind(g: &mut SchemaGenerator) -> Schema {
    let mut s = kind(g);
    s.insert("type".into(), serde_json::json!(["string", "null"]));
    s
}

/// An RFC 3339 time with a zone.
pub fn opt_time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "format": "date-time" })
}

/// A typed memory's fields: short ASCII keys, bounded values.
pub fn attributes(_: &mut SchemaGenerator) -> Schema {
    use crate::requests::{MAX_ATTR_KEY_CHARS, MAX_ATTR_VALUE_CHARS, MAX_ATTRS};
    json_schema!({
        "type": "object",
        "maxProperties": MAX_ATTRS,
        "propertyNames": {
            "pattern": "^[A-Za-z0-9_.:-]+$",
            "minLength": 1,
            "maxLength": MAX_ATTR_KEY_CHARS,
        },
        "additionalProperties": { "type": "string", "maxLength": MAX_ATTR_VALUE_CHARS },
    })
}

/// Fills in what only the running workspace knows: the names of its
/// memory types, its limits. Applied to every schema a surface publishes
/// (the OpenAPI document, MCP input schemas).
pub fn tailor(schema: &mut serde_json::Value, config: &crate::WorkspaceConfig) {
    match schema {
        serde_json::Value::Object(o) => {
            if o.get("x-mem-enum").and_then(|v| v.as_str()) == Some("types") {
                let mut names: Vec<serde_json::Value> = config
                    .types
                    .registry
                    .all()
                    .map(|t| t.name.clone().into())
                    .collect();
                if o.get("type").and_then(|t| t.as_array()).is_some() {
                    names.push(serde_json::Value::Null);
                }
                o.insert("enum".into(), names.into());
            }
            if o.get("x-mem-limit").and_then(|v| v.as_str()) == Some("max_memory_chars") {
                o.insert("maxLength".into(), config.limits.max_memory_chars.into());
            }
            // Whole numbers the server reads as fixed-width integers.
            let bound = match o.get("format").and_then(|f| f.as_str()) {
                Some("uint64" | "uint") => Some(MAX_SAFE_INTEGER),
                Some("uint32") => Some(u64::from(u32::MAX)),
                Some("uint16") => Some(u64::from(u16::MAX)),
                _ => None,
            };
            if let Some(max) = bound
                && !o.contains_key("maximum")
            {
                o.insert("maximum".into(), max.into());
            }
            o.values_mut().for_each(|v| tailor(v, config));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|v| tailor(v, config)),
        _ => {}
    }
}

/// An RFC 3339 time or a `YYYY-MM-DD` date.
pub fn opt_time_or_date(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "string", "format": "date-time" },
            { "type": "string", "format": "date" },
            { "type": "null" },
        ],
    })
}

/// Which records a recall covers.
pub fn opt_source(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "enum": ["all", "memory", "memories", "file", "files", null] })
}

/// A file type filter (`crate::mime::FILE_TYPES`).
pub fn opt_file_type(_: &mut SchemaGenerator) -> Schema {
    let mut allowed: Vec<serde_json::Value> = crate::mime::FILE_TYPES
        .iter()
        .map(|t| serde_json::json!(t))
        .collect();
    allowed.push(serde_json::Value::Null);
    json_schema!({
        "enum": allowed,
        "description": "Only files of this type: image, doc (text, PDF, office documents), audio, or any (every file, no memories).",
    })
}

/// Lifecycles a search may cover (forgotten memories have no content).
pub fn search_lifecycles(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "enum": ["active", "archived", "superseded", "all"] },
    })
}

/// A file's path: a path below the root (a file is never `/` itself).
pub fn file_path(g: &mut SchemaGenerator) -> Schema {
    let mut s = path(g);
    s.insert(
        "pattern".into(),
        path_pattern()
            .replacen("^/(?:", "^/(", 1)
            .replace(")?$", ")$")
            .into(),
    );
    s.insert("minLength".into(), 2.into());
    s
}

/// A token's lifetime (`30d`, `12h`, `45m`, `60s`) or a future instant.
pub fn opt_expiry(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "string", "pattern": "^[1-9][0-9]{0,5}[dhms]$" },
            { "type": "string", "format": "date-time" },
            { "type": "null" },
        ],
    })
}

/// Bytes as standard base64 (RFC 4648, padded).
pub fn base64(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 4,
        "contentEncoding": "base64",
        "pattern": "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$",
    })
}

pub fn opt_base64(g: &mut SchemaGenerator) -> Schema {
    let mut s = base64(g);
    s.insert("type".into(), serde_json::json!(["string", "null"]));
    s.insert("minLength".into(), 0.into());
    s
}

/// A memory id as a page cursor.
pub fn opt_cursor(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "pattern": "^mem_[0-9A-Za-z]{26}$" })
}

/// Virtual paths.
pub fn paths(g: &mut SchemaGenerator) -> Schema {
    let item = path(g).to_value();
    json_schema!({ "type": "array", "items": item })
}

/// Token scopes, at least one.
pub fn scopes(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "items": { "enum": ["search", "read", "write", "delete", "admin"] },
    })
}

/// Standard base64 that tolerates non-zero trailing bits (as most encoders
/// and validators do): what the `base64` schema admits, decodes.
pub fn decode_base64(field: &str, text: &str) -> mem_core::MemResult<Vec<u8>> {
    use base64::Engine;
    use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
    let engine = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    engine.decode(text).map_err(|e| {
        mem_core::MemError::bad_request(format!("{field} is not base64: {e}"))
            .with_hint("encode the bytes with standard base64 (RFC 4648, with padding)")
            .with_details(serde_json::json!({ "field": field }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_path_is_a_path_below_the_root() {
        let mut g = SchemaGenerator::default();
        let pattern = file_path(&mut g)
            .get("pattern")
            .unwrap()
            .as_str()
            .unwrap()
            .to_string();
        let re = regex::Regex::new(&pattern).unwrap();
        assert!(!re.is_match("/"));
        assert!(re.is_match("/a/b.md"));
        assert!(!re.is_match("/a/"));
    }
}
