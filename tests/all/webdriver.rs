//! A small W3C WebDriver client over the HTTP client the tests already
//! use, driving Debian's headless Chromium through `chromedriver`. The
//! protocol is JSON over loopback HTTP; the few commands the web test needs
//! do not justify a second HTTP stack.

use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn which(name: &str) -> Option<String> {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !path.is_empty()).then_some(path)
}

/// Chromium and its driver, when both are installed (`scripts/setup`).
pub fn installed() -> Option<(String, String)> {
    let browser = which("chromium").or_else(|| which("chromium-browser"))?;
    let driver = which("chromedriver")?;
    Some((browser, driver))
}

/// A running chromedriver with one headless browser session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: ureq::Agent,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    pub fn start(browser: &str, driver: &str) -> Browser {
        let port = free_port();
        let child = Command::new(driver)
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = crate::support::http();
        let ready = Instant::now();
        loop {
            let up = http
                .get(&format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if up {
                break;
            }
            assert!(
                ready.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut b = Browser {
            driver: child,
            base,
            session: String::new(),
            http,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,800"],
            },
        }}});
        let v = b.send("post", "/session", Some(caps));
        b.session = v["sessionId"].as_str().unwrap().to_string();
        b
    }

    /// One command; the error document when the driver refuses it.
    fn try_send(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, Value> {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let resp = match method {
            "get" => self.http.get(&url).call(),
            "delete" => self.http.delete(&url).call(),
            _ => self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .send(body.unwrap_or_else(|| json!({})).to_string()),
        };
        let mut resp = resp.unwrap();
        let status = resp.status().as_u16();
        let v: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        if status < 400 {
            Ok(v["value"].clone())
        } else {
            Err(v["value"].clone())
        }
    }

    fn send(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_send(method, path, body)
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"))
    }

    /// Runs a command on the element `css` names, finding it again when
    /// the page changed under it (a reload, a redirect landing).
    fn on(&self, css: &str, method: &str, what: &str, body: Option<Value>) -> Value {
        for _ in 0..50 {
            let Some(e) = self.all(css).into_iter().next() else {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            match self.try_send(method, &format!("/element/{e}{what}"), body.clone()) {
                Ok(v) => return v,
                Err(err) if err["error"] == "stale element reference" => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(err) => panic!("webdriver {what} on {css}: {err}"),
            }
        }
        panic!("no element {css} on {}:\n{}", self.url(), self.source())
    }

    pub fn goto(&self, url: &str) {
        self.send("post", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.send("get", "/url", None).as_str().unwrap().to_string()
    }

    pub fn source(&self) -> String {
        self.send("get", "/source", None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Elements matching `css` (none is an empty list).
    pub fn all(&self, css: &str) -> Vec<String> {
        let v = self.send(
            "post",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .unwrap_or_else(|| panic!("elements {css}: {v}"))
            .iter()
            .map(|e| {
                e[ELEMENT]
                    .as_str()
                    .unwrap_or_else(|| panic!("not an element: {e}"))
                    .to_string()
            })
            .collect()
    }

    /// The one element matching `css`; fails the test with the page otherwise.
    pub fn find(&self, css: &str) -> String {
        let all = self.all(css);
        assert!(
            !all.is_empty(),
            "no element {css} on {}:\n{}",
            self.url(),
            self.source()
        );
        all[0].clone()
    }

    pub fn click(&self, css: &str) {
        self.on(css, "post", "/click", None);
    }

    /// Clicks what leaves this page (a link, a submit button) and waits
    /// until the next page replaced it.
    pub fn submit(&self, css: &str) {
        let old = self.find("html");
        self.click(css);
        let started = Instant::now();
        while self
            .try_send("get", &format!("/element/{old}/name"), None)
            .is_ok()
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{css} did not leave {}",
                self.url()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn type_into(&self, css: &str, text: &str) {
        self.on(css, "post", "/clear", None);
        self.on(css, "post", "/value", Some(json!({ "text": text })));
    }

    pub fn text(&self, css: &str) -> String {
        self.on(css, "get", "/text", None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The browser's cookies, flags included.
    pub fn cookies(&self) -> Vec<Value> {
        self.send("get", "/cookie", None)
            .as_array()
            .unwrap()
            .clone()
    }

    pub fn resize(&self, width: u32, height: u32) {
        self.send(
            "post",
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        );
    }

    /// Writes a PNG of the viewport to `path`.
    pub fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine;
        let b64 = self.send("get", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Waits until `css` matches, reloading the page in between.
    pub fn wait_for(&self, css: &str, timeout: Duration) {
        let started = Instant::now();
        while self.all(css).is_empty() {
            assert!(
                started.elapsed() < timeout,
                "{css} never appeared on {}:\n{}",
                self.url(),
                self.source()
            );
            std::thread::sleep(Duration::from_millis(300));
            self.send("post", "/refresh", None);
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("{}/session/{}", self.base, self.session);
            let _ = self.http.delete(&url).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
