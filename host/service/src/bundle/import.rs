//! Importing a bundle: everything is read and verified (blobs go into the
//! store unreferenced, where a failed import leaves them for the blob
//! collector), then one atomic commit writes every record, log entry and
//! blob reference. A bundle that does not verify, or a workspace that
//! holds data, changes nothing.

use super::{
    IMPORT_MARK, ImportReport, NEVER_EXPORTED, VerifyReport, blob_refs, is_backend_key,
    is_derived_key,
};
use crate::Service;
use crate::audit::HEAD_KEY;
use crate::config::WorkspaceConfig;
use mem_bundle::{BlobSink, Bundle, Limits, Manifest, Outcome};
use mem_core::plugin::{InstallOptions, PluginManifest};
use mem_core::store::{Batch, Durability, Log, Store, StoreError, Table};
use mem_core::{ErrorCode, MemError, MemResult};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::io::Read;

/// Blobs into the store, unreferenced until the commit.
struct StoreSink<'a>(&'a dyn Store);

impl BlobSink for StoreSink<'_> {
    fn put(&mut self, _sha256: &str, _size: u64, reader: &mut dyn Read) -> MemResult<()> {
        self.0.put_blob_from(reader)?;
        Ok(())
    }
}

/// Blobs hashed and dropped (`verify`).
struct Discard;

impl BlobSink for Discard {
    fn put(&mut self, _sha256: &str, _size: u64, reader: &mut dyn Read) -> MemResult<()> {
        std::io::copy(reader, &mut std::io::sink())
            .map_err(|e| MemError::io("cannot read the bundle", &e))?;
        Ok(())
    }
}

fn invalid(reason: String) -> MemError {
    mem_bundle::BundleError::Invalid { reason }.into()
}

/// What a verified bundle writes, checked against this host's rules: known
/// tables and logs, no secrets, each referenced blob present, plugin
/// manifests that parse, settings that are UTF-8.
struct Plan<'b> {
    records: Vec<(Table, &'b str, &'b [u8])>,
    logs: Vec<(Log, &'b [Vec<u8>])>,
    refs: BTreeMap<String, i64>,
    plugins: Vec<(PluginManifest, &'b [u8])>,
    settings: &'b str,
}

fn plan(b: &Bundle) -> MemResult<Plan<'_>> {
    let mut records = Vec::new();
    let mut refs: BTreeMap<String, i64> = BTreeMap::new();
    let carried: HashSet<&str> = b.blobs.iter().map(|x| x.sha256.as_str()).collect();
    for part in &b.tables {
        let table = Table::from_name(&part.name).ok_or_else(|| {
            invalid(format!(
                "it has a table {:?} this mem-host does not know",
                part.name
            ))
        })?;
        if NEVER_EXPORTED.iter().any(|(t, _, _)| *t == table) {
            return Err(invalid(format!(
                "it carries {}, which bundles never do",
                part.name
            )));
        }
        for (key, value) in &part.records {
            if table == Table::Meta
                && (is_backend_key(key)
                    || is_derived_key(key)
                    || key == HEAD_KEY
                    || key.starts_with(IMPORT_MARK))
            {
                return Err(invalid(format!("it sets the reserved key {key:?}")));
            }
            let held = blob_refs(table, key, value).map_err(|e| {
                invalid(format!(
                    "record {key:?} of {} cannot be read: {}",
                    part.name, e.message
                ))
            })?;
            for (sha, _) in held {
                if !carried.contains(sha.as_str()) {
                    return Err(mem_bundle::BundleError::MissingBlob { sha256: sha }.into());
                }
                *refs.entry(sha).or_default() += 1;
            }
            records.push((table, key.as_str(), value.as_slice()));
        }
    }
    let mut logs = Vec::new();
    for part in &b.logs {
        let log = Log::from_name(&part.name).ok_or_else(|| {
            invalid(format!(
                "it has a log {:?} this mem-host does not know",
                part.name
            ))
        })?;
        logs.push((log, part.entries.as_slice()));
    }
    let mut plugins = Vec::new();
    for p in &b.plugins {
        let m: PluginManifest = serde_json::from_slice(&p.manifest).map_err(|e| {
            invalid(format!(
                "plugin {}: its manifest cannot be read: {e}",
                p.name
            ))
        })?;
        if m.name != p.name {
            return Err(invalid(format!(
                "plugin {}: its manifest names {:?}",
                p.name, m.name
            )));
        }
        plugins.push((m, p.wasm.as_slice()));
    }
    let settings = std::str::from_utf8(&b.settings)
        .map_err(|_| invalid("its mem.toml is not UTF-8".into()))?;
    Ok(Plan {
        records,
        logs,
        refs,
        plugins,
        settings,
    })
}

fn counted(manifest: &Manifest) -> u64 {
    manifest.records.len() as u64
}

/// Checks a bundle without importing it: every entry, record and blob
/// against the manifest, and what an import would refuse.
pub fn verify(input: &mut dyn Read, limits: &Limits) -> MemResult<VerifyReport> {
    let outcome = mem_bundle::read(input, limits, &mut |_, _| Ok(true), &mut Discard)?;
    let Outcome::Complete(b) = outcome else {
        return Err(MemError::internal("the bundle read stopped by itself"));
    };
    let p = plan(&b)?;
    WorkspaceConfig::parse(p.settings)?;
    let m = &b.manifest;
    Ok(VerifyReport {
        ok: true,
        bundle: b.manifest_sha256.clone(),
        format_version: m.format_version,
        created_at: m.created_at.clone(),
        source: m.source.clone(),
        scope: m.scope.clone(),
        counts: m.counts.clone(),
        entries: m.entries.len() as u64 + 1,
        records: counted(m),
    })
}

/// One import at a time in a process (the emptiness check and the commit
/// belong together).
static IMPORTING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

impl Service {
    /// Why this workspace is not empty, if it is not. Tokens (and their
    /// audit entries and kept answers) may exist: the owner may have made
    /// one to upload the bundle with.
    fn holds_data(&self) -> MemResult<Option<String>> {
        for table in Table::ALL.iter().copied() {
            let allowed =
                table == Table::Meta || NEVER_EXPORTED.iter().any(|(t, _, _)| *t == table);
            if !allowed && self.store().count(table)? > 0 {
                return Ok(Some(format!("it holds {} records", table.name())));
            }
        }
        if self.store().last_log_entry(Log::Events)?.is_some() {
            return Ok(Some("its event log has entries".into()));
        }
        if let Some(e) = self
            .audit_entries()?
            .into_iter()
            .find(|e| !e.action.starts_with("token-"))
        {
            return Ok(Some(format!("its audit log has a {} entry", e.action)));
        }
        Ok(None)
    }

    fn import_mark(&self, bundle: &str) -> MemResult<bool> {
        Ok(self
            .store()
            .get(Table::Meta, &format!("{IMPORT_MARK}{bundle}"))?
            .is_some())
    }

    /// Imports a bundle into this (empty) workspace; the same bundle again
    /// answers `replayed` and changes nothing.
    pub(crate) fn import_bundle(
        &self,
        input: &mut dyn Read,
        limits: &Limits,
    ) -> MemResult<ImportReport> {
        let _one = IMPORTING.lock();
        let mut sink = StoreSink(self.store());
        let outcome = mem_bundle::read(
            input,
            limits,
            &mut |_, sha| {
                if self.import_mark(sha)? {
                    return Ok(false);
                }
                match self.holds_data()? {
                    Some(why) => Err(not_empty(why)),
                    None => Ok(true),
                }
            },
            &mut sink,
        )?;
        let b = match outcome {
            Outcome::Stopped {
                manifest,
                manifest_sha256,
            } => {
                return Ok(report(&manifest, manifest_sha256, false, 0, Vec::new()));
            }
            Outcome::Complete(b) => b,
        };
        let p = plan(&b)?;
        // Settings that would not load here fail before anything changes.
        WorkspaceConfig::parse_in(p.settings, &self.config().base_dir)?;
        if !p.plugins.is_empty() && self.plugins().is_none() {
            return Err(MemError::new(
                ErrorCode::PluginFailed,
                "the bundle has plugins and this process runs without a plugin runtime",
            )
            .with_hint(
                "import with the mem-host binary (it opens workspaces with their plugins)",
            ));
        }
        let mut batch = Batch::new();
        for (table, key, value) in &p.records {
            batch.expect(*table, *key, None);
            batch.put(*table, *key, value.to_vec());
        }
        for (sha, n) in &p.refs {
            batch.blob_ref(sha.clone(), *n);
        }
        for (log, entries) in &p.logs {
            match log {
                Log::Audit => self.stage_imported_audit(&mut batch, entries)?,
                _ => {
                    for e in *entries {
                        batch.append(*log, e.clone());
                    }
                }
            }
        }
        let mark = json!({
            "imported_at": mem_core::time::to_rfc3339(&mem_core::time::now()),
            "source": b.manifest.source,
            "format_version": b.manifest.format_version,
        });
        batch.put(
            Table::Meta,
            format!("{IMPORT_MARK}{}", b.manifest_sha256),
            crate::records::encode(&mark)?,
        );
        // The records arrive behind the tallies' seam: counted afresh.
        crate::tally::invalidate(&mut batch);
        // Plugins are verified and installed (replacing the first-party
        // ones a new workspace starts with) before the commit: a plugin
        // this host refuses leaves the store untouched.
        let mut installed = Vec::new();
        if let Some(host) = self.plugins() {
            for (m, wasm) in &p.plugins {
                host.install(wasm, m, InstallOptions { replace: true })?;
                installed.push(m.name.clone());
            }
        }
        match self.store().commit(batch, Durability::Immediate) {
            Ok(_) => {}
            Err(StoreError::ConditionFailed { .. }) => {
                return Err(not_empty("a record was written while importing".into()));
            }
            Err(e) => return Err(e.into()),
        }
        let config = self.settings.replace(p.settings)?;
        if let Some(host) = self.plugins() {
            host.set_config(config.plugins.clone())?;
        }
        let reindexed = self.rebuild_index()?;
        Ok(report(
            &b.manifest,
            b.manifest_sha256.clone(),
            true,
            reindexed,
            installed,
        ))
    }
}

fn not_empty(why: String) -> MemError {
    MemError::new(
        ErrorCode::WorkspaceNotEmpty,
        format!("a bundle imports into an empty workspace only; this one is not: {why}"),
    )
    .with_details(json!({ "reason": why }))
}

fn report(
    m: &Manifest,
    bundle: String,
    imported: bool,
    reindexed_records: u64,
    plugins: Vec<String>,
) -> ImportReport {
    let message = if imported {
        format!(
            "imported {} records, {} blobs and {} plugins from workspace {}",
            counted(m),
            m.counts.blobs,
            plugins.len(),
            m.source.workspace
        )
    } else {
        "this bundle was imported here before; nothing changed".into()
    };
    ImportReport {
        imported,
        replayed: !imported,
        message,
        bundle,
        format_version: m.format_version,
        source: m.source.clone(),
        scope: m.scope.clone(),
        counts: m.counts.clone(),
        reindexed_records,
        plugins,
    }
}
