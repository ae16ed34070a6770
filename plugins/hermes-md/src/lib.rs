//! `hermes-md`: imports and exports Hermes-style agent memory files.
//! `MEMORY.md` holds the agent's notes (environment facts, conventions,
//! things learned), `USER.md` the user's profile; entries are separated by
//! a line holding only `§` and may span lines. The frozen-snapshot header
//! Hermes renders (`═══` rules around `MEMORY (your personal notes) [...]`)
//! is skipped. A file without `§` lines is read as Markdown sections of
//! bullet entries. MEMORY.md entries are `fact`s, USER.md ones
//! `preference`s, unless the entry ends with a kind marker
//! (`<!-- mem:kind=task_state -->`); each cites its lines. Export writes
//! `§`-separated entries, marking those of another kind.

use mem_plugin_sdk::Adapter;
use mem_plugin_sdk::text::{bullet, heading, kind_marker, numbered_lines, take_kind_marker};
use mem_plugin_sdk::types::*;

pub struct HermesMd;

/// The line that separates two entries.
const DELIMITER: &str = "§";

/// `preference` for the user profile (`USER.md`), else `fact`.
pub fn kind_for(name: &str) -> &'static str {
    let base = name.rsplit('/').next().unwrap_or(name).to_lowercase();
    if base.starts_with("user") {
        "preference"
    } else {
        "fact"
    }
}

/// A line of the rendered snapshot header: a `═` rule or the title between two.
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && t.chars().all(|c| c == '═' || c == '=')
}

struct Open {
    lines: Vec<String>,
    start: u32,
    end: u32,
}

impl Open {
    fn push(open: &mut Option<Open>, n: u32, text: &str) {
        match open {
            Some(o) => {
                o.lines.push(text.to_string());
                o.end = n;
            }
            None => {
                *open = Some(Open {
                    lines: vec![text.to_string()],
                    start: n,
                    end: n,
                })
            }
        }
    }

    fn close(open: &mut Option<Open>, out: &mut Vec<Entry>, kind: &str, section: &[String]) {
        let Some(o) = open.take() else { return };
        let joined = o.lines.join("\n");
        let (content, marked) = take_kind_marker(&joined);
        let content = content.trim();
        if content.is_empty() {
            return;
        }
        let mut e = Entry::new(marked.unwrap_or(kind), content);
        e.lines = Some(LineRange::new(o.start, o.end));
        e.section = section.to_vec();
        out.push(e);
    }
}

/// Entries of the `§`-separated form.
fn parse_delimited(text: &str, kind: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    let mut in_header = false;
    for (n, line) in numbered_lines(text) {
        if is_rule(line) {
            Open::close(&mut open, &mut out, kind, &[]);
            in_header = !in_header;
            continue;
        }
        if in_header {
            continue;
        }
        if line == DELIMITER {
            Open::close(&mut open, &mut out, kind, &[]);
            continue;
        }
        if open.is_none() && line.trim().is_empty() {
            continue;
        }
        Open::push(&mut open, n, line.trim_end());
    }
    Open::close(&mut open, &mut out, kind, &[]);
    out
}

/// Entries of the Markdown form: each bullet (continuation lines
/// included) or paragraph under its heading trail.
fn parse_sections(text: &str, kind: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut trail: Vec<(usize, String)> = Vec::new();
    let mut open: Option<Open> = None;
    let titles = |t: &[(usize, String)]| t.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>();
    for (n, line) in numbered_lines(text) {
        if let Some((level, title)) = heading(line) {
            Open::close(&mut open, &mut out, kind, &titles(&trail));
            trail.retain(|(l, _)| *l < level);
            trail.push((level, title));
        } else if line.trim().is_empty() {
            Open::close(&mut open, &mut out, kind, &titles(&trail));
        } else if let Some((_, item)) = bullet(line) {
            Open::close(&mut open, &mut out, kind, &titles(&trail));
            Open::push(&mut open, n, &item);
        } else {
            Open::push(&mut open, n, line.trim());
        }
    }
    Open::close(&mut open, &mut out, kind, &titles(&trail));
    out
}

/// Entries of the memory file `name`.
pub fn parse(name: &str, text: &str) -> Vec<Entry> {
    let kind = kind_for(name);
    let delimited = numbered_lines(text).any(|(_, l)| l == DELIMITER);
    if delimited {
        parse_delimited(text, kind)
    } else {
        parse_sections(text, kind)
    }
}

/// Renders entries as Hermes writes them to the file `name`: one entry
/// after the other, separated by `§` lines. An entry's own line reading
/// `§` would split it, so it is written indented one space. An entry whose
/// kind is not the one the file's name implies ends with a kind marker.
pub fn render(name: &str, entries: &[Entry]) -> String {
    let implied = kind_for(name);
    let parts: Vec<String> = entries
        .iter()
        .map(|e| {
            let mut lines: Vec<String> = e
                .content
                .trim()
                .lines()
                .map(|l| if l == DELIMITER { " §" } else { l }.to_string())
                .collect();
            if e.kind != implied {
                lines.push(kind_marker(&e.kind));
            }
            lines.join("\n")
        })
        .collect();
    let mut out = parts.join(&format!("\n{DELIMITER}\n"));
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

impl Adapter for HermesMd {
    fn import(name: &str, bytes: Vec<u8>) -> Result<Vec<Entry>, PluginError> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| PluginError::invalid_input(format!("{name} is not UTF-8 text: {e}")))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let entries = parse(name, text);
        if entries.is_empty() {
            return Err(PluginError::invalid_input(format!(
                "{name} holds no memory entries"
            )));
        }
        Ok(entries)
    }

    fn export(name: &str, entries: Vec<Entry>) -> Result<Vec<u8>, PluginError> {
        Ok(render(name, &entries).into_bytes())
    }
}

mem_plugin_sdk::export_plugin!(adapter: HermesMd);

#[cfg(test)]
mod tests;
