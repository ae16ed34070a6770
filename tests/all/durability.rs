//! An acknowledged write survives SIGKILL.

use crate::support::Ws;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn every_acknowledged_write_survives_sigkill() {
    let ws = Ws::new();
    let mut child = ws
        .cmd()
        .args(["--format", "json", "remember", "--jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for i in 0.. {
            let line = format!(
                "{{\"content\":\"durable write {i}\",\"kind\":\"note\",\"path\":\"/d\",\"idempotency_key\":\"d{i}\"}}\n"
            );
            if stdin.write_all(line.as_bytes()).is_err() {
                return i;
            }
        }
        unreachable!()
    });
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Collect acknowledgements for a while, then kill mid-stream.
    let mut acked = Vec::new();
    let start = Instant::now();
    // Until a few groups are acknowledged (each group waits for its flush
    // and its batched embedding), but never forever.
    while (start.elapsed() < Duration::from_secs(4) || acked.len() < 1100)
        && start.elapsed() < Duration::from_secs(90)
        && acked.len() < 5000
    {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
            acked.push(line);
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Lines already in the pipe were acknowledged too.
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
        acked.push(line);
    }
    let _ = feeder.join();
    assert!(
        acked.len() >= 512,
        "the writer acknowledged too little to test: {}",
        acked.len()
    );

    let ids: Vec<String> = acked
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["ok"], true, "{l}");
            v["memory"]["id"].as_str().unwrap().to_string()
        })
        .collect();
    // Reopen (the lock died with the process) and find every acknowledged id.
    let mut stored = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["memory", "list", "--limit", "1000"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = ws.run(&args).ok().json();
        for m in page["items"].as_array().unwrap() {
            stored.insert(m["id"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let missing: Vec<&String> = ids.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged writes lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(3)]
    );
    // The same keys replay the same records after the crash.
    let replay = ws
        .run(&[
            "remember",
            "durable write 0",
            "--kind",
            "note",
            "--path",
            "/d",
            "--idempotency-key",
            "d0",
        ])
        .ok()
        .json();
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["memory"]["id"], ids[0].as_str());
}
