//! What the lexical index holds: its analyzer, its schema and fields,
//! and a stored document read back as catalog metadata.

use crate::catalog::DocMeta;
use mem_core::index::{IndexError, SourceKind};
use std::sync::Arc;
use tantivy::TantivyDocument;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};

/// Name of the analyzer of `text` and `context`.
pub(super) const ANALYZER: &str = "mem_en";

/// Function words that carry no topic: dropped from documents and queries
/// (a general English list, as BM25 baselines use).
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "is", "are", "was", "were",
    "be", "been", "being", "it", "its", "this", "that", "these", "those", "with", "as", "by",
    "from", "i", "you", "he", "she", "they", "we", "me", "my", "your", "his", "her", "their",
    "our", "us", "him", "them", "what", "when", "where", "who", "whom", "which", "how", "did",
    "do", "does", "done", "have", "has", "had", "but", "if", "so", "than", "then", "there", "here",
    "into", "about", "would", "could", "should", "will", "can", "just", "not", "no", "some", "any",
    "also", "very", "too", "am", "s", "t",
];

pub(super) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| w.to_string()),
        ))
        .filter(Stemmer::default())
        .build()
}

/// The analyzed terms of `text`, each with the surface word it came from.
pub(crate) fn analyze(text: &str) -> Vec<(String, String)> {
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut out: Vec<(String, String)> = Vec::new();
    while let Some(tok) = stream.next() {
        let surface = text
            .get(tok.offset_from..tok.offset_to)
            .unwrap_or(&tok.text)
            .to_lowercase();
        if !out.iter().any(|(t, _)| t == &tok.text) {
            out.push((tok.text.clone(), surface));
        }
    }
    out
}

/// The index's fields. An index's own schema names them: one written by
/// an earlier version is read (to carry its catalog into a rebuild)
/// through [`Fields::named`].
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub(super) doc_id: Field,
    pub(super) record_id: Field,
    pub(super) source: Field,
    pub(super) text: Field,
    pub(super) context: Field,
    pub(super) path: Field,
    pub(super) path_anc: Field,
    pub(super) kind: Field,
    pub(super) tags: Field,
    pub(super) agent: Field,
    pub(super) lifecycle: Field,
    pub(super) time: Field,
    pub(super) created: Field,
    pub(super) event_at: Field,
    pub(super) locator: Field,
    pub(super) embed_sig: Field,
    /// The document's key ([`crate::catalog::key_of`] its id) in a column
    /// (fast field), which a search reads each hit's key from; `None` in
    /// an earlier version's index, which is read, never written.
    pub(super) key: Option<Field>,
}

/// The schema this version writes.
pub(super) fn schema() -> Schema {
    schema_with(true)
}

/// The schema, with or without the `key` column. Reading each hit's id
/// from its stored fields decompressed a 16 KiB block a hit (~10% of a
/// lexical search's CPU at 100k memories); a column of strings was worse
/// (a decompression context made for each of its blocks read). The index
/// before the column is what tests build without it.
pub(super) fn schema_with(key_column: bool) -> Schema {
    let mut b = Schema::builder();
    let text_opts = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    b.add_text_field("doc_id", STRING | STORED);
    b.add_text_field("record_id", STRING | STORED);
    b.add_text_field("source", STRING | STORED);
    b.add_text_field("text", text_opts.clone());
    b.add_text_field("context", text_opts);
    b.add_text_field("path", STRING | STORED);
    b.add_text_field("path_anc", STRING);
    b.add_text_field("kind", STRING | STORED);
    b.add_text_field("tags", STRING | STORED);
    b.add_text_field("agent", STRING | STORED);
    b.add_text_field("lifecycle", STRING | STORED);
    b.add_i64_field("time", INDEXED | FAST | STORED);
    b.add_i64_field("created", STORED);
    b.add_i64_field("event_at", STORED);
    b.add_text_field("locator", STORED);
    b.add_u64_field("embed_sig", STORED);
    if key_column {
        b.add_u64_field("key", FAST);
    }
    b.build()
}

impl Fields {
    /// The fields of `schema` by name; `None` when one is missing (an
    /// index of a schema too old to read).
    pub(super) fn named(schema: &Schema) -> Option<Fields> {
        let f = |name: &str| schema.get_field(name).ok();
        Some(Fields {
            doc_id: f("doc_id")?,
            record_id: f("record_id")?,
            source: f("source")?,
            text: f("text")?,
            context: f("context")?,
            path: f("path")?,
            path_anc: f("path_anc")?,
            kind: f("kind")?,
            tags: f("tags")?,
            agent: f("agent")?,
            lifecycle: f("lifecycle")?,
            time: f("time")?,
            created: f("created")?,
            event_at: f("event_at")?,
            locator: f("locator")?,
            embed_sig: f("embed_sig")?,
            key: f("key"),
        })
    }

    /// A stored document's metadata (for the in-memory catalog).
    pub(super) fn meta_of(self, doc: &TantivyDocument) -> Result<DocMeta, IndexError> {
        let f = self;
        let text = |field: Field| -> Option<Arc<str>> {
            doc.get_first(field).and_then(|v| v.as_str().map(Arc::from))
        };
        let empty = || Arc::<str>::from("");
        let int = |field: Field| doc.get_first(field).and_then(|v| v.as_i64());
        let source = match doc.get_first(f.source).and_then(|v| v.as_str()) {
            Some("file") => SourceKind::File,
            Some("memory") => SourceKind::Memory,
            other => {
                return Err(IndexError::Corrupt(format!(
                    "document with unknown source {other:?}"
                )));
            }
        };
        let doc_id = text(f.doc_id).unwrap_or_else(empty);
        let record_id = match doc.get_first(f.record_id).and_then(|v| v.as_str()) {
            Some(id) if id == &*doc_id => doc_id.clone(),
            other => other.map_or_else(empty, Arc::from),
        };
        Ok(DocMeta {
            doc_id,
            record_id,
            source,
            path: text(f.path).unwrap_or_else(empty),
            kind: text(f.kind).unwrap_or_else(empty),
            tags: doc
                .get_all(f.tags)
                .filter_map(|v| v.as_str().map(Arc::from))
                .collect(),
            agent_id: text(f.agent),
            lifecycle: text(f.lifecycle).unwrap_or_else(empty),
            time_ms: int(f.time).unwrap_or(0),
            locator: text(f.locator),
            embed_sig: doc
                .get_first(f.embed_sig)
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
        })
    }
}
