//! A plugin host for unit tests: a configuration and scripted processor,
//! selection and detector calls (what processing, recall and governance
//! orchestrate); every other call fails, so a test notices reaching one.

use mem_core::plugin::{
    AdapterEntry, DetectItem, DetectedRelation, FileInput, InstallOptions, PluginHost, PluginInfo,
    PluginManifest, PluginsConfig, ProcessedFile, ProposalInput, ReadItem, ReadRequest,
    SelectCandidate, SelectQuery, Verdict,
};
use mem_core::{MemError, MemResult};

type Process = dyn Fn(&FileInput) -> MemResult<ProcessedFile> + Send + Sync;
type Select = dyn Fn(&str, &[SelectCandidate], u32) -> MemResult<Vec<String>> + Send + Sync;
type Detect = dyn Fn(&DetectItem, &[DetectItem]) -> MemResult<Vec<DetectedRelation>> + Send + Sync;

pub(crate) struct FakeHost {
    pub config: PluginsConfig,
    /// The processors every MIME type gets.
    pub processors: Vec<String>,
    pub process: Box<Process>,
    /// `(plugin, candidates, limit)` → the ids a selection stage keeps.
    pub select: Box<Select>,
    /// `(subject, candidates)` → the relations a detector finds.
    pub detect: Box<Detect>,
}

impl Default for FakeHost {
    fn default() -> Self {
        Self {
            config: PluginsConfig::default(),
            processors: Vec::new(),
            process: Box::new(|_| not_here()),
            select: Box::new(|_, _, _| not_here()),
            detect: Box::new(|_, _| not_here()),
        }
    }
}

fn not_here<T>() -> MemResult<T> {
    Err(MemError::internal("not used by this test"))
}

impl PluginHost for FakeHost {
    fn list(&self) -> MemResult<Vec<PluginInfo>> {
        not_here()
    }
    fn install(&self, _: &[u8], _: &PluginManifest, _: InstallOptions) -> MemResult<PluginInfo> {
        not_here()
    }
    fn inspect(&self, _: &str) -> MemResult<PluginInfo> {
        not_here()
    }
    fn remove(&self, _: &str) -> MemResult<()> {
        not_here()
    }
    fn set_config(&self, _: PluginsConfig) -> MemResult<()> {
        not_here()
    }
    fn config(&self) -> PluginsConfig {
        self.config.clone()
    }
    fn processors_for(&self, _: &str) -> MemResult<Vec<String>> {
        Ok(self.processors.clone())
    }
    fn process(&self, _: &str, file: &FileInput) -> MemResult<ProcessedFile> {
        (self.process)(file)
    }
    fn select(
        &self,
        plugin: &str,
        candidates: &[SelectCandidate],
        _: &SelectQuery,
        limit: u32,
    ) -> MemResult<Vec<String>> {
        (self.select)(plugin, candidates, limit)
    }
    fn check_write(&self, _: &str, _: &ProposalInput) -> MemResult<Verdict> {
        not_here()
    }
    fn check_read(&self, _: &str, _: &ReadItem, _: &ReadRequest) -> MemResult<Verdict> {
        not_here()
    }
    fn detect(
        &self,
        _: &str,
        subject: &DetectItem,
        candidates: &[DetectItem],
    ) -> MemResult<Vec<DetectedRelation>> {
        (self.detect)(subject, candidates)
    }
    fn import(&self, _: &str, _: &str, _: &[u8]) -> MemResult<Vec<AdapterEntry>> {
        not_here()
    }
    fn export(&self, _: &str, _: &str, _: &[AdapterEntry]) -> MemResult<Vec<u8>> {
        not_here()
    }
}
