//! The plugin seam: what the service layer needs from the WebAssembly
//! plugin runtime. Implemented by `mem-runtime`.
//!
//! Everything here mirrors the WIT records of `wit/v0.1.0` as plain Rust
//! types, so business logic never sees a wasmtime type, and a future WIT
//! version only changes the runtime's conversion code. The [`PluginHost`]
//! trait is the one door to plugins; the `mem.toml` part that configures
//! them ([`PluginsConfig`]) lives here too because the service reads it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, MemError, MemResult};

/// The newest WIT package version this build of the contract describes.
pub const WIT_PACKAGE: &str = "mem:plugin";

// ---------------------------------------------------------------------------
// Worlds, capabilities, manifests
// ---------------------------------------------------------------------------

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
            .with_hint("plugin names are lower-case letters, digits and '-', start with a letter, are at most 64 long, and are not one of: limits, baseline_grants, selection, write_policies, read_policies, detectors")
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

// ---------------------------------------------------------------------------
// Records exchanged with plugins (mirrors of wit/v0.1.0 types.wit)
// ---------------------------------------------------------------------------

/// Lines of a source document, 1-based, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl LineRange {
    pub fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }

    /// The citation form used by indexes and context packs: `L3-9`, or `L3`.
    pub fn locator(&self) -> String {
        if self.start == self.end {
            format!("L{}", self.start)
        } else {
            format!("L{}-{}", self.start, self.end)
        }
    }
}

/// A file handed to a processor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInput {
    pub id: String,
    pub path: String,
    pub name: String,
    pub mime: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Chunk {
    pub text: String,
    pub lines: LineRange,
    /// Heading trail, outermost first.
    #[serde(default)]
    pub section: Vec<String>,
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Entity {
    pub kind: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
}

/// What a processor extracted from one file (stored per file by the service).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessedFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub chunks: Vec<Chunk>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub entities: Vec<Entity>,
    /// Suggestions, not accepted tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A record a relation detector compares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectItem {
    pub id: String,
    pub kind: String,
    pub text: String,
    pub path: String,
    pub tags: Vec<String>,
}

/// A relation a detector found from the subject to `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DetectedRelation {
    /// `duplicate_of`, `conflicts_with`, `same_topic`, ...
    pub kind: String,
    pub target: String,
    /// In [0, 1].
    pub score: f32,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    Supports,
    /// Makes the claim less likely without refuting it.
    Weakens,
    Contradicts,
    Neutral,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceRef {
    pub kind: String,
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    pub stance: Stance,
}

/// A write the policy must judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalInput {
    pub id: String,
    pub kind: String,
    pub content: String,
    pub scope: Option<String>,
    pub source: Option<String>,
    pub agent: Option<String>,
    pub confidence: f64,
    pub evidence: Vec<EvidenceRef>,
    pub attributes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
    Review,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictReason {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub decision: Decision,
    pub reasons: Vec<VerdictReason>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadItem {
    pub id: String,
    pub kind: String,
    pub path: String,
    pub lifecycle: String,
    pub confidence: f64,
    pub created_at_ms: i64,
    pub event_at_ms: Option<i64>,
    pub tags: Vec<String>,
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadRequest {
    pub agent: Option<String>,
    pub path: Option<String>,
    pub query: String,
    pub now_ms: i64,
}

/// A recall candidate handed to a selection stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectCandidate {
    pub id: String,
    pub kind: String,
    pub role: Option<String>,
    pub text: String,
    pub path: String,
    pub score: f32,
    pub created_at_ms: i64,
    pub event_at_ms: Option<i64>,
    pub pinned: bool,
    pub confidence: f64,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectQuery {
    pub text: String,
    pub terms: Vec<String>,
    pub now_ms: i64,
    pub path: Option<String>,
}

/// One unit of an external document (adapter import/export).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdapterEntry {
    pub kind: String,
    pub content: String,
    #[serde(default)]
    pub section: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// How one stage of the selection chain went (for the context pack trace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageReport {
    pub plugin: String,
    pub limit: u32,
    pub input: usize,
    pub output: usize,
    /// Set when the stage failed; its input then passed through, cut to
    /// the stage limit, and the pack is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MemError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelectionOutcome {
    /// Kept candidate ids, best first.
    pub ids: Vec<String>,
    pub stages: Vec<StageReport>,
}

impl SelectionOutcome {
    /// True when a stage failed and was bypassed.
    pub fn partial(&self) -> bool {
        self.stages.iter().any(|s| s.error.is_some())
    }
}

// ---------------------------------------------------------------------------
// The service-facing trait
// ---------------------------------------------------------------------------

/// Options of [`PluginHost::install`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallOptions {
    /// Replace an installed plugin of the same name (otherwise `already_exists`).
    pub replace: bool,
}

/// The plugin runtime as the service layer sees it.
///
/// Invariants every implementation upholds:
/// - Every call runs in a fresh sandbox with the limits of [`PluginsConfig`]:
///   a plugin that traps, loops, over-allocates or returns too much fails
///   that call with `plugin_failed` (details `{plugin, version, reason}`),
///   the failure is counted, and the next call runs normally.
/// - A plugin uses a capability only if its manifest requests it and the
///   workspace grants it; otherwise the call fails with `capability_denied`
///   naming the plugin, the capability and the command that grants it.
/// - Calls by name fail with `not_found` for an unknown plugin and
///   `plugin_invalid` when the plugin exists but is of another world.
/// - Methods are safe to call from many threads at once; they block the
///   calling thread for at most the plugin's deadline (plus host work), so
///   async callers use `spawn_blocking`.
pub trait PluginHost: Send + Sync {
    /// Installed plugins, sorted by name.
    fn list(&self) -> MemResult<Vec<PluginInfo>>;

    /// Verifies (manifest fields, digest, WIT version, world, imports) and
    /// copies the plugin into the workspace. Nothing is written when any
    /// check fails.
    fn install(
        &self,
        wasm: &[u8],
        manifest: &PluginManifest,
        options: InstallOptions,
    ) -> MemResult<PluginInfo>;

    /// World, requested vs granted capabilities, limits, failure counters.
    fn inspect(&self, name: &str) -> MemResult<PluginInfo>;

    /// Deletes the plugin folder (its `kv` namespace stays until the owner purges it).
    fn remove(&self, name: &str) -> MemResult<()>;

    /// Replaces the workspace configuration (after `plugin grant`/`revoke`
    /// or an edit of `mem.toml`). Validates it first; on error nothing changes.
    fn set_config(&self, config: PluginsConfig) -> MemResult<()>;

    /// The configuration in force.
    fn config(&self) -> PluginsConfig;

    /// Enabled processor plugins whose `accepts(mime)` is true, by name.
    /// A processor that fails `accepts` is skipped (and its failure counted).
    fn processors_for(&self, mime: &str) -> MemResult<Vec<String>>;

    /// Runs one processor on a file. Chunk line ranges are validated
    /// (`1 <= start <= end`).
    fn process(&self, plugin: &str, file: &FileInput) -> MemResult<ProcessedFile>;

    /// One selection stage. The result is a duplicate-free subset of the
    /// candidates' ids, at most `limit` long (a plugin breaking this fails
    /// with reason `output`).
    fn select(
        &self,
        plugin: &str,
        candidates: &[SelectCandidate],
        query: &SelectQuery,
        limit: u32,
    ) -> MemResult<Vec<String>>;

    fn check_write(&self, plugin: &str, proposal: &ProposalInput) -> MemResult<Verdict>;

    fn check_read(
        &self,
        plugin: &str,
        item: &ReadItem,
        request: &ReadRequest,
    ) -> MemResult<Verdict>;

    /// Relations from `subject` to candidates; every target is a candidate id.
    fn detect(
        &self,
        plugin: &str,
        subject: &DetectItem,
        candidates: &[DetectItem],
    ) -> MemResult<Vec<DetectedRelation>>;

    /// Parses an external document (`name` such as `CLAUDE.md`) into entries.
    fn import(&self, plugin: &str, name: &str, bytes: &[u8]) -> MemResult<Vec<AdapterEntry>>;

    /// Renders entries as an external document.
    fn export(&self, plugin: &str, name: &str, entries: &[AdapterEntry]) -> MemResult<Vec<u8>>;

    /// Runs the configured selection chain (`[plugins.selection]`): each
    /// stage sees the previous stage's survivors in its order and keeps at
    /// most its own limit, and the result is cut to `limit`. A failing
    /// stage is bypassed (its input passes through, cut to its limit) and
    /// reported, so recall degrades to `partial` instead of failing.
    fn select_chain(
        &self,
        candidates: &[SelectCandidate],
        query: &SelectQuery,
        limit: u32,
    ) -> MemResult<SelectionOutcome> {
        let chain = self.config().selection;
        let mut current: Vec<SelectCandidate> = candidates
            .iter()
            .take(chain.max_candidates as usize)
            .cloned()
            .collect();
        let mut stages = Vec::with_capacity(chain.stages.len());
        for stage in &chain.stages {
            let stage_limit = stage.limit.unwrap_or(u32::MAX);
            let input = current.len();
            match self.select(&stage.plugin, &current, query, stage_limit) {
                Ok(ids) => {
                    let mut by_id: BTreeMap<&str, &SelectCandidate> =
                        current.iter().map(|c| (c.id.as_str(), c)).collect();
                    let next: Vec<SelectCandidate> = ids
                        .iter()
                        .filter_map(|id| by_id.remove(id.as_str()).cloned())
                        .collect();
                    stages.push(StageReport {
                        plugin: stage.plugin.clone(),
                        limit: stage_limit,
                        input,
                        output: next.len(),
                        error: None,
                    });
                    current = next;
                }
                Err(err) => {
                    current.truncate(stage_limit as usize);
                    stages.push(StageReport {
                        plugin: stage.plugin.clone(),
                        limit: stage_limit,
                        input,
                        output: current.len(),
                        error: Some(err),
                    });
                }
            }
        }
        current.truncate(limit as usize);
        Ok(SelectionOutcome {
            ids: current.into_iter().map(|c| c.id).collect(),
            stages,
        })
    }
}

// ---------------------------------------------------------------------------
// mem.toml: the [plugins] table
// ---------------------------------------------------------------------------

/// The `[plugins]` table of `mem.toml`.
///
/// ```toml
/// [plugins]
/// baseline_grants = ["log", "config"]   # granted to every plugin that requests them
/// write_policies = ["evidence"]
/// read_policies = []
/// detectors = ["conflicts"]
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

    #[test]
    fn line_range_locator() {
        assert_eq!(LineRange::new(3, 9).locator(), "L3-9");
        assert_eq!(LineRange::new(4, 4).locator(), "L4");
    }
}
