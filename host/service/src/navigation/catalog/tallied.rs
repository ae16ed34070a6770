//! The catalog from the tallies: totals and groups from the counts the
//! writes keep; a page walks the memories in catalog order and the files
//! in path order from its cursor, reading only the records it shows.

use super::{After, CatalogItem, Filters, Found, Groups, PageItems, Record};
use crate::access::Access;
use crate::records::{decode, scan_until};
use crate::tally;
use mem_core::model::{FileRecord, Memory};
use mem_core::store::Table;
use mem_core::{MemResult, VPath};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// Index entries a page looks at before it ends short, with a cursor: a
/// filter few records match (a rare kind, a narrow boundary) cannot make
/// one page read the whole workspace.
pub(crate) const MAX_WALK: usize = 20_000;

/// An admitted record on the way to a page.
struct Candidate {
    path: String,
    id: String,
    record: Record,
}

/// Candidates of one source (memories or files), in order.
#[derive(Default)]
struct Walked {
    found: Vec<Candidate>,
    /// The walk stopped with enough candidates for a page.
    full: bool,
    /// The walk gave up here, with too few: nothing after it was looked at.
    horizon: After,
}

impl Walked {
    /// Takes an entry the walk looked at; `Break` when it has seen enough.
    fn look(
        &mut self,
        f: &Filters,
        seen: &mut usize,
        c: Option<Candidate>,
        at: (&str, &str),
    ) -> ControlFlow<()> {
        *seen += 1;
        if let Some(c) = c {
            self.found.push(c);
            if self.found.len() > f.limit {
                self.full = true;
                return ControlFlow::Break(());
            }
        }
        if *seen >= MAX_WALK {
            self.horizon = Some((at.0.to_string(), at.1.to_string()));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

fn after_pair(after: &After) -> Option<(&str, &str)> {
    after.as_ref().map(|(p, i)| (p.as_str(), i.as_str()))
}

impl crate::Service {
    pub(super) fn catalog_by_tallies(
        &self,
        f: &Filters,
        access: &Access,
        after: After,
    ) -> MemResult<Found> {
        let store = self.store();
        let mut groups = Groups::default();
        for t in tally::memories(store, &f.path)? {
            if t.count.n > 0 && f.admits_memory(access, &t.folder, &t.kind, &t.lifecycle) {
                let bytes = t.count.bytes.max(0) as u64;
                groups.memories(t.folder.as_str(), &t.kind, t.count.n as u64, bytes);
            }
        }
        for s in tally::subjects(store, &f.path)? {
            if s.n > 0 && f.admits_memory(access, &s.folder, &s.kind, &s.lifecycle) {
                groups.subject(&s.subject, s.n as u64);
            }
        }
        if f.files {
            self.file_groups(f, access, &mut groups)?;
        }
        let (items, next) = self.catalog_items(f, access, after)?;
        Ok(Found {
            groups,
            items,
            next,
        })
    }

    /// Files by folder and type. A folder the request or the caller sees
    /// only part of (the request's path, or a boundary path, names a file
    /// in it) counts those files one by one.
    fn file_groups(&self, f: &Filters, access: &Access, groups: &mut Groups) -> MemResult<()> {
        let mut partial: BTreeSet<String> = BTreeSet::new();
        for t in tally::files(self.store(), &f.path)? {
            if t.count.n <= 0 {
                continue;
            }
            if t.folder.is_within(&f.path) && access.sees(&t.folder) {
                let bytes = t.count.bytes.max(0) as u64;
                groups.files(t.folder.as_str(), &t.mime, t.count.n as u64, bytes);
            } else {
                partial.insert(t.folder.as_str().to_string());
            }
        }
        let named = access.paths().iter().chain(std::iter::once(&f.path));
        let mut counted: BTreeSet<&str> = BTreeSet::new();
        for path in named {
            let in_partial = path.parent().is_some_and(|p| partial.contains(p.as_str()));
            if !in_partial || !counted.insert(path.as_str()) || !f.admits_file(access, path) {
                continue;
            }
            if let Some(file) = self.catalog_file_at(path)? {
                let folder = path.parent().unwrap_or_else(VPath::root);
                groups.files(folder.as_str(), &file.mime, 1, file.size);
            }
        }
        Ok(())
    }

    fn catalog_file_at(&self, path: &VPath) -> MemResult<Option<FileRecord>> {
        let Some(id) = self.store().get(Table::FilePaths, path.as_str())? else {
            return Ok(None);
        };
        let id = String::from_utf8_lossy(&id).into_owned();
        self.catalog_record(Table::Files, &id)
    }

    fn catalog_record<T: serde::de::DeserializeOwned>(
        &self,
        table: Table,
        id: &str,
    ) -> MemResult<Option<T>> {
        self.store()
            .get(table, id)?
            .map(|raw| decode(table, id, &raw))
            .transpose()
    }

    /// The page's items and where the next page resumes.
    fn catalog_items(
        &self,
        f: &Filters,
        access: &Access,
        after: After,
    ) -> MemResult<(Vec<CatalogItem>, After)> {
        let memories = self.walk_memories(f, access, &after)?;
        let files = if f.files {
            self.walk_files(f, access, &after)?
        } else {
            Walked::default()
        };
        let horizon = [&memories.horizon, &files.horizon]
            .into_iter()
            .flatten()
            .min()
            .cloned();
        let more = memories.full || files.full;
        let mut found: Vec<Candidate> = memories.found;
        found.extend(files.found);
        found.sort_by(|a, b| (&a.path, &a.id).cmp(&(&b.path, &b.id)));
        if let Some((hp, hi)) = &horizon {
            found.retain(|c| (&c.path, &c.id) <= (hp, hi));
        }
        let last = found.last().map(|c| (c.path.clone(), c.id.clone()));
        let config = self.config();
        let mut page = PageItems::new(f);
        for c in found {
            let item = match c.record {
                Record::Memory => self
                    .catalog_record::<Memory>(Table::Memories, &c.id)?
                    .map(|m| {
                        let role = config.types.registry.role_of(&m.kind).map(str::to_string);
                        CatalogItem::memory(m, role)
                    }),
                Record::File => self
                    .catalog_record::<FileRecord>(Table::Files, &c.id)?
                    .map(CatalogItem::file),
            };
            if let Some(item) = item
                && !page.offer(item)
            {
                let next = page.last();
                return Ok((page.items, next));
            }
        }
        let next = match horizon {
            Some(h) => Some(h),
            None if more => last,
            None => None,
        };
        Ok((page.items, next))
    }

    fn walk_memories(&self, f: &Filters, access: &Access, after: &After) -> MemResult<Walked> {
        let mut w = Walked::default();
        let mut seen = 0;
        tally::walk(self.store(), &f.path, after_pair(after), |e| {
            let admitted = VPath::parse(&e.path)
                .is_ok_and(|folder| f.admits_memory(access, &folder, &e.kind, &e.lifecycle));
            let at = (e.path.clone(), e.id.clone());
            let c = admitted.then_some(Candidate {
                path: e.path,
                id: e.id,
                record: Record::Memory,
            });
            Ok(w.look(f, &mut seen, c, (&at.0, &at.1)))
        })?;
        Ok(w)
    }

    /// Files at or below the request's path, in path order, after `after`.
    fn walk_files(&self, f: &Filters, access: &Access, after: &After) -> MemResult<Walked> {
        let store = self.store();
        let mut w = Walked::default();
        let mut seen = 0;
        let past = |path: &str, id: &str| after_pair(after).is_none_or(|a| (path, id) > a);
        // A file at the cursor's own path sorts by its id; the scan below
        // starts strictly after that path.
        let mut exact: Vec<&str> = vec![f.path.as_str()];
        if let Some((p, _)) = after {
            exact.push(p);
        }
        exact.sort();
        exact.dedup();
        let mut firsts: Vec<Candidate> = Vec::new();
        for path in exact {
            let Ok(vp) = VPath::parse(path) else { continue };
            if let Some(id) = store.get(Table::FilePaths, path)? {
                let id = String::from_utf8_lossy(&id).into_owned();
                if past(path, &id) && f.admits_file(access, &vp) {
                    firsts.push(Candidate {
                        path: path.to_string(),
                        id,
                        record: Record::File,
                    });
                }
            }
        }
        w.found = firsts;
        let prefix = f.path.child_prefix();
        let start = after
            .as_ref()
            .map(|(p, _)| p.clone())
            .filter(|p| p.as_str() > prefix.as_str());
        scan_until(store, Table::FilePaths, &prefix, start, |key, raw| {
            let id = String::from_utf8_lossy(raw).into_owned();
            let admitted = VPath::parse(key).is_ok_and(|p| f.admits_file(access, &p));
            let c = (admitted && past(key, &id)).then(|| Candidate {
                path: key.to_string(),
                id: id.clone(),
                record: Record::File,
            });
            Ok(w.look(f, &mut seen, c, (key, &id)))
        })?;
        Ok(w)
    }
}
