use super::*;
use crate::tests::service;
use std::sync::atomic::Ordering;

fn observed() -> Observed {
    Observed {
        op: RecallOp::Search,
        query: "Where is the zebra?".into(),
        caller: "owner".into(),
        took_ms: 1,
    }
}

#[test]
fn fingerprints_ignore_case_and_punctuation_and_depend_on_the_key() {
    let (_d, a) = service();
    let (_e, b) = service();
    let fa = a.fingerprint("Where is  the ZEBRA?").unwrap();
    assert_eq!(fa, a.fingerprint("where is the zebra").unwrap());
    assert_ne!(fa, a.fingerprint("where is the lion").unwrap());
    // Another workspace, another key: the same question is unrelated.
    assert_ne!(fa, b.fingerprint("where is the zebra").unwrap());
    assert_eq!(fa.len(), 32);
    assert_ne!(fa, mem_core::hash::sha256_hex(b"where is the zebra")[..32]);
}

#[test]
fn the_log_keeps_the_newest_records_only() {
    let (_d, svc) = service();
    let fp = svc.fingerprint("q").unwrap();
    for _ in 0..7 {
        let rec = RecallRecord::new(&observed(), fp.clone());
        svc.append_recall(vec![rec], 3).unwrap();
    }
    let report = svc.recall_log(&RecallLogQuery::default()).unwrap();
    assert_eq!(report.matched, 3);
    let seqs: Vec<u64> = report.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![7, 6, 5]);
    assert_eq!(report.questions[0].seen, 3);
    assert_eq!(report.questions[0].empty, 3);
}

fn stored(svc: &crate::Service) -> Vec<RecallRecord> {
    svc.store()
        .scan(
            Table::RecallLog,
            &Scan {
                prefix: PREFIX,
                after: None,
                limit: 100_000,
                reverse: false,
            },
        )
        .unwrap()
        .iter()
        .map(|(k, v)| decode(Table::RecallLog, k, v).unwrap())
        .collect()
}

#[test]
fn a_worker_process_writes_held_records_in_order_when_full_saved_or_read() {
    let (_d, svc) = service();
    svc.worker.running.store(true, Ordering::Relaxed);
    let observe = |i: usize| {
        let mut o = observed();
        o.took_ms = i as u64;
        assert_eq!(svc.observe(&o, |fp| RecallRecord::new(&o, fp)), None);
    };
    for i in 0..PENDING_MAX + 10 {
        observe(i);
    }
    // A full buffer was written; the rest wait for the next save.
    assert_eq!(stored(&svc).len(), PENDING_MAX);
    svc.flush().unwrap();
    assert_eq!(stored(&svc).len(), PENDING_MAX + 10);
    // A read of the log includes what this process holds.
    observe(PENDING_MAX + 10);
    let report = svc
        .recall_log(&RecallLogQuery {
            limit: Some(MAX_LOG_LIMIT),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(report.matched as usize, PENDING_MAX + 11);
    // Dense sequence numbers in the order the calls were observed.
    let all = stored(&svc);
    for (i, r) in all.iter().enumerate() {
        assert_eq!((r.seq, r.took_ms), (i as u64 + 1, i as u64));
    }
}

#[test]
fn concurrent_calls_of_a_worker_process_each_get_one_record() {
    let (_d, svc) = service();
    svc.worker.running.store(true, Ordering::Relaxed);
    std::thread::scope(|s| {
        for t in 0..4 {
            let svc = &svc;
            s.spawn(move || {
                for i in 0..150 {
                    let mut o = observed();
                    o.took_ms = t * 1000 + i;
                    svc.observe(&o, |fp| RecallRecord::new(&o, fp));
                }
            });
        }
    });
    svc.flush().unwrap();
    let all = stored(&svc);
    let seqs: Vec<u64> = all.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=600).collect::<Vec<u64>>());
    let mut took: Vec<u64> = all.iter().map(|r| r.took_ms).collect();
    took.sort_unstable();
    took.dedup();
    assert_eq!(took.len(), 600, "every call recorded once");
}

#[test]
fn a_fingerprint_or_a_query_but_not_both() {
    let (_d, svc) = service();
    let e = svc
        .recall_log(&RecallLogQuery {
            fingerprint: Some("0".repeat(32)),
            query: Some("x".into()),
            limit: None,
        })
        .unwrap_err();
    assert_eq!(e.code, mem_core::ErrorCode::Unprocessable);
    let e = svc
        .recall_log(&RecallLogQuery {
            limit: Some(MAX_LOG_LIMIT + 1),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.details["maximum"], MAX_LOG_LIMIT);
}
