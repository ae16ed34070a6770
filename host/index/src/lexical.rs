//! The lexical lane: a tantivy BM25 index over document text, with every
//! filterable field indexed as an exact term so filters run inside the
//! query, before ranking. The watermark rides in tantivy's commit payload,
//! so documents and watermark are durable together.

use crate::catalog::{DocMeta, Stamp, lifecycles_of};
use mem_core::index::{IndexDoc, IndexError, SearchFilters, SourceKind};
use mem_core::model::Lifecycle;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use tantivy::collector::TopDocs;
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    Term,
};

/// Name of the analyzer of `text` and `context`.
const ANALYZER: &str = "mem_en";
/// Decompressed 16 KiB blocks of stored fields kept per segment. Every
/// lexical candidate reads its document id from them; tantivy's default
/// (100) missed most blocks of a 100k-memory index and decompressed one
/// per candidate (4% of a search's CPU). 512 blocks hold ~50k documents'
/// stored fields in at most 8 MiB per segment.
const DOC_STORE_CACHE_BLOCKS: usize = 512;
/// Indexing memory of the single writer thread (tantivy needs >= 15 MB).
const WRITER_BYTES: usize = 48 * 1024 * 1024;
/// Segments of a size that are merged into one. Every search pays per
/// segment (each term's postings opened, a union's buffers allocated): at
/// 100k memories in 10 segments (tantivy's default merges 8 of a size, and
/// a CLI process used to exit mid-merge), lexical search on 8 clients did
/// 620-800 req/s; merged into one, 870-980.
const MERGE_AT: usize = 4;
/// Segments of up to this many documents count as one size when merging.
/// tantivy's default (10,000) put every small segment in the level of a
/// segment of up to ~17k documents: beside 20 writes a second (a commit,
/// and so a segment, each), that segment was merged again every third
/// commit, and merges took 37% of a searching server's CPU.
const MIN_MERGE_LAYER: u32 = 100;
/// How far apart in size (log2 of documents) segments of one level may be:
/// 2.0 merges segments within 4x of the level's largest, so each document
/// is rewritten about once per fourfold growth and a 1M-document index
/// holds at most three segments a level, of about seven levels.
const MERGE_LEVEL_LOG_SIZE: f64 = 2.0;
/// Weight of a match in the neighbouring context (the memories written just
/// before and after in the same scope) relative to the text. Measured on
/// LoCoMo recall_any@10 with linear fusion: previous turn only, 0.45 → 78.8;
/// both neighbours with the agent match, 0.6 → 80.5, 0.8 → 81.3, 1.0 → 80.5.
const CONTEXT_BOOST: f32 = 0.8;
/// Weight of a query word naming the memory's agent (LoCoMo recall_any@10
/// with both neighbours as context: 1.0 → 80.6, 2.0 → 81.3; without
/// neighbours: none 78.8, 0.5 → 79.4).
const AGENT_BOOST: f32 = 2.0;

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

fn analyzer() -> TextAnalyzer {
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

#[derive(Clone, Copy)]
pub(crate) struct Fields {
    doc_id: Field,
    record_id: Field,
    source: Field,
    text: Field,
    context: Field,
    path: Field,
    path_anc: Field,
    kind: Field,
    tags: Field,
    agent: Field,
    lifecycle: Field,
    time: Field,
    created: Field,
    event_at: Field,
    locator: Field,
    embed_sig: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text_opts = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        doc_id: b.add_text_field("doc_id", STRING | STORED),
        record_id: b.add_text_field("record_id", STRING | STORED),
        source: b.add_text_field("source", STRING | STORED),
        text: b.add_text_field("text", text_opts.clone()),
        context: b.add_text_field("context", text_opts),
        path: b.add_text_field("path", STRING | STORED),
        path_anc: b.add_text_field("path_anc", STRING),
        kind: b.add_text_field("kind", STRING | STORED),
        tags: b.add_text_field("tags", STRING | STORED),
        agent: b.add_text_field("agent", STRING | STORED),
        lifecycle: b.add_text_field("lifecycle", STRING | STORED),
        time: b.add_i64_field("time", INDEXED | FAST | STORED),
        created: b.add_i64_field("created", STORED),
        event_at: b.add_i64_field("event_at", STORED),
        locator: b.add_text_field("locator", STORED),
        embed_sig: b.add_u64_field("embed_sig", STORED),
    };
    (b.build(), fields)
}

fn io(e: impl std::fmt::Display) -> IndexError {
    IndexError::Io(e.to_string())
}

/// Every folder `path` lies in, itself included: `/a/b` → `/`, `/a`, `/a/b`.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    let mut cur = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        cur.push('/');
        cur.push_str(seg);
        out.push(cur.clone());
    }
    out
}

/// A lexical hit before fusion. Its matched terms are filled in only for
/// the hits that survive fusion ([`Lexical::fill_matched`]): finding them
/// opens a postings list per query term, too dear for every candidate.
#[derive(Debug, Clone)]
pub(crate) struct LexHit {
    pub doc_id: String,
    pub score: f32,
    pub matched: Vec<String>,
    pub(crate) addr: DocAddress,
}

/// A lexical lane's answer, with the index snapshot its hits address.
pub(crate) struct LexFound {
    searcher: Searcher,
    terms: Vec<(String, String)>,
    pub hits: Vec<LexHit>,
}

impl LexFound {
    fn empty(searcher: Searcher) -> Self {
        Self {
            searcher,
            terms: Vec::new(),
            hits: Vec::new(),
        }
    }
}

pub(crate) struct Lexical {
    index: Index,
    reader: IndexReader,
    writer: Mutex<Option<IndexWriter>>,
    f: Fields,
}

impl Drop for Lexical {
    /// Lets merges the last commits started finish: a short-lived process
    /// (every CLI write) would otherwise abandon them at exit, and small
    /// segments would pile up. (A killed process leaves a merge's files
    /// behind; the next writer removes them.)
    fn drop(&mut self) {
        if let Some(w) = self.writer.get_mut().take()
            && let Err(e) = w.wait_merging_threads()
        {
            tracing::warn!(error = %e, "a merge of the lexical index failed");
        }
    }
}

impl Lexical {
    /// Opens the index in `dir`, creating it when absent. A folder that holds
    /// something tantivy cannot open is reported as `Corrupt`.
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(io)?;
        let (schema, f) = schema();
        let index = if dir.join("meta.json").exists() {
            let index = Index::open_in_dir(dir).map_err(|e| IndexError::Corrupt(e.to_string()))?;
            if index.schema() != schema {
                return Err(IndexError::Corrupt(
                    "the lexical index was written with another schema".into(),
                ));
            }
            index
        } else {
            Index::create_in_dir(dir, schema).map_err(io)?
        };
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE_BLOCKS)
            .try_into()
            .map_err(|e: tantivy::TantivyError| IndexError::Corrupt(e.to_string()))?;
        Ok(Self {
            index,
            reader,
            writer: Mutex::new(None),
            f,
        })
    }

    /// The watermark of the last commit (0 for a new index).
    pub fn watermark(&self) -> Result<u64, IndexError> {
        let metas = self
            .index
            .load_metas()
            .map_err(|e| IndexError::Corrupt(e.to_string()))?;
        match metas.payload.as_deref() {
            None | Some("") => Ok(0),
            Some(p) => p.parse::<u64>().map_err(|_| {
                IndexError::Corrupt(format!("bad watermark {p:?} in the lexical index"))
            }),
        }
    }

    fn with_writer<T>(
        &self,
        f: impl FnOnce(&mut IndexWriter) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let mut guard = self.writer.lock();
        if guard.is_none() {
            let w: IndexWriter = self
                .index
                .writer_with_num_threads(1, WRITER_BYTES)
                .map_err(io)?;
            let mut policy = LogMergePolicy::default();
            policy.set_min_num_segments(MERGE_AT);
            policy.set_min_layer_size(MIN_MERGE_LAYER);
            policy.set_level_log_size(MERGE_LEVEL_LOG_SIZE);
            w.set_merge_policy(Box::new(policy));
            *guard = Some(w);
        }
        match guard.as_mut() {
            Some(w) => f(w),
            None => Err(IndexError::Io("the index writer is unavailable".into())),
        }
    }

    /// Adds `docs` (replacing any of the same doc id); `metas[i]` is
    /// `DocMeta::of(&docs[i])`.
    pub fn upsert(&self, docs: &[IndexDoc], metas: &[DocMeta]) -> Result<(), IndexError> {
        let f = self.f;
        self.with_writer(|w| {
            for (d, m) in docs.iter().zip(metas) {
                w.delete_term(Term::from_field_text(f.doc_id, &d.doc_id));
                let mut doc = TantivyDocument::default();
                doc.add_text(f.doc_id, &d.doc_id);
                doc.add_text(f.record_id, &d.record_id);
                doc.add_text(f.source, d.source.as_str());
                doc.add_text(f.text, &d.text);
                if let Some(c) = &d.context {
                    doc.add_text(f.context, c);
                }
                doc.add_text(f.path, &d.path);
                for a in ancestors(&d.path) {
                    doc.add_text(f.path_anc, &a);
                }
                doc.add_text(f.kind, &d.kind);
                for t in &d.tags {
                    doc.add_text(f.tags, t);
                }
                if let Some(a) = &d.agent_id {
                    doc.add_text(f.agent, a);
                }
                doc.add_text(f.lifecycle, &d.lifecycle);
                doc.add_i64(f.time, d.event_at_ms.unwrap_or(d.created_at_ms));
                doc.add_i64(f.created, d.created_at_ms);
                if let Some(e) = d.event_at_ms {
                    doc.add_i64(f.event_at, e);
                }
                if let Some(l) = &d.locator {
                    doc.add_text(f.locator, l);
                }
                doc.add_u64(f.embed_sig, m.embed_sig);
                w.add_document(doc).map_err(io)?;
            }
            Ok(())
        })
    }

    pub fn remove_record(&self, record_id: &str) -> Result<(), IndexError> {
        let f = self.f;
        self.with_writer(|w| {
            w.delete_term(Term::from_field_text(f.record_id, record_id));
            Ok(())
        })
    }

    pub fn clear(&self) -> Result<(), IndexError> {
        self.with_writer(|w| w.delete_all_documents().map(|_| ()).map_err(io))
    }

    /// What identifies the content of the last commit: its opstamp (which
    /// only grows over an index's life) and payload. Merges keep both, so
    /// a snapshot stays valid across them; it lives in this index's folder,
    /// so a recreated index never meets an older one's.
    pub fn commit_stamp(&self) -> Result<Stamp, IndexError> {
        let metas = self
            .index
            .load_metas()
            .map_err(|e| IndexError::Corrupt(e.to_string()))?;
        Ok(stamp_of(metas.opstamp, metas.payload.as_deref()))
    }

    /// Segments of the last commit.
    #[cfg(test)]
    pub fn segments(&self) -> usize {
        self.index
            .searchable_segment_ids()
            .map_or(0, |ids| ids.len())
    }

    /// Each segment of the last commit: its id and documents.
    #[cfg(test)]
    pub fn segment_sizes(&self) -> Vec<(String, u32)> {
        self.index
            .searchable_segment_metas()
            .map(|metas| {
                metas
                    .iter()
                    .map(|m| (m.id().uuid_string(), m.max_doc()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Commits with `watermark` as payload; searches see the changes after
    /// [`Self::reload`]. Returns the commit's stamp.
    pub fn commit(&self, watermark: u64) -> Result<Stamp, IndexError> {
        self.with_writer(|w| {
            let payload = watermark.to_string();
            let mut prepared = w.prepare_commit().map_err(io)?;
            prepared.set_payload(&payload);
            let opstamp = prepared.commit().map_err(io)?;
            Ok(stamp_of(opstamp, Some(&payload)))
        })
    }

    /// Makes the last commit searchable.
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader.reload().map_err(io)
    }

    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Every live document's metadata (to build the in-memory catalog).
    pub fn all_metas(&self) -> Result<Vec<DocMeta>, IndexError> {
        let searcher = self.reader.searcher();
        let mut out = Vec::with_capacity(searcher.num_docs() as usize);
        for seg in searcher.segment_readers() {
            let store = seg.get_store_reader(64).map_err(io)?;
            for doc in store.iter::<TantivyDocument>(seg.alive_bitset()) {
                let doc = doc.map_err(|e| IndexError::Corrupt(e.to_string()))?;
                out.push(self.meta_of(&doc)?);
            }
        }
        Ok(out)
    }

    fn meta_of(&self, doc: &TantivyDocument) -> Result<DocMeta, IndexError> {
        let f = self.f;
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

    fn filter_clauses(&self, filters: &SearchFilters) -> Vec<(Occur, Box<dyn Query>)> {
        let f = self.f;
        let term = |field: Field, v: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, v),
                IndexRecordOption::Basic,
            ))
        };
        let any = |field: Field, vals: &[String]| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                vals.iter()
                    .map(|v| (Occur::Should, term(field, v)))
                    .collect(),
            ))
        };
        let mut c: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if let Some(s) = filters.source {
            c.push((Occur::Must, term(f.source, s.as_str())));
        }
        if !filters.kinds.is_empty() {
            c.push((Occur::Must, any(f.kind, &filters.kinds)));
        }
        if !filters.kind_prefixes.is_empty() {
            // A prefix is the range [prefix, prefix with its last
            // character raised by one) of the raw `kind` terms.
            let ranges = filters
                .kind_prefixes
                .iter()
                .filter_map(|p| {
                    let mut chars: Vec<char> = p.chars().collect();
                    let last = chars.pop()?;
                    chars.push(char::from_u32(last as u32 + 1)?);
                    let end: String = chars.into_iter().collect();
                    let q: Box<dyn Query> = Box::new(tantivy::query::RangeQuery::new(
                        Bound::Included(Term::from_field_text(f.kind, p)),
                        Bound::Excluded(Term::from_field_text(f.kind, &end)),
                    ));
                    Some((Occur::Should, q))
                })
                .collect();
            c.push((Occur::Must, Box::new(BooleanQuery::new(ranges))));
        }
        if let Some(p) = &filters.path {
            c.push((Occur::Must, term(f.path_anc, p)));
        }
        if !filters.within.is_empty() {
            c.push((Occur::Must, any(f.path_anc, &filters.within)));
        }
        for t in &filters.tags {
            c.push((Occur::Must, term(f.tags, t)));
        }
        if let Some(a) = &filters.agent_id {
            c.push((Occur::Must, term(f.agent, a)));
        }
        if filters.since_ms.is_some() || filters.until_ms.is_some() {
            let lo = filters.since_ms.map_or(Bound::Unbounded, |v| {
                Bound::Included(Term::from_field_i64(f.time, v))
            });
            let hi = filters.until_ms.map_or(Bound::Unbounded, |v| {
                Bound::Included(Term::from_field_i64(f.time, v))
            });
            c.push((
                Occur::Must,
                Box::new(tantivy::query::RangeQuery::new(lo, hi)),
            ));
        }
        // Lifecycles are one of a closed set: the wanted ones are said as
        // the others excluded, a short list (most documents are active)
        // that the union skips through instead of being intersected with a
        // list of nearly every document.
        let wanted = lifecycles_of(filters);
        let known = |l: &String| Lifecycle::ALL.iter().any(|k| k.as_str() == l);
        if wanted.iter().all(known) {
            let others: Vec<String> = Lifecycle::ALL
                .iter()
                .map(|k| k.as_str().to_string())
                .filter(|k| !wanted.contains(k))
                .collect();
            if !others.is_empty() {
                c.push((Occur::MustNot, any(f.lifecycle, &others)));
            }
        } else {
            c.push((Occur::Must, any(f.lifecycle, &wanted)));
        }
        c
    }

    /// BM25 over `text` (and, weaker, `context`) among documents passing
    /// `filters`; best first, at most `limit`.
    ///
    /// The filter stays inside the query even when it is only the default
    /// lifecycle. Measured at 100k memories: a plain term union checked
    /// after ranking lets tantivy use block-max WAND, but on short memories
    /// of a small vocabulary WAND prunes little and re-sorts its scorers at
    /// every step (half of the search's CPU), 15% fewer searches/s. The
    /// lifecycle part is an exclusion (see `filter_clauses`): intersecting
    /// the union with the list of active documents made tantivy seek the
    /// union at every document.
    pub fn search(
        &self,
        query: &str,
        filters: &SearchFilters,
        limit: usize,
    ) -> Result<LexFound, IndexError> {
        let searcher = self.reader.searcher();
        let terms = analyze(query);
        if terms.is_empty() {
            return Ok(LexFound::empty(searcher));
        }
        let (excluded, required): (Vec<_>, Vec<_>) = self
            .filter_clauses(filters)
            .into_iter()
            .partition(|(o, _)| *o == Occur::MustNot);
        let mut clauses = vec![(
            Occur::Must,
            Box::new(self.term_union(query, &terms)) as Box<dyn Query>,
        )];
        if !required.is_empty() {
            let filter = BooleanQuery::new(required);
            clauses.push((
                Occur::Must,
                Box::new(ConstScoreQuery::new(Box::new(filter), 0.0)),
            ));
        }
        clauses.extend(excluded);
        let q = BooleanQuery::new(clauses);
        let top: Vec<(f32, DocAddress)> = searcher
            .search(&q, &TopDocs::with_limit(limit.max(1)).order_by_score())
            .map_err(io)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr).map_err(io)?;
            hits.push(LexHit {
                doc_id: doc
                    .get_first(self.f.doc_id)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                score,
                matched: Vec::new(),
                addr,
            });
        }
        Ok(LexFound {
            searcher,
            terms,
            hits,
        })
    }

    /// The query's terms in `text` and (weaker) `context`, and its words
    /// naming an agent.
    fn term_union(&self, query: &str, terms: &[(String, String)]) -> BooleanQuery {
        let f = self.f;
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (t, _) in terms {
            should.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.text, t),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            should.push((
                Occur::Should,
                Box::new(tantivy::query::BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(f.context, t),
                        IndexRecordOption::WithFreqs,
                    )),
                    CONTEXT_BOOST,
                )),
            ));
        }
        // A query naming a memory's agent (as written, lower-case or
        // capitalised: agent ids are exact strings) favours what that agent
        // said: "what did Ana decide" is about Ana's memories.
        for raw in query
            .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
            .filter(|w| w.chars().count() > 1)
        {
            let lower = raw.to_lowercase();
            let mut chars = lower.chars();
            let capitalised: String = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            let mut variants = vec![raw.to_string(), lower, capitalised];
            variants.sort();
            variants.dedup();
            for v in variants {
                should.push((
                    Occur::Should,
                    Box::new(tantivy::query::BoostQuery::new(
                        Box::new(TermQuery::new(
                            Term::from_field_text(f.agent, &v),
                            IndexRecordOption::Basic,
                        )),
                        AGENT_BOOST,
                    )),
                ));
            }
        }
        BooleanQuery::new(should)
    }

    /// Fills in the query words that the hits at `which` (indices into
    /// `found.hits`) contain: each term's postings are opened once per
    /// segment and walked forward through the hits in document order.
    pub fn fill_matched(&self, found: &mut LexFound, which: &[usize]) -> Result<(), IndexError> {
        let f = self.f;
        let mut order: Vec<(DocAddress, usize)> = which
            .iter()
            .filter_map(|&i| found.hits.get(i).map(|h| (h.addr, i)))
            .collect();
        order.sort_by_key(|(a, _)| (a.segment_ord, a.doc_id));
        for group in order.chunk_by(|a, b| a.0.segment_ord == b.0.segment_ord) {
            let inv = found
                .searcher
                .segment_reader(group[0].0.segment_ord)
                .inverted_index(f.text)
                .map_err(io)?;
            for (t, surface) in &found.terms {
                let Some(mut postings) = inv
                    .read_postings(&Term::from_field_text(f.text, t), IndexRecordOption::Basic)
                    .map_err(io)?
                else {
                    continue;
                };
                for &(addr, i) in group {
                    // `seek` only moves forward; the hits come in document
                    // order, and a list already past a hit lacks it.
                    if postings.doc() <= addr.doc_id && postings.seek(addr.doc_id) == addr.doc_id {
                        found.hits[i].matched.push(surface.clone());
                    }
                }
            }
        }
        Ok(())
    }
}

/// A commit's stamp: its opstamp and payload (see [`Lexical::commit_stamp`]).
fn stamp_of(opstamp: u64, payload: Option<&str>) -> Stamp {
    let mut h = Sha256::new();
    h.update(opstamp.to_le_bytes());
    h.update(payload.unwrap_or_default().as_bytes());
    h.finalize().into()
}
