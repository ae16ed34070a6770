//! MIME sniffing: the bytes decide, the name only refines text.
//!
//! Binary formats are recognised from magic bytes (a PNG named `notes.md`
//! is `image/png`). Text has no magic, so for content that is valid UTF-8
//! without NULs the extension picks among text types (`text/markdown`,
//! `text/x-rust`, ...), and JSON is recognised by parsing it.

/// How much of a file's start [`sniff`] looks at.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// Sniffs the MIME type of `bytes`; `name` is consulted only for text.
#[cfg(test)]
pub fn sniff(bytes: &[u8], name: &str) -> String {
    sniff_head(bytes, bytes.len() <= SNIFF_BYTES, name)
}

/// Sniffs from the first bytes of a file (`complete`: they are all of it).
/// JSON is recognised by parsing a complete file; a longer one that starts
/// like JSON counts as JSON when its name says so.
pub fn sniff_head(bytes: &[u8], complete: bool, name: &str) -> String {
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
