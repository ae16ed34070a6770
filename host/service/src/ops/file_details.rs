//! What processing made of a file, shown beside its record by
//! `files.info` and `files.read`: chunks with their locators (a page of
//! them, so a long document stays a bounded answer), the processors'
//! metadata, entities and suggested tags.

use crate::door::Caller;
use crate::records::load;
use mem_core::model::{FileRecord, TimelinePlace, file_place};
use mem_core::plugin::{Entity, LineRange, ProcessedFile};
use mem_core::store::Table;
use mem_core::{MemError, MemResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// Chunks a page holds unless asked for fewer or more.
pub const DEFAULT_CHUNK_PAGE: u32 = 20;
/// Most chunks one page holds: a chunk is up to a few KiB of text.
pub const MAX_CHUNK_PAGE: u32 = 100;
/// Most entities shown: a processor may find thousands in a long file.
const MAX_ENTITIES: usize = 200;

/// Which chunks to show: `chunks_limit` of them from `chunks_from`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkWindow {
    pub from: Option<u32>,
    pub limit: Option<u32>,
}

/// A file's record and what processing made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileDetails {
    #[serde(flatten)]
    pub file: FileRecord,
    /// Where the file sits on the timeline, and which evidence put it there.
    pub timeline: TimelinePlace,
    /// Absent until a processor has run on the file's content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processed: Option<Processed>,
}

/// What the processors extracted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Processed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Processor metadata, e.g. `headings`, `language`, `lines`.
    pub metadata: BTreeMap<String, String>,
    /// The first entities found (see `entity_count`).
    pub entities: Vec<Entity>,
    pub entity_count: usize,
    /// Tags the processors suggest; they are not the file's tags.
    pub suggested_tags: Vec<String>,
    pub chunk_count: usize,
    /// The page of chunks asked for, in document order.
    pub chunks: Vec<ChunkView>,
    /// `chunks_from` of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_chunk: Option<usize>,
}

/// One chunk, citable by its locator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChunkView {
    /// Position in the file's chunks, from 0 (`cat --chunk N`).
    pub index: usize,
    /// `mem://file/ID#Lx-y` (`#pN:Lx-y` on a page of a paged document),
    /// the citation search and context packs use.
    pub locator: String,
    pub lines: LineRange,
    /// Heading trail, outermost first.
    pub section: Vec<String>,
    pub kind: String,
    pub text: String,
}

impl ChunkWindow {
    fn checked(self) -> MemResult<(usize, usize)> {
        let limit = self.limit.unwrap_or(DEFAULT_CHUNK_PAGE);
        if !(1..=MAX_CHUNK_PAGE).contains(&limit) {
            return Err(MemError::bad_request(format!(
                "chunks_limit must be 1 to {MAX_CHUNK_PAGE}"
            ))
            .with_hint("page through the chunks with chunks_from")
            .with_details(json!({ "chunks_limit": limit })));
        }
        Ok((self.from.unwrap_or(0) as usize, limit as usize))
    }
}

impl Caller<'_> {
    /// `file` (already checked visible) with the window of its chunks.
    pub(crate) fn file_details(
        &self,
        file: FileRecord,
        window: ChunkWindow,
    ) -> MemResult<FileDetails> {
        let (from, limit) = window.checked()?;
        let Some(content) = load::<ProcessedFile>(self.svc.store(), Table::FileContent, &file.id)?
        else {
            return Ok(FileDetails {
                timeline: file_place(&file),
                file,
                processed: None,
            });
        };
        let p = content.value;
        let chunk_count = p.chunks.len();
        let chunks = p
            .chunks
            .into_iter()
            .enumerate()
            .skip(from)
            .take(limit)
            .map(|(index, c)| ChunkView {
                index,
                locator: format!("mem://file/{}#{}", file.id, c.locator()),
                lines: c.lines,
                section: c.section,
                kind: c.kind,
                text: c.text,
            })
            .collect();
        let entity_count = p.entities.len();
        let mut entities = p.entities;
        entities.truncate(MAX_ENTITIES);
        Ok(FileDetails {
            timeline: file_place(&file),
            file,
            processed: Some(Processed {
                title: p.title,
                metadata: p.metadata,
                entities,
                entity_count,
                suggested_tags: p.tags,
                chunk_count,
                chunks,
                next_chunk: (from.saturating_add(limit) < chunk_count).then_some(from + limit),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_page_outside_its_bounds_is_a_bad_request() {
        for limit in [0, MAX_CHUNK_PAGE + 1] {
            let e = ChunkWindow {
                from: None,
                limit: Some(limit),
            }
            .checked()
            .unwrap_err();
            assert_eq!(e.code, mem_core::ErrorCode::BadRequest);
            assert!(!e.hint.is_empty());
        }
        assert_eq!(ChunkWindow::default().checked().unwrap(), (0, 20));
    }
}
