//! The web page's owner views over plain HTTP: a long folder paged with
//! cursors, bundles checked and imported, plugins installed and removed,
//! the status page's queue, index and budgets, and today's calls per
//! token. Each write is also tried forged (foreign origin, no CSRF token)
//! and by a token that may not do it, and must then change nothing.

use crate::support::{Server, Ws, http, p, token};
use crate::web::{csrf_of, get_page, link, no_redirects, post_form, sign_in};

/// POSTs a multipart form (`fields` first, as the page's forms put the
/// CSRF token first, then `files`); the status and the page.
fn post_multipart(
    srv: &Server,
    cookie: &str,
    origin: Option<&str>,
    path: &str,
    fields: &[(&str, &str)],
    files: &[(&str, &str, &[u8])],
) -> (u16, String) {
    const B: &str = "mem-host-test-boundary-5c1e";
    let mut body = Vec::new();
    for (k, v) in fields {
        body.extend_from_slice(
            format!("--{B}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    for (k, name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{B}\r\nContent-Disposition: form-data; name=\"{k}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{B}--\r\n").as_bytes());
    let mut req = no_redirects()
        .post(&srv.url(path))
        .header("cookie", cookie)
        .header("content-type", format!("multipart/form-data; boundary={B}"));
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    match req.send(&body[..]) {
        Ok(mut r) => (
            r.status().as_u16(),
            r.body_mut().read_to_string().unwrap_or_default(),
        ),
        // A refusal may come before the upload was read; the client then
        // sees its send break instead of the answer.
        Err(ureq::Error::Io(_)) => (0, String::new()),
        Err(e) => panic!("POST {path}: {e}"),
    }
}

/// The names a drive page lists, in order.
fn listed(page: &str) -> Vec<String> {
    page.split("<tr><td><a href=\"/drive")
        .skip(1)
        .map(|row| {
            let at = row.find('>').unwrap() + 1;
            row[at..row[at..].find('<').unwrap() + at].to_string()
        })
        .collect()
}

#[test]
fn a_long_folder_pages_on_the_drive_with_cursors() {
    let ws = Ws::new();
    for d in ["c", "a", "b"] {
        ws.run(&["mkdir", &format!("/big/{d}"), "--parents"]).ok();
    }
    ws.run(&["mkdir", "/big/a/deep/er", "--parents"]).ok();
    for f in ["y.md", "x.md"] {
        let local = ws.write(f, b"# note\n");
        ws.run(&["put", p(&local), "--to", "/big"]).ok();
    }
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let mut names = Vec::new();
    let mut next = "/drive?path=%2Fbig&limit=2".to_string();
    let mut pages = 0;
    loop {
        let (code, page) = get_page(&srv, &cookie, &next);
        assert_eq!(code, 200, "{page}");
        let here = listed(&page);
        assert!(here.len() <= 2, "{here:?}");
        names.extend(here);
        pages += 1;
        let Some(at) = page.find(r#"rel="next" href=""#) else {
            break;
        };
        let rest = &page[at + r#"rel="next" href=""#.len()..];
        next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
        assert!(
            next.contains("cursor=") && next.contains("limit=2"),
            "{next}"
        );
    }
    assert_eq!(names, ["a/", "b/", "c/", "x.md", "y.md"]);
    assert_eq!(pages, 3);
    let (code, page) = get_page(&srv, &cookie, "/drive?path=%2Fbig&cursor=nonsense");
    assert_eq!(code, 400, "{page}");
    assert!(page.contains("bad_request"));
    // The CLI's `ls` still shows the whole folder.
    let all = ws.run(&["ls", "/big"]).ok().json();
    assert_eq!(all["entries"].as_array().unwrap().len(), 5, "{all}");
    assert!(all["next_cursor"].is_null(), "{all}");
    // REST pages the same way.
    let owner = token(&ws, "owner", "admin", &[]);
    let mut r = http()
        .get(srv.url("/v1/files?path=/big&limit=4"))
        .header("Authorization", &format!("Bearer {owner}"))
        .call()
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value =
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    crate::schemas::assert_valid("folder-listing", &v);
    assert_eq!(v["entries"].as_array().unwrap().len(), 4);
    assert_eq!(v["next_cursor"], "f:x.md", "{v}");
}

#[test]
fn the_owner_checks_and_imports_a_bundle_and_forged_imports_change_nothing() {
    let source = Ws::new();
    source.remember("The pager rotates on Mondays", "/ops", Some("k1"));
    let bundle = source.path("ws.mem-bundle");
    source.run(&["export", "--out", p(&bundle)]).ok();
    let bytes = std::fs::read(&bundle).unwrap();

    let ws = Ws::new();
    token(&ws, "viewer", "read,search", &[]);
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (_, tasks) = get_page(&srv, &cookie, "/tasks");
    assert!(tasks.contains(r#"id="bundle-in""#), "{tasks}");
    assert!(tasks.contains(r#"value="import""#), "{tasks}");
    let csrf = csrf_of(&tasks);
    let own = Some(srv.base.as_str());
    let file = [("bundle", "ws.mem-bundle", &bytes[..])];
    let memories = || ws.run(&["status"]).ok().json()["memories"].clone();

    // Forged: a foreign origin, no CSRF token, a wrong one.
    let import = [("csrf", csrf.as_str()), ("action", "import")];
    let evil = post_multipart(
        &srv,
        &cookie,
        Some("http://evil.example"),
        "/tasks/bundle",
        &import,
        &file,
    );
    assert!(evil.0 == 403 || evil.0 == 0, "{}", evil.1);
    let bare = post_multipart(
        &srv,
        &cookie,
        own,
        "/tasks/bundle",
        &[("action", "import")],
        &file,
    );
    assert!(bare.0 == 403 || bare.0 == 0, "{}", bare.1);
    let wrong = [("csrf", "0000"), ("action", "import")];
    let wrong = post_multipart(&srv, &cookie, own, "/tasks/bundle", &wrong, &file);
    assert!(wrong.0 == 403 || wrong.0 == 0, "{}", wrong.1);
    assert_eq!(memories(), 0, "nothing imported");

    // Checking shows what the verified manifest holds, and imports nothing.
    let check = [("csrf", csrf.as_str()), ("action", "verify")];
    let (code, page) = post_multipart(&srv, &cookie, own, "/tasks/bundle", &check, &file);
    assert_eq!(code, 200, "{page}");
    assert!(page.contains(r#"id="bundle-counts""#), "{page}");
    assert!(page.contains("memories records</th><td>1</td>"), "{page}");
    assert_eq!(memories(), 0);
    // A file that is no bundle is the error it is, as a page.
    let junk = [("bundle", "junk.bin", &b"not a bundle"[..])];
    let (code, page) = post_multipart(&srv, &cookie, own, "/tasks/bundle", &check, &junk);
    assert!((400..500).contains(&code), "{code} {page}");
    assert!(page.contains(r#"class="error""#), "{page}");

    // A reader may check, is offered no import, and is refused one.
    let (viewer, _) = sign_in(&link(&ws, &srv, &["--token", "viewer"]));
    let (_, vtasks) = get_page(&srv, &viewer, "/tasks");
    assert!(vtasks.contains(r#"id="bundle-in""#), "{vtasks}");
    assert!(!vtasks.contains(r#"value="import""#), "{vtasks}");
    assert!(
        !vtasks.contains(r#"action="/tasks/bundle" class"#),
        "no export form"
    );
    let vcsrf = csrf_of(&vtasks);
    let vimport = [("csrf", vcsrf.as_str()), ("action", "import")];
    let (code, page) = post_multipart(&srv, &viewer, own, "/tasks/bundle", &vimport, &file);
    assert_eq!(code, 403, "{page}");
    assert_eq!(memories(), 0);

    // The owner's import, with its result.
    let (code, page) = post_multipart(&srv, &cookie, own, "/tasks/bundle", &import, &file);
    assert_eq!(code, 200, "{page}");
    assert!(page.contains(r#"id="bundle-result""#), "{page}");
    assert!(page.contains("<dt>Imported</dt><dd>true</dd>"), "{page}");
    assert_eq!(memories(), 1);
    let (code, again) = post_multipart(&srv, &cookie, own, "/tasks/bundle", &import, &file);
    assert_eq!(code, 200, "{again}");
    assert!(again.contains("<dt>Replayed</dt><dd>true</dd>"), "{again}");
}

#[test]
fn plugins_are_installed_granted_and_removed_from_the_page() {
    let ws = Ws::new();
    let fixture = mem_bundled::fixture("wants-kv").expect("fixture built");
    let wasm = std::fs::read(fixture.wasm_path()).unwrap();
    let manifest = std::fs::read(fixture.manifest_path()).unwrap();
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (code, page) = get_page(&srv, &cookie, "/plugins");
    assert_eq!(code, 200);
    assert!(page.contains(r#"id="plugin-text""#), "{page}");
    assert!(page.contains("<dt>Digest</dt>"), "{page}");
    assert!(page.contains(r#"id="install""#), "{page}");
    let csrf = csrf_of(&page);
    let own = Some(srv.base.as_str());
    let files = [
        ("wasm", "plugin.wasm", &wasm[..]),
        ("manifest", "manifest.json", &manifest[..]),
    ];
    let installed = || ws.run(&["plugin", "inspect", "wants-kv"]).code == 0;

    let evil = post_multipart(
        &srv,
        &cookie,
        Some("http://evil.example"),
        "/plugins/install",
        &[("csrf", &csrf)],
        &files,
    );
    assert!(evil.0 == 403 || evil.0 == 0, "{}", evil.1);
    let bare = post_multipart(&srv, &cookie, own, "/plugins/install", &[], &files);
    assert!(bare.0 == 403 || bare.0 == 0, "{}", bare.1);
    assert!(!installed(), "a forged install installs nothing");

    // Bytes that do not match the manifest's digest are refused.
    let mut tampered = wasm.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    let bad = [
        ("wasm", "plugin.wasm", &tampered[..]),
        ("manifest", "manifest.json", &manifest[..]),
    ];
    let (code, page) = post_multipart(
        &srv,
        &cookie,
        own,
        "/plugins/install",
        &[("csrf", &csrf)],
        &bad,
    );
    assert!((400..500).contains(&code), "{code} {page}");
    assert!(page.contains(r#"class="error""#), "{page}");
    assert!(!installed());

    let (code, page) = post_multipart(
        &srv,
        &cookie,
        own,
        "/plugins/install",
        &[("csrf", &csrf)],
        &files,
    );
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("Installed plugin wants-kv"), "{page}");
    assert!(page.contains("Grant kv"), "{page}");
    assert!(installed());

    let grant = [
        ("csrf", csrf.as_str()),
        ("name", "wants-kv"),
        ("capability", "kv"),
    ];
    assert_eq!(post_form(&srv, &cookie, own, "/plugins/grant", &grant), 303);
    let info = ws.run(&["plugin", "inspect", "wants-kv"]).ok().json();
    assert!(
        info["granted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "kv"),
        "{info}"
    );

    let remove = [("csrf", csrf.as_str()), ("name", "wants-kv")];
    assert_eq!(
        post_form(
            &srv,
            &cookie,
            Some("http://evil.example"),
            "/plugins/remove",
            &remove
        ),
        403
    );
    assert!(installed(), "a forged remove removes nothing");
    assert_eq!(
        post_form(&srv, &cookie, own, "/plugins/remove", &remove),
        200
    );
    assert!(!installed());
    // A plugin the configuration still names is refused without force.
    let text = [("csrf", csrf.as_str()), ("name", "role")];
    let mut r = no_redirects()
        .post(&srv.url("/plugins/remove"))
        .header("cookie", &cookie)
        .header("origin", &srv.base)
        .send_form(text.iter().copied())
        .unwrap();
    let page = r.body_mut().read_to_string().unwrap();
    if r.status().as_u16() != 200 {
        assert_eq!(r.status().as_u16(), 409, "{page}");
        assert!(page.contains("invalid_state"), "{page}");
    }
}

#[test]
fn the_status_page_shows_the_queue_the_index_and_budget_usage() {
    let ws = Ws::new();
    crate::governance::set_config(&ws, "[budgets]\nkinds = { note = 2000 }\n");
    let local = ws.write("plan.md", b"# Plan\n\nShip it.\n");
    ws.run(&["put", p(&local), "--to", "/docs"]).ok();
    ws.run(&[
        "remember",
        "Ship the plan on Friday",
        "--kind",
        "note",
        "--path",
        "/docs",
        "--idempotency-key",
        "status-1",
    ])
    .ok();
    token(&ws, "viewer", "read,search", &[]);
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (code, page) = get_page(&srv, &cookie, "/status");
    assert_eq!(code, 200, "{page}");
    assert!(page.contains(r#"id="queue""#), "{page}");
    assert!(
        page.contains(r#"<tr data-state="done"><th scope="row">done</th><td>1</td>"#),
        "{page}"
    );
    assert!(page.contains(r#"id="index""#), "{page}");
    assert!(page.contains("<dt>Documents</dt>"), "{page}");
    assert!(page.contains(r#"<meter min="0" max="2000""#), "{page}");
    assert!(page.contains("kind:note"), "{page}");
    // The first-party detectors are configured: how far relations are
    // computed behind the event log.
    assert!(page.contains(r#"id="relations""#), "{page}");
    assert!(page.contains("<dt>Computed up to event</dt>"), "{page}");
    // Nothing failed: no retry offered.
    assert!(!page.contains("/status/reindex"), "{page}");

    let (viewer, _) = sign_in(&link(&ws, &srv, &["--token", "viewer"]));
    let (code, vpage) = get_page(&srv, &viewer, "/status");
    assert_eq!(code, 200, "{vpage}");
    assert!(vpage.contains(r#"id="queue""#));
    let vcsrf = csrf_of(&vpage);
    let retry = [("csrf", vcsrf.as_str()), ("mode", "failed")];
    assert_eq!(
        post_form(&srv, &viewer, Some(&srv.base), "/status/reindex", &retry),
        403
    );
    let csrf = csrf_of(&page);
    let retry = [("csrf", csrf.as_str()), ("mode", "pending")];
    assert_eq!(
        post_form(
            &srv,
            &cookie,
            Some("http://evil.example"),
            "/status/reindex",
            &retry
        ),
        403
    );
    assert_eq!(
        post_form(&srv, &cookie, Some(&srv.base), "/status/reindex", &retry),
        200
    );
}

#[test]
fn the_tokens_page_shows_todays_calls_of_a_token_without_a_quota() {
    let ws = Ws::new();
    let secret = token(&ws, "bot", "read,search", &[]);
    let srv = Server::start(&ws, &[]);
    for _ in 0..3 {
        let r = http()
            .get(srv.url("/v1/status"))
            .header("Authorization", &format!("Bearer {secret}"))
            .call()
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (_, page) = get_page(&srv, &cookie, "/tokens");
    let row = page
        .split("<tr>")
        .find(|r| r.starts_with("<td>bot</td>"))
        .unwrap_or_else(|| panic!("no row for bot: {page}"));
    let cells: Vec<&str> = row.split("<td>").collect();
    assert!(cells[6].starts_with("3</td>"), "calls today: {row}");
    let listed = ws.run(&["token", "list"]).ok().json();
    assert_eq!(listed[0]["calls_today"], 3, "{listed}");
}
