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

/// What the loopback server answers for a request path.
fn route(path: &str) -> Option<Vec<u8>> {
    let reply = |status: &str, headers: &str, body: &[u8]| {
        let mut r = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend(body);
        r
    };
    let page = b"<!doctype html><html><body><h1>Tides</h1><p>Spring tides at the harbour.</p></body></html>";
    Some(match path {
        // The server claims a type; the host sniffs its own.
        "/docs/tides.html" => reply("200 OK", "Content-Type: application/octet-stream\r\n", page),
        "/photo" => reply(
            "200 OK",
            "Content-Type: text/plain\r\n",
            &crate::fixtures_gen::jpeg("Canon", "EOS 5D", "2012:03:04 10:00:00", "+01:00"),
        ),
        "/r1" => reply("302 Found", "Location: /r2\r\n", b""),
        "/r2" => reply(
            "301 Moved Permanently",
            "Location: /docs/tides.html\r\n",
            b"",
        ),
        "/loop" => reply("302 Found", "Location: /loop\r\n", b""),
        "/to-file" => reply("302 Found", "Location: file:///etc/passwd\r\n", b""),
        "/big" => reply("200 OK", "", &[b'x'; 5000]),
        // No length announced: the limit is found while the body streams.
        "/big-stream" => {
            let mut r = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
            r.extend([b'y'; 5000]);
            r
        }
        "/gone" => reply("404 Not Found", "", b"no such page"),
        "/slow" => return None,
        _ => reply("500 Internal Server Error", "", b"unexpected"),
    })
}

/// A tiny HTTP/1.1 server on loopback, answering [`route`] one connection
/// at a time; its address.
fn serve_loopback() -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut stalled = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            match route(&path) {
                Some(bytes) => {
                    let _ = conn.write_all(&bytes);
                }
                // Never answer (kept open until the client gives up).
                None => stalled.push(conn),
            }
        }
    });
    format!("http://{addr}")
}

#[test]
fn put_url_fetches_sniffs_and_keeps_the_url_as_source() {
    let ws = Ws::new();
    let base = serve_loopback();

    let url = format!("{base}/docs/tides.html");
    let put = ws.run(&["put", "--url", &url, "--to", "/web"]).ok().json();
    let file = &put["file"];
    assert_eq!(file["path"], "/web/tides.html", "{put}");
    assert_eq!(file["mime"], "text/html", "sniffed, not the server's type");
    assert_eq!(file["index_status"], "done");
    assert_eq!(file["source"]["source_kind"], "url");
    assert_eq!(file["source"]["source_name"], url.as_str());
    let hits = ws.run(&["search", "spring tides"]).ok().json();
    assert_eq!(hits["hits"][0]["path"], "/web/tides.html", "{hits}");

    // A redirect chain is followed; DEST names the stored file; the
    // source flags outrank the defaults.
    let put = ws
        .run(&[
            "put",
            "--url",
            &format!("{base}/r1"),
            "/web/moved.html",
            "--source-name",
            "harbour site",
        ])
        .ok()
        .json();
    assert_eq!(put["file"]["path"], "/web/moved.html", "{put}");
    assert_eq!(put["file"]["source"]["source_name"], "harbour site");
    assert_eq!(put["file"]["sha256"], file["sha256"], "the same page");

    let put = ws
        .run(&[
            "put",
            "--url",
            &format!("{base}/photo"),
            "--name",
            "beach.jpg",
        ])
        .ok()
        .json();
    assert_eq!(put["file"]["mime"], "image/jpeg", "{put}");

    // Credentials in the URL are not kept.
    let with_user = url.replacen("http://", "http://ann:secret@", 1);
    let put = ws
        .run(&["put", "--url", &with_user, "/web/again.html"])
        .ok()
        .json();
    assert_eq!(put["file"]["source"]["source_name"], url.as_str(), "{put}");
}

#[test]
fn put_url_failures_are_structured_and_store_nothing() {
    let ws = Ws::new();
    let base = serve_loopback();
    let toml = ws.home().join("mem.toml");
    let cfg = std::fs::read_to_string(&toml).unwrap();
    let limited = regex_free_replace(&cfg, "max_file_bytes = ", "1000");
    std::fs::write(&toml, limited).unwrap();

    let e = ws
        .run(&["put", "--url", &format!("{base}/gone"), "/web/gone.html"])
        .fails("fetch_failed", 1);
    assert_eq!(e["details"]["reason"], "status", "{e}");
    assert_eq!(e["details"]["status"], 404);

    let e = ws
        .run(&["put", "--url", &format!("{base}/loop"), "/web/loop.html"])
        .fails("fetch_failed", 1);
    assert_eq!(e["details"]["reason"], "too_many_redirects", "{e}");

    let e = ws
        .run(&["put", "--url", &format!("{base}/to-file"), "/web/f.html"])
        .fails("fetch_failed", 1);
    assert_eq!(e["details"]["reason"], "bad_redirect", "{e}");

    for big in ["/big", "/big-stream"] {
        let e = ws
            .run(&["put", "--url", &format!("{base}{big}"), "/web/big.txt"])
            .fails("payload_too_large", 1);
        assert_eq!(e["details"]["limit"], 1000, "{big}: {e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("1000 bytes"),
            "{e}"
        );
    }

    for bad in [
        "ftp://example.org/x.txt",
        "file:///etc/passwd",
        "example.org/x",
    ] {
        let e = ws
            .run(&["put", "--url", bad, "/web/x.txt"])
            .fails("bad_request", 1);
        assert_eq!(e["details"]["field"], "url", "{bad}: {e}");
    }

    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let e = ws
        .run(&["put", "--url", &format!("http://{closed}/x"), "/web/x.txt"])
        .fails("fetch_failed", 1);
    assert_eq!(e["details"]["reason"], "unreachable", "{e}");

    let started = std::time::Instant::now();
    let e = ws
        .run(&[
            "put",
            "--url",
            &format!("{base}/slow"),
            "/web/slow.txt",
            "--timeout",
            "1",
        ])
        .fails("fetch_failed", 1);
    assert_eq!(e["details"]["reason"], "timeout", "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    let listing = ws.run(&["ls", "/"]).ok().json();
    assert_eq!(listing["entries"], serde_json::json!([]), "nothing stored");
}

/// `text` with the number after `key` replaced by `value`.
fn regex_free_replace(text: &str, key: &str, value: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with(key) {
                format!("{key}{value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn mcp_put_takes_binary_content_and_a_mime_hint() {
    use base64::Engine;
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let secret = token(&ws, "intake", "read,write,search", &[]);
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let photo = crate::fixtures_gen::jpeg("Canon", "EOS 5D", "2012:03:04 10:00:00", "+01:00");
    let calls = mcp_calls(
        &ws,
        &srv,
        &secret,
        json!([
            // The hint cannot make a JPEG text: the bytes decide.
            ["mem_put", { "path": "/photos/beach", "content_base64": b64(&photo),
                          "mime": "text/plain" }],
            // For text it picks the type, as an extension would.
            ["mem_put", { "path": "/notes/plan", "content_base64": b64(b"# Plan\n\nsail at dawn\n"),
                          "mime": "text/markdown; charset=utf-8" }],
            ["mem_put", { "path": "/bad/x", "content_base64": "not base64!" }],
            ["mem_put", { "path": "/bad/y", "content": "x", "mime": "nonsense" }],
            ["mem_put", { "path": "/bad/z", "content": "x", "content_base64": "eA==" }],
            ["mem_search", { "query": "Canon", "type": "image" }],
            ["mem_search", { "query": "Canon", "type": "video" }],
        ]),
    );
    assert_eq!(calls[0]["is_error"], false, "{}", calls[0]);
    assert_eq!(calls[0]["result"]["file"]["mime"], "image/jpeg");
    assert_eq!(calls[0]["result"]["file"]["index_status"], "done");
    assert_eq!(
        calls[1]["result"]["file"]["mime"], "text/markdown",
        "{}",
        calls[1]
    );
    for (i, field) in [(2, "/content_base64"), (3, "/mime")] {
        assert_eq!(calls[i]["is_error"], true, "{}", calls[i]);
        assert_eq!(calls[i]["result"]["code"], "bad_request", "{}", calls[i]);
        assert_eq!(
            calls[i]["result"]["details"]["field"], field,
            "{}",
            calls[i]
        );
    }
    assert_eq!(calls[4]["is_error"], true, "both contents: {}", calls[4]);
    assert_eq!(
        calls[5]["result"]["hits"][0]["path"], "/photos/beach",
        "{}",
        calls[5]
    );
    assert_eq!(calls[6]["is_error"], true, "{}", calls[6]);
    let ls = ws.run(&["ls", "/bad"]);
    assert_ne!(ls.code, 0, "nothing of the refused puts was stored");
}

#[test]
fn ls_by_tag_on_cli_rest_and_mcp() {
    let ws = Ws::new();
    let note = ws.write("n.txt", b"tide tables");
    for (to, tags) in [
        ("/a", &["boat", "2012"][..]),
        ("/a/deep/er", &["boat", "2012"][..]),
        ("/a", &["boat"][..]),
        ("/b", &["2012"][..]),
    ] {
        let mut args = vec!["put", p(&note), "--to", to, "--name"];
        let name = format!("{}-{}.txt", to.replace('/', "_"), tags.join("_"));
        args.push(&name);
        for t in tags {
            args.extend(["--tag", t]);
        }
        ws.run(&args).ok();
    }
    let paths = |listing: &Value| -> Vec<String> {
        let mut v: Vec<String> = listing["entries"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e["path"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let both = ["/a/_a-boat_2012.txt", "/a/deep/er/_a_deep_er-boat_2012.txt"];
    let l = ws
        .run(&["ls", "/", "--tag", "boat", "--tag", "2012"])
        .ok()
        .json();
    assert_eq!(paths(&l), both, "{l}");
    let l = ws.run(&["ls", "/b", "--tag", "boat"]).ok().json();
    assert_eq!(paths(&l), Vec::<String>::new());
    let human = ws.run_human(&["ls", "/a", "--tag", "2012"]).ok().text();
    assert!(human.contains("/a/deep/er/"), "{human}");
    ws.run(&["ls", "/", "--tag", "has space"])
        .fails("bad_request", 1);

    let srv = Server::start(&ws, &[]);
    let secret = token(&ws, "lister", "read", &[]);
    let resp = http()
        .get(srv.url("/v1/files?path=/&tags=boat&tags=2012"))
        .header("authorization", &format!("Bearer {secret}"))
        .call()
        .unwrap();
    let body: Value = serde_json::from_str(&resp.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(paths(&body), both, "{body}");
    let calls = mcp_calls(
        &ws,
        &srv,
        &secret,
        json!([["mem_list", { "path": "/a", "tags": ["boat", "2012"] }]]),
    );
    assert_eq!(paths(&calls[0]["result"]), both, "{}", calls[0]);
}
