//! `catalog`: bounded pages of what the workspace holds, grouped by folder,
//! type and subject, with exact totals.
//!
//! Exact totals need one pass over the memories and files the filters
//! admit, on every page; a local workspace holds thousands, not billions,
//! of records, so the pass is cheaper than keeping counters consistent on
//! every write path. Items are ordered by path, then id; a cursor is the
//! position in that order at one revision, so a changed workspace answers
//! `cursor_stale` rather than a page that skips or repeats items.

use super::cursor::Kind;
use super::{filters_digest, title};
use crate::records::{decode, scan_all};
use mem_core::model::{FileRecord, Lifecycle, Memory};
use mem_core::store::Table;
use mem_core::{MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

pub const DEFAULT_CATALOG_LIMIT: usize = 50;
pub const MAX_CATALOG_LIMIT: usize = 500;
pub const DEFAULT_CATALOG_BYTES: usize = 16_384;
pub const MIN_CATALOG_BYTES: usize = 1024;
pub const MAX_CATALOG_BYTES: usize = 262_144;
/// Entries of each group list (the largest first); `*_total` counts all.
pub const MAX_GROUPS: usize = 100;
/// Characters of a memory shown as its title.
const TITLE_CHARS: usize = 100;

/// `workspace.catalog`: what the workspace holds under `path`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Only what lies at or below this folder (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub path: Option<String>,
    /// Only memories of this kind (files are left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_kind")]
    pub kind: Option<String>,
    /// Only memories of this type (a kind or a schema type such as
    /// `coding.project_rule`; with `kind`, both must match).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_kind")]
    pub type_name: Option<String>,
    /// Memory lifecycle: `active` (default), `archived`, `superseded`,
    /// `deprecated`, `forgotten` or `all`. Files are listed with `active`
    /// and `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["active", "archived", "superseded", "deprecated", "forgotten", "all", null]))]
    pub status: Option<String>,
    /// Most items on the page (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<usize>,
    /// Most bytes of item JSON on the page (default 16384).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1024, max = 262144))]
    pub max_bytes: Option<usize>,
    /// The `next_cursor` of the previous page of the same request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "cursor_schema")]
    pub cursor: Option<String>,
}

fn cursor_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "pattern": CURSOR_PATTERN })
}

const CURSOR_PATTERN: &str = "^c[0-9]{1,20}-[0-9]{1,10}-[0-9a-f]{8}$";

/// One page of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogPage {
    /// The workspace revision the page was read at.
    pub revision: u64,
    pub path: String,
    /// Exact counts of everything the filters admit (not just this page).
    pub totals: CatalogTotals,
    /// Folders holding admitted items, the fullest first.
    pub folders: Vec<Group>,
    pub folders_total: usize,
    /// Memory types (and file MIME types), the most used first.
    pub types: Vec<Group>,
    pub types_total: usize,
    /// Subjects named by memories' `subject`/`name` attributes.
    pub subjects: Vec<Group>,
    pub subjects_total: usize,
    pub items: Vec<CatalogItem>,
    /// Per scope under `path`: memories since its last consolidation, and
    /// whether one is due.
    pub consolidation: Vec<crate::consolidation::ConsolidationScope>,
    /// More items follow: pass `next_cursor` back as `cursor`.
    pub truncated: bool,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogTotals {
    pub items: u64,
    pub memories: u64,
    pub files: u64,
    /// Memory content and file sizes, in bytes.
    pub bytes: u64,
}

/// A group and how many admitted items it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Group {
    pub name: String,
    pub memories: u64,
    pub files: u64,
    /// For a memory type: its runtime role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Record {
    Memory,
    File,
}

/// One thing the workspace holds, as a listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogItem {
    pub id: String,
    pub record: Record,
    /// A memory's folder, a file's full path.
    pub path: String,
    /// Memory kind, or the file's MIME type.
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Memory lifecycle, or the file's index status.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The start of a memory's content, or a file's name.
    pub title: String,
    pub bytes: u64,
    pub citation: String,
}

/// The filters of a catalog request, checked.
struct Filters {
    path: VPath,
    kinds: Vec<String>,
    lifecycles: Option<Vec<Lifecycle>>,
    files: bool,
    limit: usize,
    max_bytes: usize,
    digest: String,
}

impl Catalog {
    fn filters(&self) -> MemResult<Filters> {
        let limit = self.limit.unwrap_or(DEFAULT_CATALOG_LIMIT);
        if !(1..=MAX_CATALOG_LIMIT).contains(&limit) {
            return Err(out_of_range("limit", 1, MAX_CATALOG_LIMIT));
        }
        let max_bytes = self.max_bytes.unwrap_or(DEFAULT_CATALOG_BYTES);
        if !(MIN_CATALOG_BYTES..=MAX_CATALOG_BYTES).contains(&max_bytes) {
            return Err(out_of_range(
                "max_bytes",
                MIN_CATALOG_BYTES,
                MAX_CATALOG_BYTES,
            ));
        }
        let path = VPath::parse(self.path.as_deref().unwrap_or("/"))?;
        let kinds: Vec<String> = [&self.kind, &self.type_name]
            .into_iter()
            .flatten()
            .map(|k| k.trim().to_ascii_lowercase())
            .collect();
        let status = self
            .status
            .as_deref()
            .unwrap_or("active")
            .trim()
            .to_ascii_lowercase();
        let admitted = crate::memories::lifecycle_filter(Some(&status), "status")?;
        let lifecycles = (status != "all").then_some(admitted);
        let files = kinds.is_empty() && matches!(status.as_str(), "active" | "all");
        let digest = filters_digest(&[path.as_str(), &kinds.join(","), &status]);
        Ok(Filters {
            path,
            kinds,
            lifecycles,
            files,
            limit,
            max_bytes,
            digest,
        })
    }
}

pub(crate) fn out_of_range(field: &str, min: usize, max: usize) -> MemError {
    MemError::bad_request(format!("{field} must be {min} to {max}"))
        .with_hint(format!("send a {field} between {min} and {max}"))
        .with_details(json!({ "field": field, "minimum": min, "maximum": max }))
}

/// Catalog cursors: `c{revision}-{position}-{digest}`.
const CURSOR: Kind = Kind {
    tag: 'c',
    pages: "catalog request",
};

#[derive(Default)]
struct Counts {
    memories: u64,
    files: u64,
}

fn bump(map: &mut BTreeMap<String, Counts>, key: &str, record: Record) {
    let c = map.entry(key.to_string()).or_default();
    match record {
        Record::Memory => c.memories += 1,
        Record::File => c.files += 1,
    }
}

/// The largest groups first (ties by name), at most [`MAX_GROUPS`].
fn groups(map: BTreeMap<String, Counts>, role: impl Fn(&str) -> Option<String>) -> Vec<Group> {
    let mut v: Vec<Group> = map
        .into_iter()
        .map(|(name, c)| Group {
            role: role(&name),
            name,
            memories: c.memories,
            files: c.files,
        })
        .collect();
    v.sort_by(|a, b| {
        (b.memories + b.files)
            .cmp(&(a.memories + a.files))
            .then_with(|| a.name.cmp(&b.name))
    });
    v.truncate(MAX_GROUPS);
    v
}

/// The subject a memory names (the attribute read-gate symbols use).
fn subject_of(m: &Memory) -> Option<String> {
    ["subject", "name"]
        .iter()
        .find_map(|k| m.attributes.get(*k))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl crate::Service {
    /// One page of the catalog as seen by a caller confined to `sees`.
    pub(crate) fn catalog(
        &self,
        req: &Catalog,
        sees: &dyn Fn(&VPath) -> bool,
    ) -> MemResult<CatalogPage> {
        let f = req.filters()?;
        // Read the revision first: a write during the pass makes the next
        // cursor stale rather than silently consistent.
        let revision = self.revision()?;
        let start = CURSOR.decode(req.cursor.as_deref(), revision, &f.digest)?;
        let config = self.config();
        let role_of = |k: &str| config.types.registry.role_of(k).map(str::to_string);
        let admits = |p: &VPath| p.is_within(&f.path) && sees(p);

        let mut items: Vec<CatalogItem> = Vec::new();
        let mut folders: BTreeMap<String, Counts> = BTreeMap::new();
        let mut types: BTreeMap<String, Counts> = BTreeMap::new();
        let mut subjects: BTreeMap<String, Counts> = BTreeMap::new();
        let mut totals = CatalogTotals::default();
        for (key, raw) in scan_all(self.store(), Table::Memories, "")? {
            let m: Memory = decode(Table::Memories, &key, &raw)?;
            if !admits(&m.path)
                || f.lifecycles
                    .as_ref()
                    .is_some_and(|l| !l.contains(&m.lifecycle))
                || (!f.kinds.is_empty() && f.kinds.iter().any(|k| *k != m.kind))
            {
                continue;
            }
            let bytes = m.content.as_ref().map_or(0, |c| c.len() as u64);
            let subject = subject_of(&m);
            totals.memories += 1;
            totals.bytes += bytes;
            bump(&mut folders, m.path.as_str(), Record::Memory);
            bump(&mut types, &m.kind, Record::Memory);
            if let Some(s) = &subject {
                bump(&mut subjects, s, Record::Memory);
            }
            items.push(CatalogItem {
                citation: format!("mem://memory/{}", m.id),
                role: role_of(&m.kind),
                type_name: m.kind,
                status: m.lifecycle.as_str().to_string(),
                subject,
                title: title(m.content.as_deref().unwrap_or(""), TITLE_CHARS),
                bytes,
                path: m.path.as_str().to_string(),
                id: m.id,
                record: Record::Memory,
            });
        }
        if f.files {
            for (key, raw) in scan_all(self.store(), Table::Files, "")? {
                let file: FileRecord = decode(Table::Files, &key, &raw)?;
                if !admits(&file.path) {
                    continue;
                }
                totals.files += 1;
                totals.bytes += file.size;
                let folder = file.path.parent().unwrap_or_else(VPath::root);
                bump(&mut folders, folder.as_str(), Record::File);
                bump(&mut types, &file.mime, Record::File);
                items.push(CatalogItem {
                    citation: format!("mem://file/{}", file.id),
                    type_name: file.mime,
                    role: None,
                    status: file.index_status.as_str().to_string(),
                    subject: None,
                    title: file.name,
                    bytes: file.size,
                    path: file.path.as_str().to_string(),
                    id: file.id,
                    record: Record::File,
                });
            }
        }
        totals.items = totals.memories + totals.files;
        items.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.id.cmp(&b.id)));

        let mut page = Vec::new();
        let mut used = 0usize;
        let mut next = start;
        for item in items.iter().skip(start) {
            let size = serde_json::to_vec(item).map_or(0, |b| b.len());
            if page.len() == f.limit || (!page.is_empty() && used + size > f.max_bytes) {
                break;
            }
            used += size;
            page.push(item.clone());
            next += 1;
        }
        let truncated = next < items.len();
        let (folders_total, types_total, subjects_total) =
            (folders.len(), types.len(), subjects.len());
        Ok(CatalogPage {
            revision,
            path: f.path.as_str().to_string(),
            totals,
            folders: groups(folders, |_| None),
            folders_total,
            types: groups(types, |t| role_of(t)),
            types_total,
            subjects: groups(subjects, |_| None),
            subjects_total,
            items: page,
            consolidation: self.consolidation(&admits)?,
            truncated,
            next_cursor: truncated.then(|| CURSOR.encode(revision, next, &f.digest)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_pattern_matches_what_pages_issue() {
        let re = regex::Regex::new(CURSOR_PATTERN).unwrap();
        assert!(re.is_match(&CURSOR.encode(u64::MAX, 3, &filters_digest(&["/"]))));
        assert!(!re.is_match("c1-2-XYZ"));
    }

    #[test]
    fn budgets_out_of_range_are_refused_with_the_bounds() {
        let e = Catalog {
            limit: Some(MAX_CATALOG_LIMIT + 1),
            ..Default::default()
        }
        .filters()
        .err()
        .unwrap();
        assert_eq!(e.details["maximum"], MAX_CATALOG_LIMIT);
        assert!(
            Catalog {
                max_bytes: Some(10),
                ..Default::default()
            }
            .filters()
            .is_err()
        );
        assert!(
            Catalog {
                status: Some("gone".into()),
                ..Default::default()
            }
            .filters()
            .is_err()
        );
    }
}
