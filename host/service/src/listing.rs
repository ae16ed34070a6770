//! A folder's listing, one page at a time: its direct subfolders first,
//! then its files, each by name. A page reads only the children it
//! returns (a subfolder's own contents are skipped over, never loaded),
//! so a folder of any size lists in bounded memory and time per page.

use crate::Service;
use crate::records::{load, scan_until};
use mem_core::model::{FileRecord, FolderRecord};
use mem_core::store::{Scan, Table};
use mem_core::time::Timestamp;
use mem_core::{MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

/// Entries a page holds unless asked for fewer; also the most it may hold.
pub const MAX_LISTING: usize = 1000;

/// One child of a folder in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    Folder {
        path: VPath,
        name: String,
        created_at: Option<Timestamp>,
    },
    File(FileRecord),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Listing {
    pub path: VPath,
    pub entries: Vec<Entry>,
    /// More entries follow: pass this back as `cursor` for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Where a page resumes: after the subfolder or after the file `name`
/// (in a tagged listing, which reaches below the folder, a file's path
/// relative to the folder). Any such cursor is a position in key order,
/// so one that names nothing still resumes where it would sort.
#[derive(Debug, Clone, PartialEq)]
enum After {
    Start,
    Folder(String),
    File(String),
}

/// What the request schema says a cursor is (`ListFolder::cursor`).
pub const CURSOR_PATTERN: &str = "^[df]:[^\\r\\n]+$";

fn bad_cursor() -> MemError {
    MemError::bad_request("this cursor is not one a folder listing gave")
        .with_hint("pass back the next_cursor of the previous page of the same listing")
        .with_details(serde_json::json!({ "field": "cursor" }))
}

impl After {
    fn parse(cursor: Option<&str>) -> MemResult<After> {
        let Some(c) = cursor else {
            return Ok(After::Start);
        };
        let (kind, name) = c.split_once(':').ok_or_else(bad_cursor)?;
        if name.is_empty() || name.contains(['\r', '\n']) {
            return Err(bad_cursor());
        }
        match kind {
            "d" => Ok(After::Folder(name.to_string())),
            "f" => Ok(After::File(name.to_string())),
            _ => Err(bad_cursor()),
        }
    }
}

impl Entry {
    fn cursor(&self) -> String {
        match self {
            Entry::Folder { name, .. } => format!("d:{name}"),
            Entry::File(f) => format!("f:{}", f.name),
        }
    }
}

impl Service {
    /// Lists a folder's direct children (folders first, then by name), at
    /// most `limit` from after `cursor`, or a single file when `path`
    /// names one.
    pub(crate) fn list_folder(
        &self,
        path: &VPath,
        cursor: Option<&str>,
        limit: usize,
    ) -> MemResult<Listing> {
        let after = After::parse(cursor)?;
        if let Some(file) = self.file_at(path)? {
            return Ok(Listing {
                path: path.clone(),
                entries: vec![Entry::File(file.value)],
                next_cursor: None,
            });
        }
        if !self.folder_exists(path)? {
            return Err(MemError::not_found("folder", path.as_str()));
        }
        let limit = limit.clamp(1, MAX_LISTING);
        let prefix = path.child_prefix();
        let mut entries = Vec::new();
        if !matches!(after, After::File(_)) {
            let from = match &after {
                After::Folder(name) => Some(format!("{prefix}{name}")),
                _ => None,
            };
            for (key, raw) in self.direct_children(Table::Folders, &prefix, from, limit + 1)? {
                let rec: FolderRecord = crate::records::decode(Table::Folders, &key, &raw)?;
                entries.push(Entry::Folder {
                    name: rec.path.name().to_string(),
                    path: rec.path,
                    created_at: Some(rec.created_at),
                });
            }
        }
        if entries.len() <= limit {
            let from = match &after {
                After::File(name) => Some(format!("{prefix}{name}")),
                _ => None,
            };
            let want = limit + 1 - entries.len();
            for (_, id) in self.direct_children(Table::FilePaths, &prefix, from, want)? {
                let id = String::from_utf8_lossy(&id).to_string();
                if let Some(f) = load::<FileRecord>(self.store(), Table::Files, &id)? {
                    entries.push(Entry::File(f.value));
                }
            }
        }
        let next_cursor = if entries.len() > limit {
            entries.truncate(limit);
            entries.last().map(Entry::cursor)
        } else {
            None
        };
        Ok(Listing {
            path: path.clone(),
            entries,
            next_cursor,
        })
    }

    /// The files at `path` or anywhere below it that carry every one of
    /// `tags` (a tag is not bound to a folder, so neither is this view), at
    /// most `limit` from after `cursor`. Reads the folder's file paths in
    /// order until the page is full: a rare tag costs a walk of the folder.
    pub(crate) fn list_tagged(
        &self,
        path: &VPath,
        tags: &[String],
        cursor: Option<&str>,
        limit: usize,
    ) -> MemResult<Listing> {
        let carries = |f: &FileRecord| tags.iter().all(|t| f.tags.contains(t));
        let prefix = path.child_prefix();
        let after = match After::parse(cursor)? {
            After::Start => None,
            After::Folder(rel) | After::File(rel) => Some(format!("{prefix}{rel}")),
        };
        if let Some(file) = self.file_at(path)? {
            let entries = if carries(&file.value) && after.is_none() {
                vec![Entry::File(file.value)]
            } else {
                Vec::new()
            };
            return Ok(Listing {
                path: path.clone(),
                entries,
                next_cursor: None,
            });
        }
        if !self.folder_exists(path)? {
            return Err(MemError::not_found("folder", path.as_str()));
        }
        let limit = limit.clamp(1, MAX_LISTING);
        let mut entries = Vec::new();
        let mut next_cursor = None;
        // The last key read: where the next page resumes.
        let mut last = after.clone();
        scan_until(self.store(), Table::FilePaths, &prefix, after, |key, id| {
            let id = String::from_utf8_lossy(id);
            if let Some(f) = load::<FileRecord>(self.store(), Table::Files, &id)?
                && carries(&f.value)
            {
                if entries.len() == limit {
                    let rel = &last.as_deref().unwrap_or(&prefix)[prefix.len()..];
                    next_cursor = Some(format!("f:{rel}"));
                    return Ok(ControlFlow::Break(()));
                }
                entries.push(Entry::File(f.value));
            }
            last = Some(key.to_string());
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(Listing {
            path: path.clone(),
            entries,
            next_cursor,
        })
    }

    /// Up to `want` keys of `table` directly under `prefix` (no further
    /// `/`), in key order, strictly after `after`. A deeper key makes the
    /// scan jump past that child's whole subtree.
    fn direct_children(
        &self,
        table: Table,
        prefix: &str,
        mut after: Option<String>,
        want: usize,
    ) -> MemResult<Vec<(String, Vec<u8>)>> {
        const PAGE: usize = 256;
        let mut out = Vec::new();
        'scan: loop {
            let page = self.store().scan(
                table,
                &Scan {
                    prefix,
                    after: after.as_deref(),
                    limit: PAGE,
                    reverse: false,
                },
            )?;
            let done = page.len() < PAGE;
            let mut last = None;
            for (key, value) in page {
                let rest = &key[prefix.len()..];
                if let Some(slash) = rest.find('/') {
                    // Past everything below `prefix/child/`; the key itself
                    // when it already sorts after that (progress either way).
                    let skip = format!("{prefix}{}/\u{10FFFF}", &rest[..slash]);
                    after = Some(if skip > key { skip } else { key });
                    continue 'scan;
                }
                out.push((key.clone(), value));
                if out.len() >= want {
                    return Ok(out);
                }
                last = Some(key);
            }
            match last {
                Some(k) if !done => after = Some(k),
                _ => return Ok(out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parser refuses exactly what the schema's pattern refuses (a
    /// fuzzer's schema-valid `0` was a 400).
    #[test]
    fn cursors_name_a_folder_or_a_file_as_the_schema_says() {
        let re = regex::Regex::new(CURSOR_PATTERN).unwrap();
        assert_eq!(After::parse(None).unwrap(), After::Start);
        assert_eq!(
            After::parse(Some("d:sub")).unwrap(),
            After::Folder("sub".into())
        );
        assert_eq!(
            After::parse(Some("f:a/b.md")).unwrap(),
            After::File("a/b.md".into())
        );
        for good in ["d:sub", "f:a.md", "f:a/b", "d:x:y"] {
            assert!(
                re.is_match(good) && After::parse(Some(good)).is_ok(),
                "{good}"
            );
        }
        for bad in ["", "0", "sub", "x:sub", "d:", "t:a", "f", "f:a\nb"] {
            assert!(!re.is_match(bad), "{bad}");
            let e = After::parse(Some(bad)).unwrap_err();
            assert_eq!(e.code, mem_core::ErrorCode::BadRequest, "{bad}");
        }
    }
}
