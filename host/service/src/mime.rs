//! MIME sniffing: the bytes decide, the name only refines text.
//!
//! Binary formats are recognised from magic bytes (a PNG named `notes.md`
//! is `image/png`). Text has no magic, so for content that is valid UTF-8
//! without NULs the extension picks among text types (`text/markdown`,
//! `text/x-rust`, ...), and JSON is recognised by parsing it.

/// The file types a `type` filter names (search), each a family of MIME
/// types: `image`, `doc` (text, PDF, office and e-book documents, markup
/// and data files), `audio`, and `any` (every file).
pub const FILE_TYPES: &[&str] = &["image", "doc", "audio", "any"];

/// MIME type prefixes of the documents family.
const DOC_PREFIXES: &[&str] = &[
    "text/",
    "application/pdf",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.",
    "application/vnd.oasis.opendocument.",
    "application/vnd.ms-",
    "application/rtf",
    "application/epub+zip",
    "application/xhtml+xml",
    "application/json",
    "application/ld+json",
    "application/x-ndjson",
    "application/xml",
    "application/toml",
    "application/yaml",
];

/// The MIME type prefixes of a file type (`any`: none, every file
/// matches); `None` for a name that is not one of [`FILE_TYPES`].
pub fn type_prefixes(file_type: &str) -> Option<&'static [&'static str]> {
    match file_type {
        "image" => Some(&["image/"]),
        "audio" => Some(&["audio/"]),
        "doc" => Some(DOC_PREFIXES),
        "any" => Some(&[]),
        _ => None,
    }
}

/// The file type a MIME type belongs to: `image`, `doc`, `audio`, or
/// `other`.
pub fn file_type_of(mime: &str) -> &'static str {
    ["image", "audio", "doc"]
        .into_iter()
        .find(|t| type_prefixes(t).is_some_and(|ps| ps.iter().any(|p| mime.starts_with(p))))
        .unwrap_or("other")
}

/// How much of a file's start [`sniff`] looks at.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// Sniffs the MIME type of `bytes`; `name` is consulted only for text.
#[cfg(test)]
pub fn sniff(bytes: &[u8], name: &str) -> String {
    sniff_head(bytes, bytes.len() <= SNIFF_BYTES, name, None)
}

/// Longest MIME type hint accepted.
pub const MAX_MIME_HINT_CHARS: usize = 127;

/// What [`parse_hint`] accepts, for the request schemas: `type/subtype`
/// of RFC 6838 token characters, optionally followed by parameters.
pub const HINT_PATTERN: &str = r"^\s*[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+\s*(;[\s\S]*)?$";

/// A client's MIME type hint as the host reads it: `type/subtype`
/// lower-cased, parameters (`; charset=...`) dropped; `None` when it is not
/// a MIME type.
pub fn parse_hint(hint: &str) -> Option<String> {
    let essence = hint.split(';').next()?.trim().to_ascii_lowercase();
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    let (ty, sub) = essence.split_once('/')?;
    (hint.chars().count() <= MAX_MIME_HINT_CHARS && token(ty) && token(sub)).then_some(essence)
}

/// Text types a hint may choose for text content (JSON is recognised by
/// parsing, never by a hint).
fn is_text_hint(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/toml"
                | "application/yaml"
                | "application/xml"
                | "application/x-ndjson"
                | "application/xhtml+xml"
                | "application/javascript"
                | "application/sql"
                | "application/x-sh"
        )
}

/// Sniffs from the first bytes of a file (`complete`: they are all of it).
/// JSON is recognised by parsing a complete file; a longer one that starts
/// like JSON counts as JSON when its name says so. `hint` (a parsed
/// [`parse_hint`]) only chooses among text types for text content, as a
/// file name's extension would: magic bytes and parsed JSON outrank it,
/// and binary content without magic stays `application/octet-stream`.
pub fn sniff_head(bytes: &[u8], complete: bool, name: &str, hint: Option<&str>) -> String {
    if let Some(kind) = infer::get(bytes) {
        return kind.mime_type().to_string();
    }
    if !looks_like_text(bytes) {
        return "application/octet-stream".to_string();
    }
    let trimmed = trim_ascii_start(strip_bom(bytes));
    if (trimmed.starts_with(b"{") || trimmed.starts_with(b"["))
        && if complete {
            serde_json::from_slice::<serde_json::Value>(bytes).is_ok()
        } else {
            name.to_ascii_lowercase().ends_with(".json")
        }
    {
        return "application/json".to_string();
    }
    let lower_head: Vec<u8> = trimmed
        .iter()
        .take(64)
        .map(u8::to_ascii_lowercase)
        .collect();
    if lower_head.starts_with(b"<!doctype html") || lower_head.starts_with(b"<html") {
        return "text/html".to_string();
    }
    if let Some(h) = hint.filter(|h| is_text_hint(h)) {
        return h.to_string();
    }
    text_type_for_extension(name).to_string()
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes)
}

fn trim_ascii_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

/// Valid UTF-8 (the first 64 KiB; a cut multi-byte char at the end is
/// fine), no NUL, and few control characters.
fn looks_like_text(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return false;
    }
    let valid = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && head.len() == SNIFF_BYTES,
    };
    if !valid {
        return false;
    }
    let controls = head
        .iter()
        .filter(|b| b.is_ascii_control() && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c))
        .count();
    controls * 100 <= head.len().max(1)
}

fn text_type_for_extension(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" | "mdx" => "text/markdown",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "json" => "application/json",
        "jsonl" | "ndjson" => "application/x-ndjson",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "c" | "h" => "text/x-c",
        "cc" | "cpp" | "hpp" | "cxx" => "text/x-c++",
        "rb" => "text/x-ruby",
        "sh" | "bash" => "text/x-shellscript",
        "sql" => "text/x-sql",
        _ => "text/plain",
    }
}

#[cfg(test)]
mod tests {
    use super::sniff;

    /// The schema's pattern and the parser refuse the same hints (a schema
    /// that allowed `000` let a fuzzer's valid request be refused).
    #[test]
    fn hint_pattern_says_what_parse_hint_accepts() {
        let re = regex::Regex::new(super::HINT_PATTERN).unwrap();
        for h in [
            "000",
            "text",
            "/plain",
            "text/",
            "text plain",
            "a/b c",
            "text/plain;x",
            " text/md ",
            "image/svg+xml",
            "t/p ; charset=utf-8",
            "a/b/c",
            "é/x",
        ] {
            assert_eq!(re.is_match(h), super::parse_hint(h).is_some(), "{h:?}");
        }
    }

    #[test]
    fn magic_bytes_win_over_the_name() {
        let png = [
            0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R',
        ];
        assert_eq!(sniff(&png, "notes.md"), "image/png");
        assert_eq!(sniff(b"%PDF-1.7\n...", "a.txt"), "application/pdf");
    }

    #[test]
    fn text_is_refined_by_name_and_content() {
        assert_eq!(sniff(b"# Title\n\nbody\n", "a.md"), "text/markdown");
        assert_eq!(sniff(b"plain words", "a"), "text/plain");
        assert_eq!(sniff(b"{\"a\": 1}", "data.txt"), "application/json");
        assert_eq!(sniff(b"fn main() {}", "main.rs"), "text/x-rust");
        assert_eq!(sniff(b"", "empty"), "text/plain");
    }

    #[test]
    fn a_hint_only_chooses_among_text_types() {
        use super::{parse_hint, sniff_head};
        let png = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
        let hinted = |bytes: &[u8], name: &str, hint: &str| {
            sniff_head(bytes, true, name, parse_hint(hint).as_deref())
        };
        assert_eq!(hinted(&png, "x", "text/plain"), "image/png", "magic wins");
        assert_eq!(hinted(b"# T\n", "notes", "text/markdown"), "text/markdown");
        assert_eq!(
            hinted(b"# T\n", "notes.txt", "Text/Markdown; charset=utf-8"),
            "text/markdown"
        );
        assert_eq!(hinted(b"{\"a\":1}", "x", "text/plain"), "application/json");
        assert_eq!(hinted(b"plain", "x", "application/json"), "text/plain");
        assert_eq!(
            hinted(b"plain", "x", "image/png"),
            "text/plain",
            "not text: ignored"
        );
        assert_eq!(
            hinted(&[0, 1, 2, 255], "x", "text/plain"),
            "application/octet-stream"
        );
        assert_eq!(parse_hint("no slash"), None);
        assert_eq!(parse_hint("text/"), None);
        assert_eq!(parse_hint("te xt/plain"), None);
        assert_eq!(parse_hint(&format!("text/{}", "a".repeat(200))), None);
    }

    #[test]
    fn file_types_are_families_of_mime_types() {
        assert_eq!(super::file_type_of("image/jpeg"), "image");
        assert_eq!(super::file_type_of("audio/mpeg"), "audio");
        assert_eq!(super::file_type_of("application/pdf"), "doc");
        assert_eq!(super::file_type_of("text/html"), "doc");
        assert_eq!(super::file_type_of("application/zip"), "other");
        assert_eq!(super::type_prefixes("any"), Some(&[][..]));
        assert_eq!(super::type_prefixes("video"), None);
        for t in super::FILE_TYPES {
            assert!(super::type_prefixes(t).is_some(), "{t}");
        }
    }

    #[test]
    fn binary_without_magic_is_octet_stream() {
        assert_eq!(
            sniff(&[0u8, 1, 2, 3, 255, 254], "x.md"),
            "application/octet-stream"
        );
        assert_eq!(
            sniff(&[0xff, 0xfe, 0xfd, 0x80], "x.txt"),
            "application/octet-stream"
        );
    }
}
