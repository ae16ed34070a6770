//! One workspace, every first-party file type, through the real binary and
//! the bundled wasm processors: a PDF, a JPEG with EXIF, an HTML page and
//! an MP3 (all made by `fixtures_gen`, byte by byte) each show what their
//! processor found in `info`, are found by `search` (also by `--type`),
//! and a malformed file of each type ends `partial` or `failed` with a
//! specific reason without disturbing anything else.

use crate::fixtures_gen::{jpeg, mp3, pdf};
use crate::support::{Ws, p};
use serde_json::Value;

const PAGE: &[u8] = b"<!doctype html><html><head><title>Garden notes</title>\
<script>var trackingpixel = 1;</script></head><body><nav>Home About</nav>\
<h1>Tomatoes</h1><p>Plant marigolds beside them.</p>\
<h2>Watering</h2><p>Water deeply twice a week.</p></body></html>";

/// Puts `bytes` as `/kb/NAME`; returns the stored record.
fn put(ws: &Ws, name: &str, bytes: &[u8]) -> Value {
    let local = ws.write(&format!("in/{name}"), bytes);
    ws.run(&["put", p(&local), "--to", "/kb"]).ok().json()["file"].clone()
}

fn info(ws: &Ws, target: &str) -> Value {
    ws.run(&["info", target]).ok().json()
}

fn meta<'a>(info: &'a Value, key: &str) -> &'a str {
    info["processed"]["metadata"][key]
        .as_str()
        .unwrap_or_default()
}

/// The paths `search ARGS` finds.
fn found(ws: &Ws, args: &[&str]) -> Vec<String> {
    let mut full = vec!["search", "--lexical-only"];
    full.extend_from_slice(args);
    let mut paths: Vec<String> = ws.run(&full).ok().json()["hits"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| h["path"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    paths.dedup();
    paths
}

/// Stores the four good files; returns their records by name.
fn put_all(ws: &Ws) -> Vec<(&'static str, Value)> {
    let survey = pdf(
        &[
            &["Harbour survey", "The breakwater needs repair"],
            &["Second page", "Lighthouse keepers logbook"],
        ],
        "Harbour Survey",
        "Ada Lovelace",
        "D:20120304100000+01'00'",
    );
    vec![
        ("survey.pdf", put(ws, "survey.pdf", &survey)),
        (
            "beach.jpg",
            put(
                ws,
                "beach.jpg",
                &jpeg("Canon", "EOS 5D", "2012:03:04 10:00:00", "+01:00"),
            ),
        ),
        ("garden.html", put(ws, "garden.html", PAGE)),
        (
            "shanty.mp3",
            put(
                ws,
                "shanty.mp3",
                &mp3(
                    "Quayside Shanty",
                    "The Harbour Band",
                    "Evening Tides",
                    "2012",
                    100,
                ),
            ),
        ),
    ]
}

#[test]
fn every_file_type_shows_its_processor_output_and_is_found() {
    let ws = Ws::new();
    let files = put_all(&ws);
    let mimes: Vec<(&str, &str, &str)> = files
        .iter()
        .map(|(n, f)| {
            (
                *n,
                f["mime"].as_str().unwrap_or_default(),
                f["index_status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        mimes,
        [
            ("survey.pdf", "application/pdf", "done"),
            ("beach.jpg", "image/jpeg", "done"),
            ("garden.html", "text/html", "done"),
            ("shanty.mp3", "audio/mpeg", "partial"),
        ]
    );

    // PDF: document metadata, one chunk per page cited by page and line.
    let d = info(&ws, "/kb/survey.pdf");
    assert_eq!(meta(&d, "doc.pages"), "2", "{d}");
    assert_eq!(meta(&d, "doc.title"), "Harbour Survey");
    assert_eq!(meta(&d, "doc.author"), "Ada Lovelace");
    assert_eq!(meta(&d, "doc.created_at"), "2012-03-04T10:00:00+01:00");
    let chunks = d["processed"]["chunks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(chunks.len(), 2, "{d}");
    let second = &chunks[1];
    assert!(
        second["locator"]
            .as_str()
            .unwrap_or_default()
            .contains("#p2:L"),
        "{second}"
    );
    assert!(
        second["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Lighthouse")
    );

    // JPEG: dimensions, camera and the EXIF capture time with its zone.
    let d = info(&ws, "/kb/beach.jpg");
    assert_eq!(meta(&d, "image.width"), "8", "{d}");
    assert_eq!(meta(&d, "image.height"), "8");
    assert_eq!(meta(&d, "camera.make"), "Canon");
    assert_eq!(meta(&d, "camera.model"), "EOS 5D");
    assert_eq!(meta(&d, "time.captured_at"), "2012-03-04T10:00:00+01:00");
    let human = ws.run_human(&["info", "/kb/beach.jpg"]).ok().text();
    assert!(human.contains("Canon"), "{human}");

    // HTML: headings are the sections; scripts and navigation are gone.
    let d = info(&ws, "/kb/garden.html");
    assert_eq!(d["processed"]["title"], "Garden notes", "{d}");
    let sections: Vec<Value> = d["processed"]["chunks"]
        .as_array()
        .map(|a| a.iter().map(|c| c["section"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        sections,
        [
            serde_json::json!(["Tomatoes"]),
            serde_json::json!(["Tomatoes", "Watering"])
        ],
        "{d}"
    );
    assert!(!d.to_string().contains("trackingpixel"));

    // MP3: tags and duration; partial because there is no speech model.
    let d = info(&ws, "/kb/shanty.mp3");
    assert_eq!(meta(&d, "audio.title"), "Quayside Shanty", "{d}");
    assert_eq!(meta(&d, "audio.artist"), "The Harbour Band");
    assert_eq!(meta(&d, "audio.album"), "Evening Tides");
    let ms: u64 = meta(&d, "audio.duration_ms").parse().unwrap_or(0);
    assert!((2000..=3000).contains(&ms), "100 frames of 26 ms: {ms}");
    assert!(
        d["index_error"]
            .as_str()
            .unwrap_or_default()
            .contains("no speech model"),
        "{d}"
    );

    // Search finds each by what its processor read, and --type narrows to
    // a family of MIME types.
    assert_eq!(found(&ws, &["breakwater"]), ["/kb/survey.pdf"]);
    assert_eq!(found(&ws, &["lighthouse"]), ["/kb/survey.pdf"]);
    assert_eq!(found(&ws, &["marigolds"]), ["/kb/garden.html"]);
    assert_eq!(found(&ws, &["Quayside"]), ["/kb/shanty.mp3"]);
    assert_eq!(found(&ws, &["Canon", "--type", "image"]), ["/kb/beach.jpg"]);
    assert!(found(&ws, &["Canon", "--type", "doc"]).is_empty());
    assert_eq!(
        found(&ws, &["Quayside", "--type", "audio"]),
        ["/kb/shanty.mp3"]
    );
    assert_eq!(
        found(&ws, &["marigolds", "--type", "doc"]),
        ["/kb/garden.html"]
    );
    assert_eq!(
        found(&ws, &["breakwater", "--type", "any"]),
        ["/kb/survey.pdf"]
    );
    ws.remember("Canon cameras are the team's choice", "/kb", None);
    assert!(
        !found(&ws, &["Canon", "--type", "any"])
            .iter()
            .any(|p| !p.starts_with("/kb/beach")),
        "a type filter finds files only"
    );
    let e = ws
        .run(&["search", "x", "--type", "video"])
        .fails("bad_request", 1);
    assert!(
        e["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("image, doc, audio, any"),
        "{e}"
    );
    ws.run(&["search", "x", "--type", "image", "--source", "memory"])
        .fails("bad_request", 1);

    // Each is on the timeline, placed by the evidence its processor read:
    // the PDF by its creation date, the photo by its EXIF time (with a
    // zone); the page and the song (a bare tag year) by when they came.
    let placed = |name: &str| {
        let d = info(&ws, &format!("/kb/{name}"));
        let t = &d["timeline"];
        (
            t["time"].as_str().unwrap_or_default()[..7].to_string(),
            t["time_source"].as_str().unwrap_or_default().to_string(),
        )
    };
    let march = ws.run(&["timeline", "2012-03"]).ok().json();
    let month = &march["months"][0];
    assert_eq!(month["month"], "2012-03", "{march}");
    assert_eq!(
        (&month["counts"]["images"], &month["counts"]["documents"]),
        (&serde_json::json!(1), &serde_json::json!(1)),
        "{march}"
    );
    let sources: Vec<(String, String)> = month["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["title"].as_str().unwrap().to_string(),
                x["time_source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        sources.contains(&("survey.pdf".into(), "document".into())),
        "{sources:?}"
    );
    assert!(
        sources.contains(&("beach.jpg".into(), "exif".into())),
        "{sources:?}"
    );
    for name in ["garden.html", "shanty.mp3"] {
        let (month, source) = placed(name);
        assert_eq!(source, "uploaded", "{name}");
        let when = ws.run(&["timeline", &month, "--path", "/kb"]).ok().json();
        assert!(when.to_string().contains(name), "{name} in {month}: {when}");
    }
}

#[test]
fn malformed_files_end_partial_or_failed_with_a_reason_and_disturb_nothing() {
    let ws = Ws::new();
    let good = put_all(&ws);
    let mut cut = pdf(&[&["some text"]], "Cut", "A", "D:2012");
    cut.truncate(cut.len() / 3);
    let bad: [(&str, Vec<u8>, &str, &str); 5] = [
        (
            "damaged.pdf",
            b"%PDF-1.7\ngarbage".to_vec(),
            "failed",
            "damaged or unreadable PDF",
        ),
        ("cut.pdf", cut, "failed", "damaged or unreadable PDF"),
        (
            "truncated.jpg",
            vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00],
            "failed",
            "not a readable image",
        ),
        (
            "scripts-only.html",
            b"<!doctype html><html><head><script>var a = 1;".to_vec(),
            "partial",
            "no readable text",
        ),
        (
            "noise.mp3",
            {
                let mut b = b"ID3\x03\x00\x00\x7f\x7f\x7f\x7f".to_vec();
                b.extend([0xAB; 64]);
                b
            },
            "failed",
            "not a readable audio file",
        ),
    ];
    for (name, bytes, status, reason) in &bad {
        let f = put(&ws, name, bytes);
        assert_eq!(f["index_status"], *status, "{name}: {f}");
        let error = f["index_error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{name}: {error}");
    }

    // The good files are as they were, and still found.
    for (name, before) in &good {
        let now = info(&ws, before["id"].as_str().unwrap_or_default());
        assert_eq!(now["sha256"], before["sha256"], "{name}");
        assert_eq!(now["index_status"], before["index_status"], "{name}");
        assert_eq!(now["state_version"], before["state_version"], "{name}");
    }
    assert_eq!(found(&ws, &["breakwater"]), ["/kb/survey.pdf"]);
    assert_eq!(found(&ws, &["Canon", "--type", "image"]), ["/kb/beach.jpg"]);
    let listing = ws.run(&["ls", "/kb"]).ok().json();
    assert_eq!(
        listing["entries"].as_array().map(Vec::len),
        Some(good.len() + bad.len())
    );
}
