//! `agents-md`: imports and exports agent instruction files (`CLAUDE.md`,
//! `AGENTS.md`, `.cursorrules`-style Markdown). Each bullet (continuation
//! lines included) and each free paragraph becomes one entry with its
//! heading trail and line range; absolute wording (must, never, always,
//! do not, required) marks a binding rule (role `constraint`), anything
//! else in such a file is `guidance`. Export writes the entries back as
//! headings and bullets, so import → export → import keeps every entry;
//! an entry whose kind the wording would not give back (a `fact`) ends
//! with a kind marker (`<!-- mem:kind=fact -->`) that import reads.

use mem_plugin_sdk::text::{bullet, heading, kind_marker, numbered_lines, take_kind_marker};
use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Adapter, config};

pub struct AgentsMd;

const STRONG: &[&str] = &[
    "must",
    "never",
    "always",
    "do not",
    "don't",
    "required",
    "mandatory",
    "forbidden",
    "only ever",
];

/// `constraint` for absolute wording, else `guidance`.
pub fn role_of(text: &str) -> &'static str {
    let lower = format!(" {} ", text.to_lowercase());
    let strong = STRONG.iter().any(|w| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].chars().last().unwrap_or(' ');
            let after = lower[i + w.len()..].chars().next().unwrap_or(' ');
            !before.is_alphanumeric() && !after.is_alphanumeric()
        })
    });
    if strong { "constraint" } else { "guidance" }
}

struct Open {
    content: Vec<String>,
    start: u32,
    end: u32,
    block: &'static str,
}

fn tag_for(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name).to_lowercase();
    base.trim_start_matches('.').replace(['.', '_'], "-")
}

/// The kind a rule of `role` is imported as: `rule` (a constraint) or
/// `preference` (guidance), unless the workspace set `kind`; the host keeps
/// the role either way.
fn kind_of(role: &str, configured: Option<&str>) -> String {
    match (configured, role) {
        (Some(k), _) => k.to_string(),
        (None, "constraint") => "rule".into(),
        (None, _) => "preference".into(),
    }
}

/// Entries of the document `name`; `kind` overrides the kind of every entry.
pub fn parse(name: &str, text: &str, kind: Option<&str>) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut trail: Vec<(usize, String)> = Vec::new();
    let mut open: Option<Open> = None;
    let mut in_fence = false;
    let tag = tag_for(name);
    let close = |open: &mut Option<Open>, out: &mut Vec<Entry>, trail: &[(usize, String)]| {
        if let Some(o) = open.take() {
            let joined = o.content.join("\n");
            let (content, marked) = take_kind_marker(&joined);
            let content = content.trim();
            if content.is_empty() {
                return;
            }
            // A marked kind keeps its own role (the host's role table);
            // else the wording decides.
            let (kind, role) = match marked {
                Some(k) => (k.to_string(), None),
                None => {
                    let role = role_of(content);
                    (kind_of(role, kind), Some(role.to_string()))
                }
            };
            let mut e = Entry::new(kind, content);
            e.section = trail.iter().map(|(_, t)| t.clone()).collect();
            e.role = role;
            e.lines = Some(LineRange::new(o.start, o.end));
            e.tags = vec![tag.clone()];
            e.attributes = vec![
                ("document".into(), name.to_string()),
                ("block".into(), o.block.to_string()),
            ];
            out.push(e);
        }
    };
    for (n, line) in numbered_lines(text) {
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        if in_fence || fence {
            if fence {
                in_fence = !in_fence;
            }
            match &mut open {
                Some(o) => {
                    o.content.push(line.to_string());
                    o.end = n;
                }
                None => {
                    open = Some(Open {
                        content: vec![line.to_string()],
                        start: n,
                        end: n,
                        block: "paragraph",
                    })
                }
            }
            continue;
        }
        if let Some((level, title)) = heading(line) {
            close(&mut open, &mut out, &trail);
            trail.retain(|(l, _)| *l < level);
            trail.push((level, title));
            continue;
        }
        if line.trim().is_empty() {
            close(&mut open, &mut out, &trail);
            continue;
        }
        if let Some((_, text)) = bullet(line) {
            close(&mut open, &mut out, &trail);
            open = Some(Open {
                content: vec![text],
                start: n,
                end: n,
                block: "bullet",
            });
            continue;
        }
        match &mut open {
            Some(o) => {
                o.content.push(line.trim().to_string());
                o.end = n;
            }
            None => {
                open = Some(Open {
                    content: vec![line.trim().to_string()],
                    start: n,
                    end: n,
                    block: "paragraph",
                })
            }
        }
    }
    close(&mut open, &mut out, &trail);
    out
}

/// Renders entries as Markdown: headings from the section trails, bullets
/// (or paragraphs for entries imported as paragraphs). An entry whose kind
/// its wording would not give back (a `fact`, a `decision` saying "never")
/// is followed by a kind marker.
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    let mut current: Vec<String> = Vec::new();
    let mut last_block = "";
    for e in entries {
        if e.section != current {
            let common = e
                .section
                .iter()
                .zip(&current)
                .take_while(|(a, b)| a == b)
                .count();
            for (depth, title) in e.section.iter().enumerate().skip(common) {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&format!("{} {title}\n\n", "#".repeat((depth + 1).min(6))));
            }
            current = e.section.clone();
            last_block = "";
        }
        let block = if e.attribute("block") == Some("paragraph") {
            "paragraph"
        } else {
            "bullet"
        };
        if (block == "paragraph" || last_block == "paragraph") && !last_block.is_empty() {
            out.push('\n');
        }
        let marker = (e.kind != kind_of(role_of(&e.content), None)).then(|| kind_marker(&e.kind));
        if block == "paragraph" {
            out.push_str(e.content.trim());
            out.push('\n');
            if let Some(m) = marker {
                out.push_str(&format!("{m}\n"));
            }
        } else {
            let mut lines = e.content.trim().lines();
            out.push_str(&format!("- {}\n", lines.next().unwrap_or("")));
            for l in lines.map(str::to_string).chain(marker) {
                out.push_str(&format!("  {l}\n"));
            }
        }
        last_block = block;
    }
    out
}

impl Adapter for AgentsMd {
    fn import(name: &str, bytes: Vec<u8>) -> Result<Vec<Entry>, PluginError> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| PluginError::invalid_input(format!("{name} is not UTF-8 text: {e}")))?;
        let kind = config::get("kind").ok().flatten().filter(|k| !k.is_empty());
        Ok(parse(name, text, kind.as_deref()))
    }

    fn export(_name: &str, entries: Vec<Entry>) -> Result<Vec<u8>, PluginError> {
        Ok(render(&entries).into_bytes())
    }
}

mem_plugin_sdk::export_plugin!(adapter: AgentsMd);

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Project rules\n\nThis repo is a Rust workspace.\n\n## Style\n\n- Never commit secrets.\n- Prefer small modules;\n  split past 600 lines.\n1. Run `cargo fmt`.\n\n## Testing\n\n```sh\ncargo test\n```\n";

    type View<'a> = (&'a str, Vec<String>, Option<LineRange>, Option<&'a str>);

    #[test]
    fn bullets_and_paragraphs_become_entries_with_lines() {
        let e = parse("CLAUDE.md", DOC, None);
        let got: Vec<View> = e
            .iter()
            .map(|e| {
                (
                    e.content.as_str(),
                    e.section.clone(),
                    e.lines,
                    e.role.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got[0],
            (
                "This repo is a Rust workspace.",
                vec!["Project rules".to_string()],
                Some(LineRange::new(3, 3)),
                Some("guidance")
            )
        );
        assert_eq!(got[1].0, "Never commit secrets.");
        assert_eq!(got[1].3, Some("constraint"));
        assert_eq!(
            (e[0].kind.as_str(), e[1].kind.as_str()),
            ("preference", "rule")
        );
        assert_eq!(got[2].0, "Prefer small modules;\nsplit past 600 lines.");
        assert_eq!(got[2].2, Some(LineRange::new(8, 9)));
        assert_eq!(got[3].0, "Run `cargo fmt`.");
        assert_eq!(got[4].0, "```sh\ncargo test\n```");
        assert_eq!(
            got[4].1,
            vec!["Project rules".to_string(), "Testing".to_string()]
        );
        assert_eq!(e[0].tags, vec!["claude-md".to_string()]);
    }

    #[test]
    fn export_then_import_keeps_entries() {
        let first = parse("AGENTS.md", DOC, None);
        let rendered = render(&first);
        let second = parse("AGENTS.md", &rendered, None);
        let view = |v: &[Entry]| {
            v.iter()
                .map(|e| {
                    (
                        e.content.clone(),
                        e.section.clone(),
                        e.role.clone(),
                        e.kind.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(view(&first), view(&second), "{rendered}");
    }

    #[test]
    fn kinds_the_wording_would_not_give_back_are_marked() {
        let mut fact = Entry::new("fact", "The API lives in crates/api.");
        fact.section = vec!["Layout".into()];
        let mut decision = Entry::new("decision", "Never deploy on Fridays.");
        decision.section = vec!["Layout".into()];
        let rule = Entry::new("rule", "Never commit secrets.");
        let mut code = Entry::new("artifact", "```sh\ncargo test\n```");
        code.attributes = vec![("block".into(), "paragraph".into())];
        let entries = [fact, decision, rule, code];
        let rendered = render(&entries);
        assert_eq!(rendered.matches("<!-- mem:kind=").count(), 3, "{rendered}");
        let back = parse("AGENTS.md", &rendered, None);
        let got: Vec<_> = back
            .iter()
            .map(|e| (e.content.as_str(), e.kind.as_str(), e.role.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("The API lives in crates/api.", "fact", None),
                ("Never deploy on Fridays.", "decision", None),
                ("Never commit secrets.", "rule", Some("constraint")),
                ("```sh\ncargo test\n```", "artifact", None),
            ],
            "{rendered}"
        );
    }

    #[test]
    fn role_needs_whole_words() {
        assert_eq!(role_of("You MUST run tests"), "constraint");
        assert_eq!(role_of("mustard is fine"), "guidance");
    }
}
