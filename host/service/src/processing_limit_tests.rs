//! A file larger than a processor's memory limit is refused without
//! reading its content.

use crate::Service;
use mem_core::model::IndexStatus;
use mem_core::plugin::{
    AdapterEntry, DetectItem, DetectedRelation, FileInput, InstallOptions, PluginHost, PluginInfo,
    PluginLimits, PluginManifest, PluginsConfig, ProcessedFile, ProposalInput, ReadItem,
    ReadRequest, SelectCandidate, SelectQuery, Verdict,
};
use mem_core::{MemError, MemResult, VPath};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One processor, `text`, with a 1 MiB memory limit; counts its calls.
#[derive(Default)]
struct SmallProcessor {
    calls: AtomicUsize,
}

fn not_here<T>() -> MemResult<T> {
    Err(MemError::internal("not used by this test"))
}

impl PluginHost for SmallProcessor {
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
        PluginsConfig {
            limits: PluginLimits {
                memory_mib: Some(1),
                ..Default::default()
            },
            ..Default::default()
        }
    }
    fn processors_for(&self, _: &str) -> MemResult<Vec<String>> {
        Ok(vec!["text".into()])
    }
    fn process(&self, _: &str, _: &FileInput) -> MemResult<ProcessedFile> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ProcessedFile::default())
    }
    fn select(
        &self,
        _: &str,
        _: &[SelectCandidate],
        _: &SelectQuery,
        _: u32,
    ) -> MemResult<Vec<String>> {
        not_here()
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
        _: &DetectItem,
        _: &[DetectItem],
    ) -> MemResult<Vec<DetectedRelation>> {
        not_here()
    }
    fn import(&self, _: &str, _: &str, _: &[u8]) -> MemResult<Vec<AdapterEntry>> {
        not_here()
    }
    fn export(&self, _: &str, _: &str, _: &[AdapterEntry]) -> MemResult<Vec<u8>> {
        not_here()
    }
}

fn put(svc: &Service, path: &str, bytes: Vec<u8>) -> String {
    svc.put_test(crate::TestPut {
        path: VPath::parse(path).unwrap(),
        bytes,
        tags: vec![],
        replace: false,
    })
    .unwrap()
    .file
    .id
}

#[test]
fn a_file_above_the_processors_input_limit_fails_without_being_read() {
    let (_d, svc) = crate::tests::service();
    let host = Arc::new(SmallProcessor::default());
    let svc = svc.with_plugins(host.clone());

    let small = put(&svc, "/small.txt", b"fits\n".to_vec());
    svc.process_now(&small).unwrap();
    assert_eq!(
        svc.file_info(&small).unwrap().index_status,
        IndexStatus::Done
    );
    assert_eq!(host.calls.load(Ordering::SeqCst), 1);

    let big = put(&svc, "/big.txt", vec![b'x'; 1024 * 1024 + 1]);
    svc.process_now(&big).unwrap();
    let f = svc.file_info(&big).unwrap();
    assert_eq!(f.index_status, IndexStatus::Failed);
    let error = f.index_error.unwrap_or_default();
    assert!(
        error.contains("larger than the processors' input limit"),
        "{error}"
    );
    assert_eq!(
        host.calls.load(Ordering::SeqCst),
        1,
        "the processor was not called"
    );
}
