//! `mem0`: imports and exports mem0 memory exports, the JSON its `get_all`
//! returns: a list, or `{"results": [...]}`, of
//! `{id, memory, user_id, agent_id, run_id, metadata, categories,
//! created_at, updated_at, hash}`. Each memory becomes one `fact` entry
//! (or the kind its `metadata.kind` names) citing the lines of its object;
//! categories become tags, ids, timestamps and metadata attributes.
//! Export writes `{"results": [...]}` back, the kind in `metadata.kind`,
//! so export → import keeps content, kinds and roles.

use mem_plugin_sdk::Adapter;
use mem_plugin_sdk::types::*;
use serde_json::{Map, Value, json};

pub struct Mem0;

/// Kind of a memory whose metadata names none.
const DEFAULT_KIND: &str = "fact";
/// Top-level fields kept as attributes under their own name.
const ID_FIELDS: &[&str] = &["user_id", "agent_id", "run_id", "created_at", "updated_at"];
/// Attribute prefix of `metadata` keys.
const META: &str = "meta.";
/// Longest text a field may carry; an export past it is refused whole.
pub const MAX_FIELD_CHARS: usize = 64 * 1024;

fn bad(msg: impl Into<String>) -> PluginError {
    PluginError::invalid_input(msg)
}

/// The text of a scalar (strings as is, others as JSON).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Line ranges of the memory objects, in order: the elements of the root
/// array, or of the array under the root object's `results` key.
fn element_lines(text: &str) -> Vec<LineRange> {
    let mut out = Vec::new();
    let (mut line, mut depth) = (1u32, 0usize);
    let (mut in_str, mut esc) = (false, false);
    let mut root_array = false;
    let mut key = String::new();
    let mut last_key = String::new();
    let mut in_results = false;
    let mut start = 0u32;
    for c in text.chars() {
        if c == '\n' {
            line = line.saturating_add(1);
        }
        if in_str {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
                if depth == 1 {
                    last_key = std::mem::take(&mut key);
                }
            } else if depth == 1 {
                key.push(c);
            }
            continue;
        }
        let element_depth = if root_array { 1 } else { 2 };
        match c {
            '"' => {
                in_str = true;
                key.clear();
            }
            '[' | '{' => {
                if depth == 0 {
                    root_array = c == '[';
                } else if depth == 1 && !root_array && c == '[' {
                    in_results = last_key == "results";
                }
                if c == '{' && depth == element_depth && (root_array || in_results) {
                    start = line;
                }
                depth += 1;
            }
            ']' | '}' => {
                depth = depth.saturating_sub(1);
                if c == '}' && depth == element_depth && (root_array || in_results) {
                    out.push(LineRange::new(start, line));
                }
                if depth == 1 && c == ']' {
                    in_results = false;
                }
            }
            _ => {}
        }
    }
    out
}

fn text_field(
    obj: &Map<String, Value>,
    name: &str,
    at: usize,
) -> Result<Option<String>, PluginError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
            let s = scalar(v);
            if s.chars().count() > MAX_FIELD_CHARS {
                return Err(bad(format!(
                    "memory {at}: {name} is longer than {MAX_FIELD_CHARS} characters"
                )));
            }
            Ok(Some(s))
        }
        Some(_) => Err(bad(format!("memory {at}: {name} must be a string"))),
    }
}

/// One mem0 memory object as an entry.
fn entry_of(v: &Value, at: usize, lines: Option<LineRange>) -> Result<Entry, PluginError> {
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("memory {at} is not an object")))?;
    let content = text_field(obj, "memory", at)?
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| bad(format!("memory {at} has no `memory` text")))?;
    let mut e = Entry::new(DEFAULT_KIND, content.trim());
    e.lines = lines;
    if let Some(id) = text_field(obj, "id", at)? {
        e.attributes.push(("mem0_id".into(), id));
    }
    if let Some(h) = text_field(obj, "hash", at)? {
        e.attributes.push(("mem0_hash".into(), h));
    }
    for f in ID_FIELDS {
        if let Some(v) = text_field(obj, f, at)? {
            e.attributes.push(((*f).into(), v));
        }
    }
    match obj.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(meta)) => {
            for (k, v) in meta {
                let s = scalar(v);
                if s.chars().count() > MAX_FIELD_CHARS {
                    return Err(bad(format!(
                        "memory {at}: metadata.{k} is longer than {MAX_FIELD_CHARS} characters"
                    )));
                }
                match (k.as_str(), v) {
                    ("kind", Value::String(kind)) if !kind.is_empty() => e.kind = kind.clone(),
                    ("role", Value::String(role)) if !role.is_empty() => {
                        e.role = Some(role.clone())
                    }
                    _ => e.attributes.push((format!("{META}{k}"), s)),
                }
            }
        }
        Some(_) => return Err(bad(format!("memory {at}: metadata must be an object"))),
    }
    match obj.get("categories") {
        None | Some(Value::Null) => {}
        Some(Value::Array(cats)) => {
            for c in cats {
                match c {
                    Value::String(s) if !s.trim().is_empty() && !s.contains(',') => {
                        e.tags.push(s.trim().to_string())
                    }
                    _ => {
                        return Err(bad(format!(
                            "memory {at}: categories must be words (no commas)"
                        )));
                    }
                }
            }
        }
        Some(_) => return Err(bad(format!("memory {at}: categories must be a list"))),
    }
    Ok(e)
}

/// Entries of a mem0 export.
pub fn parse(text: &str) -> Result<Vec<Entry>, PluginError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not a mem0 export (JSON): {e}")))?;
    let items = match &doc {
        Value::Array(items) => items,
        Value::Object(o) => match o.get("results") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(bad(
                    "a mem0 export object holds its memories under `results`",
                ));
            }
        },
        _ => {
            return Err(bad(
                "a mem0 export is a list of memories or {\"results\": [...]}",
            ));
        }
    };
    let lines = element_lines(text);
    items
        .iter()
        .enumerate()
        .map(|(i, v)| entry_of(v, i + 1, lines.get(i).copied()))
        .collect()
}

/// Renders entries as `{"results": [...]}`.
pub fn render(entries: &[Entry]) -> String {
    let results: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut m = Map::new();
            if let Some(id) = e.attribute("mem0_id") {
                m.insert("id".into(), json!(id));
            }
            m.insert("memory".into(), json!(e.content));
            let mut meta = Map::new();
            meta.insert("kind".into(), json!(e.kind));
            for (k, v) in &e.attributes {
                if let Some(name) = k.strip_prefix(META) {
                    meta.insert(name.into(), json!(v));
                } else if ID_FIELDS.contains(&k.as_str()) {
                    m.insert(k.clone(), json!(v));
                }
            }
            m.insert("metadata".into(), Value::Object(meta));
            m.insert("categories".into(), json!(e.tags));
            if let Some(h) = e.attribute("mem0_hash") {
                m.insert("hash".into(), json!(h));
            }
            Value::Object(m)
        })
        .collect();
    let mut out = serde_json::to_string_pretty(&json!({ "results": results }))
        .unwrap_or_else(|_| "{\"results\": []}".into());
    out.push('\n');
    out
}

impl Adapter for Mem0 {
    fn import(name: &str, bytes: Vec<u8>) -> Result<Vec<Entry>, PluginError> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| bad(format!("{name} is not UTF-8 text: {e}")))?;
        parse(text.strip_prefix('\u{feff}').unwrap_or(text))
    }

    fn export(_name: &str, entries: Vec<Entry>) -> Result<Vec<u8>, PluginError> {
        Ok(render(&entries).into_bytes())
    }
}

mem_plugin_sdk::export_plugin!(adapter: Mem0);

#[cfg(test)]
mod tests;
