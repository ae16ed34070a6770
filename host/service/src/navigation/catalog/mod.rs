//! `catalog`: bounded pages of what the workspace holds, grouped by folder,
//! type and subject, with exact totals.
//!
//! Totals and groups come from the tallies the writes keep
//! ([`crate::tally`]), and a page reads only the items it shows (and those
//! its filters skip on the way), so a page costs the same at a million
//! memories as at a hundred ([`tallied`]). Until a workspace's tallies are
//! counted, and when writes keep a count from finishing, the catalog is
//! one pass over every record instead ([`pass`]), with the same answers.
//! Items are ordered by path, then id; a cursor is the last item's place in
//! that order at one revision, so a changed workspace answers
//! `cursor_stale` rather than a page that skips or repeats items.

mod pass;
mod tallied;

use super::cursor::Kind;
use super::{filters_digest, title};
use crate::access::Access;
use mem_core::model::{FileRecord, Lifecycle, Memory};
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

/// A position is the hex of a path (at most 1024 characters, 4 bytes
/// each) and an id.
const CURSOR_PATTERN: &str = "^c[0-9]{1,20}-[0-9a-f]{2,8400}-[0-9a-f]{8}$";

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

/// Catalog cursors: `c{revision}-{position}-{digest}`, the position the
/// hex of the last item's `{path}\0{id}` (the page resumes after it).
const CURSOR: Kind = Kind {
    tag: 'c',
    pages: "catalog request",
};

/// Where a page resumes: after the item `(path, id)`.
type After = Option<(String, String)>;

fn encode_position(path: &str, id: &str) -> String {
    hex::encode(format!("{path}\0{id}"))
}

fn decode_position(c: &str, position: &str) -> MemResult<(String, String)> {
    let bad = || CURSOR.bad(c);
    let bytes = hex::decode(position).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (path, id) = text.split_once('\0').ok_or_else(bad)?;
    Ok((path.to_string(), id.to_string()))
}

#[derive(Default)]
struct Counts {
    memories: u64,
    files: u64,
}

/// Totals and groups of everything a request admits.
#[derive(Default)]
struct Groups {
    totals: CatalogTotals,
    folders: BTreeMap<String, Counts>,
    types: BTreeMap<String, Counts>,
    subjects: BTreeMap<String, Counts>,
}

fn bump(map: &mut BTreeMap<String, Counts>, key: &str, record: Record, n: u64) {
    let c = map.entry(key.to_string()).or_default();
    match record {
        Record::Memory => c.memories += n,
        Record::File => c.files += n,
    }
}

impl Groups {
    fn memories(&mut self, folder: &str, kind: &str, n: u64, bytes: u64) {
        self.totals.memories += n;
        self.totals.bytes += bytes;
        bump(&mut self.folders, folder, Record::Memory, n);
        bump(&mut self.types, kind, Record::Memory, n);
    }

    fn subject(&mut self, subject: &str, n: u64) {
        bump(&mut self.subjects, subject, Record::Memory, n);
    }

    fn files(&mut self, folder: &str, mime: &str, n: u64, bytes: u64) {
        self.totals.files += n;
        self.totals.bytes += bytes;
        bump(&mut self.folders, folder, Record::File, n);
        bump(&mut self.types, mime, Record::File, n);
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

/// A page's items, filled up to its item and byte budgets.
struct PageItems {
    limit: usize,
    max_bytes: usize,
    used: usize,
    items: Vec<CatalogItem>,
}

impl PageItems {
    fn new(f: &Filters) -> Self {
        PageItems {
            limit: f.limit,
            max_bytes: f.max_bytes,
            used: 0,
            items: Vec::new(),
        }
    }

    /// Takes `item` unless the page is full (false: it starts the next).
    fn offer(&mut self, item: CatalogItem) -> bool {
        let size = serde_json::to_vec(&item).map_or(0, |b| b.len());
        if self.items.len() == self.limit
            || (!self.items.is_empty() && self.used + size > self.max_bytes)
        {
            return false;
        }
        self.used += size;
        self.items.push(item);
        true
    }

    /// Where the next page resumes: after the last item taken.
    fn last(&self) -> After {
        self.items.last().map(|i| (i.path.clone(), i.id.clone()))
    }
}

impl CatalogItem {
    fn memory(m: Memory, role: Option<String>) -> Self {
        CatalogItem {
            citation: format!("mem://memory/{}", m.id),
            role,
            status: m.lifecycle.as_str().to_string(),
            subject: crate::tally::subject_of(&m),
            title: title(m.content.as_deref().unwrap_or(""), TITLE_CHARS),
            bytes: m.content.as_ref().map_or(0, |c| c.len() as u64),
            path: m.path.as_str().to_string(),
            type_name: m.kind,
            id: m.id,
            record: Record::Memory,
        }
    }

    fn file(file: FileRecord) -> Self {
        CatalogItem {
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
        }
    }
}

impl Filters {
    /// A memory of this folder, kind and lifecycle is admitted.
    fn admits_memory(&self, access: &Access, folder: &VPath, kind: &str, lifecycle: &str) -> bool {
        folder.is_within(&self.path)
            && self
                .lifecycles
                .as_ref()
                .is_none_or(|l| l.iter().any(|x| x.as_str() == lifecycle))
            && self.kinds.iter().all(|k| k == kind)
            && access.sees(folder)
    }

    fn admits_file(&self, access: &Access, path: &VPath) -> bool {
        self.files && path.is_within(&self.path) && access.sees(path)
    }
}

/// Totals, groups and one page of items, however they were found.
struct Found {
    groups: Groups,
    items: Vec<CatalogItem>,
    /// Where the next page resumes; `None`: this is the last page.
    next: After,
}

impl crate::Service {
    /// One page of the catalog as seen by a caller with `access`.
    pub(crate) fn catalog(&self, req: &Catalog, access: &Access) -> MemResult<CatalogPage> {
        let tallied = self.tallies_for_read()?;
        self.catalog_with(req, access, tallied)
    }

    /// [`Self::catalog`] from the tallies, or from one pass over every
    /// record (which the tests hold the tallies to).
    pub(crate) fn catalog_with(
        &self,
        req: &Catalog,
        access: &Access,
        tallied: bool,
    ) -> MemResult<CatalogPage> {
        let f = req.filters()?;
        // Read the revision first: a write during the reads makes the next
        // cursor stale rather than silently consistent.
        let revision = self.revision()?;
        let after = match req.cursor.as_deref() {
            None => None,
            Some(c) => Some(decode_position(
                c,
                CURSOR.decode_raw(c, revision, &f.digest)?,
            )?),
        };
        let found = if tallied {
            self.catalog_by_tallies(&f, access, after)?
        } else {
            self.catalog_by_pass(&f, access, after)?
        };
        let config = self.config();
        let role_of = |k: &str| config.types.registry.role_of(k).map(str::to_string);
        let g = found.groups;
        let mut totals = g.totals;
        totals.items = totals.memories + totals.files;
        let (folders_total, types_total, subjects_total) =
            (g.folders.len(), g.types.len(), g.subjects.len());
        let admits = |p: &VPath| p.is_within(&f.path) && access.sees(p);
        Ok(CatalogPage {
            revision,
            path: f.path.as_str().to_string(),
            totals,
            folders: groups(g.folders, |_| None),
            folders_total,
            types: groups(g.types, |t| role_of(t)),
            types_total,
            subjects: groups(g.subjects, |_| None),
            subjects_total,
            items: found.items,
            consolidation: self.consolidation(&admits, tallied)?,
            truncated: found.next.is_some(),
            next_cursor: found
                .next
                .map(|(path, id)| CURSOR.encode(revision, encode_position(&path, &id), &f.digest)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_pattern_matches_what_pages_issue() {
        let re = regex::Regex::new(CURSOR_PATTERN).unwrap();
        let longest = format!("/{}", "\u{10FFFF}".repeat(1023));
        let position = encode_position(&longest, "mem_01JZZZZZZZZZZZZZZZZZZZZZZZ");
        assert!(re.is_match(&CURSOR.encode(u64::MAX, &position, &filters_digest(&["/"]))));
        assert!(!re.is_match("c1-2-XYZ"));
    }

    #[test]
    fn positions_round_trip_and_refuse_what_no_page_issued() {
        let c = "c1-00-00000000";
        let p = encode_position("/a b/ü", "mem_1");
        assert_eq!(
            decode_position(c, &p).unwrap(),
            ("/a b/ü".to_string(), "mem_1".to_string())
        );
        for bad in ["0", "zz", "2f61", "ff00", ""] {
            assert_eq!(
                decode_position(c, bad).unwrap_err().code,
                mem_core::ErrorCode::Unprocessable,
                "{bad}"
            );
        }
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
