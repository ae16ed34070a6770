//! `obsidian`: imports and exports Obsidian-style Markdown notes. A note is
//! one entry: its body (cited by lines), its YAML front matter as
//! attributes (`tags` as tags, `kind` as the memory kind, lists joined by
//! commas) and its `[[wiki links]]` as the `links` attribute (one target
//! note per line) the host turns into relations between imported notes.
//! The front matter reader takes the flat subset notes use (`key: value`,
//! `key: [a, b]`, `key:` then `- item` lines) and refuses the rest.
//! Export writes each entry back as a note with its front matter.

use mem_plugin_sdk::text::numbered_lines;
use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Adapter, config};

pub struct Obsidian;

/// Attribute holding the note's name (file name without `.md`).
pub const NOTE_ATTR: &str = "note";
/// Attribute holding the notes it links to, one per line.
pub const LINKS_ATTR: &str = "links";
/// Longest front matter value, and most front matter keys, a note may have.
pub const MAX_VALUE_CHARS: usize = 4096;
pub const MAX_KEYS: usize = 64;
/// Front matter keys that are not attributes.
const RESERVED: &[&str] = &["tags", "tag", "kind", NOTE_ATTR, LINKS_ATTR];

fn bad(msg: impl Into<String>) -> PluginError {
    PluginError::invalid_input(msg)
}

/// The note's name: the last path segment without `.md`.
pub fn note_name(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.strip_suffix(".md").unwrap_or(base).to_string()
}

/// A scalar without its quotes: `"..."` with `\\` and `\"` escapes,
/// `'...'` with `''` for a quote.
fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        let mut out = String::new();
        let mut chars = v[1..v.len() - 1].chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                out.push(chars.next().unwrap_or('\\'));
            } else {
                out.push(c);
            }
        }
        return out;
    }
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return v[1..v.len() - 1].replace("''", "'");
    }
    v.to_string()
}

/// One front matter value: a scalar, or a list (`[a, b]` or `- a` lines).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    One(String),
    Many(Vec<String>),
}

impl Value {
    fn items(&self) -> Vec<String> {
        match self {
            Value::One(s) => s
                .split([',', ' '])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            Value::Many(v) => v.clone(),
        }
    }

    fn text(&self) -> String {
        match self {
            Value::One(s) => s.clone(),
            Value::Many(v) => v.join(","),
        }
    }
}

/// The front matter's keys and values in order, or an error naming the line.
pub fn front_matter(lines: &[(u32, &str)]) -> Result<Vec<(String, Value)>, PluginError> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for (n, line) in lines {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let long = line.chars().count() > MAX_VALUE_CHARS;
        if long {
            return Err(bad(format!(
                "front matter line {n} is longer than {MAX_VALUE_CHARS} characters"
            )));
        }
        if let Some(item) = line
            .trim_start()
            .strip_prefix("- ")
            .or_else(|| (line.trim() == "-").then_some(""))
            && line.starts_with([' ', '-'])
        {
            match out.last_mut() {
                Some((_, Value::Many(v))) => v.push(unquote(item)),
                Some((_, v @ Value::One(_))) if v.text().is_empty() => {
                    *v = Value::Many(vec![unquote(item)])
                }
                _ => {
                    return Err(bad(format!(
                        "front matter line {n}: a list item without a key"
                    )));
                }
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(bad(format!(
                "front matter line {n}: nested values are not supported; use flat `key: value`"
            )));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(bad(format!("front matter line {n} is not `key: value`")));
        };
        let key = key.trim();
        if key.is_empty() || key.chars().any(|c| c.is_whitespace() && c != ' ') {
            return Err(bad(format!("front matter line {n} has no key")));
        }
        let value = value.trim();
        if value.starts_with(['|', '>', '{', '&', '*', '!']) {
            return Err(bad(format!(
                "front matter line {n}: block, map, anchor and tagged values are not supported"
            )));
        }
        let parsed = match value.strip_prefix('[') {
            Some(rest) => {
                let inner = rest
                    .strip_suffix(']')
                    .ok_or_else(|| bad(format!("front matter line {n}: unclosed `[`")))?;
                if inner.contains(['[', ']']) {
                    return Err(bad(format!(
                        "front matter line {n}: nested lists are not supported"
                    )));
                }
                Value::Many(
                    inner
                        .split(',')
                        .map(unquote)
                        .filter(|s| !s.is_empty())
                        .collect(),
                )
            }
            None => Value::One(unquote(value)),
        };
        if out.iter().any(|(k, _)| k == key) {
            return Err(bad(format!("front matter line {n}: `{key}` appears twice")));
        }
        out.push((key.to_string(), parsed));
        if out.len() > MAX_KEYS {
            return Err(bad(format!("front matter has more than {MAX_KEYS} keys")));
        }
    }
    Ok(out)
}

/// The targets of the body's `[[wiki links]]` (`[[note#heading|alias]]` →
/// `note`), in order, each once.
pub fn wiki_links(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find("[[") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("]]") else { break };
        let inner = &after[..j];
        let target = inner.split(['|', '#', '^']).next().unwrap_or("").trim();
        let target = note_name(target);
        if !target.is_empty() && !inner.contains('\n') && !out.contains(&target) {
            out.push(target);
        }
        rest = &after[j + 2..];
    }
    out
}

/// The note `name` as one entry, or none when it has no body.
pub fn parse(name: &str, text: &str, default_kind: &str) -> Result<Option<Entry>, PluginError> {
    let lines: Vec<(u32, &str)> = numbered_lines(text).collect();
    let (meta, body) = match lines.first() {
        Some((_, first)) if first.trim_end() == "---" => {
            let end = lines[1..]
                .iter()
                .position(|(_, l)| l.trim_end() == "---" || l.trim_end() == "...")
                .ok_or_else(|| bad(format!("{name}: the front matter is not closed by `---`")))?;
            (front_matter(&lines[1..=end])?, &lines[end + 2..])
        }
        _ => (Vec::new(), &lines[..]),
    };
    let first = body.iter().position(|(_, l)| !l.trim().is_empty());
    let last = body.iter().rposition(|(_, l)| !l.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(None);
    };
    let content = body[first..=last]
        .iter()
        .map(|(_, l)| *l)
        .collect::<Vec<_>>()
        .join("\n");
    let mut e = Entry::new(default_kind, content.clone());
    e.lines = Some(LineRange::new(body[first].0, body[last].0));
    let note = note_name(name);
    e.attributes.push((NOTE_ATTR.into(), note));
    for (key, value) in meta {
        match key.as_str() {
            "tags" | "tag" => e.tags.extend(
                value
                    .items()
                    .into_iter()
                    .map(|t| t.trim_start_matches('#').to_string())
                    .filter(|t| !t.is_empty()),
            ),
            "kind" => {
                let k = value.text();
                if !k.is_empty() {
                    e.kind = k;
                }
            }
            k if RESERVED.contains(&k) => {}
            _ => e.attributes.push((key, value.text())),
        }
    }
    let links = wiki_links(&content);
    if !links.is_empty() {
        e.attributes.push((LINKS_ATTR.into(), links.join("\n")));
    }
    Ok(Some(e))
}

fn yaml_scalar(v: &str) -> String {
    let plain = !v.is_empty()
        && !v.starts_with(|c: char| "[]{}|>&*!%@`#'\"-?:,".contains(c) || c.is_whitespace())
        && !v.contains(": ")
        && !v.contains(" #")
        && !v.ends_with([':', ' ']);
    if plain {
        v.to_string()
    } else {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// One entry as a note: front matter (kind, tags, attributes), then the body.
pub fn render_note(e: &Entry) -> String {
    let mut fm = vec![format!("kind: {}", yaml_scalar(&e.kind))];
    if !e.tags.is_empty() {
        let tags: Vec<String> = e.tags.iter().map(|t| yaml_scalar(t)).collect();
        fm.push(format!("tags: [{}]", tags.join(", ")));
    }
    for (k, v) in &e.attributes {
        if RESERVED.contains(&k.as_str()) || k.contains(':') || v.contains('\n') {
            continue;
        }
        fm.push(format!("{k}: {}", yaml_scalar(v)));
    }
    format!("---\n{}\n---\n\n{}\n", fm.join("\n"), e.content.trim())
}

impl Adapter for Obsidian {
    fn import(name: &str, bytes: Vec<u8>) -> Result<Vec<Entry>, PluginError> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| bad(format!("{name} is not UTF-8 text: {e}")))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let kind = config::get("kind")
            .ok()
            .flatten()
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| "note".into());
        Ok(parse(name, text, &kind)?.into_iter().collect())
    }

    /// The note `name` from the entry of that note (its `note` attribute),
    /// else from the first entry.
    fn export(name: &str, entries: Vec<Entry>) -> Result<Vec<u8>, PluginError> {
        let want = note_name(name);
        let e = entries
            .iter()
            .find(|e| e.attribute(NOTE_ATTR) == Some(want.as_str()))
            .or(entries.first())
            .ok_or_else(|| PluginError::new("empty", "there is no note to export"))?;
        Ok(render_note(e).into_bytes())
    }
}

mem_plugin_sdk::export_plugin!(adapter: Obsidian);

#[cfg(test)]
mod tests;
