//! Getting files in: source metadata on `put` through the CLI, REST (the
//! `X-Mem-Source-Metadata` header) and MCP `mem_put`, refused whole when it
//! is not strictly what the format allows, kept by bundles.

use crate::door::mcp_calls;
use crate::support::{Server, Ws, http, p, token};
use serde_json::{Value, json};

/// A REST upload of `body` to `path` with `source` in the header.
fn upload(srv: &Server, secret: &str, path: &str, source: Option<&str>) -> (u16, Value) {
    let mut req = http()
        .post(srv.url(&format!("/v1/files?path={path}")))
        .header("authorization", &format!("Bearer {secret}"));
    if let Some(s) = source {
        req = req.header("x-mem-source-metadata", s);
    }
    let resp = req.send(&b"a photo, as text"[..]).unwrap();
    let status = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[test]
fn source_metadata_is_stored_shown_and_refused_when_not_strict() {
    let ws = Ws::new();
    let local = ws.write("beach.txt", b"sand and sea");
    let put = ws
        .run(&[
            "put",
            p(&local),
            "--to",
            "/photos",
            "--captured-at",
            "2012-03-04T10:00:00+01:00",
            "--lat",
            "-33.9",
            "--lon",
            "18.4",
            "--location-accuracy",
            "15",
            "--place",
            "Cape Town",
            "--source-kind",
            "camera",
            "--source-name",
            "Pixel 7",
        ])
        .ok()
        .json();
    let source = &put["file"]["source"];
    assert_eq!(source["captured_at"], "2012-03-04T10:00:00+01:00");
    assert_eq!(source["lat"], -33.9);
    assert_eq!(source["place"], "Cape Town");
    let info = ws.run(&["info", "/photos/beach.txt"]).ok().json();
    assert_eq!(&info["source"], source, "info shows what put stored");
    let human = ws.run_human(&["info", "/photos/beach.txt"]).ok().text();
    assert!(human.contains("place:         Cape Town"), "{human}");
    assert!(
        human.contains("position:      -33.9, 18.4 (±15 m)"),
        "{human}"
    );

    // Refused whole, and nothing is stored.
    for flags in [
        &["--lat", "91", "--lon", "0"][..],
        &["--lat", "10"][..],
        &["--captured-at", "2012-03-04T10:00:00"][..],
        &["--place", "a\u{7}b"][..],
    ] {
        let mut args = vec!["put", p(&local), "--to", "/refused"];
        args.extend_from_slice(flags);
        ws.run(&args).fails("bad_source_metadata", 1);
    }
    ws.run(&["info", "/refused/beach.txt"])
        .fails("not_found", 2);

    // A bundle keeps it.
    let bundle = ws.path("ws.mem-bundle");
    ws.run(&["export", "--out", p(&bundle)]).ok();
    let copy = ws.path("copy");
    ws.run(&["import", p(&bundle), "--into", p(&copy)]).ok();
    let copied = ws
        .run(&["--workspace", p(&copy), "info", "/photos/beach.txt"])
        .ok()
        .json();
    assert_eq!(&copied["source"], source, "the bundle round trip keeps it");
}

#[test]
fn source_metadata_over_rest_and_mcp() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let secret = token(&ws, "intake", "read,write", &[]);

    let good = r#"{"captured_at":"2012-07-01T08:30:00Z","place":"Porto"}"#;
    let (status, body) = upload(&srv, &secret, "/photos/porto.txt", Some(good));
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["file"]["source"]["place"], "Porto", "{body}");

    for hostile in [
        r#"{"place":"a","place":"b"}"#,
        r#"{"place":null}"#,
        r#"{"colour":"red"}"#,
        r#"{"lat":0,"lon":200}"#,
        r#"{"captured_at":"2012-07-01 08:30"}"#,
        "[]",
        "{",
    ] {
        let (status, body) = upload(&srv, &secret, "/photos/bad.txt", Some(hostile));
        assert_eq!(status, 422, "{hostile}: {body}");
        assert_eq!(body["code"], "bad_source_metadata", "{hostile}: {body}");
        assert!(body["hint"].as_str().is_some_and(|h| !h.is_empty()));
    }
    let (status, _) = upload(&srv, &secret, "/photos/bad.txt", None);
    assert_eq!(status, 201, "nothing of the refused uploads was stored");

    let calls = mcp_calls(
        &ws,
        &srv,
        &secret,
        json!([
            ["mem_put", { "path": "/photos/mcp.txt", "content": "x",
                          "source_metadata": r#"{"source_kind":"scan","lat":1.5,"lon":2.5}"# }],
            ["mem_put", { "path": "/photos/mcp-bad.txt", "content": "x",
                          "source_metadata": r#"{"lat":1.5}"# }],
        ]),
    );
    assert_eq!(calls[0]["is_error"], false, "{}", calls[0]);
    assert_eq!(calls[0]["result"]["file"]["source"]["source_kind"], "scan");
    assert_eq!(calls[1]["is_error"], true, "{}", calls[1]);
    assert_eq!(
        calls[1]["result"]["code"], "bad_source_metadata",
        "{}",
        calls[1]
    );
}
