//! The catalog as one pass over every memory and file: what a workspace
//! answers until its tallies are counted.

use super::{After, CatalogItem, Filters, Found, Groups, PageItems};
use crate::access::Access;
use crate::records::{decode, scan_each};
use mem_core::MemResult;
use mem_core::VPath;
use mem_core::model::{FileRecord, Memory};
use mem_core::store::Table;

impl crate::Service {
    pub(super) fn catalog_by_pass(
        &self,
        f: &Filters,
        access: &Access,
        after: After,
    ) -> MemResult<Found> {
        let config = self.config();
        let role_of = |k: &str| config.types.registry.role_of(k).map(str::to_string);
        let mut groups = Groups::default();
        let mut items: Vec<CatalogItem> = Vec::new();
        scan_each(self.store(), Table::Memories, "", |key, raw| {
            let m: Memory = decode(Table::Memories, key, raw)?;
            if !f.admits_memory(access, &m.path, &m.kind, m.lifecycle.as_str()) {
                return Ok(());
            }
            let item = CatalogItem::memory(m, None);
            groups.memories(&item.path, &item.type_name, 1, item.bytes);
            if let Some(s) = &item.subject {
                groups.subject(s, 1);
            }
            items.push(item);
            Ok(())
        })?;
        if f.files {
            scan_each(self.store(), Table::Files, "", |key, raw| {
                let file: FileRecord = decode(Table::Files, key, raw)?;
                if !f.admits_file(access, &file.path) {
                    return Ok(());
                }
                let folder = file.path.parent().unwrap_or_else(VPath::root);
                groups.files(folder.as_str(), &file.mime, 1, file.size);
                items.push(CatalogItem::file(file));
                Ok(())
            })?;
        }
        items.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.id.cmp(&b.id)));
        let start = after.map_or(0, |(path, id)| {
            items.partition_point(|i| {
                (i.path.as_str(), i.id.as_str()) <= (path.as_str(), id.as_str())
            })
        });
        let mut page = PageItems::new(f);
        let mut next = None;
        for mut item in items.into_iter().skip(start) {
            if item.record == super::Record::Memory {
                item.role = role_of(&item.type_name);
            }
            if !page.offer(item) {
                next = page.last();
                break;
            }
        }
        Ok(Found {
            groups,
            items: page.items,
            next,
        })
    }
}
