//! `pdf`: the first-party processor for PDF documents.
//!
//! Text is extracted page by page. The WIT chunk record has only `lines`,
//! so pages follow a convention that needs no WIT change: a chunk of kind
//! `page` with section `["page N"]` and lines counted from the top of that
//! page; the host cites it as `mem://file/ID#pN:L10-24`. Document metadata:
//! `doc.title`, `doc.author`, `doc.pages`, `doc.created_at` (RFC 3339).
//! A PDF without a text layer is `partial` ("no text layer; OCR is not
//! available"); an encrypted or damaged one fails with that reason.

use lopdf::{Document, Object};
use mem_plugin_sdk::Processor;
use mem_plugin_sdk::types::*;

pub struct Pdf;

/// Longest chunk, in characters.
const MAX_CHUNK_CHARS: usize = 1500;

/// Why a PDF without text is only partly indexed.
pub const NO_TEXT_LAYER: &str = "no text layer; OCR is not available";

impl Processor for Pdf {
    const MIME_TYPES: &'static [&'static str] = &["application/pdf"];

    fn process(file: FileInput) -> Result<Processed, PluginError> {
        process_pdf(&file)
    }
}

/// Pages, text and metadata of `file`.
pub fn process_pdf(file: &FileInput) -> Result<Processed, PluginError> {
    let doc = Document::load_mem(&file.bytes)
        .map_err(|e| PluginError::invalid_input(format!("damaged or unreadable PDF: {e}")))?;
    if doc.is_encrypted() {
        return Err(PluginError::new(
            "encrypted",
            "the PDF is encrypted and cannot be read without its password; decrypt it and put it again",
        ));
    }
    let pages = doc.get_pages();
    let mut out = Processed::empty();
    let mut meta = vec![
        ("format".to_string(), "pdf".to_string()),
        ("doc.pages".to_string(), pages.len().to_string()),
    ];
    meta.extend(info(&doc));
    let mut empty_pages = 0usize;
    for &n in pages.keys() {
        let text = doc.extract_text(&[n]).unwrap_or_default();
        let chunks = page_chunks(n, &text);
        if chunks.is_empty() {
            empty_pages += 1;
        }
        out.chunks.extend(chunks);
    }
    if empty_pages > 0 {
        let reason = if empty_pages == pages.len() {
            NO_TEXT_LAYER.to_string()
        } else {
            format!(
                "{empty_pages} of {} pages have {NO_TEXT_LAYER}",
                pages.len()
            )
        };
        meta.push(("index.partial".into(), reason));
    }
    out.title = meta
        .iter()
        .find(|(k, _)| k == "doc.title")
        .map(|(_, v)| v.clone())
        .or_else(|| Some(file.name.clone()).filter(|n| !n.is_empty()));
    out.metadata = meta;
    Ok(out)
}

/// One page's text as chunks of whole lines, lines counted on the page.
pub fn page_chunks(page: u32, text: &str) -> Vec<Chunk> {
    let section = vec![format!("page {page}")];
    let mut chunks = Vec::new();
    let mut acc = String::new();
    let mut range = LineRange::new(1, 1);
    let mut flush = |acc: &mut String, range: LineRange| {
        if !acc.trim().is_empty() {
            let mut c = Chunk::new(std::mem::take(acc), range, "page");
            c.section = section.clone();
            chunks.push(c);
        }
        acc.clear();
    };
    for (n, line) in mem_plugin_sdk::text::numbered_lines(text) {
        let line = line.trim_end();
        if !acc.is_empty() && acc.chars().count() + 1 + line.chars().count() > MAX_CHUNK_CHARS {
            flush(&mut acc, range);
        }
        if acc.is_empty() {
            if line.trim().is_empty() {
                continue;
            }
            range = LineRange::new(n, n);
        } else {
            acc.push('\n');
        }
        // A line longer than a chunk is kept whole: PDF lines are short.
        acc.push_str(line);
        range.end = n;
    }
    flush(&mut acc, range);
    chunks
}

/// `doc.title`, `doc.author`, `doc.created_at` from the Info dictionary.
fn info(doc: &Document) -> Vec<(String, String)> {
    let Some(dict) = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|o| match o {
            Object::Reference(id) => doc.get_object(*id).ok(),
            other => Some(other),
        })
        .and_then(|o| o.as_dict().ok())
    else {
        return Vec::new();
    };
    let text = |key: &[u8]| match dict.get(key) {
        Ok(Object::String(bytes, _)) => Some(text_string(bytes)).filter(|s| !s.is_empty()),
        _ => None,
    };
    let mut out = Vec::new();
    if let Some(t) = text(b"Title") {
        out.push(("doc.title".into(), t));
    }
    if let Some(a) = text(b"Author") {
        out.push(("doc.author".into(), a));
    }
    if let Some(d) = text(b"CreationDate").and_then(|d| pdf_date(&d)) {
        out.push(("doc.created_at".into(), d));
    }
    out
}

/// A PDF text string: UTF-16BE with a BOM, else PDFDocEncoding (read as
/// Latin-1, which it equals for the printable range).
pub fn text_string(bytes: &[u8]) -> String {
    let s = if let Some(utf16) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = utf16
            .chunks_exact(2)
            .map(|p| u16::from_be_bytes([p[0], p[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        bytes.iter().map(|&b| char::from(b)).collect()
    };
    s.trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

/// `D:20240601143005+02'00'` → `2024-06-01T14:30:05+02:00`. Missing parts
/// default as the PDF spec says (month/day 01, time 00, zone UTC).
pub fn pdf_date(d: &str) -> Option<String> {
    let d = d.strip_prefix("D:").unwrap_or(d);
    let digits: String = d.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() < 4 || digits.len() > 14 {
        return None;
    }
    let part = |from: usize, len: usize, default: &str| {
        digits
            .get(from..from + len)
            .map(str::to_string)
            .unwrap_or_else(|| default.to_string())
    };
    let (y, mo, da) = (part(0, 4, ""), part(4, 2, "01"), part(6, 2, "01"));
    let (h, mi, s) = (part(8, 2, "00"), part(10, 2, "00"), part(12, 2, "00"));
    let ok = |v: &str, lo: u32, hi: u32| v.parse::<u32>().is_ok_and(|n| (lo..=hi).contains(&n));
    if !(ok(&mo, 1, 12) && ok(&da, 1, 31) && ok(&h, 0, 23) && ok(&mi, 0, 59) && ok(&s, 0, 60)) {
        return None;
    }
    let rest = &d[digits.len()..];
    let zone = match rest.chars().next() {
        Some(sign @ ('+' | '-')) => {
            let z: String = rest[1..].chars().filter(char::is_ascii_digit).collect();
            let (zh, zm) = (z.get(0..2).unwrap_or("00"), z.get(2..4).unwrap_or("00"));
            if !(ok(zh, 0, 23) && ok(zm, 0, 59)) {
                return None;
            }
            format!("{sign}{zh}:{zm}")
        }
        _ => "Z".to_string(),
    };
    Some(format!("{y}-{mo}-{da}T{h}:{mi}:{s}{zone}"))
}

mem_plugin_sdk::export_plugin!(processor: Pdf);

#[cfg(test)]
mod tests;
