//! `mem.toml`: the workspace owner's settings.
//!
//! Policy lives here, outside anything an agent can reach: no agent-facing
//! call reads or writes this file. Unknown keys are refused (a typo in a
//! limit must not silently fall back to a default).

use mem_core::{ErrorCode, MemError, VPath};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const CONFIG_FILE: &str = "mem.toml";

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    #[serde(default)]
    pub workspace: WorkspaceSection,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub memory: MemorySettings,
    #[serde(default)]
    pub gate: GateConfig,
    #[serde(default)]
    pub budgets: Budgets,
    #[serde(default)]
    pub types: TypesConfig,
    /// `[plugins]`: grants, limits, selection chain, policies, detectors.
    #[serde(default)]
    pub plugins: mem_core::plugin::PluginsConfig,
    /// `[store]`: which engine holds records and logs (see [`crate::deployment`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub store: crate::deployment::StoreSection,
    /// `[blobs]`: where blob bytes live.
    #[serde(default, skip_serializing_if = "is_default")]
    pub blobs: crate::deployment::BlobsSection,
    /// Where relative paths in this file (type schema files) resolve; the
    /// workspace folder when loaded from disk.
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// What a write policy decides for a write it matches.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// Written at once (after host checks and policy plugins).
    Auto,
    /// Queued for a human's review.
    Review,
    /// Refused.
    Never,
}

/// Whether `remember` is a direct write or a proposal through the full gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RememberRoute {
    /// Host checks and the write policy apply; policy plugins do not.
    #[default]
    Direct,
    /// `remember` is a `create` proposal: policy plugins run too.
    Gate,
}

/// `[gate]`: the write policy. Only the workspace owner can change it.
///
/// The rules that match a write (its agent, its kind or type, its role)
/// are combined by taking the most restrictive; `default` applies when no
/// rule matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    #[serde(default)]
    pub remember: RememberRoute,
    #[serde(default = "default_write_mode")]
    pub default: WriteMode,
    /// By memory kind or domain type name.
    #[serde(default)]
    pub kinds: BTreeMap<String, WriteMode>,
    /// By runtime role (`constraint`, `guidance`, `assertion`, `question`, `symbol`).
    #[serde(default)]
    pub roles: BTreeMap<String, WriteMode>,
    /// By agent id.
    #[serde(default)]
    pub agents: BTreeMap<String, WriteMode>,
}

fn default_write_mode() -> WriteMode {
    WriteMode::Auto
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            remember: RememberRoute::Direct,
            default: WriteMode::Auto,
            kinds: BTreeMap::new(),
            roles: BTreeMap::new(),
            agents: BTreeMap::new(),
        }
    }
}

impl GateConfig {
    /// The mode for a write, and which rule decided it (for the audit).
    pub fn mode_for(&self, kind: &str, role: &str, agent: Option<&str>) -> (WriteMode, String) {
        let mut matched: Vec<(WriteMode, String)> = Vec::new();
        if let Some(m) = agent.and_then(|a| self.agents.get(a)) {
            matched.push((*m, format!("gate.agents.{}", agent.unwrap_or_default())));
        }
        if let Some(m) = self.kinds.get(kind) {
            matched.push((*m, format!("gate.kinds.{kind}")));
        }
        if let Some(m) = self.roles.get(role) {
            matched.push((*m, format!("gate.roles.{role}")));
        }
        matched
            .into_iter()
            .max_by_key(|(m, _)| *m)
            .unwrap_or((self.default, "gate.default".to_string()))
    }
}

/// `[budgets]`: hard character budgets on active memory content. A write
/// that would exceed one fails with `BUDGET_EXCEEDED`; nothing is ever
/// truncated or compacted on the writer's behalf.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// Path scope (a folder and everything below it) → characters.
    #[serde(default)]
    pub paths: BTreeMap<String, u64>,
    /// Memory kind or type → characters.
    #[serde(default)]
    pub kinds: BTreeMap<String, u64>,
}

/// `[types]`: domain type schema files (JSON), relative to the workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypesConfig {
    #[serde(default)]
    pub files: Vec<String>,
    /// Built-in kind → the role it plays here (`types` shows the result).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, String>,
    /// Built-in kinds plus the types of `files`, compiled at load.
    #[serde(skip)]
    pub registry: crate::types::TypeRegistry,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSection {
    #[serde(default = "default_name")]
    pub name: String,
}

fn default_name() -> String {
    "default".to_string()
}

impl Default for WorkspaceSection {
    fn default() -> Self {
        Self {
            name: default_name(),
        }
    }
}

/// Hard size limits on single inputs. Exceeding one is a structured
/// `payload_too_large` error, never a truncation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest file `put` accepts, in bytes.
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
    /// Longest memory content, in characters.
    #[serde(default = "default_max_memory_chars")]
    pub max_memory_chars: usize,
}

fn default_max_file_bytes() -> u64 {
    256 * 1024 * 1024
}

fn default_max_memory_chars() -> usize {
    64 * 1024
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: default_max_file_bytes(),
            max_memory_chars: default_max_memory_chars(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySettings {
    /// Confidence of a new memory when the writer gives none.
    #[serde(default = "default_confidence")]
    pub default_confidence: f64,
    /// Confidence change of a `useful` vote.
    #[serde(default = "default_useful_delta")]
    pub useful_delta: f64,
    /// Confidence change of a `not_useful` vote (negative).
    #[serde(default = "default_not_useful_delta")]
    pub not_useful_delta: f64,
    /// At or below this confidence a memory is stale: recall hides it
    /// unless asked for.
    #[serde(default = "default_stale_at")]
    pub stale_at: f64,
    /// This many `not_useful` votes in a row deprecate a memory.
    #[serde(default = "default_deprecate_after")]
    pub deprecate_after: u32,
    /// This many memories arriving in a scope (a top-level folder) since
    /// its last applied `consolidate` make a consolidation due: `status`
    /// and the catalog say so, nothing merges on its own.
    #[serde(default = "default_consolidate_after")]
    pub consolidate_after: u64,
}

fn default_useful_delta() -> f64 {
    0.05
}

fn default_not_useful_delta() -> f64 {
    -0.10
}

fn default_stale_at() -> f64 {
    0.15
}

fn default_deprecate_after() -> u32 {
    3
}

fn default_consolidate_after() -> u64 {
    200
}

fn default_confidence() -> f64 {
    0.6
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            default_confidence: default_confidence(),
            useful_delta: default_useful_delta(),
            not_useful_delta: default_not_useful_delta(),
            stale_at: default_stale_at(),
            deprecate_after: default_deprecate_after(),
            consolidate_after: default_consolidate_after(),
        }
    }
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        Self {
            workspace: WorkspaceSection::default(),
            limits: Limits::default(),
            memory: MemorySettings::default(),
            gate: GateConfig::default(),
            budgets: Budgets::default(),
            types: TypesConfig::default(),
            plugins: mem_core::plugin::PluginsConfig::default(),
            store: Default::default(),
            blobs: Default::default(),
            base_dir: PathBuf::new(),
        }
    }
}

impl WorkspaceConfig {
    /// Parses `mem.toml` text; errors name the line and key at fault.
    pub fn parse(text: &str) -> Result<Self, MemError> {
        let mut cfg: WorkspaceConfig = toml::from_str(text).map_err(|e| {
            MemError::new(ErrorCode::ConfigInvalid, format!("mem.toml is invalid: {}", e.message()))
                .with_hint("fix the named key in mem.toml; `mem-host init --print-config` shows every setting with its default")
                .with_details(serde_json::json!({
                    "span": e.span().map(|s| [s.start, s.end]),
                }))
        })?;
        cfg.validate()?;
        cfg.types.registry.override_roles(&cfg.types.roles)?;
        Ok(cfg)
    }

    pub fn load(dir: &Path) -> Result<Self, MemError> {
        let path = dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))?;
        Self::parse_in(&text, dir)
    }

    /// Parses `text` as the `mem.toml` of the workspace at `dir` (type
    /// schema files resolve there).
    pub(crate) fn parse_in(text: &str, dir: &Path) -> Result<Self, MemError> {
        let mut cfg = Self::parse(text)?;
        cfg.base_dir = dir.to_path_buf();
        cfg.types.registry =
            crate::types::TypeRegistry::load(dir, &cfg.types.files, &cfg.types.roles)?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), MemError> {
        let bad = |msg: &str| {
            Err(MemError::new(
                ErrorCode::ConfigInvalid,
                format!("mem.toml is invalid: {msg}"),
            )
            .with_hint("fix the value in mem.toml"))
        };
        if !(0.0..=1.0).contains(&self.memory.default_confidence) {
            return bad("memory.default_confidence must be between 0 and 1");
        }
        if self.limits.max_memory_chars == 0 || self.limits.max_file_bytes == 0 {
            return bad("limits must be positive");
        }
        let m = &self.memory;
        if m.useful_delta < 0.0 || m.not_useful_delta > 0.0 || !(0.0..=1.0).contains(&m.stale_at) {
            return bad(
                "memory.useful_delta must be >= 0, memory.not_useful_delta <= 0, memory.stale_at in 0..1",
            );
        }
        if self.memory.consolidate_after == 0 {
            return bad("memory.consolidate_after must be at least 1");
        }
        for scope in self.budgets.paths.keys() {
            if let Err(e) = VPath::parse(scope) {
                return bad(&format!("budgets.paths key {scope:?}: {}", e.message));
            }
        }
        self.plugins.validate()?;
        crate::deployment::validate(&self.store, &self.blobs)?;
        for role in self.gate.roles.keys() {
            if !crate::types::ROLES.contains(&role.as_str()) {
                return bad(&format!(
                    "gate.roles.{role}: unknown role; roles are {}",
                    crate::types::ROLES.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The commented `mem.toml` a new workspace starts with.
    pub fn template(name: &str) -> String {
        let d = WorkspaceConfig::default();
        format!(
            r#"# mem-host workspace settings. Only the workspace owner edits this file;
# no agent-facing call can read or change it.

[workspace]
name = "{name}"

[limits]
# Largest file `put` accepts, in bytes.
max_file_bytes = {max_file}
# Longest memory content, in characters.
max_memory_chars = {max_chars}

[memory]
# Confidence of a new memory when the writer gives none (0..1).
default_confidence = {conf}
# Feedback moves confidence; at or below stale_at a memory is stale, and
# deprecate_after `not_useful` votes in a row deprecate it.
useful_delta = 0.05
not_useful_delta = -0.1
stale_at = 0.15
deprecate_after = 3
# This many memories arriving in a top-level folder since its last
# consolidation (`propose consolidate`) make one due in `status`.
consolidate_after = 200

[gate]
# Write policy: auto | review | never. The most restrictive matching rule
# (agent, kind/type, role) wins; `default` applies when none matches.
# `remember = "gate"` sends plain `remember` through the policy plugins too.
remember = "direct"
default = "auto"
# kinds = {{ decision = "review" }}
# roles = {{ constraint = "review" }}
# agents = {{ "untrusted-bot" = "never" }}

[budgets]
# Hard character budgets on active memory content.
# paths = {{ "/team" = 200000 }}
# kinds = {{ note = 100000 }}

[types]
# Domain type schema files (JSON), relative to this folder.
# files = ["types/coding.json"]
# The role a built-in kind plays (constraint | guidance | assertion |
# question | symbol); the role decides the context-pack lane.
# roles = {{ decision = "constraint" }}

# Where the data lives. By default everything stays in this folder. A
# shared deployment (several `mem-host serve` on one workspace) keeps
# records in PostgreSQL and blob bytes in an S3-compatible object store;
# secrets come from the environment variables named here, never this file.
# [store]
# backend = "postgres"
# url_env = "MEM_DATABASE_URL"
# schema = "mem"
# [blobs]
# backend = "s3"
# bucket = "mem-blobs"
# endpoint = "http://127.0.0.1:9000"
# access_key_env = "AWS_ACCESS_KEY_ID"
# secret_key_env = "AWS_SECRET_ACCESS_KEY"

# Plugins: WebAssembly components in plugins/. A plugin uses a capability
# (log, config, kv, embed, fs) only if its manifest requests it AND it is
# granted here (`mem-host plugin grant NAME CAP`). `limits` bound every call.
{plugins}"#,
            name = name.replace('"', "'"),
            max_file = d.limits.max_file_bytes,
            max_chars = d.limits.max_memory_chars,
            conf = d.memory.default_confidence,
            plugins = plugins_template(),
        )
    }
}

/// The recommended `[plugins]` tables (first-party chain, gate, detector).
fn plugins_template() -> String {
    #[derive(Serialize)]
    struct Wrapper {
        plugins: mem_core::plugin::PluginsConfig,
    }
    toml::to_string(&Wrapper {
        plugins: mem_core::plugin::PluginsConfig::recommended(),
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_round_trips_to_defaults() {
        let cfg = WorkspaceConfig::parse(&WorkspaceConfig::template("w")).unwrap();
        assert_eq!(cfg.workspace.name, "w");
        assert_eq!(cfg.limits, Limits::default());
    }

    #[test]
    fn unknown_key_is_refused_with_config_invalid() {
        let err = WorkspaceConfig::parse("[limits]\nmax_fil_bytes = 3\n").unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfigInvalid);
        assert!(err.message.contains("max_fil_bytes"), "{}", err.message);
    }

    #[test]
    fn out_of_range_value_is_refused() {
        let err = WorkspaceConfig::parse("[memory]\ndefault_confidence = 2.0\n").unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfigInvalid);
    }
}
