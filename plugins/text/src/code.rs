//! Source code: blank-line separated blocks grouped up to the size cap,
//! each chunk's section being the nearest definition above it; definitions
//! are reported as `symbol` entities.

use mem_plugin_sdk::text::numbered_lines;
use mem_plugin_sdk::types::*;

use crate::{pack, paragraphs};

const DEFINERS: &[&str] = &[
    "fn",
    "def",
    "class",
    "function",
    "func",
    "struct",
    "enum",
    "trait",
    "impl",
    "interface",
    "type",
    "mod",
    "module",
    "object",
    "fun",
];
const MODIFIERS: &[&str] = &[
    "pub",
    "pub(crate)",
    "pub(super)",
    "async",
    "export",
    "default",
    "public",
    "private",
    "protected",
    "static",
    "abstract",
    "final",
    "unsafe",
    "const",
    "override",
    "open",
    "data",
    "sealed",
];

/// The name a definition line introduces (`pub fn parse(` → `parse`).
pub(crate) fn definition(line: &str) -> Option<String> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let mut words = line
        .split_whitespace()
        .skip_while(|w| MODIFIERS.contains(w));
    let keyword = words.next()?;
    if !DEFINERS.contains(&keyword) {
        return None;
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    (!name.is_empty()).then_some(name)
}

pub(crate) fn process(text: &str, language: &str, max_chars: usize) -> Processed {
    let lines: Vec<(u32, &str)> = numbered_lines(text).collect();
    let mut p = Processed::empty();
    p.metadata.push(("language".into(), language.into()));
    let mut symbol_at: Vec<(u32, String)> = Vec::new();
    for &(n, line) in &lines {
        if let Some(name) = definition(line) {
            p.entities.push(Entity {
                kind: "symbol".into(),
                value: name.clone(),
                lines: Some(LineRange::new(n, n)),
            });
            symbol_at.push((n, name));
        }
    }
    let section_for = |range: &LineRange| -> Vec<String> {
        symbol_at
            .iter()
            .rev()
            .find(|(n, _)| *n <= range.end)
            .map(|(_, s)| vec![s.clone()])
            .unwrap_or_default()
    };
    let mut group: Vec<(LineRange, String)> = Vec::new();
    let mut group_section: Vec<String> = Vec::new();
    for block in paragraphs(&lines) {
        let section = section_for(&block.0);
        if section != group_section && !group.is_empty() {
            p.chunks.extend(pack(
                std::mem::take(&mut group),
                max_chars,
                &group_section,
                "code",
            ));
        }
        group_section = section;
        group.push(block);
    }
    p.chunks
        .extend(pack(group, max_chars, &group_section, "code"));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_become_sections_and_symbols() {
        let src =
            "use std::io;\n\npub fn parse(x: u8) {\n    x\n}\n\nstruct Point {\n    x: i32,\n}\n";
        let p = process(src, "rust", 1500);
        let syms: Vec<&str> = p.entities.iter().map(|e| e.value.as_str()).collect();
        assert_eq!(syms, vec!["parse", "Point"]);
        let sections: Vec<(Vec<String>, u32, u32)> = p
            .chunks
            .iter()
            .map(|c| (c.section.clone(), c.lines.start, c.lines.end))
            .collect();
        assert_eq!(
            sections,
            vec![
                (vec![], 1, 1),
                (vec!["parse".to_string()], 3, 5),
                (vec!["Point".to_string()], 7, 9)
            ]
        );
        assert_eq!(definition("    fn inner()"), None);
        assert_eq!(definition("def handler(event):"), Some("handler".into()));
    }
}
