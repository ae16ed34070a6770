//! `text`: the first-party processor for plain text, Markdown, source code
//! and JSON.
//!
//! Every chunk carries the 1-based, inclusive line range it was cut from,
//! so a context pack can cite `L12-30`. Markdown is cut at headings (the
//! heading trail becomes the chunk's `section`) and then at paragraph
//! boundaries when a section is longer than `max_chunk_chars`; code fences
//! are never split. Code is cut at blank lines, grouped up to the same size,
//! with the nearest definition as section. JSON is cut per top-level member.
//! Settings (`[plugins.text] config`): `max_chunk_chars` (default 1500).

mod code;
mod json;
pub mod large;
mod markdown;
mod plain;

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Processor, config};

pub struct Text;

/// Default longest chunk, in characters.
pub const DEFAULT_MAX_CHUNK_CHARS: usize = 1500;

/// The formats this processor tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
    Code(&'static str),
    Plain,
}

const CODE_EXTENSIONS: &[(&str, &str)] = &[
    ("rs", "rust"),
    ("py", "python"),
    ("js", "javascript"),
    ("mjs", "javascript"),
    ("ts", "typescript"),
    ("tsx", "typescript"),
    ("jsx", "javascript"),
    ("go", "go"),
    ("java", "java"),
    ("kt", "kotlin"),
    ("c", "c"),
    ("h", "c"),
    ("cc", "cpp"),
    ("cpp", "cpp"),
    ("hpp", "cpp"),
    ("cs", "csharp"),
    ("rb", "ruby"),
    ("php", "php"),
    ("swift", "swift"),
    ("sh", "shell"),
    ("bash", "shell"),
    ("zsh", "shell"),
    ("sql", "sql"),
    ("toml", "toml"),
    ("yaml", "yaml"),
    ("yml", "yaml"),
    ("lua", "lua"),
    ("scala", "scala"),
    ("zig", "zig"),
];

/// Picks the format from the MIME type, then the file extension.
pub fn detect_format(mime: &str, name: &str) -> Format {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    if essence == "text/markdown"
        || essence == "text/x-markdown"
        || ext == "md"
        || ext == "markdown"
    {
        return Format::Markdown;
    }
    if essence == "application/json" || essence.ends_with("+json") || ext == "json" {
        return Format::Json;
    }
    if let Some((_, lang)) = CODE_EXTENSIONS.iter().find(|(e, _)| *e == ext) {
        return Format::Code(lang);
    }
    if let Some(lang) = essence.strip_prefix("text/x-")
        && let Some((_, l)) = CODE_EXTENSIONS.iter().find(|(_, l)| *l == lang)
    {
        return Format::Code(l);
    }
    Format::Plain
}

impl Processor for Text {
    const MIME_TYPES: &'static [&'static str] = &[
        "text/*",
        "application/json",
        "application/ld+json",
        "application/x-ndjson",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
        "application/javascript",
        "application/x-sh",
        "application/sql",
    ];

    /// HTML is `text/*` but has its own processor (`html`), which drops
    /// markup and boilerplate instead of indexing it.
    fn accepts(mime: &str) -> bool {
        let essence = mime.split(';').next().unwrap_or("").trim();
        !essence.eq_ignore_ascii_case("text/html")
            && mem_plugin_sdk::mime_matches(Self::MIME_TYPES, mime)
    }

    fn process(file: FileInput) -> Result<Processed, PluginError> {
        let max = config::get_or("max_chunk_chars", DEFAULT_MAX_CHUNK_CHARS).max(100);
        if file.bytes.len() > large::LARGE_INPUT_BYTES {
            return Ok(large::process(file, max));
        }
        Ok(process_text(&file, max))
    }
}

/// Processes a file with chunks of at most about `max_chars` characters.
pub fn process_text(file: &FileInput, max_chars: usize) -> Processed {
    let text = mem_plugin_sdk::text::decode(&file.bytes);
    let format = detect_format(&file.mime, &file.name);
    let mut out = match format {
        Format::Markdown => markdown::process(&text, max_chars),
        Format::Json => json::process(&text, max_chars).unwrap_or_else(|| {
            let mut p = plain::process(&text, max_chars);
            p.metadata.push(("valid".into(), "false".into()));
            p
        }),
        Format::Code(lang) => code::process(&text, lang, max_chars),
        Format::Plain => plain::process(&text, max_chars),
    };
    let format_name = match format {
        Format::Markdown => "markdown",
        Format::Json => "json",
        Format::Code(_) => "code",
        Format::Plain => "text",
    };
    out.metadata
        .insert(0, ("format".into(), format_name.into()));
    out.metadata.push((
        "lines".into(),
        mem_plugin_sdk::text::numbered_lines(&text)
            .count()
            .to_string(),
    ));
    out.metadata
        .push(("bytes".into(), file.bytes.len().to_string()));
    if out.title.is_none() {
        out.title = Some(file.name.clone()).filter(|n| !n.is_empty());
    }
    out.tags.sort();
    out.tags.dedup();
    out
}

/// Groups consecutive `blocks` (line range + text) into chunks of at most
/// `max_chars`, splitting a block that alone is too long at line (then
/// character) boundaries. Shared by every format.
pub(crate) fn pack(
    blocks: Vec<(LineRange, String)>,
    max_chars: usize,
    section: &[String],
    kind: &str,
) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut current: Option<(LineRange, String)> = None;
    let flush = |current: &mut Option<(LineRange, String)>, chunks: &mut Vec<Chunk>| {
        if let Some((lines, text)) = current.take() {
            let mut c = Chunk::new(text, lines, kind);
            c.section = section.to_vec();
            chunks.push(c);
        }
    };
    for (lines, text) in blocks.into_iter().flat_map(|b| split_block(b, max_chars)) {
        match &mut current {
            Some((range, acc)) if acc.chars().count() + 2 + text.chars().count() <= max_chars => {
                acc.push_str("\n\n");
                acc.push_str(&text);
                range.end = lines.end;
            }
            _ => {
                flush(&mut current, &mut chunks);
                current = Some((lines, text));
            }
        }
    }
    flush(&mut current, &mut chunks);
    chunks
}

/// A block longer than `max_chars` as pieces of whole lines (a single
/// over-long line is cut at character boundaries and keeps its line number).
fn split_block((lines, text): (LineRange, String), max_chars: usize) -> Vec<(LineRange, String)> {
    if text.chars().count() <= max_chars {
        return vec![(lines, text)];
    }
    let mut out: Vec<(LineRange, String)> = Vec::new();
    let mut acc = String::new();
    let mut start = lines.start;
    for (i, line) in text.split('\n').enumerate() {
        let n = lines.start + i as u32;
        if line.chars().count() > max_chars {
            if !acc.is_empty() {
                out.push((LineRange::new(start, n - 1), std::mem::take(&mut acc)));
            }
            let chars: Vec<char> = line.chars().collect();
            for piece in chars.chunks(max_chars) {
                out.push((LineRange::new(n, n), piece.iter().collect()));
            }
            start = n + 1;
            continue;
        }
        if !acc.is_empty() && acc.chars().count() + 1 + line.chars().count() > max_chars {
            out.push((LineRange::new(start, n - 1), std::mem::take(&mut acc)));
            start = n;
        }
        if acc.is_empty() {
            start = n;
        } else {
            acc.push('\n');
        }
        acc.push_str(line);
    }
    if !acc.is_empty() {
        out.push((LineRange::new(start, lines.end), acc));
    }
    out
}

/// Splits text into blank-line separated blocks with their line ranges.
pub(crate) fn paragraphs(lines: &[(u32, &str)]) -> Vec<(LineRange, String)> {
    let mut out = Vec::new();
    let mut acc: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut last = 0;
    for &(n, line) in lines {
        if line.trim().is_empty() {
            if !acc.is_empty() {
                out.push((LineRange::new(start, last), acc.join("\n")));
                acc.clear();
            }
            continue;
        }
        if acc.is_empty() {
            start = n;
        }
        acc.push(line);
        last = n;
    }
    if !acc.is_empty() {
        out.push((LineRange::new(start, last), acc.join("\n")));
    }
    out
}

mem_plugin_sdk::export_plugin!(processor: Text);

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn file(name: &str, mime: &str, text: &str) -> FileInput {
        FileInput {
            id: "f1".into(),
            path: format!("/{name}"),
            name: name.into(),
            mime: mime.into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn html_is_left_to_the_html_processor() {
        assert!(!Text::accepts("text/html; charset=utf-8"));
        assert!(Text::accepts("text/plain"));
        assert!(Text::accepts("text/markdown"));
    }

    #[test]
    fn formats_by_mime_then_extension() {
        assert_eq!(detect_format("text/markdown", "x"), Format::Markdown);
        assert_eq!(detect_format("text/plain", "README.md"), Format::Markdown);
        assert_eq!(detect_format("application/json", "a"), Format::Json);
        assert_eq!(detect_format("text/plain", "main.rs"), Format::Code("rust"));
        assert_eq!(detect_format("text/x-python", "x"), Format::Code("python"));
        assert_eq!(detect_format("text/plain", "notes.txt"), Format::Plain);
    }

    #[test]
    fn long_paragraphs_split_at_lines_with_their_ranges() {
        let text: Vec<String> = (1..=10)
            .map(|i| format!("line number {i} with some words"))
            .collect();
        let blocks = vec![(LineRange::new(1, 10), text.join("\n"))];
        let chunks = pack(blocks, 100, &[], "paragraph");
        assert!(chunks.len() > 1);
        assert_eq!(chunks[0].lines.start, 1);
        assert_eq!(chunks.last().map(|c| c.lines.end), Some(10));
        for w in chunks.windows(2) {
            assert_eq!(w[0].lines.end + 1, w[1].lines.start, "contiguous ranges");
        }
        for c in &chunks {
            assert!(c.text.chars().count() <= 100);
            let first = c.text.lines().next().unwrap_or("");
            assert_eq!(
                first,
                format!("line number {} with some words", c.lines.start)
            );
        }
    }

    #[test]
    fn one_huge_line_is_cut_but_keeps_its_line() {
        let chunks = pack(
            vec![(LineRange::new(3, 3), "y".repeat(250))],
            100,
            &[],
            "text",
        );
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| c.lines == LineRange::new(3, 3)));
    }

    #[test]
    fn metadata_and_default_title() {
        let p = process_text(&file("notes.txt", "text/plain", "hello\n\nworld\n"), 1500);
        assert_eq!(p.title.as_deref(), Some("notes.txt"));
        assert!(p.metadata.contains(&("format".into(), "text".into())));
        assert!(p.metadata.contains(&("lines".into(), "3".into())));
    }
}
