//! The runtime against real components: the first-party plugins and the
//! hostile fixtures built from `plugins/` by mem-bundled.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use mem_core::ErrorCode;
use mem_core::MemError;
use mem_core::plugin::*;
use mem_core::store::{Store, Table};
use mem_runtime::WasmPluginHost;
use mem_store::SledStore;

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn store(&self) -> Arc<dyn Store> {
        Arc::new(SledStore::open(&self.dir.path().join("store")).unwrap())
    }

    fn open(&self, config: PluginsConfig) -> (WasmPluginHost, Arc<dyn Store>) {
        self.open_with(config, None)
    }

    fn open_with(
        &self,
        config: PluginsConfig,
        embedder: Option<Arc<dyn mem_core::index::Embedder>>,
    ) -> (WasmPluginHost, Arc<dyn Store>) {
        let store = self.store();
        let host = WasmPluginHost::open(
            self.dir.path().join("plugins"),
            store.clone(),
            config,
            embedder,
        )
        .unwrap();
        (host, store)
    }
}

fn install_fixture(host: &WasmPluginHost, name: &str) -> PluginInfo {
    let f = mem_bundled::fixture(name).unwrap();
    host.install(
        &f.wasm().unwrap(),
        &f.manifest().unwrap(),
        InstallOptions::default(),
    )
    .unwrap()
}

fn install_bundled(host: &WasmPluginHost, name: &str) {
    let p = mem_bundled::get(name).unwrap();
    host.install(p.wasm, &p.manifest().unwrap(), InstallOptions::default())
        .unwrap();
}

fn file(name: &str, mime: &str, text: &str) -> FileInput {
    FileInput {
        id: "f1".into(),
        path: format!("/notes/{name}"),
        name: name.into(),
        mime: mime.into(),
        bytes: text.as_bytes().to_vec(),
    }
}

fn reason(e: &MemError) -> &str {
    e.details["reason"].as_str().unwrap_or("")
}

const MD: &str = "# Setup\n\nIntro line.\n\n## Install\n\nRun it.\nThen reboot.\n\n## Configure\n\nEdit the file.\n";

#[test]
fn text_processor_chunks_markdown_with_line_locators() {
    let ws = Ws::new();
    let (host, _) = ws.open(PluginsConfig::recommended());
    install_bundled(&host, "text");
    assert_eq!(
        host.processors_for("text/markdown").unwrap(),
        vec!["text".to_string()]
    );
    assert!(host.processors_for("image/png").unwrap().is_empty());
    let p = host
        .process("text", &file("setup.md", "text/markdown", MD))
        .unwrap();
    assert_eq!(p.title.as_deref(), Some("Setup"));
    let got: Vec<(String, Vec<String>)> = p
        .chunks
        .iter()
        .map(|c| (c.lines.locator(), c.section.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("L1-3".to_string(), vec!["Setup".to_string()]),
            (
                "L5-8".to_string(),
                vec!["Setup".to_string(), "Install".to_string()]
            ),
            (
                "L10-12".to_string(),
                vec!["Setup".to_string(), "Configure".to_string()]
            ),
        ]
    );
    assert!(p.chunks[1].text.contains("Then reboot."));
    assert_eq!(
        p.metadata.get("format").map(String::as_str),
        Some("markdown")
    );
}

#[test]
fn every_limit_fixture_fails_with_its_reason_and_the_host_keeps_serving() {
    let ws = Ws::new();
    let mut config = PluginsConfig::default();
    config.plugin.insert(
        "spin".into(),
        PluginSettings {
            limits: PluginLimits {
                timeout_ms: Some(300),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    config.plugin.insert(
        "alloc-bomb".into(),
        PluginSettings {
            limits: PluginLimits {
                memory_mib: Some(16),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let (host, _) = ws.open(config);
    for f in ["spin", "alloc-bomb", "huge-output", "panic"] {
        install_fixture(&host, f);
    }
    install_bundled(&host, "text");
    let input = file("a.txt", "text/plain", "hello");

    let started = std::time::Instant::now();
    let e = host.process("spin", &input).unwrap_err();
    assert_eq!(
        (e.code, reason(&e)),
        (ErrorCode::PluginFailed, "deadline"),
        "{e:?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the deadline stops the loop promptly"
    );
    assert_eq!(e.details["plugin"], "spin");
    assert_eq!(e.details["version"], "0.1.0");
    assert!(e.hint.contains("timeout_ms"));

    let e = host.process("alloc-bomb", &input).unwrap_err();
    assert_eq!(
        (e.code, reason(&e)),
        (ErrorCode::PluginFailed, "memory"),
        "{e:?}"
    );

    let e = host.process("huge-output", &input).unwrap_err();
    assert_eq!(
        (e.code, reason(&e)),
        (ErrorCode::PluginFailed, "output"),
        "{e:?}"
    );

    let e = host
        .process("panic", &file("p.txt", "text/plain", "panic now"))
        .unwrap_err();
    assert_eq!(
        (e.code, reason(&e)),
        (ErrorCode::PluginFailed, "trap"),
        "{e:?}"
    );
    assert!(
        e.message.contains("fixture asked to panic"),
        "the guest's panic message is reported: {}",
        e.message
    );

    // The same plugin, and another one, serve the next call normally.
    let ok = host
        .process("panic", &file("p.txt", "text/plain", "fine"))
        .unwrap();
    assert_eq!(ok.chunks[0].text, "fine");
    host.process("text", &file("a.md", "text/markdown", MD))
        .unwrap();

    let info = host.inspect("spin").unwrap();
    assert_eq!(info.failures.total, 1);
    assert_eq!(
        info.failures.by_reason.get(&FailureReason::Deadline),
        Some(&1)
    );
    assert_eq!(
        host.inspect("panic").unwrap().failures.consecutive,
        0,
        "a success resets the streak"
    );
    assert_eq!(host.inspect("panic").unwrap().failures.total, 1);
}

#[test]
fn failure_counters_survive_a_reopen() {
    let ws = Ws::new();
    {
        let (host, _) = ws.open(PluginsConfig::default());
        install_fixture(&host, "panic");
        for _ in 0..3 {
            host.process("panic", &file("p.txt", "text/plain", "panic"))
                .unwrap_err();
        }
    }
    let (host, _) = ws.open(PluginsConfig::default());
    let f = host.inspect("panic").unwrap().failures;
    assert_eq!((f.total, f.consecutive), (3, 3));
    assert_eq!(f.last.map(|l| l.reason), Some(FailureReason::Trap));
}

#[test]
fn capability_must_be_requested_and_granted() {
    let ws = Ws::new();
    let (host, store) = ws.open(PluginsConfig::default());
    let info = install_fixture(&host, "wants-kv");
    assert_eq!(info.missing, vec![Capability::Kv]);
    let input = file("a.txt", "text/plain", "x");

    let e = host.process("wants-kv", &input).unwrap_err();
    assert_eq!(e.code, ErrorCode::CapabilityDenied, "{e:?}");
    assert_eq!(e.details["capability"], "kv");
    assert_eq!(e.details["plugin"], "wants-kv");
    assert!(
        e.hint.contains("mem-host plugin grant wants-kv kv"),
        "{}",
        e.hint
    );
    assert_eq!(store.get(Table::PluginKv, "wants-kv\0count").unwrap(), None);

    let mut config = host.config();
    config.grant("wants-kv", Capability::Kv, &[]).unwrap();
    host.set_config(config).unwrap();
    assert_eq!(
        host.process("wants-kv", &input).unwrap().chunks[0].text,
        "call 1"
    );
    assert_eq!(
        host.process("wants-kv", &input).unwrap().chunks[0].text,
        "call 2"
    );
    assert_eq!(
        store.get(Table::PluginKv, "wants-kv\0count").unwrap(),
        Some(b"2".to_vec())
    );
    assert!(
        host.inspect("wants-kv")
            .unwrap()
            .effective
            .contains(&Capability::Kv)
    );

    // Granted by the workspace but not requested by the manifest: still denied.
    let f = mem_bundled::fixture("wants-kv").unwrap();
    let mut m = f.manifest().unwrap();
    m.capabilities.clear();
    host.install(&f.wasm().unwrap(), &m, InstallOptions { replace: true })
        .unwrap();
    let e = host.process("wants-kv", &input).unwrap_err();
    assert_eq!(e.code, ErrorCode::CapabilityDenied);
    assert_eq!(e.details["requested"], false);
    assert!(e.hint.contains("manifest.json"), "{}", e.hint);
}

#[test]
fn tampered_wasm_is_refused_at_install_and_at_load() {
    let ws = Ws::new();
    let (host, _) = ws.open(PluginsConfig::default());
    let p = mem_bundled::get("text").unwrap();
    let mut wasm = p.wasm.to_vec();
    let last = wasm.len() - 1;
    wasm[last] ^= 0xff;
    let e = host
        .install(&wasm, &p.manifest().unwrap(), InstallOptions::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PluginInvalid);
    assert!(e.message.contains("sha256"), "{}", e.message);
    assert!(
        !ws.dir.path().join("plugins/text").exists(),
        "nothing is written on failure"
    );
    assert!(host.list().unwrap().is_empty());

    install_bundled(&host, "text");
    drop(host);
    std::fs::write(ws.dir.path().join("plugins/text/plugin.wasm"), &wasm).unwrap();
    let (host, _) = ws.open(PluginsConfig::default());
    let e = host
        .process("text", &file("a.txt", "text/plain", "x"))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PluginInvalid);
    assert_eq!(
        e.details["actual_sha256"],
        mem_core::hash::sha256_hex(&wasm)
    );
}

#[test]
fn wrong_wit_version_and_wrong_world_are_refused_naming_both() {
    let ws = Ws::new();
    let (host, _) = ws.open(PluginsConfig::default());
    let f = mem_bundled::fixture("wrong-wit").unwrap();
    let wasm = f.wasm().unwrap();
    let m = f.manifest().unwrap();
    let e = host
        .install(&wasm, &m, InstallOptions::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PluginInvalid);
    assert!(
        e.message.contains("mem:plugin@0.9.0") && e.message.contains("mem:plugin@0.1.0"),
        "{}",
        e.message
    );

    // A manifest claiming the supported version does not fool the check.
    let mut lying = m.clone();
    lying.wit_version = "0.1.0".into();
    let e = host
        .install(&wasm, &lying, InstallOptions::default())
        .unwrap_err();
    assert!(
        e.message.contains("0.9.0") && e.message.contains("0.1.0"),
        "{}",
        e.message
    );

    let role = mem_bundled::get("role").unwrap();
    let mut wrong_world = role.manifest().unwrap();
    wrong_world.world = World::Processor;
    let e = host
        .install(role.wasm, &wrong_world, InstallOptions::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PluginInvalid);
    assert!(
        e.message.contains("processor") && e.message.contains("selector"),
        "{}",
        e.message
    );
    assert!(
        std::fs::read_dir(ws.dir.path().join("plugins"))
            .unwrap()
            .flatten()
            .all(|e| e.file_name() == ".cache")
    );
}

#[test]
fn compiled_components_are_cached_across_reopen() {
    let ws = Ws::new();
    {
        let (host, _) = ws.open(PluginsConfig::default());
        install_bundled(&host, "text");
        assert_eq!(host.load_stats().compiled, 1);
    }
    let (host, _) = ws.open(PluginsConfig::default());
    host.process("text", &file("a.md", "text/markdown", MD))
        .unwrap();
    host.process("text", &file("b.md", "text/markdown", MD))
        .unwrap();
    let stats = host.load_stats();
    assert_eq!((stats.compiled, stats.cache_hits), (0, 1), "{stats:?}");
}

#[test]
fn fs_reads_only_the_granted_folder() {
    let ws = Ws::new();
    let granted = ws.dir.path().join("granted");
    std::fs::create_dir_all(&granted).unwrap();
    std::fs::write(granted.join("inside.txt"), "12345").unwrap();
    std::fs::write(ws.dir.path().join("secret.txt"), "secret").unwrap();
    let g = granted.display().to_string();
    let listing = [
        format!("{g}/inside.txt"),
        "/etc/passwd".to_string(),
        format!("{g}/../secret.txt"),
        format!("write {g}/new.txt"),
    ]
    .join("\n");
    let input = file("paths.txt", "text/plain", &listing);

    let (host, _) = ws.open(PluginsConfig::default());
    install_fixture(&host, "fs-read");
    let outcomes = |p: &ProcessedFile| {
        p.chunks
            .iter()
            .map(|c| c.text.split(' ').next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };

    // Requested but not granted: nothing is visible.
    let p = host.process("fs-read", &input).unwrap();
    assert_eq!(outcomes(&p), vec!["err", "err", "err", "err"]);

    let mut config = host.config();
    config
        .grant("fs-read", Capability::Fs, std::slice::from_ref(&g))
        .unwrap();
    host.set_config(config).unwrap();
    let p = host.process("fs-read", &input).unwrap();
    assert_eq!(p.chunks[0].text, "ok 5");
    assert_eq!(
        outcomes(&p),
        vec!["ok", "err", "err", "err"],
        "{:?}",
        p.chunks
    );
    assert!(!granted.join("new.txt").exists(), "the grant is read-only");
}

#[test]
fn selection_chain_policy_detector_and_adapter_run_as_components() {
    let ws = Ws::new();
    let (host, _) = ws.open(PluginsConfig::recommended());
    let installed = mem_bundled::install_first_party(&host, false).unwrap();
    assert!(installed.len() >= 7);

    let cand = |id: &str, role: Option<&str>, text: &str, score: f32| SelectCandidate {
        id: id.into(),
        kind: "fact".into(),
        role: role.map(Into::into),
        text: text.into(),
        path: "/p".into(),
        score,
        created_at_ms: 0,
        event_at_ms: None,
        pinned: false,
        confidence: 1.0,
        tags: vec![],
    };
    let candidates = vec![
        cand("weather", None, "the weather is nice", 0.9),
        cand("rule", Some("constraint"), "never deploy on friday", 0.1),
        cand("deploy", None, "deploy with the staging database", 0.8),
    ];
    let q = SelectQuery {
        text: "how do we deploy".into(),
        terms: vec![],
        now_ms: 0,
        path: None,
    };
    // Every stage of the recommended chain runs as a component, in order,
    // on the previous stage's survivors (recall owns the orchestration).
    let stages = host.config().selection.stages;
    assert_eq!(stages.len(), 3);
    let mut current = candidates.clone();
    for stage in &stages {
        let limit = stage.limit.unwrap_or(u32::MAX);
        let ids = host.select(&stage.plugin, &current, &q, limit).unwrap();
        assert!(ids.len() <= limit as usize, "{}: {ids:?}", stage.plugin);
        current = ids
            .iter()
            .filter_map(|id| current.iter().find(|c| &c.id == id).cloned())
            .collect();
    }
    current.truncate(2);
    assert_eq!(current.len(), 2);
    assert!(current.iter().any(|c| c.id == "deploy"), "{current:?}");

    let proposal = ProposalInput {
        id: "p".into(),
        kind: "fact".into(),
        content: "staging runs postgres".into(),
        scope: None,
        source: None,
        agent: None,
        confidence: 0.5,
        evidence: vec![],
        attributes: Default::default(),
        route: "propose".into(),
    };
    let v = host.check_write("evidence", &proposal).unwrap();
    assert_eq!(v.decision, Decision::Deny);
    let codes: Vec<&str> = v.reasons.iter().map(|r| r.code.as_str()).collect();
    assert_eq!(
        codes,
        vec![
            "missing_source",
            "missing_scope",
            "missing_supporting_evidence"
        ]
    );

    let item = |id: &str, text: &str| DetectItem {
        id: id.into(),
        kind: "fact".into(),
        role: Some("assertion".into()),
        text: text.into(),
        path: "/".into(),
        tags: vec![],
    };
    let rels = host
        .detect(
            "conflicts",
            &item("s", "Always enable telemetry in production"),
            &[item("o", "Always disable telemetry in production")],
        )
        .unwrap();
    assert_eq!(rels.len(), 1);
    assert_eq!(
        (rels[0].kind.as_str(), rels[0].target.as_str()),
        ("conflicts_with", "o")
    );
    // The differing part crosses the WIT boundary.
    assert_eq!(
        rels[0].difference,
        Some(mem_core::model::Difference {
            this: "enable".into(),
            other: "disable".into(),
        })
    );

    let doc = b"# Rules\n\n- Never commit secrets.\n- Prefer small modules.\n";
    let entries = host.import("agents-md", "CLAUDE.md", doc).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].lines, Some(LineRange::new(3, 3)));
    assert_eq!(entries[0].role.as_deref(), Some("constraint"));
    let back = host.export("agents-md", "CLAUDE.md", &entries).unwrap();
    assert_eq!(
        String::from_utf8(back).unwrap(),
        String::from_utf8_lossy(doc)
    );

    // A plugin of another world is refused by name.
    let e = host
        .process("evidence", &file("a.txt", "text/plain", "x"))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PluginInvalid);
}

#[test]
fn concurrent_calls_are_isolated_from_a_runaway() {
    let ws = Ws::new();
    let mut config = PluginsConfig::default();
    config.plugin.insert(
        "spin".into(),
        PluginSettings {
            limits: PluginLimits {
                timeout_ms: Some(1500),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let (host, _) = ws.open(config);
    install_fixture(&host, "spin");
    install_bundled(&host, "text");
    let host = Arc::new(host);
    let spinner = {
        let host = host.clone();
        std::thread::spawn(move || {
            host.process("spin", &file("a.txt", "text/plain", "x"))
                .unwrap_err()
        })
    };
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let host = host.clone();
            std::thread::spawn(move || {
                for _ in 0..5 {
                    host.process("text", &file(&format!("{i}.md"), "text/markdown", MD))
                        .unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(reason(&spinner.join().unwrap()), "deadline");
}

#[test]
fn remove_and_reinstall() {
    let ws = Ws::new();
    let (host, _) = ws.open(PluginsConfig::default());
    install_bundled(&host, "text");
    let p = mem_bundled::get("text").unwrap();
    let e = host
        .install(p.wasm, &p.manifest().unwrap(), InstallOptions::default())
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists);
    host.remove("text").unwrap();
    assert_eq!(
        host.process("text", &file("a.txt", "text/plain", "x"))
            .unwrap_err()
            .code,
        ErrorCode::NotFound
    );
    assert!(!Path::new(&ws.dir.path().join("plugins/text")).exists());
    install_bundled(&host, "text");
    assert_eq!(host.list().unwrap().len(), 1);
}

/// A deterministic stand-in for the ONNX model: the embed import's
/// plumbing and grant are under test here, not the model.
struct CountingEmbedder;

impl mem_core::index::Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        "counting-4"
    }
    fn dimensions(&self) -> usize {
        4
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, mem_core::index::IndexError> {
        Ok(texts
            .iter()
            .map(|t| vec![t.len() as f32, 0.0, 0.0, 0.0])
            .collect())
    }
}

#[test]
fn embed_reaches_the_host_model_only_when_granted() {
    let ws = Ws::new();
    let (host, _) = ws.open_with(PluginsConfig::default(), Some(Arc::new(CountingEmbedder)));
    install_fixture(&host, "wants-embed");
    let input = file("a.txt", "text/plain", "hello");
    let e = host.process("wants-embed", &input).unwrap_err();
    assert_eq!(e.code, ErrorCode::CapabilityDenied, "{e:?}");
    assert_eq!(e.details["capability"], "embed");

    let mut config = host.config();
    config.grant("wants-embed", Capability::Embed, &[]).unwrap();
    host.set_config(config).unwrap();
    assert_eq!(
        host.process("wants-embed", &input).unwrap().chunks[0].text,
        "counting-4 4 4"
    );

    // Granted, but the workspace has no model: a clear plugin error.
    let ws = Ws::new();
    let mut config = PluginsConfig::default();
    let (host, _) = ws.open_with(config.clone(), None);
    install_fixture(&host, "wants-embed");
    config = host.config();
    config.grant("wants-embed", Capability::Embed, &[]).unwrap();
    host.set_config(config).unwrap();
    let e = host.process("wants-embed", &input).unwrap_err();
    assert!(
        e.message.contains("model") || e.hint.contains("model install"),
        "{e:?}"
    );
}
