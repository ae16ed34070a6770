//! The read gate end to end: the first-party `freshness` read policy and a
//! hostile read policy (the `read-trap` fixture, built from plugins/) that
//! must fail closed while the host keeps serving.

use crate::support::{Ws, p};
use serde_json::Value;

fn remember(ws: &Ws, content: &str, extra: &[&str]) -> Value {
    let key = format!("rg-{}", mem_core::hash::sha256_hex(content.as_bytes()));
    let mut args = vec![
        "remember",
        content,
        "--path",
        "/vault",
        "--idempotency-key",
        &key,
    ];
    if !extra.contains(&"--kind") {
        args.extend(["--kind", "fact"]);
    }
    args.extend(extra);
    ws.run(&args).ok().json()["memory"].clone()
}

/// Lists `policies` as `[plugins] read_policies` and appends `extra`.
fn read_policies(ws: &Ws, policies: &str, extra: &str) {
    let path = ws.home().join("mem.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    assert!(toml.contains("read_policies = []"), "{toml}");
    let toml = toml.replace(
        "read_policies = []",
        &format!("read_policies = [{policies}]"),
    );
    std::fs::write(&path, format!("{toml}\n{extra}\n")).unwrap();
}

fn rejected<'a>(pack: &'a Value, id: &Value) -> &'a Value {
    pack["trace"]["rejected_by_gate"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == *id)
        .unwrap_or_else(|| panic!("{id} not rejected: {pack:#}"))
}

fn packed_ids(pack: &Value) -> Vec<String> {
    ["must", "should", "context", "provisional", "conflict"]
        .iter()
        .flat_map(|l| pack[l].as_array().unwrap())
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_freshness_policy_withholds_risky_and_stale_items_naming_itself() {
    let ws = Ws::new();
    read_policies(
        &ws,
        "\"freshness\"",
        "[plugins.freshness]\nconfig = { max_age_days = \"observation=365\", max_risk = \"medium\" }",
    );
    let risky = remember(&ws, "the vault code is 4711", &["--attr", "risk=high"]);
    let fine = remember(&ws, "the vault door is steel", &["--attr", "risk=low"]);
    let old = remember(
        &ws,
        "the vault was repainted",
        &[
            "--kind",
            "observation",
            "--event-at",
            "2020-01-01T00:00:00Z",
        ],
    );
    let pack = ws.run(&["context", "vault"]).ok().json();
    assert_eq!(
        packed_ids(&pack),
        [fine["id"].as_str().unwrap()],
        "{pack:#}"
    );
    let r = rejected(&pack, &risky["id"]);
    assert_eq!(
        (&r["rule"], &r["policy"]),
        (&"risk_blocked".into(), &"freshness".into())
    );
    let r = rejected(&pack, &old["id"]);
    assert_eq!(
        (&r["rule"], &r["policy"]),
        (&"stale".into(), &"freshness".into())
    );
    assert_eq!(pack["partial"], false);
}

#[test]
fn a_trapping_or_looping_read_policy_fails_closed_and_the_pack_says_so() {
    let ws = Ws::new();
    let fx = mem_bundled::fixture("read-trap").expect("fixture built");
    ws.run(&[
        "plugin",
        "install",
        p(&fx.wasm_path()),
        "--manifest",
        p(&fx.manifest_path()),
    ])
    .ok();
    read_policies(
        &ws,
        "\"read-trap\"",
        "[plugins.read-trap]\nlimits = { timeout_ms = 300 }",
    );
    let plain = remember(&ws, "the quokka sleeps by day", &[]);
    let pack = ws.run(&["context", "quokka"]).ok().json();
    assert_eq!(
        packed_ids(&pack),
        [plain["id"].as_str().unwrap()],
        "an honest verdict admits"
    );

    let trap = remember(&ws, "the quokka eats leaves", &["--attr", "fixture=trap"]);
    let pack = ws.run(&["context", "quokka"]).ok().json();
    // Whatever the order, the trapped item is never admitted.
    assert!(
        !packed_ids(&pack).contains(&trap["id"].as_str().unwrap().to_string()),
        "{pack:#}"
    );
    let r = rejected(&pack, &trap["id"]);
    assert_eq!(
        (&r["rule"], &r["policy"]),
        (&"policy_failed".into(), &"read-trap".into())
    );
    assert_eq!(pack["partial"], true);
    assert!(
        pack["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("read-trap")),
        "{pack:#}"
    );

    let spin = remember(&ws, "the quokka hops far", &["--attr", "fixture=spin"]);
    let pack = ws.run(&["context", "quokka hops"]).ok().json();
    assert!(
        !packed_ids(&pack).contains(&spin["id"].as_str().unwrap().to_string()),
        "{pack:#}"
    );
    assert_eq!(rejected(&pack, &spin["id"])["rule"], "policy_failed");
    assert_eq!(pack["partial"], true);
    // Nothing stored was lost, and the host keeps serving.
    ws.run(&["memory", "get", spin["id"].as_str().unwrap()])
        .ok();
    let inspect = ws.run(&["plugin", "inspect", "read-trap"]).ok().json();
    assert!(
        inspect["failures"]["total"].as_u64().unwrap() >= 2,
        "{inspect}"
    );
}
