//! `html`: the first-party processor for web pages.
//!
//! A small tolerant tag scanner rather than a full HTML5 parser: readable
//! text is all a memory host needs, and it keeps the component small. Text
//! inside `script`, `style`, `nav`, `noscript`, `template`, `svg`,
//! `header`/`footer` and `aside` is dropped (`<title>` is the title); `h1`-`h6`
//! start a new section (the heading trail, outermost first); block elements
//! end a paragraph. Each chunk keeps the source lines it came from, so a
//! citation points into the page source.

use mem_plugin_sdk::Processor;
use mem_plugin_sdk::types::*;

pub struct Html;

/// Longest chunk, in characters.
const MAX_CHUNK_CHARS: usize = 1500;

/// Why a page without readable text is only partly indexed (a truncated,
/// script-only or markup-only page).
pub const NO_READABLE_TEXT: &str =
    "no readable text: the page holds only markup, scripts or styles";

/// Elements whose content is not readable text.
const SKIPPED: &[&str] = &[
    "script", "style", "nav", "noscript", "template", "svg", "header", "footer", "aside", "iframe",
    "form", "button", "select",
];

/// Elements that end a paragraph.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "main",
    "blockquote",
    "pre",
    "hr",
    "dd",
    "dt",
    "dl",
    "figure",
    "figcaption",
    "body",
];

impl Processor for Html {
    const MIME_TYPES: &'static [&'static str] = &["text/html", "application/xhtml+xml"];

    fn process(file: FileInput) -> Result<Processed, PluginError> {
        Ok(process_html(&file))
    }
}

/// A paragraph of readable text and the lines it spans.
struct Para {
    lines: LineRange,
    text: String,
    section: Vec<String>,
}

#[derive(Default)]
struct Scan {
    paras: Vec<Para>,
    trail: Vec<(u8, String)>,
    current: String,
    start_line: u32,
    end_line: u32,
    title: Option<String>,
    headings: usize,
}

impl Scan {
    fn push_text(&mut self, text: &str, line: u32) {
        for word in text.split_whitespace() {
            if self.current.is_empty() {
                self.start_line = line;
            } else {
                self.current.push(' ');
            }
            self.current.push_str(word);
            self.end_line = line;
        }
    }

    fn end_para(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.current);
        self.paras.push(Para {
            lines: LineRange::new(
                self.start_line.max(1),
                self.end_line.max(self.start_line).max(1),
            ),
            text,
            section: self.trail.iter().map(|(_, h)| h.clone()).collect(),
        });
    }
}

/// Readable text of `file`, cut at headings and paragraphs.
pub fn process_html(file: &FileInput) -> Processed {
    let src = mem_plugin_sdk::text::decode(&file.bytes);
    let scan = scan(&src);
    let mut out = Processed::empty();
    out.title = scan
        .title
        .clone()
        .or_else(|| scan.paras.iter().find_map(|p| p.section.first().cloned()))
        .or_else(|| Some(file.name.clone()).filter(|n| !n.is_empty()));
    let mut paras = scan.paras.into_iter().peekable();
    while let Some(first) = paras.next() {
        let mut chunk = Chunk::new(first.text, first.lines, "section");
        chunk.section = first.section;
        while let Some(next) = paras.peek() {
            if next.section != chunk.section
                || chunk.text.chars().count() + 2 + next.text.chars().count() > MAX_CHUNK_CHARS
            {
                break;
            }
            if let Some(next) = paras.next() {
                chunk.text.push_str("\n\n");
                chunk.text.push_str(&next.text);
                chunk.lines.end = next.lines.end;
            }
        }
        chunk.kind = if chunk.text.chars().count() > MAX_CHUNK_CHARS {
            "paragraph".into()
        } else {
            "section".into()
        };
        out.chunks.push(chunk);
    }
    out.metadata = vec![
        ("format".into(), "html".into()),
        ("html.headings".into(), scan.headings.to_string()),
        ("bytes".into(), file.bytes.len().to_string()),
    ];
    if out.chunks.is_empty() {
        out.metadata
            .push(("index.partial".into(), NO_READABLE_TEXT.into()));
    }
    out
}

fn scan(src: &str) -> Scan {
    let mut s = Scan::default();
    let mut line: u32 = 1;
    let mut skip: Option<String> = None;
    let mut heading: Option<(u8, String)> = None;
    let mut in_title = false;
    let mut title = String::new();
    let mut rest = src;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            add_text(
                &mut s,
                rest,
                line,
                &skip,
                &mut heading,
                in_title,
                &mut title,
            );
            break;
        };
        let (text, after) = rest.split_at(lt);
        add_text(
            &mut s,
            text,
            line,
            &skip,
            &mut heading,
            in_title,
            &mut title,
        );
        line += count_lines(text);
        // A comment, doctype or tag; an unterminated one ends the document.
        let end = if after.starts_with("<!--") {
            after.find("-->").map(|i| i + 3)
        } else {
            after.find('>').map(|i| i + 1)
        };
        let Some(end) = end else { break };
        let tag = &after[..end];
        line += count_lines(tag);
        rest = &after[end..];
        let Some((name, closing)) = tag_name(tag) else {
            continue;
        };
        if let Some(open) = &skip {
            if closing && *open == name {
                skip = None;
            }
            continue;
        }
        if name == "title" {
            in_title = !closing;
            if closing && s.title.is_none() {
                s.title = Some(collapse(&title)).filter(|t| !t.is_empty());
            }
            continue;
        }
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with("/>") {
            skip = Some(name);
            continue;
        }
        if let Some(level) = heading_level(&name) {
            if closing {
                if let Some((lvl, text)) = heading.take() {
                    let text = collapse(&text);
                    if !text.is_empty() {
                        s.trail.retain(|(l, _)| *l < lvl);
                        s.trail.push((lvl, text.clone()));
                        s.headings += 1;
                        // The heading opens its section's text.
                        s.push_text(&text, line);
                    }
                }
            } else {
                s.end_para();
                heading = Some((level, String::new()));
            }
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            s.end_para();
        }
    }
    if s.title.is_none() && in_title {
        s.title = Some(collapse(&title)).filter(|t| !t.is_empty());
    }
    s.end_para();
    s
}

fn add_text(
    s: &mut Scan,
    raw: &str,
    line: u32,
    skip: &Option<String>,
    heading: &mut Option<(u8, String)>,
    in_title: bool,
    title: &mut String,
) {
    if skip.is_some() || raw.is_empty() {
        return;
    }
    let text = decode_entities(raw);
    if in_title {
        title.push_str(&text);
    } else if let Some((_, h)) = heading {
        h.push(' ');
        h.push_str(&text);
    } else {
        // Words keep the line they are on.
        for (l, piece) in (line..).zip(text.split('\n')) {
            s.push_text(piece, l);
        }
    }
}

fn count_lines(s: &str) -> u32 {
    u32::try_from(s.bytes().filter(|b| *b == b'\n').count()).unwrap_or(u32::MAX)
}

/// `<h2 class=x>` → (`h2`, false); `</p>` → (`p`, true); comments and
/// doctypes → none.
fn tag_name(tag: &str) -> Option<(String, bool)> {
    let inner = tag.strip_prefix('<')?;
    let (closing, inner) = match inner.strip_prefix('/') {
        Some(i) => (true, i),
        None => (false, inner),
    };
    let name: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    (!name.is_empty()).then_some((name, closing))
}

fn heading_level(name: &str) -> Option<u8> {
    match name.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(d - b'0'),
        _ => None,
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The common named entities and numeric references; unknown ones stay.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|&semi| semi <= 10).and_then(|semi| {
            let name = &rest[1..semi];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, semi + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

mem_plugin_sdk::export_plugin!(processor: Html);

#[cfg(test)]
mod tests;
