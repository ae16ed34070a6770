//! Worlds, capabilities, plugin manifests and failure counters.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, MemError, MemResult};

use super::{PluginsConfig, ResolvedLimits};

/// The plugin kinds: one WIT world each.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    Processor,
    RelationDetector,
    Policy,
    Selector,
    Adapter,
}

impl World {
    pub const ALL: &'static [World] = &[
        World::Processor,
        World::RelationDetector,
        World::Policy,
        World::Selector,
        World::Adapter,
    ];

    /// The WIT world name (`relation-detector`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processor => "processor",
            Self::RelationDetector => "relation-detector",
            Self::Policy => "policy",
            Self::Selector => "selector",
            Self::Adapter => "adapter",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|w| w.as_str() == s)
    }
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a plugin may be granted. A capability is usable only when the
/// plugin's manifest requests it AND the workspace grants it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Write to the host log (size-capped per call).
    Log,
    /// Read its own settings from `mem.toml`.
    Config,
    /// Its own key-value namespace in the workspace store.
    Kv,
    /// The host's native text embedder.
    Embed,
    /// Read-only access to exactly the host folders listed in the grant.
    Fs,
}

impl Capability {
    pub const ALL: &'static [Capability] = &[
        Capability::Log,
        Capability::Config,
        Capability::Kv,
        Capability::Embed,
        Capability::Fs,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Log => "log",
            Self::Config => "config",
            Self::Kv => "kv",
            Self::Embed => "embed",
            Self::Fs => "fs",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// Parses a capability, or explains which ones exist.
    pub fn parse_or_err(s: &str) -> MemResult<Self> {
        Self::parse(s).ok_or_else(|| {
            MemError::bad_request(format!("unknown plugin capability '{s}'"))
                .with_hint(format!(
                    "capabilities are: {}",
                    Self::ALL
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .with_details(serde_json::json!({ "capability": s }))
        })
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The document shipped beside a plugin's `.wasm` (`manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginManifest {
    /// Lower-case letters, digits and `-`, starting with a letter, at most 64 long.
    pub name: String,
    /// The plugin's own version (semver).
    pub version: String,
    pub world: World,
    /// Version of the `mem:plugin` WIT package the plugin was built against.
    pub wit_version: String,
    #[serde(default)]
    pub description: String,
    /// Capabilities the plugin asks for; the workspace decides what it gets.
    #[serde(default)]
    pub capabilities: Vec<Capability>,
    /// Lower-case hex SHA-256 of the `.wasm` bytes.
    pub sha256: String,
}

/// JSON Schemas (draft 2020-12) of the plugin documents, as `(file stem,
/// schema)`: the manifest shipped beside a `.wasm`, what `plugin inspect`
/// prints, and the `[plugins]` table of `mem.toml`.
pub fn plugin_schemas() -> Vec<(&'static str, schemars::Schema)> {
    fn of<T: schemars::JsonSchema>() -> schemars::Schema {
        schemars::generate::SchemaSettings::draft2020_12()
            .into_generator()
            .into_root_schema_for::<T>()
    }
    vec![
        ("plugin-manifest", of::<PluginManifest>()),
        ("plugin-info", of::<PluginInfo>()),
        ("plugins-config", of::<PluginsConfig>()),
    ]
}

/// Names that cannot be plugin names because `[plugins.NAME]` would clash
/// with a key of [`PluginsConfig`].
pub const RESERVED_PLUGIN_NAMES: &[&str] = &[
    "limits",
    "baseline_grants",
    "selection",
    "write_policies",
    "read_policies",
    "detectors",
    "related",
];

impl PluginManifest {
    /// Checks the fields a person writes by hand (not the digest against
    /// the bytes, nor the world against the component: the runtime does).
    pub fn validate(&self) -> MemResult<()> {
        validate_plugin_name(&self.name)?;
        let invalid = |msg: String| {
            MemError::new(ErrorCode::PluginInvalid, msg)
                .with_hint("fix the plugin's manifest.json")
                .with_details(serde_json::json!({ "plugin": self.name }))
        };
        if !is_semver(&self.version) {
            return Err(invalid(format!(
                "plugin version '{}' is not MAJOR.MINOR.PATCH",
                self.version
            )));
        }
        if !is_semver(&self.wit_version) {
            return Err(invalid(format!(
                "wit_version '{}' is not MAJOR.MINOR.PATCH",
                self.wit_version
            )));
        }
        if !crate::hash::is_sha256_hex(&self.sha256) {
            return Err(invalid(
                "sha256 must be 64 lower-case hex characters".to_string(),
            ));
        }
        let mut seen = self.capabilities.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != self.capabilities.len() {
            return Err(invalid("capabilities list a capability twice".to_string()));
        }
        Ok(())
    }
}

/// Plugin names: `[a-z][a-z0-9-]{0,63}`, not a reserved config key.
pub fn validate_plugin_name(name: &str) -> MemResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !RESERVED_PLUGIN_NAMES.contains(&name);
    if ok {
        Ok(())
    } else {
        Err(MemError::new(ErrorCode::PluginInvalid, format!("'{name}' is not a valid plugin name"))
            .with_hint("plugin names are lower-case letters, digits and '-', start with a letter, are at most 64 long, and are not one of: limits, baseline_grants, selection, write_policies, read_policies, detectors, related")
            .with_details(serde_json::json!({ "plugin": name })))
    }
}

fn is_semver(s: &str) -> bool {
    let core = s.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Failure reasons of a plugin call, as reported in `plugin_failed`
/// errors and counted per plugin.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// The call ran past its deadline (loop, or too slow).
    Deadline,
    /// The plugin tried to grow memory past its cap.
    Memory,
    /// The plugin trapped (panic, unreachable, stack overflow, bad import use).
    Trap,
    /// The plugin's result broke the output cap or the world's rules.
    Output,
    /// The plugin returned its own typed error.
    Error,
}

impl FailureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deadline => "deadline",
            Self::Memory => "memory",
            Self::Trap => "trap",
            Self::Output => "output",
            Self::Error => "error",
        }
    }
}

/// Per-plugin failure counters, persisted with the installed plugin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailureStats {
    /// Failed calls by reason.
    #[serde(default)]
    pub by_reason: BTreeMap<FailureReason, u64>,
    #[serde(default)]
    pub total: u64,
    /// Calls (successful or not) made by this host process; not persisted,
    /// so it restarts with the process like any Prometheus counter.
    #[serde(default, skip_deserializing)]
    pub calls: u64,
    /// Failures since the last successful call.
    #[serde(default)]
    pub consecutive: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastFailure>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LastFailure {
    pub reason: FailureReason,
    pub message: String,
    pub at: crate::time::Timestamp,
}

/// What `plugin list` / `plugin inspect` show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PluginInfo {
    pub manifest: PluginManifest,
    /// Folder holding `plugin.wasm` and `manifest.json`.
    pub dir: String,
    pub enabled: bool,
    /// What the manifest asks for.
    pub requested: Vec<Capability>,
    /// What the workspace grants (baseline grants included).
    pub granted: Vec<Capability>,
    /// Requested AND granted: what calls can use.
    pub effective: Vec<Capability>,
    /// Requested but not granted (`mem-host plugin grant NAME CAP` fixes each).
    pub missing: Vec<Capability>,
    /// Host folders readable when `fs` is effective.
    pub fs_paths: Vec<String>,
    pub limits: ResolvedLimits,
    pub failures: FailureStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> PluginManifest {
        PluginManifest {
            name: "text".into(),
            version: "0.1.0".into(),
            world: World::Processor,
            wit_version: "0.1.0".into(),
            description: String::new(),
            capabilities: vec![Capability::Log],
            sha256: crate::hash::sha256_hex(b"x"),
        }
    }

    #[test]
    fn manifest_validation_names_the_problem() {
        assert!(manifest().validate().is_ok());
        let mut m = manifest();
        m.name = "Bad_Name".into();
        assert_eq!(m.validate().unwrap_err().code, ErrorCode::PluginInvalid);
        let mut m = manifest();
        m.name = "limits".into();
        assert!(
            m.validate().is_err(),
            "reserved names clash with [plugins] keys"
        );
        let mut m = manifest();
        m.sha256 = "abc".into();
        assert!(m.validate().unwrap_err().message.contains("sha256"));
        let mut m = manifest();
        m.wit_version = "0.1".into();
        assert!(m.validate().unwrap_err().message.contains("wit_version"));
        let mut m = manifest();
        m.capabilities = vec![Capability::Kv, Capability::Kv];
        assert!(m.validate().is_err());
    }

    #[test]
    fn manifest_json_shape_is_stable() {
        let v = serde_json::to_value(manifest()).unwrap();
        assert_eq!(v["world"], "processor");
        assert_eq!(v["capabilities"][0], "log");
        let back: PluginManifest = serde_json::from_value(v).unwrap();
        assert_eq!(back, manifest());
        let rd = serde_json::to_value(World::RelationDetector).unwrap();
        assert_eq!(rd, "relation-detector");
    }

    #[test]
    fn manifest_schema_requires_the_verified_fields() {
        let schemas = plugin_schemas();
        let (stem, manifest) = &schemas[0];
        assert_eq!(*stem, "plugin-manifest");
        let v = manifest.as_value();
        let required: Vec<&str> = v["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r.as_str())
            .collect();
        for field in ["name", "version", "world", "wit_version", "sha256"] {
            assert!(required.contains(&field), "{field} is required");
        }
        assert_eq!(v["additionalProperties"], false);
        assert_eq!(schemas.len(), 3);
    }
}
