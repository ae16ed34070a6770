//! The lexical lane: a tantivy BM25 index over document text, with every
//! filterable field indexed as an exact term so filters run inside the
//! query, before ranking. The watermark rides in tantivy's commit payload,
//! so documents and watermark are durable together.

mod filters;
mod schema;

use crate::catalog::{DocMeta, Stamp, key_of};
use mem_core::index::{IndexDoc, IndexError, SearchFilters};
use parking_lot::Mutex;
use schema::{ANALYZER, Fields, analyzer};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    Term,
};

pub(crate) use schema::analyze;

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
    /// The document's key; its id (`doc_id`) is filled in from the catalog.
    pub key: u64,
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

/// What a lexical index folder held when it was opened.
pub(crate) enum Opened {
    /// An index of this version's schema (new when the folder was empty).
    Current(Lexical),
    /// An index written with another version's schema: its commit and
    /// stored fields are read (to carry its catalog into the rebuild that
    /// replaces it), but this version neither searches nor writes it.
    Earlier(Lexical),
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
    /// something tantivy cannot open, or an index whose fields this version
    /// cannot name, is reported as `Corrupt`.
    pub fn open(dir: &Path) -> Result<Opened, IndexError> {
        std::fs::create_dir_all(dir).map_err(io)?;
        let schema = schema::schema();
        let index = if dir.join("meta.json").exists() {
            Index::open_in_dir(dir).map_err(|e| IndexError::Corrupt(e.to_string()))?
        } else {
            Index::create_in_dir(dir, schema.clone()).map_err(io)?
        };
        let current = index.schema() == schema;
        let lexical = Self::of(index)?;
        Ok(if current {
            Opened::Current(lexical)
        } else {
            Opened::Earlier(lexical)
        })
    }

    /// An index of the previous version's schema (document ids stored,
    /// not in a column), created in `dir`: what an upgrade finds.
    #[cfg(test)]
    pub fn create_earlier(dir: &Path) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(io)?;
        let schema = schema::schema_with(false);
        Self::of(Index::create_in_dir(dir, schema).map_err(io)?)
    }

    fn of(index: Index) -> Result<Self, IndexError> {
        let f = Fields::named(&index.schema()).ok_or_else(|| {
            IndexError::Corrupt(
                "the lexical index was written with fields this version lacks".into(),
            )
        })?;
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
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
                if let Some(key) = f.key {
                    doc.add_u64(key, key_of(&d.doc_id));
                }
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
                out.push(self.f.meta_of(&doc)?);
            }
        }
        Ok(out)
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
            .f
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
        let hits = keyed(&searcher, top)?;
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

/// Each hit with its document's key, read from its segment's `key`
/// column (see [`schema::schema_with`]); its id is the catalog's.
fn keyed(searcher: &Searcher, top: Vec<(f32, DocAddress)>) -> Result<Vec<LexHit>, IndexError> {
    let mut columns: HashMap<u32, Column<u64>> = HashMap::new();
    let mut hits = Vec::with_capacity(top.len());
    for (score, addr) in top {
        let column = match columns.entry(addr.segment_ord) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let column = searcher
                    .segment_reader(addr.segment_ord)
                    .fast_fields()
                    .u64("key")
                    .map_err(|e| IndexError::Corrupt(format!("the lexical key column: {e}")))?;
                e.insert(column)
            }
        };
        hits.push(LexHit {
            key: column.first(addr.doc_id).unwrap_or_default(),
            doc_id: String::new(),
            score,
            matched: Vec::new(),
            addr,
        });
    }
    Ok(hits)
}

/// A commit's stamp: its opstamp and payload (see [`Lexical::commit_stamp`]).
fn stamp_of(opstamp: u64, payload: Option<&str>) -> Stamp {
    let mut h = Sha256::new();
    h.update(opstamp.to_le_bytes());
    h.update(payload.unwrap_or_default().as_bytes());
    h.finalize().into()
}
