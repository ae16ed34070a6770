//! The web page end to end: its session and CSRF rules over plain HTTP,
//! and a person's walk through it in headless Chromium (WebDriver), with
//! a screenshot of each page in `target/test-artifacts/web`.

use crate::support::{Server, Ws, token};
use crate::webdriver::{Browser, installed};
use std::path::PathBuf;
use std::time::Duration;

/// A sign-in link from `mem-host web` (through the running server).
pub(crate) fn link(ws: &Ws, srv: &Server, extra: &[&str]) -> String {
    let mut args = vec!["web", "--url", &srv.base];
    args.extend_from_slice(extra);
    let out = ws.run(&args).ok().json();
    crate::schemas::assert_valid("web-signin", &out);
    out["url"].as_str().unwrap().to_string()
}

pub(crate) fn no_redirects() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// Visits a sign-in link; the session cookie's `name=value`, and the
/// Set-Cookie header whole.
pub(crate) fn sign_in(url: &str) -> (String, String) {
    let r = no_redirects().get(url).call().unwrap();
    assert_eq!(r.status().as_u16(), 303, "sign-in redirects");
    let set = r
        .headers()
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap()
        .to_string();
    let pair = set.split(';').next().unwrap().to_string();
    (pair, set)
}

pub(crate) fn get_page(srv: &Server, cookie: &str, path: &str) -> (u16, String) {
    let mut r = no_redirects()
        .get(&srv.url(path))
        .header("cookie", cookie)
        .call()
        .unwrap();
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}

/// The CSRF token a page's forms carry.
pub(crate) fn csrf_of(html: &str) -> String {
    let at = html
        .find(r#"name="csrf" value=""#)
        .expect("a form with a CSRF token");
    let rest = &html[at + r#"name="csrf" value=""#.len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

pub(crate) fn post_form(
    srv: &Server,
    cookie: &str,
    origin: Option<&str>,
    path: &str,
    fields: &[(&str, &str)],
) -> u16 {
    let mut req = no_redirects().post(&srv.url(path)).header("cookie", cookie);
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    req.send_form(fields.iter().copied())
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn sign_in_links_are_single_use_and_sessions_end_at_sign_out() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let url = link(&ws, &srv, &[]);
    let (cookie, set) = sign_in(&url);
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(flag), "cookie lacks {flag}: {set}");
    }
    // The link is spent: a second visit signs nobody in.
    let r = no_redirects().get(&url).call().unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert!(r.headers().get("set-cookie").is_none());

    let r = no_redirects()
        .get(&srv.url("/memories"))
        .header("cookie", &cookie)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");

    // A forged cookie, and no cookie, see the sign-in page, not content.
    assert_eq!(get_page(&srv, "mem_session=forged", "/memories").0, 401);
    assert_eq!(get_page(&srv, "", "/memories").0, 401);

    let (_, page) = get_page(&srv, &cookie, "/memories");
    let csrf = csrf_of(&page);
    assert_eq!(
        post_form(
            &srv,
            &cookie,
            Some(&srv.base),
            "/signout",
            &[("csrf", &csrf)]
        ),
        303
    );
    assert_eq!(get_page(&srv, &cookie, "/memories").0, 401, "signed out");
}

#[test]
fn forged_posts_are_refused_and_change_nothing() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let id = ws.remember("Deploys go out on Tuesdays", "/ops", Some("k1"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (_, page) = get_page(&srv, &cookie, &format!("/memories/{id}"));
    let csrf = csrf_of(&page);
    let action = format!("/memories/{id}/archive");
    let v = [("expected_version", "1")];
    let with = |c: &str| [("csrf", c.to_string()), ("expected_version", "1".into())];
    let own = Some(srv.base.as_str());
    // No CSRF token, a wrong one, a foreign Origin, no Origin: refused.
    assert_eq!(post_form(&srv, &cookie, own, &action, &v), 403);
    let wrong = with("0".repeat(64).as_str());
    let wrong: Vec<(&str, &str)> = wrong.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(post_form(&srv, &cookie, own, &action, &wrong), 403);
    let right = with(&csrf);
    let right: Vec<(&str, &str)> = right.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(
        post_form(&srv, &cookie, Some("http://evil.example"), &action, &right),
        403
    );
    assert_eq!(post_form(&srv, &cookie, None, &action, &right), 403);
    // Another session's token is not this session's.
    let (other, _) = sign_in(&link(&ws, &srv, &[]));
    let other_csrf = csrf_of(&get_page(&srv, &other, "/memories").1);
    assert_ne!(other_csrf, csrf);
    let cross = with(&other_csrf);
    let cross: Vec<(&str, &str)> = cross.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(post_form(&srv, &cookie, own, &action, &cross), 403);
    let m = ws.run(&["memory", "get", &id]).ok().json();
    assert_eq!(m["lifecycle"], "active", "nothing changed: {m}");

    // The genuine form passes; replaying its stale version is the conflict it is.
    assert_eq!(post_form(&srv, &cookie, own, &action, &right), 303);
    let m = ws.run(&["memory", "get", &id]).ok().json();
    assert_eq!(m["lifecycle"], "archived");
    let mut r = no_redirects()
        .post(&srv.url(&action))
        .header("cookie", &cookie)
        .header("origin", &srv.base)
        .send_form(right.iter().copied())
        .unwrap();
    assert_eq!(r.status().as_u16(), 409);
    assert!(
        r.body_mut()
            .read_to_string()
            .unwrap()
            .contains("version_conflict")
    );
}

#[test]
fn a_read_only_token_is_offered_no_writes_and_refused_them() {
    let ws = Ws::new();
    let srv = Server::start(&ws, &[]);
    let id = ws.remember("The staging host is blue", "/ops", Some("k1"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    token(&ws, "viewer", "read,search", &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &["--token", "viewer"]));
    let (code, page) = get_page(&srv, &cookie, &format!("/memories/{id}"));
    assert_eq!(code, 200);
    assert!(page.contains("The staging host is blue"));
    assert!(page.contains("Signed in as token viewer"));
    // The only form is signing out.
    assert_eq!(page.matches("<form method=\"post\"").count(), 1, "{page}");
    assert!(!page.contains("Forget"));
    let (_, ledger) = get_page(&srv, &cookie, "/memories");
    assert!(!ledger.contains("<textarea"), "no remember form");
    assert!(
        !ledger.contains("href=\"/review\""),
        "no review for a reader"
    );
    let (_, drive) = get_page(&srv, &cookie, "/drive");
    assert!(!drive.contains("type=\"file\""), "no upload");
    // The server refuses the write anyway, through the door.
    let csrf = csrf_of(&page);
    let code = post_form(
        &srv,
        &cookie,
        Some(&srv.base),
        "/memories",
        &[
            ("csrf", &csrf),
            ("content", "sneaky"),
            ("kind", "fact"),
            ("path", "/ops"),
        ],
    );
    assert_eq!(code, 403);
    for admin_only in ["/review", "/audit", "/tokens", "/plugins"] {
        assert_eq!(get_page(&srv, &cookie, admin_only).0, 403, "{admin_only}");
    }
    // Exporting a bundle is the owner's act: refused to the reader.
    assert_eq!(get_page(&srv, &cookie, "/tasks/bundle").0, 403);
    let (owner, _) = sign_in(&link(&ws, &srv, &[]));
    let mut r = no_redirects()
        .get(&srv.url("/tasks/bundle?scope=%2Fops"))
        .header("cookie", &owner)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "application/zstd");
    let bytes = r.body_mut().read_to_vec().unwrap();
    let bundle = ws.write("ops.mem-bundle", &bytes);
    let verified = ws.run(&["verify", crate::support::p(&bundle)]).ok().json();
    assert_eq!(verified["ok"], true, "{verified}");
    // Revoking the token ends its session.
    ws.run(&["token", "revoke", "viewer"]).ok();
    assert_eq!(get_page(&srv, &cookie, "/memories").0, 401);
}

#[test]
fn the_ledger_pages_with_cursors_and_escapes_what_it_shows() {
    let ws = Ws::new();
    let lines: String = (0..53)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({
                    "content": format!("<b>note {i}</b>"), "kind": "fact",
                    "path": "/p", "idempotency_key": format!("k{i}"),
                })
            )
        })
        .collect();
    let file = ws.write("m.jsonl", lines.as_bytes());
    ws.run(&["remember", "--jsonl", crate::support::p(&file)])
        .ok();
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (_, first) = get_page(&srv, &cookie, "/memories?path=%2Fp");
    assert_eq!(first.matches("<tr><td>").count(), 50);
    assert!(
        first.contains("&lt;b&gt;note 52&lt;/b&gt;"),
        "newest first, escaped"
    );
    assert!(!first.contains("<b>note"), "no markup from content");
    let at = first.find(r#"rel="next" href=""#).expect("a next page");
    let rest = &first[at + r#"rel="next" href=""#.len()..];
    let next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
    assert!(
        next.contains("path=%2Fp") && next.contains("cursor="),
        "{next}"
    );
    let (_, second) = get_page(&srv, &cookie, &next);
    assert_eq!(second.matches("<tr><td>").count(), 3);
    assert!(second.contains("note 0") && !second.contains("rel=\"next\""));
    // A forged cursor is the operation's structured error, not a 500.
    let (code, bad) = get_page(&srv, &cookie, "/memories?cursor=nope");
    assert_eq!(code, 400);
    assert!(
        bad.contains("bad_request") && bad.contains("/cursor"),
        "{bad}"
    );
}

/// A file's page shows what processing made of it (escaped), pages its
/// chunks with their locators, and has a place for its relations.
#[test]
fn the_file_page_shows_chunks_with_locators_entities_and_relations() {
    let ws = Ws::new();
    let mut md = String::from("---\ntitle: Big\npeople: [<i>Ada</i>]\n---\n");
    for i in 0..25 {
        md.push_str(&format!("## Part {i}\n\nText of part {i}.\n\n"));
    }
    let src = ws.write("big.md", md.as_bytes());
    let put = ws
        .run(&["put", crate::support::p(&src), "--to", "/docs"])
        .ok()
        .json();
    let id = put["file"]["id"].as_str().unwrap().to_string();
    let info = ws.run(&["info", &id, "--chunks-limit", "100"]).ok().json();
    let count = info["processed"]["chunk_count"].as_u64().unwrap();
    assert!(count > 20, "{count} chunks");
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (code, page) = get_page(&srv, &cookie, &format!("/drive/file?target={id}"));
    assert_eq!(code, 200);
    assert_eq!(
        page.matches(r#"<tr id="chunk-"#).count(),
        20,
        "a page of chunks"
    );
    let first = info["processed"]["chunks"][0]["locator"].as_str().unwrap();
    assert!(page.contains(first), "locators shown");
    assert!(
        page.contains("&lt;i&gt;Ada&lt;/i&gt;") && !page.contains("<i>Ada"),
        "entities escaped"
    );
    assert!(page.contains(r#"id="rel-h""#), "a relations section");
    let at = page
        .find(r#"rel="next" href=""#)
        .expect("a next page of chunks");
    let rest = &page[at + r#"rel="next" href=""#.len()..];
    let next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
    let (_, second) = get_page(&srv, &cookie, &next);
    assert_eq!(
        second.matches(r#"<tr id="chunk-"#).count() as u64,
        count - 20,
        "the rest"
    );
    let last = info["processed"]["chunks"][(count - 1) as usize]["locator"]
        .as_str()
        .unwrap();
    assert!(second.contains(last) && !second.contains(r#"rel="next""#));
}

/// The ledger's agent and pinned filters narrow it and travel with the
/// next-page link; a bad pinned value is the operation's error.
#[test]
fn the_ledger_filters_by_agent_and_pinned() {
    let ws = Ws::new();
    let lines: String = (0..70)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({
                    "content": format!("note {i}"), "kind": "fact", "path": "/p",
                    "idempotency_key": format!("k{i}"),
                    "agent_id": if i % 5 == 0 { "scout" } else { "other" },
                })
            )
        })
        .collect();
    let file = ws.write("m.jsonl", lines.as_bytes());
    ws.run(&["remember", "--jsonl", crate::support::p(&file)])
        .ok();
    let pin = ws.remember("pinned one", "/q", None);
    ws.run(&[
        "memory",
        "feedback",
        pin["id"].as_str().unwrap(),
        "pin",
        "--expected-version",
        "1",
    ])
    .ok();
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (_, scout) = get_page(&srv, &cookie, "/memories?agent=scout");
    assert_eq!(scout.matches("<tr><td>").count(), 14, "one in five");
    assert!(scout.contains("note 65") && !scout.contains("note 66"));
    let (_, other) = get_page(&srv, &cookie, "/memories?agent=other");
    let at = other.find(r#"rel="next" href=""#).expect("a next page");
    let rest = &other[at + r#"rel="next" href=""#.len()..];
    let next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
    assert!(next.contains("agent=other"), "{next}");
    let (_, second) = get_page(&srv, &cookie, &next);
    assert_eq!(second.matches("<tr><td>").count(), 6, "the rest of the 56");
    let (_, pinned) = get_page(&srv, &cookie, "/memories?pinned=true");
    assert_eq!(pinned.matches("<tr><td>").count(), 1);
    assert!(pinned.contains("pinned one"));
    let (code, bad) = get_page(&srv, &cookie, "/memories?pinned=maybe");
    assert_eq!(code, 400, "{bad}");
}

/// The audit page filters by action and pages to older entries.
#[test]
fn the_audit_page_filters_by_action_and_pages_older() {
    let ws = Ws::new();
    for i in 0..3 {
        ws.remember(&format!("fact {i}"), "/a", None);
    }
    let srv = Server::start(&ws, &[]);
    let (cookie, _) = sign_in(&link(&ws, &srv, &[]));
    let (_, first) = get_page(&srv, &cookie, "/audit?action=remember&limit=2");
    assert_eq!(first.matches("<tr><td>").count(), 2);
    assert!(first.contains(r#"id="chain""#));
    let at = first.find(r#"rel="next" href=""#).expect("older entries");
    let rest = &first[at + r#"rel="next" href=""#.len()..];
    let next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
    assert!(
        next.contains("action=remember") && next.contains("before="),
        "{next}"
    );
    let (_, older) = get_page(&srv, &cookie, &next);
    assert_eq!(older.matches("<tr><td>").count(), 1, "the oldest remember");
    assert!(older.contains("<td>1</td>") || older.contains("<td>remember</td>"));
    let (code, bad) = get_page(&srv, &cookie, "/audit?before=0");
    assert_eq!(code, 400, "{bad}");
}

pub(crate) fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts")
        .join("web");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn review_gate(ws: &Ws) {
    let path = ws.home().join("mem.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    if let Some(start) = text.find("[gate]") {
        let end = text[start + 1..]
            .find("\n[")
            .map_or(text.len(), |e| start + 1 + e + 1);
        text.replace_range(start..end, "");
    }
    text.push_str("\n[gate]\ndefault = \"auto\"\nkinds = { decision = \"review\" }\n");
    std::fs::write(&path, text).unwrap();
}

#[test]
fn a_person_walks_the_page_in_a_real_browser() {
    let Some((chromium, driver)) = installed() else {
        eprintln!(
            "SKIPPED: chromium and chromedriver are not installed (scripts/setup installs them)"
        );
        return;
    };
    let shots = artifacts();
    let ws = Ws::new();
    review_gate(&ws);
    let srv = Server::start(&ws, &[]);
    let b = Browser::start(&chromium, &driver);
    // Each page at a desktop's 1280x800 and a phone's 390x844.
    let shot = |name: &str| {
        b.screenshot(&shots.join(format!("{name}-1280x800.png")));
        b.resize(390, 844);
        b.screenshot(&shots.join(format!("{name}-390x844.png")));
        b.resize(1280, 800);
    };

    // Sign in: the link lands on the ledger with an HttpOnly, Strict cookie.
    b.goto(&link(&ws, &srv, &[]));
    assert!(b.url().ends_with("/memories"), "{}", b.url());
    let cookies = b.cookies();
    let session = cookies
        .iter()
        .find(|c| c["name"] == "mem_session")
        .expect("session cookie");
    assert_eq!(session["httpOnly"], true);
    assert_eq!(session["sameSite"], "Strict");
    shot("01-memories-empty");

    // Upload a Markdown file and see it processed.
    let md = ws.write(
        "runbook.md",
        b"---\ntags: [ops]\n---\n# Runbook\n\nRestart the queue worker with `systemctl restart qw`.\n",
    );
    b.goto(&srv.url("/drive"));
    b.type_into("input[type=file]", crate::support::p(&md));
    b.submit("form.upload button[type=submit]");
    b.wait_for("#index-status[data-status=done]", Duration::from_secs(60));
    assert!(b.text("h1").contains("runbook.md"));
    assert!(!b.all("#chunks code").is_empty(), "{}", b.source());
    assert!(b.text("#chunks").contains("mem://file/"), "locators shown");
    shot("02-file-processed");
    // What the processor suggested waits for a person: accept it here.
    assert!(b.text("#annotations").contains("ops"), "{}", b.source());
    b.click("#annotations tr[data-status=pending] button[value=accept]");
    b.wait_for(
        "#annotations tr[data-status=accepted]",
        Duration::from_secs(10),
    );
    shot("02-suggestion-accepted");
    b.goto(&srv.url("/drive"));
    assert!(b.source().contains("runbook.md"));
    // Folder rules: create, move into it, and a refused move shown as its error.
    b.type_into("#mkdir input[name=name]", "ops");
    b.submit("#mkdir button");
    b.type_into("#move input[name=from]", "/runbook.md");
    b.type_into("#move input[name=to]", "/ops/runbook.md");
    b.submit("#move button");
    assert!(b.source().contains("ops/"), "{}", b.source());
    b.type_into("#move input[name=from]", "/ops");
    b.type_into("#move input[name=to]", "/ops/inner");
    b.submit("#move button");
    assert!(b.all("section.error .code").len() == 1, "{}", b.source());
    b.goto(&srv.url("/drive"));
    shot("03-drive");

    // Write a memory.
    b.goto(&srv.url("/memories"));
    b.type_into(
        "#remember textarea[name=content]",
        "The queue worker restarts cleanly at night",
    );
    b.type_into("#remember input[name=path]", "/ops");
    b.submit("#remember button[type=submit]");
    assert!(b.url().contains("/memories/mem"), "{}", b.source());
    assert!(b.text("blockquote.content").contains("restarts cleanly"));
    let memory_url = b.url();
    shot("04-memory");

    // Search, then open the context pack: citations link to their sources.
    b.goto(&srv.url("/search?q=queue+worker"));
    assert!(!b.all("li.hit").is_empty(), "{}", b.source());
    shot("05-search");
    b.submit("a[href^='/context?q=']");
    assert!(!b.all("a.cite").is_empty(), "{}", b.source());
    shot("06-context");
    b.submit("a.cite");
    assert!(
        b.url().contains("/memories/") || b.url().contains("/drive/file"),
        "{}",
        b.url()
    );

    // The timeline of this year holds the runbook and the memory.
    let stored = ws.run(&["info", "/ops/runbook.md"]).ok().json();
    let year = &stored["created_at"].as_str().unwrap()[..4];
    b.goto(&srv.url(&format!("/timeline?period={year}")));
    assert!(b.text("#timeline").contains("runbook.md"), "{}", b.source());
    shot("06-timeline");

    // A decision is queued by the gate; approve what is shown.
    b.goto(&srv.url("/memories"));
    b.type_into(
        "#remember textarea[name=content]",
        "We freeze deploys in December",
    );
    b.type_into("#remember input[name=kind]", "decision");
    b.type_into("#remember input[name=path]", "/ops");
    b.submit("#remember button[type=submit]");
    assert!(b.url().contains("/review/"), "{}", b.url());
    assert!(b.source().contains("We freeze deploys in December"));
    shot("07-proposal");
    b.submit("form[action$='/approve'] button");
    assert!(b.text("main").contains("approved"), "{}", b.source());
    b.goto(&srv.url("/review"));
    assert!(b.text("main").contains("Nothing waits"));
    shot("07-review-queue");

    // Forget a memory through the confirmation.
    b.goto(&memory_url);
    b.submit("a.danger");
    shot("08-forget-confirm");
    b.type_into("textarea[name=reason]", "wrong about the schedule");
    b.click("input[name=confirm]");
    b.submit("form[action$='/forget'] button[type=submit]");
    assert!(b.text("main").contains("Forgotten"), "{}", b.source());
    assert!(!b.source().contains("restarts cleanly"));

    // The audit chain is verified.
    b.goto(&srv.url("/audit"));
    assert!(
        b.text("#chain").contains("Chain verified"),
        "{}",
        b.source()
    );
    shot("09-audit");
    b.goto(&srv.url("/status"));
    assert!(b.text("#queue").contains("done"), "{}", b.source());
    assert!(!b.all("#index").is_empty(), "{}", b.source());
    shot("09-status");

    // A task's checkpoints and what resuming it hands an agent.
    let doc = serde_json::json!({
        "version": "handoff.v1",
        "goal": "Move ops to the blue pipeline",
        "next_steps": ["switch the DNS"],
    });
    let input = ws.write("h.json", doc.to_string().as_bytes());
    ws.run(&[
        "checkpoint",
        "--task",
        "ops-move",
        "--input",
        crate::support::p(&input),
        "--idempotency-key",
        "c1",
        "--scope",
        "/ops",
    ])
    .ok();
    b.goto(&srv.url("/tasks"));
    b.submit("a[href^='/tasks/task?key=ops-move']");
    let task = b.text("main");
    assert!(
        task.contains("Resume preview") && task.contains("switch the DNS"),
        "{task}"
    );
    shot("10-task");

    // A bundle checked, with what its verified manifest holds; an import
    // into this (not empty) workspace is refused and shown as its error.
    let bundle = ws.path("ws.mem-bundle");
    ws.run(&["export", "--out", crate::support::p(&bundle)])
        .ok();
    b.goto(&srv.url("/tasks"));
    b.type_into("#bundle-in input[type=file]", crate::support::p(&bundle));
    b.submit("#bundle-in button[value=verify]");
    assert!(
        b.text("#bundle-counts").contains("memories records"),
        "{}",
        b.source()
    );
    shot("10-bundle-checked");
    b.goto(&srv.url("/tasks"));
    b.type_into("#bundle-in input[type=file]", crate::support::p(&bundle));
    b.submit("#bundle-in button[value=import]");
    assert_eq!(b.all("section.error .code").len(), 1, "{}", b.source());

    // Plugins with their capabilities: one installed from its .wasm and
    // manifest, granted what it asks for, then removed.
    let fixture = mem_bundled::fixture("wants-kv").expect("fixture built");
    b.goto(&srv.url("/plugins"));
    assert!(
        b.text("#plugin-text").contains("processor"),
        "{}",
        b.source()
    );
    shot("11-plugins");
    b.type_into(
        "#install input[name=wasm]",
        crate::support::p(&fixture.wasm_path()),
    );
    b.type_into(
        "#install input[name=manifest]",
        crate::support::p(&fixture.manifest_path()),
    );
    b.submit("#install button[type=submit]");
    assert!(
        b.text("main").contains("Installed plugin wants-kv"),
        "{}",
        b.source()
    );
    shot("11-plugin-installed");
    b.submit("#plugin-wants-kv form[action='/plugins/grant'] button");
    assert!(
        b.text("#plugin-wants-kv .granted").contains("kv"),
        "{}",
        b.source()
    );
    b.submit("#plugin-wants-kv form.remove button");
    assert!(b.text("main").contains("Removed plugin wants-kv"));

    // A token created (its secret shown once) and revoked.
    b.goto(&srv.url("/tokens"));
    b.type_into("#new-token input[name=name]", "ci-bot");
    b.submit("#new-token button[type=submit]");
    assert!(b.text("#secret").starts_with("memtok_"), "{}", b.source());
    shot("12-token-created");
    b.submit("form[action='/tokens/revoke'] button");
    assert!(b.text("main").contains("revoked"), "{}", b.source());
    let listed = ws.run(&["token", "list"]).ok().json();
    assert!(listed[0]["revoked_at"].is_string(), "{listed}");

    b.goto(&srv.url("/memories?lifecycle=all"));
    shot("13-memories");

    // A read-only token sees no write controls.
    b.submit("form[action='/signout'] button");
    token(&ws, "viewer", "read,search", &[]);
    b.goto(&link(&ws, &srv, &["--token", "viewer"]));
    b.goto(&srv.url("/memories?lifecycle=all"));
    assert!(b.all("textarea").is_empty());
    b.submit("table.ledger a");
    assert!(b.all("div.actions").is_empty(), "{}", b.source());
    shot("14-read-only");
    b.goto(&srv.url("/tasks"));
    assert!(b.all("#bundle").is_empty(), "no export: {}", b.source());
    assert!(b.all("button[value=import]").is_empty(), "no import");
    assert!(
        !b.all("button[value=verify]").is_empty(),
        "a reader may check"
    );
    b.goto(&srv.url("/status"));
    assert!(b.all("form[action='/status/reindex']").is_empty());
    b.goto(&srv.url("/drive"));
    assert!(b.all("input[type=file]").is_empty(), "no upload");
    assert!(b.all("#mkdir, #move, #remove").is_empty(), "no organising");
    shot("15-read-only-drive");

    // A forged POST with the browser's own session cookie is refused.
    let cookie = b
        .cookies()
        .into_iter()
        .find(|c| c["name"] == "mem_session")
        .map(|c| format!("mem_session={}", c["value"].as_str().unwrap_or("")))
        .unwrap();
    let code = post_form(
        &srv,
        &cookie,
        Some("http://evil.example"),
        "/signout",
        &[("csrf", "guess")],
    );
    assert_eq!(code, 403);
}
