//! What an export puts in a bundle: every table's records (but the never
//! exported ones), both logs, each referenced blob once, the installed
//! plugins and `mem.toml`; with a scope, only what lies under it.

use super::{IMPORT_MARK, NEVER_EXPORTED, blob_refs, is_backend_key, is_derived_key};
use crate::Service;
use crate::audit::HEAD_KEY;
use crate::records::scan_all;
use mem_bundle::{BlobInfo, Contents, Excluded, LogPart, PluginPart, Source, TablePart};
use mem_core::model::Event;
use mem_core::store::{Log, Table};
use mem_core::{MemError, MemResult, VPath};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// The virtual path a record lies at, when it has one: the key of the
/// path-keyed tables, else the record's own `path` (or its memory's, for
/// proposals). Tables added later are placed by the same rule.
fn record_path(table: Table, key: &str, value: &[u8]) -> Option<String> {
    match table {
        Table::FilePaths | Table::Folders => Some(key.to_string()),
        Table::MemoryPaths => key.split_once('\0').map(|(p, _)| p.to_string()),
        _ => {
            let v: Value = serde_json::from_slice(value).ok()?;
            let path = v
                .get("path")
                .or_else(|| v.get("memory").and_then(|m| m.get("path")))
                .or_else(|| v.get("scope"))?;
            path.as_str().map(str::to_string)
        }
    }
}

/// The task a `Table::Checkpoints` record belongs to: its key is
/// `TASK\0SEQ`, or `#ID` with `TASK\0SEQ` as its value.
fn checkpoint_task(key: &str, value: &[u8]) -> Option<String> {
    let at = match key.strip_prefix('#') {
        Some(_) => serde_json::from_slice::<String>(value).ok()?,
        None => key.to_string(),
    };
    at.split_once('\0').map(|(task, _)| task.to_string())
}

fn within(path: Option<String>, scope: &VPath) -> bool {
    path.and_then(|p| VPath::parse(&p).ok())
        .is_some_and(|p| p.is_within(scope))
}

impl Service {
    /// `mem.toml` as the workspace has it (comments kept).
    fn settings_text(&self) -> MemResult<Vec<u8>> {
        // Where this host keeps the data is not the workspace's content.
        crate::deployment::without_deployment(&self.settings.text()?).map(String::into_bytes)
    }

    /// Every entry of `log`, oldest first.
    fn log_entries(&self, log: Log) -> MemResult<Vec<(u64, Vec<u8>)>> {
        const PAGE: usize = 1024;
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        loop {
            let after = out.last().map_or(0, |(s, _)| *s);
            let page = self.store().read_log(log, after, PAGE)?;
            let done = page.len() < PAGE;
            out.extend(page);
            if done {
                return Ok(out);
            }
        }
    }

    /// The contents of a bundle of this workspace, or of what lies under
    /// `scope`.
    pub(crate) fn bundle_contents(&self, scope: Option<&VPath>) -> MemResult<Contents> {
        let scope = scope.filter(|s| !s.is_root());
        let mut excluded: Vec<Excluded> = NEVER_EXPORTED
            .iter()
            .map(|(_, what, why)| Excluded {
                what: (*what).into(),
                why: (*why).into(),
            })
            .collect();
        excluded.push(Excluded {
            what: "the search index".into(),
            why: "derived state: an import rebuilds it from the records".into(),
        });
        let mut tables = Vec::new();
        let mut exported_files = HashSet::new();
        let mut exported_keys = HashSet::new();
        let mut exported_tasks = HashSet::new();
        // Files before the tables keyed by file id (FileContent, Annotations), so those
        // follow their file under a scope; checkpoints follow their task
        // (`Table::ALL` lists tasks first).
        let mut order: Vec<Table> = Table::ALL.to_vec();
        order.sort_by_key(|t| *t != Table::Files);
        for table in order {
            if NEVER_EXPORTED.iter().any(|(t, _, _)| *t == table) {
                continue;
            }
            let mut records = Vec::new();
            for (key, value) in scan_all(self.store(), table, "")? {
                let keep = match (table, scope) {
                    (Table::Meta, _) if is_backend_key(&key) || is_derived_key(&key) => false,
                    (Table::Meta, _) if key == HEAD_KEY || key.starts_with(IMPORT_MARK) => false,
                    (_, None) => true,
                    (Table::Meta | Table::PluginKv, Some(_)) => false,
                    (Table::FileContent | Table::Annotations, Some(_)) => {
                        exported_files.contains(&key)
                    }
                    (Table::Checkpoints, Some(_)) => {
                        checkpoint_task(&key, &value).is_some_and(|t| exported_tasks.contains(&t))
                    }
                    (_, Some(s)) => within(record_path(table, &key, &value), s),
                };
                if keep {
                    match table {
                        Table::Files => {
                            exported_files.insert(key.clone());
                        }
                        Table::Tasks => {
                            exported_tasks.insert(key.clone());
                        }
                        _ => {}
                    }
                    exported_keys.insert(key.clone());
                    records.push((key, value));
                }
            }
            tables.push(TablePart {
                name: table.name().into(),
                records,
            });
        }
        if scope.is_some() {
            excluded.push(Excluded {
                what: "the audit log, plugin key-value data and workspace counters".into(),
                why: "a scoped export: they cover the whole workspace (the audit chain cannot be cut)".into(),
            });
        }
        let mut logs = Vec::new();
        for log in Log::ALL.iter().copied() {
            if scope.is_some() && log == Log::Audit {
                continue;
            }
            let mut entries = Vec::new();
            for (seq, bytes) in self.log_entries(log)? {
                let keep = match (log, scope) {
                    (_, None) => true,
                    // Events of the records that lie under the scope.
                    _ => serde_json::from_slice::<Event>(&bytes)
                        .map_err(|e| MemError::internal(format!("event {seq} cannot be read: {e}")))
                        .map(|ev| exported_keys.contains(&ev.target))?,
                };
                if keep {
                    entries.push(bytes);
                }
            }
            logs.push(LogPart {
                name: log.name().into(),
                entries,
            });
        }
        let mut blobs: BTreeMap<String, u64> = BTreeMap::new();
        for t in &tables {
            if let Some(table) = Table::from_name(&t.name) {
                for (key, value) in &t.records {
                    for (sha, size) in blob_refs(table, key, value)? {
                        blobs.insert(sha, size);
                    }
                }
            }
        }
        let mut plugins = Vec::new();
        if let Some(host) = self.plugins() {
            for info in host.list()? {
                let (manifest, wasm) = host.package(&info.manifest.name)?;
                plugins.push(PluginPart {
                    name: manifest.name.clone(),
                    manifest: serde_json::to_vec_pretty(&manifest).map_err(|e| {
                        MemError::internal(format!("cannot encode a manifest: {e}"))
                    })?,
                    wasm,
                });
            }
        }
        Ok(Contents {
            source: Source {
                workspace: self.config().workspace.name.clone(),
                mem_host_version: env!("CARGO_PKG_VERSION").into(),
            },
            scope: scope.map(|s| s.as_str().to_string()),
            excluded,
            settings: self.settings_text()?,
            tables,
            logs,
            plugins,
            blobs: blobs
                .into_iter()
                .map(|(sha256, size)| BlobInfo { sha256, size })
                .collect(),
        })
    }
}
