//! The owner's plugin administration, the same on every surface and
//! audited: install, grant, revoke, remove; `mem.toml` follows.

use super::fields;
use crate::Service;
use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::settings::plugin_table;
use mem_core::plugin::{Capability, InstallOptions, PluginHost, PluginInfo, PluginManifest};
use mem_core::{ErrorCode, MemError, MemResult};
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
            for list in ["write_policies", "read_policies", "detectors", "related"] {
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
