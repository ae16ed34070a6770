//! Markdown: sections at headings (the heading trail is the chunk's
//! section), paragraphs within a section, code fences never split; title
//! and tags from front matter, the first H1 and `#hashtags`; links as
//! entities, and front matter `people`/`attendees` (person), `place`/
//! `location` (place) and `date` (metadata) for the relation detectors;
//! front matter `description`/`summary` as the `description` metadata
//! entry, which the host offers the owner as a pending annotation.

use mem_plugin_sdk::text::numbered_lines;
use mem_plugin_sdk::types::*;

use crate::pack;
use crate::plain::hashtags;

/// `## Title` → `(2, "Title")`.
fn heading(line: &str) -> Option<(usize, String)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim().to_string()))
}

fn fence(line: &str) -> Option<&'static str> {
    let t = line.trim_start();
    if t.starts_with("```") {
        Some("```")
    } else if t.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

struct FrontMatter {
    title: Option<String>,
    tags: Vec<String>,
    /// `(kind, value, line)`: people and places it names.
    entities: Vec<(&'static str, String, u32)>,
    date: Option<String>,
    description: Option<String>,
    /// Lines it occupies (0 when absent).
    lines: usize,
}

fn unquote(s: &str) -> String {
    s.trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .trim()
        .to_string()
}

/// What a front matter list key holds: tags, or entities of a kind.
fn list_key(line: &str) -> Option<(Option<&'static str>, &str)> {
    const KEYS: &[(&str, Option<&str>)] = &[
        ("tags:", None),
        ("keywords:", None),
        ("people:", Some("person")),
        ("person:", Some("person")),
        ("attendees:", Some("person")),
        ("author:", Some("person")),
        ("authors:", Some("person")),
        ("place:", Some("place")),
        ("location:", Some("place")),
        ("where:", Some("place")),
    ];
    KEYS.iter()
        .find_map(|(k, kind)| line.strip_prefix(k).map(|rest| (*kind, rest)))
}

fn front_matter(lines: &[(u32, &str)]) -> FrontMatter {
    let mut fm = FrontMatter {
        title: None,
        tags: Vec::new(),
        entities: Vec::new(),
        date: None,
        description: None,
        lines: 0,
    };
    if lines.first().map(|(_, l)| l.trim()) != Some("---") {
        return fm;
    }
    let Some(end) = lines
        .iter()
        .skip(1)
        .position(|(_, l)| l.trim() == "---" || l.trim() == "...")
    else {
        return fm;
    };
    let body = &lines[1..=end];
    // The list key whose `- item` lines follow: `None` for tags.
    let mut open: Option<Option<&'static str>> = None;
    let add = |fm: &mut FrontMatter, kind: Option<&'static str>, v: &str, n: u32| {
        let v = unquote(v);
        if v.is_empty() {
            return;
        }
        match kind {
            None => fm.tags.push(v.to_lowercase()),
            Some(kind) => fm.entities.push((kind, v, n)),
        }
    };
    for &(n, line) in body {
        let t = line.trim();
        if let Some(kind) = open {
            if let Some(item) = t.strip_prefix("- ") {
                add(&mut fm, kind, item, n);
                continue;
            }
            open = None;
        }
        if let Some(v) = t.strip_prefix("title:") {
            fm.title = Some(unquote(v)).filter(|s| !s.is_empty());
        } else if let Some(v) = t.strip_prefix("date:") {
            fm.date = Some(unquote(v)).filter(|s| !s.is_empty());
        } else if let Some(v) = t
            .strip_prefix("description:")
            .or_else(|| t.strip_prefix("summary:"))
        {
            fm.description = Some(unquote(v)).filter(|s| !s.is_empty());
        } else if let Some((kind, v)) = list_key(t) {
            let v = v.trim().trim_start_matches('[').trim_end_matches(']');
            if v.is_empty() {
                open = Some(kind);
            } else {
                for item in v.split(',') {
                    add(&mut fm, kind, item, n);
                }
            }
        }
    }
    fm.lines = end + 2;
    fm
}

/// Links `[text](url)`, `<url>` and bare `http(s)://` URLs on one line.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        if let Some(j) = after.find(')') {
            let url = after[..j]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
            if !url.is_empty() {
                out.push(url);
            }
            rest = &after[j..];
        } else {
            break;
        }
    }
    for word in
        line.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '<' || c == '>')
    {
        if (word.starts_with("http://") || word.starts_with("https://"))
            && !out.iter().any(|u| u == word)
        {
            out.push(word.trim_end_matches(['.', ',', ';']).to_string());
        }
    }
    out
}

pub(crate) fn process(text: &str, max_chars: usize) -> Processed {
    let all: Vec<(u32, &str)> = numbered_lines(text).collect();
    let fm = front_matter(&all);
    let lines = &all[fm.lines..];
    let mut p = Processed::empty();
    p.title = fm.title;
    p.tags = fm.tags;
    p.entities
        .extend(fm.entities.into_iter().map(|(kind, value, n)| Entity {
            kind: kind.into(),
            value,
            lines: Some(LineRange::new(n, n)),
        }));
    if let Some(date) = fm.date {
        p.metadata.push(("date".into(), date));
    }
    if let Some(d) = fm.description {
        p.metadata.push(("description".into(), d));
    }

    let mut trail: Vec<(usize, String)> = Vec::new();
    let mut blocks: Vec<(LineRange, String)> = Vec::new();
    let mut acc: Vec<&str> = Vec::new();
    let mut acc_start = 0;
    let mut last = 0;
    let mut open_fence: Option<&'static str> = None;
    let mut first_heading: Option<String> = None;
    let mut h1: Option<String> = None;
    let mut prose: Vec<&str> = Vec::new();

    let section_of =
        |trail: &[(usize, String)]| trail.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>();
    let end_block =
        |acc: &mut Vec<&str>, blocks: &mut Vec<(LineRange, String)>, start: u32, last: u32| {
            if !acc.is_empty() {
                blocks.push((LineRange::new(start, last), acc.join("\n")));
                acc.clear();
            }
        };

    for &(n, line) in lines {
        if let Some(f) = open_fence {
            acc.push(line);
            last = n;
            if line.trim_start().starts_with(f) && line.trim() == f {
                open_fence = None;
            }
            continue;
        }
        if let Some(f) = fence(line) {
            if acc.is_empty() {
                acc_start = n;
            }
            acc.push(line);
            last = n;
            open_fence = Some(f);
            continue;
        }
        if let Some((level, title)) = heading(line) {
            end_block(&mut acc, &mut blocks, acc_start, last);
            let chunks = pack(
                std::mem::take(&mut blocks),
                max_chars,
                &section_of(&trail),
                kind_of(&trail),
            );
            p.chunks.extend(chunks);
            trail.retain(|(l, _)| *l < level);
            trail.push((level, title.clone()));
            if first_heading.is_none() {
                first_heading = Some(title.clone());
            }
            if level == 1 && h1.is_none() {
                h1 = Some(title);
            }
            blocks.push((LineRange::new(n, n), line.trim().to_string()));
            continue;
        }
        for url in links(line) {
            p.entities.push(Entity {
                kind: "link".into(),
                value: url,
                lines: Some(LineRange::new(n, n)),
            });
        }
        if line.trim().is_empty() {
            end_block(&mut acc, &mut blocks, acc_start, last);
            continue;
        }
        prose.push(line);
        if acc.is_empty() {
            acc_start = n;
        }
        acc.push(line);
        last = n;
    }
    end_block(&mut acc, &mut blocks, acc_start, last);
    p.chunks.extend(pack(
        blocks,
        max_chars,
        &section_of(&trail),
        kind_of(&trail),
    ));
    // A heading alone at a section end would be a chunk without content:
    // keep it (it is what a reader searches for), it has a valid range.
    p.title = p.title.or(h1).or(first_heading);
    p.tags.extend(hashtags(prose.into_iter()));
    p
}

fn kind_of(trail: &[(usize, String)]) -> &'static str {
    if trail.is_empty() {
        "paragraph"
    } else {
        "section"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "---\ntitle: Setup guide\ntags: [ops, Linux]\n---\n# Setup\n\nIntro paragraph.\n\n## Install\n\nRun the installer.\nThen reboot.\n\n```sh\necho one\n\necho two\n```\n\n## Configure #config\n\nEdit [the file](https://example.com/cfg).\n";

    #[test]
    fn front_matter_people_places_and_date_are_entities_and_metadata() {
        let doc = "---\ntitle: Offsite\ndate: 2026-03-04\npeople: [Ada Lovelace, 'Grace Hopper']\nattendees:\n  - Alan Kay\nplace: Lisbon office\ntags: [team]\n---\nWe met.\n";
        let p = process(doc, 1000);
        let got: Vec<(&str, &str, u32)> = p
            .entities
            .iter()
            .map(|e| {
                (
                    e.kind.as_str(),
                    e.value.as_str(),
                    e.lines.map_or(0, |l| l.start),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("person", "Ada Lovelace", 4),
                ("person", "Grace Hopper", 4),
                ("person", "Alan Kay", 6),
                ("place", "Lisbon office", 7),
            ]
        );
        assert_eq!(p.tags, ["team"]);
        assert!(
            p.metadata
                .contains(&("date".to_string(), "2026-03-04".to_string()))
        );
        let described = process("---\nsummary: 'Who met, and why'\n---\nText.\n", 1000);
        assert!(
            described
                .metadata
                .contains(&("description".to_string(), "Who met, and why".to_string()))
        );
        // Without front matter nothing is guessed.
        assert!(process("people: Ada\n", 1000).entities.is_empty());
    }

    #[test]
    fn chunks_follow_headings_with_line_ranges() {
        let p = process(DOC, 1500);
        assert_eq!(p.title.as_deref(), Some("Setup guide"));
        let summary: Vec<(Vec<String>, u32, u32)> = p
            .chunks
            .iter()
            .map(|c| (c.section.clone(), c.lines.start, c.lines.end))
            .collect();
        assert_eq!(
            summary,
            vec![
                (vec!["Setup".to_string()], 5, 7),
                (vec!["Setup".to_string(), "Install".to_string()], 9, 18),
                (
                    vec!["Setup".to_string(), "Configure #config".to_string()],
                    20,
                    22
                ),
            ]
        );
        assert!(
            p.chunks[1].text.contains("echo one\n\necho two"),
            "fences are kept whole"
        );
        assert!(p.chunks[0].text.starts_with("# Setup"));
        assert_eq!(p.entities.len(), 1);
        assert_eq!(p.entities[0].value, "https://example.com/cfg");
        assert_eq!(p.entities[0].lines, Some(LineRange::new(22, 22)));
        assert!(p.tags.contains(&"ops".to_string()) && p.tags.contains(&"linux".to_string()));
    }

    #[test]
    fn small_cap_splits_at_paragraphs() {
        let p = process(DOC, 40);
        let install: Vec<&Chunk> = p
            .chunks
            .iter()
            .filter(|c| c.section.last().map(String::as_str) == Some("Install"))
            .collect();
        assert!(install.len() >= 2, "{install:?}");
        assert_eq!(install[0].lines.start, 9);
        assert_eq!(install.last().map(|c| c.lines.end), Some(18));
    }

    #[test]
    fn title_falls_back_to_first_h1_and_headings_need_a_space() {
        let p = process("#nottitle\n\n## Sub\n\n# Real Title\ntext\n", 1500);
        assert_eq!(p.title.as_deref(), Some("Real Title"));
        assert!(heading("#nope").is_none());
        assert_eq!(heading("### Three ###"), Some((3, "Three".into())));
    }
}
