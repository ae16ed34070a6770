//! `POST /v1/files` as a multipart form: the file in its `file` part and
//! the source metadata in a `source_metadata` part, in either order,
//! strictly decoded like the `X-Mem-Source-Metadata` header; a malformed
//! form or one past the upload limit stores nothing.

use crate::support::{Server, Ws, http, token};
use serde_json::Value;

const BOUNDARY: &str = "mem-host-form-boundary";

/// A multipart body of `parts` (`(name, file name, bytes)`).
fn form(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, file_name, bytes) in parts {
        b.extend(format!("--{BOUNDARY}\r\n").bytes());
        match file_name {
            Some(f) => b.extend(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .bytes(),
            ),
            None => b.extend(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").bytes()),
        }
        b.extend_from_slice(bytes);
        b.extend(b"\r\n");
    }
    b.extend(format!("--{BOUNDARY}--\r\n").bytes());
    b
}

fn post(srv: &Server, secret: &str, path: &str, body: &[u8], header: Option<&str>) -> (u16, Value) {
    let mut req = http()
        .post(srv.url(&format!("/v1/files?path={path}")))
        .header("authorization", &format!("Bearer {secret}"))
        .header(
            "content-type",
            &format!("multipart/form-data; boundary={BOUNDARY}"),
        );
    if let Some(h) = header {
        req = req.header("x-mem-source-metadata", h);
    }
    let resp = req.send(body).unwrap();
    let status = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A refused form: what it is, its body, a source header, the status and
/// the code it must get.
type Refused<'a> = (&'a str, Vec<u8>, Option<&'a str>, u16, &'a str);

const SOURCE: &[u8] =
    br#"{"captured_at":"2012-03-04T10:00:00+01:00","place":"Porto","lat":41.1,"lon":-8.6}"#;

#[test]
fn a_form_upload_carries_its_source_metadata_in_either_order() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let secret = token(&ws, "uploader", "read,write", &[]);
    let photo = b"the river at dusk".as_slice();
    for (i, parts) in [
        vec![
            ("source_metadata", None, SOURCE),
            ("file", Some("a.txt"), photo),
        ],
        vec![
            ("file", Some("b.txt"), photo),
            ("source_metadata", None, SOURCE),
        ],
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!("/photos/porto-{i}.txt");
        let (status, body) = post(&srv, &secret, &path, &form(&parts), None);
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["file"]["source"]["place"], "Porto", "{body}");
        assert_eq!(body["file"]["size"], photo.len(), "{body}");
        let info = ws.run(&["info", &path]).ok().json();
        assert_eq!(info["timeline"]["time_source"], "source", "{info}");
        let bytes = ws.run(&["cat", &path]).ok().stdout;
        assert_eq!(bytes, photo, "the file part is stored exactly");
    }
    // Without a source part it is a plain upload.
    let (status, body) = post(
        &srv,
        &secret,
        "/photos/plain.txt",
        &form(&[("file", Some("p.txt"), photo)]),
        None,
    );
    assert_eq!(status, 201, "{body}");
    assert!(
        body["file"].get("source").is_none_or(Value::is_null),
        "{body}"
    );
}

#[test]
fn a_bad_form_is_refused_and_stores_nothing() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &["--max-upload", "64"]);
    let secret = token(&ws, "uploader", "read,write", &[]);
    let photo = b"x".as_slice();
    let cases: Vec<Refused> = vec![
        (
            "hostile source",
            form(&[
                ("source_metadata", None, br#"{"lat":91}"#),
                ("file", Some("a"), photo),
            ]),
            None,
            422,
            "bad_source_metadata",
        ),
        (
            "source twice",
            form(&[
                ("source_metadata", None, SOURCE),
                ("file", Some("a"), photo),
            ]),
            Some(r#"{"place":"Lisbon"}"#),
            422,
            "bad_source_metadata",
        ),
        (
            "no file",
            form(&[("source_metadata", None, SOURCE)]),
            None,
            400,
            "bad_request",
        ),
        (
            "unknown part",
            form(&[("file", Some("a"), photo), ("note", None, b"hi")]),
            None,
            400,
            "bad_request",
        ),
        (
            "file twice",
            form(&[("file", Some("a"), photo), ("file", Some("b"), photo)]),
            None,
            400,
            "bad_request",
        ),
        (
            "past the upload limit",
            form(&[("file", Some("a"), &[b'y'; 200])]),
            None,
            413,
            "payload_too_large",
        ),
        ("not a form", b"--nope".to_vec(), None, 400, "bad_request"),
    ];
    for (what, body, header, status, code) in cases {
        let (got, answer) = post(&srv, &secret, "/in/refused.txt", &body, header);
        assert_eq!(got, status, "{what}: {answer}");
        assert_eq!(answer["code"], code, "{what}: {answer}");
        assert!(
            answer["hint"].as_str().is_some_and(|h| !h.is_empty()),
            "{what}"
        );
    }
    ws.run(&["info", "/in/refused.txt"]).fails("not_found", 2);
}
