//! A file larger than a processor's memory limit is refused without
//! reading its content.

use crate::Service;
use crate::fake_host::FakeHost;
use mem_core::VPath;
use mem_core::model::IndexStatus;
use mem_core::plugin::{PluginLimits, PluginsConfig, ProcessedFile};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One processor, `text`, with a 1 MiB memory limit; counts its calls.
fn small_processor(calls: Arc<AtomicUsize>) -> FakeHost {
    FakeHost {
        config: PluginsConfig {
            limits: PluginLimits {
                memory_mib: Some(1),
                ..Default::default()
            },
            ..Default::default()
        },
        processors: vec!["text".into()],
        process: Box::new(move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(ProcessedFile::default())
        }),
        ..Default::default()
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
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = svc.with_plugins(Arc::new(small_processor(calls.clone())));

    let small = put(&svc, "/small.txt", b"fits\n".to_vec());
    svc.process_now(&small).unwrap();
    assert_eq!(
        svc.file_info(&small).unwrap().index_status,
        IndexStatus::Done
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);

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
        calls.load(Ordering::SeqCst),
        1,
        "the processor was not called"
    );
}
