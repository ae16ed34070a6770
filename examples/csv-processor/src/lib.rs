//! A CSV processor for mem-host, written the way a third-party author
//! would: only against `mem-plugin-sdk`.
//!
//! Each chunk is a run of rows (with the header repeated so a chunk reads
//! on its own), locators are the rows' line ranges, the header names
//! become metadata, and the `rows_per_chunk` setting (default 20) sizes
//! the chunks. Quoted fields with commas, escaped quotes and line breaks
//! are handled.

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Processor, config, log};

pub struct Csv;

/// One parsed record and the lines it spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub fields: Vec<String>,
    pub lines: LineRange,
}

/// Parses CSV (RFC 4180 quoting; `delimiter` is `,` or `\t`).
pub fn parse(text: &str, delimiter: char) -> Result<Vec<Record>, PluginError> {
    let mut records = Vec::new();
    let mut field = String::new();
    let mut fields = Vec::new();
    let mut in_quotes = false;
    let mut line = 1u32;
    let mut start = 1u32;
    let mut chars = text.chars().peekable();
    let mut row_has_content = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if in_quotes => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    in_quotes = false;
                }
            }
            '"' if field.is_empty() => {
                in_quotes = true;
                row_has_content = true;
            }
            '\n' if in_quotes => {
                field.push('\n');
                line += 1;
            }
            '\r' => {}
            '\n' => {
                if row_has_content || !field.is_empty() || !fields.is_empty() {
                    fields.push(std::mem::take(&mut field));
                    records.push(Record {
                        fields: std::mem::take(&mut fields),
                        lines: LineRange::new(start, line),
                    });
                }
                row_has_content = false;
                line += 1;
                start = line;
            }
            c if c == delimiter && !in_quotes => {
                fields.push(std::mem::take(&mut field));
                row_has_content = true;
            }
            c => {
                field.push(c);
                row_has_content = true;
            }
        }
    }
    if in_quotes {
        return Err(PluginError::invalid_input(format!(
            "unterminated quoted field starting on line {start}"
        )));
    }
    if row_has_content || !field.is_empty() || !fields.is_empty() {
        fields.push(field);
        records.push(Record {
            fields,
            lines: LineRange::new(start, line),
        });
    }
    Ok(records)
}

/// Builds the processed form with `rows_per_chunk` data rows per chunk.
pub fn to_processed(name: &str, records: &[Record], rows_per_chunk: usize) -> Processed {
    let mut p = Processed::empty();
    let Some((header, rows)) = records.split_first() else {
        p.metadata.push(("rows".into(), "0".into()));
        return p;
    };
    let header_line = header.fields.join(", ");
    p.title = Some(
        name.trim_end_matches(".csv")
            .trim_end_matches(".tsv")
            .to_string(),
    )
    .filter(|t| !t.is_empty());
    p.metadata.push(("columns".into(), header.fields.join(",")));
    p.metadata.push(("rows".into(), rows.len().to_string()));
    for group in rows.chunks(rows_per_chunk.max(1)) {
        let mut text = header_line.clone();
        for r in group {
            text.push('\n');
            let cells: Vec<String> = header
                .fields
                .iter()
                .zip(&r.fields)
                .map(|(h, v)| format!("{h}: {}", v.replace('\n', " ")))
                .collect();
            text.push_str(&cells.join("; "));
        }
        let lines = LineRange::new(group[0].lines.start, group[group.len() - 1].lines.end);
        p.chunks.push(Chunk::new(text, lines, "rows"));
    }
    p.tags.push("table".into());
    p
}

impl Processor for Csv {
    const MIME_TYPES: &'static [&'static str] = &["text/csv", "text/tab-separated-values"];

    fn process(file: FileInput) -> Result<Processed, PluginError> {
        let text = std::str::from_utf8(&file.bytes)
            .map_err(|e| PluginError::invalid_input(format!("{} is not UTF-8: {e}", file.name)))?;
        let delimiter = if file.mime.starts_with("text/tab-separated-values") {
            '\t'
        } else {
            ','
        };
        let records = parse(text, delimiter)?;
        let rows_per_chunk = config::get_or("rows_per_chunk", 20usize);
        log::debug(&format!("{}: {} records", file.name, records.len()));
        Ok(to_processed(&file.name, &records, rows_per_chunk))
    }
}

mem_plugin_sdk::export_plugin!(processor: Csv);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_and_line_ranges() {
        let r = parse(
            "name,note\nann,\"a, b\"\nbob,\"two\nlines\"\n\"c\"\"d\",x\n",
            ',',
        )
        .unwrap();
        assert_eq!(r.len(), 4);
        assert_eq!(r[1].fields, vec!["ann", "a, b"]);
        assert_eq!(r[2].fields, vec!["bob", "two\nlines"]);
        assert_eq!(r[2].lines, LineRange::new(3, 4));
        assert_eq!(r[3].fields, vec!["c\"d", "x"]);
        assert_eq!(r[3].lines, LineRange::new(5, 5));
        assert!(parse("a,\"open\n", ',').is_err());
    }

    #[test]
    fn chunks_repeat_the_header() {
        let r = parse("a,b\n1,2\n3,4\n5,6\n", ',').unwrap();
        let p = to_processed("t.csv", &r, 2);
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.chunks[0].text, "a, b\na: 1; b: 2\na: 3; b: 4");
        assert_eq!(p.chunks[1].lines, LineRange::new(4, 4));
        assert_eq!(p.title.as_deref(), Some("t"));
    }
}
