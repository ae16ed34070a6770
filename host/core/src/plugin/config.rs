//! The `[plugins]` table of `mem.toml`: enabled plugins, grants, limits,
//! the selection chain.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, MemError, MemResult};

use super::{Capability, validate_plugin_name};

/// The `[plugins]` table of `mem.toml`.
///
/// ```toml
/// [plugins]
/// baseline_grants = ["log", "config"]   # granted to every plugin that requests them
/// write_policies = ["evidence"]
/// read_policies = []
/// detectors = ["conflicts"]
/// related = ["conflicts", "topic", "event", "person", "sequel"]
///
/// [plugins.limits]                     # defaults for every plugin
/// timeout_ms = 2000
/// memory_mib = 64
///
/// [plugins.selection]
/// stages = [
///   { plugin = "role", limit = 200 },
///   { plugin = "recent", limit = 100 },
///   { plugin = "relevance", limit = 40 },
/// ]
///
/// [plugins.text]                       # one table per installed plugin
/// grants = ["kv"]
/// fs = ["/home/me/notes"]
/// limits = { timeout_ms = 5000 }
/// config = { max_chunk_chars = 1500 }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PluginsConfig {
    /// Capabilities every plugin gets when its manifest requests them.
    /// Defaults to `log` and `config`, which expose nothing outside the
    /// plugin (a capped log, its own settings).
    #[serde(default = "default_baseline_grants")]
    pub baseline_grants: Vec<Capability>,
    /// Default limits of every call.
    #[serde(default)]
    pub limits: PluginLimits,
    /// The context selection chain.
    #[serde(default)]
    pub selection: SelectionChain,
    /// Policy plugins judging writes, in order.
    #[serde(default)]
    pub write_policies: Vec<String>,
    /// Policy plugins judging reads, in order.
    #[serde(default)]
    pub read_policies: Vec<String>,
    /// Relation detectors run on new memories.
    #[serde(default)]
    pub detectors: Vec<String>,
    /// Relation detectors `related` answers from: run on every new or
    /// changed memory and file, their findings stored.
    #[serde(default)]
    pub related: Vec<String>,
    /// Per-plugin settings: `[plugins.NAME]`.
    #[serde(flatten)]
    pub plugin: BTreeMap<String, PluginSettings>,
}

fn default_baseline_grants() -> Vec<Capability> {
    vec![Capability::Log, Capability::Config]
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            baseline_grants: default_baseline_grants(),
            limits: PluginLimits::default(),
            selection: SelectionChain::default(),
            write_policies: Vec::new(),
            read_policies: Vec::new(),
            detectors: Vec::new(),
            related: Vec::new(),
            plugin: BTreeMap::new(),
        }
    }
}

impl PluginsConfig {
    /// The configuration `mem-host init` writes with the first-party plugins:
    /// the role → recent → relevance chain, the `evidence` write gate and
    /// the `conflicts` detector.
    pub fn recommended() -> Self {
        Self {
            selection: SelectionChain {
                stages: vec![
                    SelectionStage {
                        plugin: "role".into(),
                        limit: Some(200),
                    },
                    SelectionStage {
                        plugin: "recent".into(),
                        limit: Some(100),
                    },
                    SelectionStage {
                        plugin: "relevance".into(),
                        limit: Some(40),
                    },
                ],
                ..SelectionChain::default()
            },
            write_policies: vec!["evidence".into()],
            detectors: vec!["conflicts".into()],
            related: ["conflicts", "topic", "event", "person", "sequel"]
                .map(String::from)
                .to_vec(),
            // `topic` embeds through the host's model and caches vectors.
            plugin: BTreeMap::from([(
                "topic".to_string(),
                PluginSettings {
                    grants: vec![Capability::Embed, Capability::Kv],
                    ..PluginSettings::default()
                },
            )]),
            ..Self::default()
        }
    }

    /// The settings of one plugin (defaults when it has no table).
    pub fn settings(&self, name: &str) -> PluginSettings {
        self.plugin.get(name).cloned().unwrap_or_default()
    }

    /// Capabilities the workspace grants `name` (baseline included), sorted.
    pub fn granted(&self, name: &str) -> Vec<Capability> {
        let mut caps = self.baseline_grants.clone();
        if let Some(s) = self.plugin.get(name) {
            caps.extend(s.grants.iter().copied());
        }
        caps.sort();
        caps.dedup();
        caps
    }

    /// Default limits overridden by the plugin's own.
    pub fn limits_for(&self, name: &str) -> ResolvedLimits {
        let own = self
            .plugin
            .get(name)
            .map(|s| s.limits.clone())
            .unwrap_or_default();
        self.limits.resolve(&own)
    }

    /// Adds a grant (what `mem-host plugin grant NAME CAP` does to the config).
    /// `fs` needs at least one path.
    pub fn grant(
        &mut self,
        name: &str,
        capability: Capability,
        fs_paths: &[String],
    ) -> MemResult<()> {
        validate_plugin_name(name)?;
        if capability == Capability::Fs && fs_paths.is_empty() {
            return Err(
                MemError::bad_request("granting fs needs the host folders to expose").with_hint(
                    format!("run `mem-host plugin grant {name} fs --path /some/folder`"),
                ),
            );
        }
        let entry = self.plugin.entry(name.to_string()).or_default();
        if !entry.grants.contains(&capability) {
            entry.grants.push(capability);
            entry.grants.sort();
        }
        for p in fs_paths {
            if !entry.fs.contains(p) {
                entry.fs.push(p.clone());
            }
        }
        self.validate()
    }

    /// Where the configuration names plugin `name` as a part of the
    /// workspace (a chain stage, a policy, a detector), e.g.
    /// `selection`, `write_policies`.
    pub fn uses_of(&self, name: &str) -> Vec<String> {
        let mut uses = Vec::new();
        if self.selection.stages.iter().any(|s| s.plugin == name) {
            uses.push("selection".to_string());
        }
        for (list, names) in [
            ("write_policies", &self.write_policies),
            ("read_policies", &self.read_policies),
            ("detectors", &self.detectors),
            ("related", &self.related),
        ] {
            if names.iter().any(|n| n == name) {
                uses.push(list.to_string());
            }
        }
        uses
    }

    /// Removes a grant (and, for `fs`, every granted path).
    pub fn revoke(&mut self, name: &str, capability: Capability) {
        if let Some(entry) = self.plugin.get_mut(name) {
            entry.grants.retain(|c| *c != capability);
            if capability == Capability::Fs {
                entry.fs.clear();
            }
        }
    }

    /// Rejects settings that cannot work: bad plugin names, zero limits,
    /// relative fs paths, chain stages without a plugin name.
    pub fn validate(&self) -> MemResult<()> {
        let bad = |msg: String| {
            MemError::new(ErrorCode::ConfigInvalid, msg)
                .with_hint("fix the [plugins] table of mem.toml")
        };
        self.limits
            .validate()
            .map_err(|m| bad(format!("[plugins.limits]: {m}")))?;
        for (name, s) in &self.plugin {
            validate_plugin_name(name)
                .map_err(|e| bad(format!("[plugins.{name}]: {}", e.message)))?;
            s.limits
                .validate()
                .map_err(|m| bad(format!("[plugins.{name}.limits]: {m}")))?;
            for p in &s.fs {
                if !p.starts_with('/') {
                    return Err(bad(format!(
                        "[plugins.{name}] fs path '{p}' must be absolute"
                    )));
                }
            }
        }
        for stage in &self.selection.stages {
            if stage.plugin.is_empty() {
                return Err(bad("[plugins.selection] a stage has no plugin".to_string()));
            }
            if stage.limit == Some(0) {
                return Err(bad(format!(
                    "[plugins.selection] stage '{}' has limit 0",
                    stage.plugin
                )));
            }
        }
        Ok(())
    }
}

/// `[plugins.NAME]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PluginSettings {
    /// A disabled plugin stays installed but is never called.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Granted capabilities beyond `baseline_grants`.
    #[serde(default)]
    pub grants: Vec<Capability>,
    /// Host folders readable (read-only, exactly these trees) when `fs` is granted.
    #[serde(default)]
    pub fs: Vec<String>,
    /// Overrides of the default limits.
    #[serde(default)]
    pub limits: PluginLimits,
    /// What the plugin reads through the `config` import.
    #[serde(default)]
    pub config: BTreeMap<String, ConfigValue>,
}

impl Default for PluginSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            grants: Vec::new(),
            fs: Vec::new(),
            limits: PluginLimits::default(),
            config: BTreeMap::new(),
        }
    }
}

fn default_true() -> bool {
    true
}

/// A scalar setting; plugins read every value as a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ConfigValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{b}"),
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

/// `[plugins.selection]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelectionChain {
    #[serde(default)]
    pub stages: Vec<SelectionStage>,
    /// Candidates handed to the first stage at most (bounds the input size
    /// of every stage call).
    #[serde(default = "default_max_candidates")]
    pub max_candidates: u32,
}

fn default_max_candidates() -> u32 {
    500
}

impl Default for SelectionChain {
    fn default() -> Self {
        Self {
            stages: Vec::new(),
            max_candidates: default_max_candidates(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelectionStage {
    pub plugin: String,
    /// Candidates this stage keeps at most (none: as many as it likes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Limits of one plugin call; unset fields fall back to the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PluginLimits {
    /// Wall-clock deadline of one call. Defends against infinite loops and
    /// pathologically slow plugins holding a worker. Default 2000 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Linear memory (all memories of the instance) a call may grow to.
    /// Defends against allocation bombs exhausting host RAM. Default 64 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Size of a call's result (strings, bytes, list entries). Defends
    /// against a plugin flooding the store and index with output. Default 8 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_kib: Option<u64>,
    /// Bytes a call may write through the `log` import; the rest is
    /// dropped. Defends against log flooding. Default 64 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_kib: Option<u64>,
    /// Largest value the `kv` import stores. Defends against a plugin
    /// using its namespace as a blob store. Default 256 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_value_kib: Option<u64>,
    /// Total bytes (keys + values) of a plugin's `kv` namespace. Defends
    /// against unbounded store growth. Default 16 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_quota_kib: Option<u64>,
    /// Texts per `embed` call. Defends against monopolising the embedder.
    /// Default 256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_batch: Option<u32>,
}

impl PluginLimits {
    pub const DEFAULT_TIMEOUT_MS: u64 = 2_000;
    pub const DEFAULT_MEMORY_MIB: u64 = 64;
    pub const DEFAULT_OUTPUT_KIB: u64 = 8 * 1024;
    pub const DEFAULT_LOG_KIB: u64 = 64;
    pub const DEFAULT_KV_VALUE_KIB: u64 = 256;
    pub const DEFAULT_KV_QUOTA_KIB: u64 = 16 * 1024;
    pub const DEFAULT_EMBED_BATCH: u32 = 256;

    /// Hard ceilings: a configuration above them is rejected, so a typo
    /// cannot turn a limit off.
    pub const MAX_TIMEOUT_MS: u64 = 10 * 60 * 1000;
    pub const MAX_MEMORY_MIB: u64 = 4 * 1024;

    /// These limits over `self` (the defaults), with built-in defaults last.
    pub fn resolve(&self, own: &PluginLimits) -> ResolvedLimits {
        ResolvedLimits {
            timeout_ms: own
                .timeout_ms
                .or(self.timeout_ms)
                .unwrap_or(Self::DEFAULT_TIMEOUT_MS),
            memory_bytes: own
                .memory_mib
                .or(self.memory_mib)
                .unwrap_or(Self::DEFAULT_MEMORY_MIB)
                * 1024
                * 1024,
            output_bytes: own
                .output_kib
                .or(self.output_kib)
                .unwrap_or(Self::DEFAULT_OUTPUT_KIB)
                * 1024,
            log_bytes: own
                .log_kib
                .or(self.log_kib)
                .unwrap_or(Self::DEFAULT_LOG_KIB)
                * 1024,
            kv_value_bytes: own
                .kv_value_kib
                .or(self.kv_value_kib)
                .unwrap_or(Self::DEFAULT_KV_VALUE_KIB)
                * 1024,
            kv_quota_bytes: own
                .kv_quota_kib
                .or(self.kv_quota_kib)
                .unwrap_or(Self::DEFAULT_KV_QUOTA_KIB)
                * 1024,
            embed_batch: own
                .embed_batch
                .or(self.embed_batch)
                .unwrap_or(Self::DEFAULT_EMBED_BATCH),
        }
    }

    fn validate(&self) -> Result<(), String> {
        let positive = [
            ("timeout_ms", self.timeout_ms),
            ("memory_mib", self.memory_mib),
            ("output_kib", self.output_kib),
            ("kv_value_kib", self.kv_value_kib),
            ("kv_quota_kib", self.kv_quota_kib),
            ("embed_batch", self.embed_batch.map(u64::from)),
        ];
        for (key, v) in positive {
            if v == Some(0) {
                return Err(format!("{key} must be greater than 0"));
            }
        }
        if self.timeout_ms.is_some_and(|t| t > Self::MAX_TIMEOUT_MS) {
            return Err(format!(
                "timeout_ms must be at most {}",
                Self::MAX_TIMEOUT_MS
            ));
        }
        if self.memory_mib.is_some_and(|m| m > Self::MAX_MEMORY_MIB) {
            return Err(format!(
                "memory_mib must be at most {}",
                Self::MAX_MEMORY_MIB
            ));
        }
        Ok(())
    }
}

/// The limits a call actually runs with (what `plugin inspect` shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResolvedLimits {
    pub timeout_ms: u64,
    pub memory_bytes: u64,
    pub output_bytes: u64,
    pub log_bytes: u64,
    pub kv_value_bytes: u64,
    pub kv_quota_bytes: u64,
    pub embed_batch: u32,
}

impl Default for ResolvedLimits {
    fn default() -> Self {
        PluginLimits::default().resolve(&PluginLimits::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_combine_baseline_and_own() {
        let mut cfg = PluginsConfig::default();
        assert_eq!(
            cfg.granted("text"),
            vec![Capability::Log, Capability::Config]
        );
        cfg.grant("text", Capability::Kv, &[]).unwrap();
        assert_eq!(
            cfg.granted("text"),
            vec![Capability::Log, Capability::Config, Capability::Kv]
        );
        assert!(cfg.grant("text", Capability::Fs, &[]).is_err());
        cfg.grant("text", Capability::Fs, &["/srv/docs".into()])
            .unwrap();
        assert_eq!(cfg.settings("text").fs, vec!["/srv/docs".to_string()]);
        cfg.revoke("text", Capability::Fs);
        assert!(cfg.settings("text").fs.is_empty());
        assert!(!cfg.granted("text").contains(&Capability::Fs));
    }

    #[test]
    fn limits_resolve_own_then_defaults_then_builtin() {
        let mut cfg = PluginsConfig::default();
        cfg.limits.timeout_ms = Some(500);
        cfg.plugin.insert(
            "slow".into(),
            PluginSettings {
                limits: PluginLimits {
                    timeout_ms: Some(9000),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        assert_eq!(cfg.limits_for("slow").timeout_ms, 9000);
        assert_eq!(cfg.limits_for("other").timeout_ms, 500);
        assert_eq!(
            cfg.limits_for("other").memory_bytes,
            PluginLimits::DEFAULT_MEMORY_MIB * 1024 * 1024
        );
    }

    #[test]
    fn validation_rejects_zero_limits_and_relative_paths() {
        let mut cfg = PluginsConfig::default();
        cfg.limits.memory_mib = Some(0);
        assert_eq!(cfg.validate().unwrap_err().code, ErrorCode::ConfigInvalid);
        let mut cfg = PluginsConfig::default();
        cfg.plugin.insert(
            "x".into(),
            PluginSettings {
                fs: vec!["docs".into()],
                ..Default::default()
            },
        );
        assert!(cfg.validate().unwrap_err().message.contains("absolute"));
        let mut cfg = PluginsConfig::default();
        cfg.limits.timeout_ms = Some(PluginLimits::MAX_TIMEOUT_MS + 1);
        assert!(cfg.validate().is_err());
    }

    #[test]
    fn config_json_flattens_plugin_tables() {
        let v = serde_json::json!({
            "limits": { "timeout_ms": 100 },
            "text": { "grants": ["kv"], "config": { "max_chunk_chars": 1500, "mode": "fast" } }
        });
        let cfg: PluginsConfig = serde_json::from_value(v).unwrap();
        assert_eq!(cfg.limits.timeout_ms, Some(100));
        let text = cfg.settings("text");
        assert_eq!(text.grants, vec![Capability::Kv]);
        assert_eq!(text.config["max_chunk_chars"].to_string(), "1500");
        assert_eq!(text.config["mode"].to_string(), "fast");
        assert!(text.enabled);
        assert_eq!(
            cfg.baseline_grants,
            vec![Capability::Log, Capability::Config]
        );
    }
}
