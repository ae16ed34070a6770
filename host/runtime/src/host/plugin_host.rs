//! The [`PluginHost`] contract on top of the call machinery in the parent
//! module: one method per world export, each converting in, calling and
//! checking the answer.

use super::answers::{validate_processed, validate_relations, validate_selection};
use super::*;

impl PluginHost for WasmPluginHost {
    fn list(&self) -> MemResult<Vec<PluginInfo>> {
        let manifests: Vec<PluginManifest> = self.installed.read().values().cloned().collect();
        manifests.into_iter().map(|m| self.info(m)).collect()
    }

    fn install(
        &self,
        wasm: &[u8],
        manifest: &PluginManifest,
        options: InstallOptions,
    ) -> MemResult<PluginInfo> {
        manifest.validate()?;
        install::check_component_header(&manifest.name, wasm)?;
        let digest = install::check_digest(manifest, wasm)?;
        install::check_wit_version(manifest)?;
        let name = &manifest.name;
        let _guard = self.load_lock.lock();
        if !options.replace && self.installed.read().contains_key(name) {
            return Err(MemError::new(
                ErrorCode::AlreadyExists,
                format!("plugin '{name}' is already installed"),
            )
            .with_hint(format!(
                "remove it first with `mem-host plugin remove {name}`, or install with --replace"
            ))
            .with_details(serde_json::json!({ "plugin": name })));
        }
        let compiled = self.engine.precompile(wasm).map_err(|e| {
            MemError::new(ErrorCode::PluginInvalid, format!("plugin '{name}' is not a valid WebAssembly component: {e}"))
                .with_hint("build it with `cargo build --release --target wasm32-wasip2` against mem-plugin-sdk")
                .with_details(serde_json::json!({ "plugin": name }))
        })?;
        let component = self
            .engine
            .load_precompiled(&compiled)
            .map_err(|e| internal("load the compiled plugin", e))?;
        let loaded = self.prepare(manifest, &component)?;
        // Every check passed: now write.
        install::write_plugin(&self.root, manifest, wasm)?;
        if let Err(e) = self.engine.store_cache(&self.cache_dir, &digest, &compiled) {
            tracing::warn!(plugin = %name, error = %e, "cannot write the compiled-plugin cache");
        }
        let previous = self
            .installed
            .write()
            .insert(name.clone(), manifest.clone());
        if previous.is_some_and(|p| p.sha256 != manifest.sha256) {
            self.failures.reset(name)?;
        }
        self.loaded.write().insert(name.clone(), Arc::new(loaded));
        self.info(manifest.clone())
    }

    fn inspect(&self, name: &str) -> MemResult<PluginInfo> {
        self.info(self.manifest(name)?)
    }

    fn package(&self, name: &str) -> MemResult<(PluginManifest, Vec<u8>)> {
        let manifest = self.manifest(name)?;
        let wasm = PluginDir::new(&self.root, name).read_wasm()?;
        // What leaves the workspace is what was verified at install.
        install::check_digest(&manifest, &wasm)?;
        Ok((manifest, wasm))
    }

    fn remove(&self, name: &str) -> MemResult<()> {
        self.manifest(name)?;
        let _guard = self.load_lock.lock();
        let dir = self.root.join(name);
        std::fs::remove_dir_all(&dir)
            .map_err(|e| MemError::io(&format!("remove {}", dir.display()), &e))?;
        self.installed.write().remove(name);
        self.loaded.write().remove(name);
        self.failures.reset(name)?;
        self.prune_cache();
        Ok(())
    }

    fn set_config(&self, config: PluginsConfig) -> MemResult<()> {
        config.validate()?;
        *self.config.write() = config;
        Ok(())
    }

    fn config(&self) -> PluginsConfig {
        self.config.read().clone()
    }

    fn processors_for(&self, mime: &str) -> MemResult<Vec<String>> {
        let candidates: Vec<String> = {
            let config = self.config.read();
            self.installed
                .read()
                .values()
                .filter(|m| m.world == World::Processor && config.settings(&m.name).enabled)
                .map(|m| m.name.clone())
                .collect()
        };
        let mut out = Vec::new();
        for name in candidates {
            match self.accepts(&name, mime) {
                Ok(true) => out.push(name),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(plugin = %name, error = %e, "processor skipped: accepts() failed")
                }
            }
        }
        Ok(out)
    }

    fn process(&self, plugin: &str, file: &FileInput) -> MemResult<ProcessedFile> {
        let input = convert::file_in(file);
        self.call(
            plugin,
            World::Processor,
            |pre, store| match pre {
                WorldPre::Processor(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_processor_api()
                    .call_process(&mut *store, &input),
                _ => Err(not_world()),
            },
            |p| {
                let p = convert::processed_out(p);
                validate_processed(&p).map(|()| p)
            },
        )
    }

    fn select(
        &self,
        plugin: &str,
        candidates: &[SelectCandidate],
        query: &SelectQuery,
        limit: u32,
    ) -> MemResult<Vec<String>> {
        let input: Vec<wit::Candidate> = candidates.iter().map(convert::candidate_in).collect();
        let q = convert::query_in(query);
        self.call(
            plugin,
            World::Selector,
            |pre, store| match pre {
                WorldPre::Selector(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_selector_api()
                    .call_select(&mut *store, &input, &q, limit),
                _ => Err(not_world()),
            },
            |ids| validate_selection(&ids, candidates, limit).map(|()| ids),
        )
    }

    fn check_write(&self, plugin: &str, proposal: &ProposalInput) -> MemResult<Verdict> {
        let input = convert::proposal_in(proposal);
        self.call(
            plugin,
            World::Policy,
            |pre, store| match pre {
                WorldPre::Policy(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_policy_api()
                    .call_check_write(&mut *store, &input),
                _ => Err(not_world()),
            },
            |v| Ok(convert::verdict_out(v)),
        )
    }

    fn check_read(
        &self,
        plugin: &str,
        item: &ReadItem,
        request: &ReadRequest,
    ) -> MemResult<Verdict> {
        let item = convert::read_item_in(item);
        let request = convert::read_request_in(request);
        self.call(
            plugin,
            World::Policy,
            |pre, store| match pre {
                WorldPre::Policy(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_policy_api()
                    .call_check_read(&mut *store, &item, &request),
                _ => Err(not_world()),
            },
            |v| Ok(convert::verdict_out(v)),
        )
    }

    fn detect(
        &self,
        plugin: &str,
        subject: &DetectItem,
        candidates: &[DetectItem],
    ) -> MemResult<Vec<DetectedRelation>> {
        let s = convert::item_in(subject);
        let cs: Vec<wit::Item> = candidates.iter().map(convert::item_in).collect();
        self.call(
            plugin,
            World::RelationDetector,
            |pre, store| match pre {
                WorldPre::RelationDetector(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_relation_detector_api()
                    .call_detect(&mut *store, &s, &cs),
                _ => Err(not_world()),
            },
            |rels| {
                let rels: Vec<DetectedRelation> =
                    rels.into_iter().map(convert::relation_out).collect();
                validate_relations(&rels, candidates).map(|()| rels)
            },
        )
    }

    fn import(&self, plugin: &str, name: &str, bytes: &[u8]) -> MemResult<Vec<AdapterEntry>> {
        self.call(
            plugin,
            World::Adapter,
            |pre, store| match pre {
                WorldPre::Adapter(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_adapter_api()
                    .call_import(&mut *store, name, bytes),
                _ => Err(not_world()),
            },
            |entries| Ok(entries.into_iter().map(convert::entry_out).collect()),
        )
    }

    fn export(&self, plugin: &str, name: &str, entries: &[AdapterEntry]) -> MemResult<Vec<u8>> {
        let input: Vec<wit::Entry> = entries.iter().map(convert::entry_in).collect();
        self.call(
            plugin,
            World::Adapter,
            |pre, store| match pre {
                WorldPre::Adapter(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_adapter_api()
                    .call_export(&mut *store, name, &input),
                _ => Err(not_world()),
            },
            Ok,
        )
    }
}
