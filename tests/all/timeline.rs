//! The timeline through the real binary and plugins: files placed by their
//! source metadata, by a JPEG's EXIF time (with a zone; a zone-less one
//! stays uncertain) or by when they were stored, and memories by their
//! event time; counted by month on the CLI, REST and MCP, and in the
//! context pack of a counting question. A scoped token sees nothing of
//! what lies outside its paths, counts included.

use crate::door::mcp_calls;
use crate::schemas::assert_valid;
use crate::support::{Server, Ws, http, p, token};
use crate::web::{get_page, link, sign_in};
use serde_json::{Value, json};

/// A PNG header (what the image processor reads: no pixels needed).
fn png(width: u32) -> Vec<u8> {
    let mut b = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    b.extend(13u32.to_be_bytes());
    b.extend(b"IHDR");
    b.extend(width.to_be_bytes());
    b.extend(1u32.to_be_bytes());
    b.extend([8, 2, 0, 0, 0]);
    b.extend([0, 0, 0, 0]);
    b
}

/// A JPEG taken at `at` (EXIF form), in zone `offset` (empty: none).
fn jpeg_taken(at: &str, offset: &str) -> Vec<u8> {
    crate::fixtures_gen::jpeg("Canon", "EOS 5D", at, offset)
}

/// Puts `bytes` at `dest` (a folder) as `name`, with a capture time.
fn put(ws: &Ws, name: &str, bytes: &[u8], dest: &str, captured: Option<&str>) -> Value {
    let local = ws.write(name, bytes);
    let mut args = vec!["put", p(&local), "--to", dest];
    if let Some(c) = captured {
        args.extend(["--captured-at", c]);
    }
    ws.run(&args).ok().json()["file"].clone()
}

fn month<'a>(t: &'a Value, m: &str) -> &'a Value {
    t["months"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["month"] == m))
        .unwrap_or_else(|| panic!("no month {m} in {t}"))
}

fn months(t: &Value) -> Vec<String> {
    t["months"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["month"].as_str().unwrap().to_string())
        .collect()
}

/// Files of 2012 (and around it) and memories, placed by each source.
fn workspace() -> Ws {
    let ws = Ws::new();
    put(
        &ws,
        "beach.png",
        &png(11),
        "/photos",
        Some("2012-03-04T10:00:00+01:00"),
    );
    // 23:30 in New York is already July 2 in UTC: still July.
    put(
        &ws,
        "fireworks.png",
        &png(12),
        "/photos",
        Some("2012-07-01T23:30:00-05:00"),
    );
    // 00:30 in Lisbon on New Year's Day is 2011 in UTC: still 2012.
    put(
        &ws,
        "newyear.png",
        &png(13),
        "/photos",
        Some("2012-01-01T00:30:00+01:00"),
    );
    put(
        &ws,
        "later.png",
        &png(14),
        "/photos",
        Some("2013-05-05T12:00:00Z"),
    );
    put(
        &ws,
        "summer.jpg",
        &jpeg_taken("2012:08:15 09:00:00", "+02:00"),
        "/photos",
        None,
    );
    put(
        &ws,
        "unzoned.jpg",
        &jpeg_taken("2012:09:09 09:09:09", ""),
        "/photos",
        None,
    );
    put(
        &ws,
        "minutes.md",
        b"# Minutes\n\nWe chose the blue tiles.\n",
        "/photos",
        Some("2012-03-10T18:00:00Z"),
    );
    put(
        &ws,
        "secret.png",
        &png(15),
        "/private",
        Some("2012-04-01T12:00:00Z"),
    );
    ws.run(&[
        "remember",
        "We booked the beach house for the March trip",
        "--kind",
        "fact",
        "--path",
        "/photos",
        "--event-at",
        "2012-03-05T12:00:00Z",
        "--idempotency-key",
        "trip",
    ])
    .ok();
    ws.remember("Tiles arrive next week", "/photos", None);
    ws
}

#[test]
fn timeline_counts_files_and_memories_by_month_with_the_source_of_each_time() {
    let ws = workspace();
    let t = ws.run(&["timeline", "2012"]).ok().json();
    assert_valid("timeline", &t);
    assert_eq!(t["period"]["from"], "2012-01-01", "{t}");
    assert_eq!(t["period"]["to"], "2012-12-31", "{t}");
    assert_eq!(
        months(&t),
        ["2012-01", "2012-03", "2012-04", "2012-07", "2012-08"],
        "the zone-less EXIF time (September) and later.png (2013) are not in 2012"
    );
    let totals = &t["totals"];
    assert_eq!(totals["images"], 5, "{t}");
    assert_eq!(totals["documents"], 1, "{t}");
    assert_eq!(totals["memories"], 1, "{t}");
    assert_eq!(totals["total"], 7, "{t}");

    let march = month(&t, "2012-03");
    assert_eq!(march["counts"]["total"], 3, "{march}");
    let sources: Vec<(&str, &str)> = march["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["title"].as_str().unwrap(),
                s["time_source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [
            ("beach.png", "source"),
            ("We booked the beach house for the March trip", "event"),
            ("minutes.md", "source"),
        ],
        "earliest first"
    );
    let august = &month(&t, "2012-08")["samples"][0];
    assert_eq!(august["title"], "summer.jpg");
    assert_eq!(august["time_source"], "exif", "{august}");
    assert_eq!(august["time"], "2012-08-15T09:00:00+02:00");
    assert_eq!(month(&t, "2012-01")["samples"][0]["title"], "newyear.png");

    // The zone-less EXIF time is shown as uncertain, not used.
    let info = ws.run(&["info", "/photos/unzoned.jpg"]).ok().json();
    assert_valid("file-details", &info);
    assert_eq!(info["timeline"]["time_source"], "uploaded", "{info}");
    assert_eq!(info["timeline"]["uncertain_time"], "2012-09-09T09:09:09");
    assert_eq!(
        info["processed"]["metadata"]["time.captured_local"],
        "2012-09-09T09:09:09"
    );
    let human = ws.run_human(&["info", "/photos/summer.jpg"]).ok().text();
    assert!(
        human.contains("timeline:      2012-08-15T09:00:00+02:00 (exif)"),
        "{human}"
    );

    // Filters: a file type asks about files; a range; memories only.
    let images = ws
        .run(&["timeline", "2012", "--type", "image", "--samples", "1"])
        .ok()
        .json();
    assert_eq!(images["totals"]["total"], 5, "{images}");
    assert_eq!(images["totals"]["memories"], 0);
    assert_eq!(
        month(&images, "2012-03")["samples"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let range = ws
        .run(&["timeline", "2012-03..2012-07", "--path", "/photos"])
        .ok()
        .json();
    assert_eq!(months(&range), ["2012-03", "2012-07"], "{range}");
    let day = ws
        .run(&["timeline", "2012-03-04..2012-03-05", "--source", "memory"])
        .ok()
        .json();
    assert_eq!(day["totals"]["total"], 1, "{day}");

    let table = ws.run_human(&["timeline", "2012"]).ok().text();
    assert!(table.contains("2012-03"), "{table}");
    assert!(table.contains("images"), "{table}");
    assert!(table.contains("beach.png"), "{table}");

    // A counting question gets the count with cited samples.
    let pack = ws
        .run(&["context", "how many photos from 2012"])
        .ok()
        .json();
    assert_valid("context-pack", &pack);
    let summary = &pack["timeline"];
    assert_eq!(summary["count"], 5, "{pack}");
    assert_eq!(summary["what"], "image");
    assert!(
        summary["samples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["citation"].as_str().unwrap().starts_with("mem://file/")),
        "{summary}"
    );
    assert!(summary["text"].as_str().unwrap().starts_with("5 photos"));
    let human = ws
        .run_human(&["context", "how many photos from 2012"])
        .ok()
        .text();
    assert!(human.contains("COUNT: 5 photos"), "{human}");
    let memories = ws
        .run(&["context", "how many memories from March 2012"])
        .ok()
        .json();
    assert_eq!(memories["timeline"]["count"], 1, "{memories}");
    let plain = ws.run(&["context", "beach photos"]).ok().json();
    assert!(plain.get("timeline").is_none(), "{plain}");
}

#[test]
fn bad_periods_are_refused_with_the_accepted_forms() {
    let ws = Ws::new();
    for bad in [
        "12",
        "2012-13",
        "2012/03",
        "last year",
        "2012..",
        "2012-03-04T10:00",
    ] {
        let e = ws.run(&["timeline", bad]).fails("bad_request", 1);
        assert!(
            e["hint"]
                .as_str()
                .unwrap_or("")
                .contains("2012-03..2012-08"),
            "{bad}: {e}"
        );
    }
    for impossible in ["2012-02-30", "2013..2012", "1900..2200"] {
        ws.run(&["timeline", impossible]).fails("unprocessable", 1);
    }
}

#[test]
fn timeline_over_rest_and_mcp_respects_the_token_paths() {
    let ws = workspace();
    let srv = Server::start(&ws, &[]);
    let owner = token(&ws, "owner", "search,read", &[]);
    let scoped = token(&ws, "photos", "search,read", &["--paths", "/photos"]);
    let get = |secret: &str, query: &str| {
        let resp = http()
            .get(srv.url(&format!("/v1/timeline?{query}")))
            .header("authorization", &format!("Bearer {secret}"))
            .call()
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.into_body().read_to_string().unwrap();
        (status, serde_json::from_str::<Value>(&text).unwrap())
    };
    let (status, all) = get(&owner, "period=2012");
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["totals"]["images"], 5, "{all}");
    assert_eq!(all, ws.run(&["timeline", "2012"]).ok().json(), "one answer");

    let (status, seen) = get(&scoped, "period=2012&type=image");
    assert_eq!(status, 200, "{seen}");
    assert_eq!(
        seen["totals"]["images"], 4,
        "secret.png is not seen: {seen}"
    );
    assert!(!months(&seen).contains(&"2012-04".to_string()), "{seen}");
    assert!(!seen.to_string().contains("secret"), "{seen}");

    let (status, e) = get(&owner, "period=2012-13");
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["code"], "bad_request");
    assert!(
        e["hint"].as_str().unwrap().contains("2012-03..2012-08"),
        "{e}"
    );
    let (status, e) = get(&owner, "period=2012-02-30");
    assert_eq!(status, 422, "{e}");
    let (status, e) = get(&owner, "period=2012&type=video");
    assert_eq!(status, 400, "{e}");

    let calls = mcp_calls(
        &ws,
        &srv,
        &scoped,
        json!([
            ["mem_timeline", { "period": "2012", "type": "image" }],
            ["mem_timeline", { "period": "2012-3" }],
            ["mem_context", { "query": "how many photos from 2012" }],
        ]),
    );
    assert_eq!(calls[0]["is_error"], false, "{}", calls[0]);
    assert_eq!(calls[0]["result"], seen, "MCP answers what REST answers");
    assert_eq!(calls[1]["is_error"], true, "{}", calls[1]);
    assert_eq!(calls[1]["result"]["code"], "bad_request", "{}", calls[1]);
    let summary = &calls[2]["result"]["timeline"];
    assert_eq!(
        summary["count"], 4,
        "the scoped pack counts what it sees: {}",
        calls[2]
    );
    assert!(!summary.to_string().contains("secret"), "{summary}");
}

#[test]
fn the_timeline_page_shows_months_with_linked_samples_within_the_session_paths() {
    let ws = workspace();
    token(&ws, "photos", "search,read", &["--paths", "/photos"]);
    let srv = Server::start(&ws, &[]);
    let (owner, _) = sign_in(&link(&ws, &srv, &[]));
    let (code, empty) = get_page(&srv, &owner, "/timeline");
    assert_eq!(code, 200, "{empty}");
    assert!(empty.contains(r#"name="period""#), "{empty}");
    let (code, page) = get_page(&srv, &owner, "/timeline?period=2012&type=image");
    assert_eq!(code, 200, "{page}");
    let cli = ws.run(&["timeline", "2012", "--type", "image"]).ok().json();
    assert!(
        page.contains(&format!(
            r#"<strong id="timeline-total">{}</strong>"#,
            cli["totals"]["total"]
        )),
        "the page shows the operation's answer: {page}"
    );
    for m in months(&cli) {
        assert!(
            page.contains(&format!(r#"data-month="{m}""#)),
            "{m}: {page}"
        );
    }
    assert!(
        page.contains("/drive/file?target=file_"),
        "samples link: {page}"
    );
    assert!(page.contains("secret.png"), "{page}");
    let (code, bad) = get_page(&srv, &owner, "/timeline?period=2012-13");
    assert_eq!(code, 400, "{bad}");
    assert!(
        bad.contains("2012-03..2012-08"),
        "the hint shows the forms: {bad}"
    );

    let (scoped, _) = sign_in(&link(&ws, &srv, &["--token", "photos"]));
    let (code, seen) = get_page(&srv, &scoped, "/timeline?period=2012&type=image");
    assert_eq!(code, 200, "{seen}");
    assert!(
        !seen.contains("secret.png"),
        "outside the token's paths: {seen}"
    );
}
