//! The owner's administration, the same on every surface and audited:
//! plugins (install, grant, revoke, remove), API tokens, the search index,
//! and documents moved through adapter plugins.

use super::fields;
use super::memories::ItemResult;
use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::processing::{ProcessReport, Reindex as Which};
use crate::settings::plugin_table;
use crate::tokens::{CreatedToken, TokenInfo, TokenRequest};
use crate::{RememberOutcome, Service};
use mem_core::index::IndexStats;
use mem_core::plugin::{Capability, InstallOptions, PluginHost, PluginInfo, PluginManifest};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

fn plugin_host(svc: &Service) -> MemResult<&Arc<dyn PluginHost>> {
    svc.plugins().ok_or_else(|| {
        MemError::new(
            ErrorCode::PluginFailed,
            "this process runs without a plugin runtime",
        )
        .with_hint("open the workspace with its plugins (mem-host does by default)")
    })
}

/// `plugin.list`: installed plugins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginList {}

impl Operation for PluginList {
    const NAME: &'static str = "plugin.list";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = Vec<PluginInfo>;

    fn run(self, c: &Caller<'_>) -> MemResult<Vec<PluginInfo>> {
        plugin_host(c.admin()?)?.list()
    }
}

/// `plugin.inspect`: world, requested vs granted capabilities, limits,
/// failures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginInspect {
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
}

impl Operation for PluginInspect {
    const NAME: &'static str = "plugin.inspect";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = PluginInfo;

    fn run(self, c: &Caller<'_>) -> MemResult<PluginInfo> {
        plugin_host(c.admin()?)?.inspect(&self.name)
    }
}

/// `plugin.install`: verify a component against its manifest (digest,
/// world, WIT version, imports) and install it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginInstall {
    pub manifest: PluginManifest,
    /// The component (`.wasm`), base64.
    #[schemars(schema_with = "fields::base64")]
    pub wasm_base64: String,
    /// Replace an installed plugin of the same name.
    #[serde(default)]
    pub replace: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for PluginInstall {
    const NAME: &'static str = "plugin.install";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = PluginInfo;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<PluginInfo> {
        let svc = c.admin()?;
        let wasm = fields::decode_base64("wasm_base64", &self.wasm_base64)?;
        let info = plugin_host(svc)?.install(
            &wasm,
            &self.manifest,
            InstallOptions {
                replace: self.replace,
            },
        )?;
        svc.audit_admin(
            &c.actor(None, None),
            "plugin-install",
            &format!("plugin:{}", info.manifest.name),
            vec![format!(
                "{} {} ({}), sha256 {}",
                info.manifest.name,
                info.manifest.version,
                info.manifest.world,
                info.manifest.sha256
            )],
        )?;
        Ok(info)
    }
}

/// `plugin.grant`: let a plugin use capabilities its manifest requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginGrant {
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    #[schemars(length(min = 1))]
    pub capabilities: Vec<Capability>,
    /// Host folders readable with `fs` (absolute; required with `fs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for PluginGrant {
    const NAME: &'static str = "plugin.grant";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = PluginInfo;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<PluginInfo> {
        let svc = c.admin()?;
        let host = plugin_host(svc)?;
        let info = host.inspect(&self.name)?;
        for cap in &self.capabilities {
            if !info.manifest.capabilities.contains(cap) {
                return Err(MemError::new(
                    ErrorCode::Unprocessable,
                    format!(
                        "plugin {} {} does not request {cap}; granting it would change nothing",
                        info.manifest.name, info.manifest.version
                    ),
                )
                .with_hint(format!(
                    "its manifest requests: {}",
                    caps(&info.manifest.capabilities)
                ))
                .with_details(json!({
                    "plugin": info.manifest.name,
                    "version": info.manifest.version,
                    "capability": cap,
                    "requested": info.manifest.capabilities,
                })));
            }
        }
        let mut cfg = svc.config().plugins.clone();
        for cap in &self.capabilities {
            let paths: &[String] = if *cap == Capability::Fs {
                &self.paths
            } else {
                &[]
            };
            cfg.grant(&self.name, *cap, paths)?;
        }
        svc.save_plugin_settings(&self.name, &cfg)?;
        svc.audit_admin(
            &c.actor(None, None),
            "plugin-grant",
            &format!("plugin:{}", self.name),
            vec![format!("granted {}", caps(&self.capabilities))],
        )?;
        host.inspect(&self.name)
    }
}

/// `plugin.revoke`: take granted capabilities back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginRevoke {
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    #[schemars(length(min = 1))]
    pub capabilities: Vec<Capability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for PluginRevoke {
    const NAME: &'static str = "plugin.revoke";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = PluginInfo;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<PluginInfo> {
        let svc = c.admin()?;
        let host = plugin_host(svc)?;
        host.inspect(&self.name)?;
        let mut cfg = svc.config().plugins.clone();
        let granted = cfg.settings(&self.name).grants;
        for cap in &self.capabilities {
            if !granted.contains(cap) {
                return Err(MemError::new(
                    ErrorCode::InvalidState,
                    format!("{cap} is not granted to plugin {}", self.name),
                )
                .with_hint(if cfg.baseline_grants.contains(cap) {
                    format!(
                        "{cap} comes from [plugins] baseline_grants, which applies to every plugin; edit mem.toml to change it"
                    )
                } else {
                    format!("granted to {}: {}", self.name, caps(&granted))
                })
                .with_details(json!({ "plugin": self.name, "capability": cap })));
            }
        }
        for cap in &self.capabilities {
            cfg.revoke(&self.name, *cap);
        }
        svc.save_plugin_settings(&self.name, &cfg)?;
        svc.audit_admin(
            &c.actor(None, None),
            "plugin-revoke",
            &format!("plugin:{}", self.name),
            vec![format!("revoked {}", caps(&self.capabilities))],
        )?;
        host.inspect(&self.name)
    }
}

/// `plugin.remove`: uninstall. A plugin the workspace's configuration
/// still names (selection chain, write or read policies, detectors) is
/// refused unless `force`, which also drops it from the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginRemove {
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    #[serde(default)]
    pub force: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

/// What `plugin.remove` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PluginRemoved {
    pub removed: String,
    /// Configuration entries dropped with it (`force`).
    pub unconfigured: Vec<String>,
}

impl Operation for PluginRemove {
    const NAME: &'static str = "plugin.remove";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = PluginRemoved;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<PluginRemoved> {
        let svc = c.admin()?;
        let host = plugin_host(svc)?;
        host.inspect(&self.name)?;
        let uses = svc.config().plugins.uses_of(&self.name);
        if !uses.is_empty() && !self.force {
            return Err(MemError::new(
                ErrorCode::InvalidState,
                format!(
                    "plugin {} is still configured: {}",
                    self.name,
                    uses.join(", ")
                ),
            )
            .with_hint("take it out of mem.toml first, or remove with force (which also drops it from the configuration)")
            .with_details(json!({ "plugin": self.name, "uses": uses })));
        }
        if !uses.is_empty() {
            svc.unconfigure_plugin(&self.name)?;
        }
        host.remove(&self.name)?;
        svc.audit_admin(
            &c.actor(None, None),
            "plugin-remove",
            &format!("plugin:{}", self.name),
            uses.iter().map(|u| format!("dropped from {u}")).collect(),
        )?;
        Ok(PluginRemoved {
            removed: self.name,
            unconfigured: uses,
        })
    }
}

fn caps(c: &[Capability]) -> String {
    if c.is_empty() {
        return "nothing".into();
    }
    c.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

impl Service {
    /// Writes `[plugins.NAME] grants/fs` from `cfg` into mem.toml and makes
    /// it the running configuration of the service and the runtime.
    fn save_plugin_settings(
        &self,
        name: &str,
        cfg: &mem_core::plugin::PluginsConfig,
    ) -> MemResult<()> {
        let settings = cfg.settings(name);
        let new = self.settings.edit(|doc| {
            let entry = plugin_table(doc, name)?;
            let grants: toml_edit::Array = settings.grants.iter().map(|c| c.as_str()).collect();
            entry["grants"] = toml_edit::value(grants);
            let fs: toml_edit::Array = settings.fs.iter().map(String::as_str).collect();
            entry["fs"] = toml_edit::value(fs);
            Ok(())
        })?;
        self.apply_plugin_config(&new)
    }

    /// Drops every mention of `name` from `[plugins]` (chain stages,
    /// policies, detectors, its own table).
    fn unconfigure_plugin(&self, name: &str) -> MemResult<()> {
        let new = self.settings.edit(|doc| {
            let Some(plugins) = doc.get_mut("plugins").and_then(|p| p.as_table_like_mut()) else {
                return Ok(());
            };
            plugins.remove(name);
            for list in ["write_policies", "read_policies", "detectors"] {
                if let Some(arr) = plugins.get_mut(list).and_then(|v| v.as_array_mut()) {
                    arr.retain(|v| v.as_str() != Some(name));
                }
            }
            if let Some(stages) = plugins
                .get_mut("selection")
                .and_then(|s| s.as_table_like_mut())
                .and_then(|s| s.get_mut("stages"))
            {
                if let Some(arr) = stages.as_array_mut() {
                    arr.retain(|v| {
                        v.as_inline_table()
                            .and_then(|t| t.get("plugin"))
                            .and_then(|p| p.as_str())
                            != Some(name)
                    });
                } else if let Some(arr) = stages.as_array_of_tables_mut() {
                    arr.retain(|t| t.get("plugin").and_then(|p| p.as_str()) != Some(name));
                }
            }
            Ok(())
        })?;
        self.apply_plugin_config(&new)
    }

    fn apply_plugin_config(&self, new: &crate::WorkspaceConfig) -> MemResult<()> {
        if let Some(host) = self.plugins() {
            host.set_config(new.plugins.clone())?;
        }
        Ok(())
    }
}

/// `token.list`: API tokens, never their secrets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenList {}

impl Operation for TokenList {
    const NAME: &'static str = "token.list";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = Vec<TokenInfo>;

    fn run(self, c: &Caller<'_>) -> MemResult<Vec<TokenInfo>> {
        c.admin()?.list_tokens()
    }
}

impl Operation for TokenRequest {
    const NAME: &'static str = "token.create";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = CreatedToken;

    /// Not replayable: a kept answer would hold the secret.
    fn run(self, c: &Caller<'_>) -> MemResult<CreatedToken> {
        let svc = c.admin()?;
        let created = svc.create_token(&self)?;
        svc.audit_admin(
            &c.actor(None, None),
            "token-create",
            &format!("token:{}", created.token.id),
            vec![format!(
                "{} with {}",
                created.token.name,
                created
                    .token
                    .scopes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )],
        )?;
        Ok(created)
    }
}

/// `token.revoke`: the next call with the token is refused. A token
/// cannot revoke itself, and the last admin token can only be revoked by
/// the owner (the CLI), so a token-holding client cannot lock the owner out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRevoke {
    /// The token's id or name.
    #[schemars(length(min = 1))]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for TokenRevoke {
    const NAME: &'static str = "token.revoke";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::Kept;
    type Output = TokenInfo;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn run(self, c: &Caller<'_>) -> MemResult<TokenInfo> {
        let svc = c.admin()?;
        let target = svc.find_token(&self.id)?;
        if let Some(me) = c.access.token_id() {
            if target.id == me {
                return Err(MemError::new(
                    ErrorCode::InvalidState,
                    "a token cannot revoke itself",
                )
                .with_hint("revoke it with another admin token, or as the owner with `mem-host token revoke`")
                .with_details(json!({ "token": target.id })));
            }
            let admins: Vec<TokenInfo> = svc
                .list_tokens()?
                .into_iter()
                .filter(|t| t.revoked_at.is_none() && t.scopes.contains(&Scope::Admin))
                .collect();
            if target.scopes.contains(&Scope::Admin)
                && target.revoked_at.is_none()
                && admins.len() <= 1
            {
                return Err(MemError::new(
                    ErrorCode::InvalidState,
                    "the last admin token can only be revoked by the owner",
                )
                .with_hint("create another admin token first, or revoke it with `mem-host token revoke` on the workspace's machine")
                .with_details(json!({ "token": target.id })));
            }
        }
        let revoked = svc.revoke_token(&target.id)?;
        svc.audit_admin(
            &c.actor(None, None),
            "token-revoke",
            &format!("token:{}", revoked.id),
            vec![format!("revoked {}", revoked.name)],
        )?;
        Ok(revoked)
    }
}

/// Which files `index.reindex` sends back to the processors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReindexMode {
    /// Files still pending (after a crash or a stopped worker), and the
    /// index brought up to the log.
    #[default]
    Pending,
    /// Every file whose processing failed or was partial.
    Failed,
    /// Every file re-processed and the whole index rebuilt from the records.
    All,
}

/// `index.reindex`: re-process files and bring the search index up to date.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reindex {
    #[serde(default)]
    pub mode: ReindexMode,
}

/// `files.reprocess`: send one file back to the processors (a failed one,
/// or after a processor changed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reprocess {
    /// A file id or path.
    #[schemars(length(min = 1))]
    pub target: String,
}

/// What `index.reindex` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReindexReport {
    pub processing: ProcessReport,
    /// Events replayed into the index (an incremental sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_events: Option<u64>,
    /// Records re-indexed (a rebuild, `all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reindexed_records: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<IndexStats>,
}

impl Operation for Reindex {
    const NAME: &'static str = "index.reindex";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = ReindexReport;

    fn run(self, c: &Caller<'_>) -> MemResult<ReindexReport> {
        let svc = c.admin()?;
        let processing = match self.mode {
            ReindexMode::Failed => svc.reindex(Which::Failed)?,
            ReindexMode::All => svc.reindex(Which::All)?,
            ReindexMode::Pending => {
                svc.requeue_pending()?;
                svc.drain_processing()?
            }
        };
        let mut report = ReindexReport {
            processing,
            applied_events: None,
            reindexed_records: None,
            stats: None,
        };
        if self.mode == ReindexMode::All {
            report.reindexed_records = Some(svc.rebuild_index()?);
        } else {
            report.applied_events = Some(svc.sync_index()?);
        }
        report.stats = svc.index_stats()?;
        let mode = serde_json::to_value(self.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        svc.audit_admin(
            &c.actor(None, None),
            "reindex",
            &mode,
            vec![format!("{} files processed", report.processing.processed)],
        )?;
        Ok(report)
    }
}

impl Operation for Reprocess {
    const NAME: &'static str = "files.reprocess";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::None;
    type Output = ProcessReport;

    /// Re-processing derives state again from what is stored: a writer of
    /// the file may ask for it.
    fn run(self, c: &Caller<'_>) -> MemResult<ProcessReport> {
        let f = c
            .svc
            .file_info(&self.target)
            .map_err(|e| c.hide(e, "file", &self.target))?;
        c.object(Scope::Write, "file", &self.target, &f.path)?;
        c.svc.reindex(Which::File(f.id))
    }
}

/// Adapter and document defaults of `import`/`export`.
pub const DEFAULT_ADAPTER: &str = "agents-md";
pub const DEFAULT_DOCUMENT: &str = "AGENTS.md";

/// `documents.import`: a document in another agent's format (CLAUDE.md,
/// AGENTS.md...) becomes memories through an adapter plugin; importing the
/// same document again replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportDocument {
    /// The folder the memories go to.
    #[schemars(schema_with = "fields::path")]
    pub path: String,
    /// The adapter plugin (default `agents-md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// The document's name (default `AGENTS.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The document as UTF-8 text (JSON callers); a raw upload streams it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl Operation for ImportDocument {
    const NAME: &'static str = "documents.import";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Own;
    type Output = Vec<ItemResult<RememberOutcome>>;

    fn run(mut self, c: &Caller<'_>) -> MemResult<Self::Output> {
        let bytes = self.content.take().unwrap_or_default().into_bytes();
        c.import_document(self, &bytes)
    }
}

impl Caller<'_> {
    /// Imports `bytes` as the document `req` describes: one result per
    /// entry, in order.
    pub fn import_document(
        &self,
        req: ImportDocument,
        bytes: &[u8],
    ) -> MemResult<Vec<ItemResult<RememberOutcome>>> {
        self.require(Scope::Write)?;
        let scope = VPath::parse(&req.path)?;
        self.access.may_write_at(&scope)?;
        if bytes.is_empty() {
            return Err(
                MemError::new(ErrorCode::Unprocessable, "the document is empty")
                    .with_hint("send the document's content"),
            );
        }
        if std::str::from_utf8(bytes).is_err() {
            return Err(
                MemError::new(ErrorCode::Unprocessable, "the document is not UTF-8 text")
                    .with_hint("convert the document to UTF-8 first"),
            );
        }
        let results = self.svc.import_document(
            req.adapter.as_deref().unwrap_or(DEFAULT_ADAPTER),
            req.name.as_deref().unwrap_or(DEFAULT_DOCUMENT),
            bytes,
            scope.as_str(),
            &self.actor(None, None),
        )?;
        Ok(results.into_iter().map(ItemResult::from).collect())
    }
}

/// `documents.export`: the active memories of a folder as a document in
/// another agent's format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportDocument {
    /// The folder whose memories are exported.
    #[schemars(schema_with = "fields::path")]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// An exported document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExportedDocument {
    pub name: String,
    /// The document's text.
    pub content: String,
}

impl Operation for ExportDocument {
    const NAME: &'static str = "documents.export";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = ExportedDocument;

    fn run(self, c: &Caller<'_>) -> MemResult<ExportedDocument> {
        let path = VPath::parse(&self.path)?;
        if !(c.access.has(Scope::Read) && c.access.sees(&path)) {
            return Err(MemError::not_found("folder", &self.path));
        }
        let name = self.name.unwrap_or_else(|| DEFAULT_DOCUMENT.into());
        let bytes = c.svc.export_document(
            self.adapter.as_deref().unwrap_or(DEFAULT_ADAPTER),
            &name,
            path.as_str(),
        )?;
        let content = String::from_utf8(bytes).map_err(|_| {
            MemError::new(
                ErrorCode::PluginFailed,
                "the adapter rendered a document that is not UTF-8 text",
            )
            .with_hint("report it to the adapter's author")
        })?;
        Ok(ExportedDocument { name, content })
    }
}
