//! `related` end to end: the first-party detectors (`topic`, `event`,
//! `person`, `sequel`, `conflicts`) installed by `init` compute relations
//! of files and memories as they are written; the CLI and REST answer
//! from the store, within the caller's paths. A small labelled fixture
//! measures each detector's precision and recall.

use crate::schemas::assert_valid;
use crate::support::{Server, Ws, http, p, token};
use serde_json::Value;
use std::collections::BTreeSet;

/// A Markdown note with front matter.
fn note(title: &str, date: &str, people: &str, place: &str, body: &str) -> String {
    let mut s = format!("---\ntitle: {title}\ndate: {date}\n");
    if !people.is_empty() {
        s.push_str(&format!("people: [{people}]\n"));
    }
    if !place.is_empty() {
        s.push_str(&format!("place: {place}\n"));
    }
    s.push_str(&format!("---\n# {title}\n\n{body}\n"));
    s
}

/// The labelled fixture: `(virtual path, content)`.
fn fixture() -> Vec<(&'static str, String)> {
    vec![
        (
            "/notes/q1-report.md",
            note(
                "Q1 report",
                "2026-03-31",
                "",
                "",
                "Revenue grew; churn stayed flat.",
            ),
        ),
        (
            "/notes/q2-report.md",
            note(
                "Q2 report",
                "2026-06-30",
                "",
                "",
                "Hiring slowed; two launches shipped.",
            ),
        ),
        (
            "/notes/offsite-agenda.md",
            note(
                "Offsite agenda",
                "2026-04-14",
                "Ada Lovelace",
                "Lisbon office",
                "Roadmap review and team dinner.",
            ),
        ),
        (
            "/notes/offsite-minutes.md",
            note(
                "Offsite minutes",
                "2026-04-14",
                "Grace Hopper",
                "lisbon office",
                "We agreed to freeze the API in May.",
            ),
        ),
        (
            "/notes/lab-run-monday.md",
            note(
                "Lab session",
                "2026-05-04",
                "",
                "Lab B",
                "Soldering the sensor boards.",
            ),
        ),
        (
            "/notes/lab-run-friday.md",
            note(
                "Lab visit",
                "2026-05-08",
                "",
                "Lab B",
                "Painting the enclosure.",
            ),
        ),
        (
            "/notes/one-on-one.md",
            note(
                "One on one",
                "2026-02-02",
                "Ada Lovelace, Alan Kay",
                "",
                "Career goals and mentoring.",
            ),
        ),
        (
            "/notes/storage.md",
            note(
                "Storage engine",
                "2026-01-10",
                "",
                "",
                "We keep every record in sled, an embedded key-value database, and snapshot the data directory nightly.",
            ),
        ),
        (
            "/notes/backups.md",
            note(
                "Database snapshots",
                "2026-01-20",
                "",
                "",
                "The embedded key-value store is copied to a backup bucket every night so records survive a disk failure.",
            ),
        ),
        (
            "/notes/recipes.md",
            note(
                "Pasta recipes",
                "2026-01-25",
                "",
                "",
                "Boil salted water, add spaghetti, toss with garlic and olive oil.",
            ),
        ),
    ]
}

/// Expected relations among fixture paths, as unordered pairs by type.
fn expected() -> BTreeSet<(String, String, String)> {
    let pairs = [
        ("sequel", "/notes/q1-report.md", "/notes/q2-report.md"),
        (
            "same_event",
            "/notes/offsite-agenda.md",
            "/notes/offsite-minutes.md",
        ),
        (
            "same_person",
            "/notes/offsite-agenda.md",
            "/notes/one-on-one.md",
        ),
        ("same_topic", "/notes/storage.md", "/notes/backups.md"),
    ];
    pairs.iter().map(|(t, a, b)| pair(t, a, b)).collect()
}

fn pair(t: &str, a: &str, b: &str) -> (String, String, String) {
    let (a, b) = if a < b { (a, b) } else { (b, a) };
    (t.to_string(), a.to_string(), b.to_string())
}

fn put_fixture(ws: &Ws) {
    for (path, content) in fixture() {
        let local = ws.write(&format!("in{path}"), content.as_bytes());
        let name = path.rsplit('/').next().unwrap();
        let folder = path.trim_end_matches(name).trim_end_matches('/');
        ws.run(&["put", p(&local), "--to", folder]).ok();
        assert!(!name.is_empty());
    }
}

/// Every relation of every fixture file, as pairs of paths by type, with
/// the detector that found it.
fn found(ws: &Ws) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for (path, _) in fixture() {
        let r = ws.run(&["related", path, "--limit", "100"]).ok().json();
        assert_valid("related-result", &r);
        for e in r["relations"].as_array().unwrap() {
            out.insert(pair(
                e["type"].as_str().unwrap(),
                path,
                e["path"].as_str().unwrap(),
            ));
        }
    }
    out
}

#[test]
fn the_first_party_detectors_relate_files_with_measured_precision_and_recall() {
    let ws = Ws::new();
    put_fixture(&ws);
    let got = found(&ws);
    let want = expected();
    let mut summary = Vec::new();
    for t in ["same_topic", "same_event", "same_person", "sequel"] {
        let g: BTreeSet<_> = got.iter().filter(|x| x.0 == t).collect();
        let w: BTreeSet<_> = want.iter().filter(|x| x.0 == t).collect();
        let hit = g.intersection(&w).count() as f64;
        let precision = if g.is_empty() {
            1.0
        } else {
            hit / g.len() as f64
        };
        let recall = if w.is_empty() {
            1.0
        } else {
            hit / w.len() as f64
        };
        summary.push(format!(
            "{t}: precision {precision:.2} recall {recall:.2} (found {g:?})"
        ));
        assert!(recall >= 1.0, "{t}: expected {w:?}, found {g:?}");
        assert!(precision >= 0.5, "{t}: found {g:?}, expected {w:?}");
    }
    eprintln!("related fixture: {}", summary.join("; "));
    // Negative cases of the brief: a lab run on Monday and a visit on
    // Friday at one place are no event; a pasta recipe has no topic in
    // common with the storage notes; Q1/Q2 are no same event.
    for (t, a, b) in [
        (
            "same_event",
            "/notes/lab-run-monday.md",
            "/notes/lab-run-friday.md",
        ),
        ("same_topic", "/notes/storage.md", "/notes/recipes.md"),
        ("same_event", "/notes/q1-report.md", "/notes/q2-report.md"),
    ] {
        assert!(!got.contains(&pair(t, a, b)), "{t} {a} {b}: {got:?}");
    }
    // Each relation says why and who found it.
    let r = ws
        .run(&["related", "/notes/q2-report.md", "--type", "sequel"])
        .ok()
        .json();
    let e = &r["relations"][0];
    assert_eq!(e["detector"], "sequel");
    assert_eq!(e["item"], "file");
    assert!(e["reason"].as_str().unwrap().contains("follows"), "{e}");
    assert!(e["score"].as_f64().unwrap() > 0.5);
    let human = ws
        .run_human(&["related", "/notes/q2-report.md"])
        .ok()
        .text();
    assert!(
        human.contains("sequel") && human.contains("q1-report.md"),
        "{human}"
    );
}

#[test]
fn memories_relate_to_files_and_to_each_other_and_bad_input_is_structured() {
    let ws = Ws::new();
    put_fixture(&ws);
    let remember = |content: &str, extra: &[&str]| -> String {
        let key = format!("k-{}", content.len());
        let mut args = vec![
            "remember",
            content,
            "--kind",
            "fact",
            "--path",
            "/team",
            "--idempotency-key",
            &key,
        ];
        args.extend_from_slice(extra);
        ws.run(&args).ok().json()["memory"]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let ada = remember(
        "Ada prefers written design reviews",
        &["--attr", "person=Ada Lovelace"],
    );
    let dup1 = remember("The release train leaves every second Tuesday", &[]);
    let dup2 = remember("The release train leaves every second Tuesday.", &[]);
    // A memory naming Ada relates to the files naming her.
    let r = ws
        .run(&["related", &ada, "--type", "same_person"])
        .ok()
        .json();
    let paths: Vec<&str> = r["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"/notes/offsite-agenda.md") && paths.contains(&"/notes/one-on-one.md"),
        "{r}"
    );
    // Near-identical memories are duplicates (the `conflicts` detector).
    let r = ws
        .run(&["related", &dup2, "--type", "duplicate_of"])
        .ok()
        .json();
    assert_eq!(r["relations"][0]["id"], dup1.as_str(), "{r}");
    assert_eq!(r["relations"][0]["detector"], "conflicts");
    // Limit and truncation.
    let r = ws
        .run(&["related", "/notes/offsite-agenda.md", "--limit", "1"])
        .ok()
        .json();
    assert_eq!(r["relations"].as_array().unwrap().len(), 1);
    assert_eq!(r["truncated"], r["total"].as_u64().unwrap() > 1);
    // Bad input: structured errors, nothing stored is lost.
    let e = ws
        .run(&["related", &ada, "--type", "cousin_of"])
        .fails("bad_request", 1);
    assert!(e["hint"].as_str().unwrap().contains("same_topic"), "{e}");
    ws.run(&["related", "mem_01jd0000000000000000000000"])
        .fails("not_found", 2);
    ws.run(&["related", &ada, "--limit", "0"])
        .fails("bad_request", 1);
    // A refresh of everything recomputes the same relations.
    let before = found(&ws);
    let rep = ws.run(&["related", "--refresh", "--all"]).ok().json();
    assert_valid("related-refresh", &rep);
    assert_eq!(rep["pending"], false);
    assert!(rep["items"].as_u64().unwrap() >= 13, "{rep}");
    assert_eq!(found(&ws), before);
}

#[test]
fn rest_answers_related_within_the_token_paths() {
    let ws = Ws::new();
    put_fixture(&ws);
    let secret = ws.write(
        "in/private/q3-report.md",
        note("Q3 report", "2026-09-30", "", "", "Private numbers.").as_bytes(),
    );
    ws.run(&["put", p(&secret), "--to", "/private"]).ok();
    let private_id = ws.run(&["info", "/private/q3-report.md"]).ok().json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The owner sees the private sequel of Q2.
    let r = ws
        .run(&["related", "/notes/q2-report.md", "--type", "sequel"])
        .ok()
        .json();
    assert_eq!(r["total"], 2, "{r}");
    let reader = token(&ws, "reader", "read", &["--paths", "/notes"]);
    let srv = Server::start(&ws, &[]);
    let a = http();
    let get = |query: &str| -> (u16, Value) {
        let resp = a
            .get(srv.url(&format!("/v1/related?{query}")))
            .header("authorization", format!("Bearer {reader}"))
            .call()
            .unwrap();
        let status = resp.status().as_u16();
        (
            status,
            serde_json::from_str(&resp.into_body().read_to_string().unwrap())
                .unwrap_or(Value::Null),
        )
    };
    let (status, body) = get("id=/notes/q2-report.md&type=sequel&limit=5");
    assert_eq!(status, 200, "{body}");
    assert_valid("related-result", &body);
    let ids: Vec<&str> = body["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["/notes/q1-report.md"], "{body}");
    // Out of the token's paths reads as missing; bad input is a 400.
    let (status, body) = get(&format!("id={private_id}"));
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("not_found")),
        "{body}"
    );
    let (status, body) = get("id=/notes/q2-report.md&type=cousin_of");
    assert_eq!(status, 400, "{body}");
    assert!(body["hint"].is_string());
    let (status, _) = get("id=/notes/q2-report.md&limit=101");
    assert_eq!(status, 400);
    // A reader may not refresh.
    let resp = a
        .post(srv.url("/v1/related/refresh"))
        .header("authorization", format!("Bearer {reader}"))
        .header("content-type", "application/json")
        .send("{}")
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    // The tool is listed in the OpenAPI document.
    let doc: Value = serde_json::from_str(
        &a.get(srv.url("/v1/openapi.json"))
            .call()
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap(),
    )
    .unwrap();
    assert!(doc["paths"]["/v1/related"]["get"].is_object());
}
