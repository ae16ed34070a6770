//! Running the real binary against a private workspace.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_mem-host");

/// A fresh, initialised workspace in a temporary folder.
pub struct Ws {
    pub tmp: tempfile::TempDir,
}

/// What a command printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "command failed: {}", self.stderr);
        self
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).to_string()
    }

    /// stdout as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr: {}",
                self.text(),
                self.stderr
            )
        })
    }

    /// stdout as JSON lines.
    pub fn json_lines(&self) -> Vec<Value> {
        self.text()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// stderr as the JSON error document (JSON mode).
    pub fn error(&self) -> Value {
        serde_json::from_str(self.stderr.trim())
            .unwrap_or_else(|e| panic!("stderr is not a JSON error ({e}): {}", self.stderr))
    }

    /// The error code of a failed command (JSON mode).
    pub fn json_err_code(&self) -> String {
        assert_ne!(self.code, 0, "expected a failure");
        self.error()["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Asserts a failure with `code` and exit status `exit`.
    pub fn fails(self, code: &str, exit: i32) -> Value {
        assert_eq!(self.code, exit, "exit status; stderr: {}", self.stderr);
        let err = self.error();
        assert_eq!(err["code"], code, "{err}");
        assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(err.get("hint").is_some(), "errors carry a hint: {err}");
        err
    }
}

impl Ws {
    pub fn new() -> Self {
        let ws = Self::uninitialised();
        ws.run(&["init"]).ok();
        ws
    }

    pub fn uninitialised() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("MEM_HOME", self.home())
            .env_remove("MEM_FORMAT")
            .current_dir(self.tmp.path());
        c
    }

    /// Runs `mem-host --format json ARGS`.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_stdin(args, None)
    }

    pub fn run_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut c = self.cmd();
        c.arg("--format").arg("json").args(args);
        run_command(c, stdin)
    }

    /// Runs without `--format json` (human output).
    pub fn run_human(&self, args: &[&str]) -> Run {
        let mut c = self.cmd();
        c.args(args);
        run_command(c, None)
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Remembers one memory and returns it.
    pub fn remember(&self, content: &str, path: &str, key: Option<&str>) -> Value {
        let derived = mem_core::hash::sha256_hex(format!("{path}\n{content}").as_bytes());
        let key = key.unwrap_or(&derived);
        self.run(&[
            "remember",
            content,
            "--kind",
            "fact",
            "--path",
            path,
            "--idempotency-key",
            key,
        ])
        .ok()
        .json()["memory"]
            .clone()
    }
}

pub fn run_command(mut c: Command, stdin: Option<&[u8]>) -> Run {
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn mem-host");
    // Fed from a thread: the command answers as it reads (acknowledgements
    // stream), so writing everything first could fill both pipes and hang.
    let feeder = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            // A command that stops reading early closes its end: not an error here.
            let _ = pipe.write_all(&bytes);
        })
    });
    let out = child.wait_with_output().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    let Output {
        status,
        stdout,
        stderr,
    } = out;
    Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr: String::from_utf8_lossy(&stderr).to_string(),
    }
}

pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A running `mem-host serve` on a free loopback port.
pub struct Server {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    pub fn start(ws: &Ws, extra: &[&str]) -> Server {
        use std::io::BufRead;
        let mut c = ws.cmd();
        c.args(["serve", "--bind", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn mem-host serve");
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            log.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(addr) = line.strip_prefix("listening on ") {
                base = Some(addr.trim().to_string());
                break;
            }
        }
        let base = base.unwrap_or_else(|| panic!("serve did not start: {}", log.lock().unwrap()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Server {
            child,
            base,
            stderr: log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// SIGKILL: the process dies wherever it is.
    pub fn kill(&self) {
        let sent = Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that returns 4xx/5xx as responses, not errors.
pub fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .build()
        .into()
}

/// Creates a token with the CLI and returns its secret.
pub fn token(ws: &Ws, name: &str, scopes: &str, extra: &[&str]) -> String {
    let mut args = vec!["token", "create", "--name", name, "--scope", scopes];
    args.extend_from_slice(extra);
    ws.run(&args).ok().json()["secret"]
        .as_str()
        .unwrap()
        .to_string()
}
