//! Where the CLI's operations run. On a free workspace the CLI opens it
//! and runs each operation through the owner's door in this process; when
//! a `serve` holds the workspace, it sends the same operation to that
//! server over the owner's socket (`serve.sock` in the workspace, `0600`)
//! and gets the same answer. Either way the command is the same code.

use crate::workspace::SessionStart;
use crate::workspace::{self, Workspace};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use mem_core::model::FileRecord;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_server::socket::{Answer, SOCKET_FILE};
use mem_service::access::Access;
use mem_service::bundle::{ExportReport, ImportReport};
use mem_service::door::{Done, Operation};
use mem_service::ops::admin::ImportDocument;
use mem_service::ops::bundles::{ExportBundle, ImportBundle};
use mem_service::ops::files::PutFileRequest;
use mem_service::ops::memories::ItemResult;
use mem_service::{PutFileResult, RememberOutcome};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The workspace, here or behind its server.
pub enum Client {
    Local(Box<Workspace>),
    Remote(Remote),
}

impl Client {
    /// Opens the workspace at `dir`, or connects to the `serve` holding it.
    /// `start`: see [`workspace::open`].
    pub fn open(dir: &Path, start: SessionStart) -> MemResult<Self> {
        match workspace::open(dir, start) {
            Ok(ws) => Ok(Client::Local(Box::new(ws))),
            Err(e) if e.code == ErrorCode::StoreLocked => match Remote::connect(dir)? {
                Some(remote) => Ok(Client::Remote(remote)),
                None => Err(workspace::explain_lock(dir, e)),
            },
            Err(e) => Err(e),
        }
    }

    /// Runs one operation as the owner.
    pub fn run<O: Operation>(&self, op: O) -> MemResult<Done<O::Output>> {
        match self {
            Client::Local(ws) => ws.service.caller(&Access::owner()).run(op),
            Client::Remote(r) => {
                let args = serde_json::to_value(&op)
                    .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
                let done = r.run_json(O::NAME, &args)?;
                Ok(Done {
                    value: serde_json::from_value(done.value).map_err(|e| {
                        MemError::internal(format!("cannot read the server's answer: {e}"))
                    })?,
                    replayed: done.replayed,
                })
            }
        }
    }

    /// Runs the operation `name` with a JSON request (a batch line), as the
    /// owner: checked against the operation's schema like any surface's.
    pub fn run_json(
        &self,
        name: &str,
        args: &serde_json::Value,
    ) -> MemResult<Done<serde_json::Value>> {
        match self {
            Client::Local(ws) => mem_service::door::find(name)?
                .run_json(&ws.service.caller(&Access::owner()), args.clone()),
            Client::Remote(r) => r.run_json(name, args),
        }
    }

    /// Stores a file whose bytes `reader` streams.
    pub fn put_stream(
        &self,
        req: PutFileRequest,
        reader: &mut (dyn Read + Send),
    ) -> MemResult<Done<PutFileResult>> {
        match self {
            Client::Local(ws) => ws.service.caller(&Access::owner()).put_stream(req, reader),
            Client::Remote(r) => r.upload(req, reader),
        }
    }

    /// The workspace's file size limit, when this process knows it (a
    /// server holding the workspace enforces its own as the bytes arrive).
    pub fn max_file_bytes(&self) -> Option<u64> {
        match self {
            Client::Local(ws) => Some(ws.service.config().limits.max_file_bytes),
            Client::Remote(_) => None,
        }
    }

    /// Writes a file's bytes to `out`; returns its record.
    pub fn copy_file(&self, target: &str, out: &mut dyn Write) -> MemResult<FileRecord> {
        match self {
            Client::Local(ws) => {
                let (file, mut reader) = ws.service.caller(&Access::owner()).open_file(target)?;
                std::io::copy(&mut reader, out).map_err(|e| write_error(&e))?;
                Ok(file)
            }
            Client::Remote(r) => r.download(target, out),
        }
    }

    /// Imports a document through an adapter plugin.
    pub fn import_document(
        &self,
        req: ImportDocument,
        bytes: Vec<u8>,
    ) -> MemResult<Vec<ItemResult<RememberOutcome>>> {
        match self {
            Client::Local(ws) => ws
                .service
                .caller(&Access::owner())
                .import_document(req, &bytes),
            Client::Remote(r) => {
                let request = serde_json::to_string(&req)
                    .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
                let path = format!("/documents?request={}", query_escape(&request));
                let answer: Answer = r.call(
                    "POST",
                    &path,
                    Full::new(Bytes::from(bytes))
                        .map_err(|e| match e {})
                        .boxed(),
                    |_| Ok(()),
                )?;
                serde_json::from_value(answer.value).map_err(|e| {
                    MemError::internal(format!("cannot read the server's answer: {e}"))
                })
            }
        }
    }

    /// Writes a bundle of the workspace (or of `req.scope`) to `out`.
    pub fn export_bundle(&self, req: ExportBundle, out: &mut dyn Write) -> MemResult<ExportReport> {
        match self {
            Client::Local(ws) => ws.service.caller(&Access::owner()).export_bundle(&req, out),
            Client::Remote(_) => {
                // The server's JSON answer carries the archive base64.
                let mut report = self.run(req)?.value;
                let b64 = report.bundle_base64.take().unwrap_or_default();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| {
                        MemError::internal(format!("the server sent a bad bundle: {e}"))
                    })?;
                out.write_all(&bytes).map_err(|e| write_error(&e))?;
                Ok(report)
            }
        }
    }

    /// Imports the bundle `input` streams into the workspace.
    pub fn import_bundle(&self, input: &mut dyn Read) -> MemResult<ImportReport> {
        match self {
            Client::Local(ws) => ws.service.caller(&Access::owner()).import_bundle(input),
            Client::Remote(_) => {
                let mut bytes = Vec::new();
                input
                    .read_to_end(&mut bytes)
                    .map_err(|e| MemError::io("cannot read the bundle", &e))?;
                let req = ImportBundle {
                    content_base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
                };
                Ok(self.run(req)?.value)
            }
        }
    }

    /// [`Self::finish`], then closes the workspace without freeing
    /// what it loaded: the process is about to exit, and at 100k memories
    /// freeing the index's catalog one entry at a time took a fifth of a
    /// cold `search`. Nothing is lost: everything was saved by the finish,
    /// and what a kill would leave (no drop at all) is recovered at open.
    pub fn finish_and_exit(self) {
        self.finish();
        if let Client::Local(ws) = self {
            ws.close_leaking();
        }
    }

    /// For a bulk command: the index replays its writes alongside (see
    /// [`mem_service::Service::index_alongside`]) until the guard drops.
    /// A server embeds what it is sent with its own worker.
    pub fn index_alongside(&self) -> MemResult<Option<mem_service::worker::IndexAlongside>> {
        match self {
            Client::Local(ws) => ws.service.index_alongside().map(Some),
            Client::Remote(_) => Ok(None),
        }
    }

    /// Finishes what this process's writes left for later (processing,
    /// the index); the server's own worker does that for remote writes.
    pub fn finish(&self) {
        if let Client::Local(ws) = self {
            ws.service.finish_command();
        }
    }
}

/// A closed stdout or file: the reader's choice or a full disk.
pub fn write_error(e: &std::io::Error) -> MemError {
    crate::cli::output::write_failed("cannot write the output", e)
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// The connection to a running server's owner socket.
pub struct Remote {
    socket: PathBuf,
    rt: tokio::runtime::Runtime,
    /// A token to act as instead of the owner.
    bearer: Option<String>,
}

fn unreachable(socket: &Path, e: impl std::fmt::Display) -> MemError {
    MemError::new(
        ErrorCode::StoreLocked,
        format!(
            "the server holding this workspace did not answer on {}: {e}",
            socket.display()
        ),
    )
    .with_hint(
        "check that `mem-host serve` is still running, or stop it to use the workspace directly",
    )
}

fn query_escape(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Remote {
    /// The server holding the workspace at `dir`, if one answers on its socket.
    pub fn connect(dir: &Path) -> MemResult<Option<Self>> {
        let socket = dir.join(SOCKET_FILE);
        if !socket.exists() || std::os::unix::net::UnixStream::connect(&socket).is_err() {
            return Ok(None);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| MemError::io("cannot start the async runtime", &e))?;
        Ok(Some(Self {
            socket,
            rt,
            bearer: None,
        }))
    }

    /// Runs the operation `name` in the server.
    fn run_json(&self, name: &str, args: &serde_json::Value) -> MemResult<Done<serde_json::Value>> {
        let body = serde_json::to_vec(args)
            .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
        let answer: Answer = self.call(
            "POST",
            &format!("/ops/{name}"),
            Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed(),
            |_| Ok(()),
        )?;
        Ok(Done {
            value: answer.value,
            replayed: answer.replayed,
        })
    }

    /// Acts as the token whose secret this is (the server checks it).
    pub fn acting_as(mut self, secret: Option<String>) -> Self {
        self.bearer = secret;
        self
    }

    /// One request; a success's body goes to `sink` (when it streams) or
    /// is decoded as `T`; a failure's body is the server's error document.
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Body,
        on_headers: impl FnOnce(&hyper::HeaderMap) -> MemResult<()>,
    ) -> MemResult<T> {
        self.rt.block_on(async {
            let resp = self.send(method, path, body).await?;
            on_headers(resp.headers())?;
            let ok = resp.status().is_success();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| unreachable(&self.socket, e))?
                .to_bytes();
            if !ok {
                return Err(error_of(&bytes));
            }
            serde_json::from_slice(&bytes)
                .map_err(|e| MemError::internal(format!("cannot read the server's answer: {e}")))
        })
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Body,
    ) -> MemResult<hyper::Response<hyper::body::Incoming>> {
        let stream = tokio::net::UnixStream::connect(&self.socket)
            .await
            .map_err(|e| unreachable(&self.socket, e))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| unreachable(&self.socket, e))?;
        tokio::spawn(conn);
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "mem-host");
        if let Some(secret) = &self.bearer {
            req = req.header("authorization", format!("Bearer {secret}"));
        }
        let req = req
            .body(body)
            .map_err(|e| MemError::internal(format!("cannot build the request: {e}")))?;
        sender
            .send_request(req)
            .await
            .map_err(|e| unreachable(&self.socket, e))
    }

    fn upload(
        &self,
        req: PutFileRequest,
        reader: &mut (dyn Read + Send),
    ) -> MemResult<Done<PutFileResult>> {
        let request = serde_json::to_string(&req)
            .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
        let path = format!("/files?request={}", query_escape(&request));
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
        let stream =
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|c| (c, rx)) },
            );
        let body: Body = BodyExt::boxed(StreamBody::new(stream));
        // The bytes are read on a thread of their own while this one drives
        // the request, so a file of any size streams through a small buffer.
        let answer: MemResult<Answer> = std::thread::scope(|s| {
            s.spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let frame = match reader.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => Ok(Frame::data(Bytes::copy_from_slice(&buf[..n]))),
                        Err(e) => Err(e),
                    };
                    let failed = frame.is_err();
                    if tx.blocking_send(frame).is_err() || failed {
                        return;
                    }
                }
            });
            self.call("POST", &path, body, |_| Ok(()))
        });
        let answer = answer?;
        Ok(Done {
            value: serde_json::from_value(answer.value)
                .map_err(|e| MemError::internal(format!("cannot read the server's answer: {e}")))?,
            replayed: answer.replayed,
        })
    }

    fn download(&self, target: &str, out: &mut dyn Write) -> MemResult<FileRecord> {
        self.rt.block_on(async {
            let path = format!("/files/content?target={}", query_escape(target));
            let empty: Body = Full::new(Bytes::new()).map_err(|e| match e {}).boxed();
            let resp = self.send("GET", &path, empty).await?;
            if !resp.status().is_success() {
                let bytes = resp
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| unreachable(&self.socket, e))?
                    .to_bytes();
                return Err(error_of(&bytes));
            }
            let record = resp
                .headers()
                .get("x-mem-file")
                .and_then(|v| v.to_str().ok())
                .map(percent_decode)
                .ok_or_else(|| MemError::internal("the server sent no file record"))?;
            let file: FileRecord = serde_json::from_str(&record)
                .map_err(|e| MemError::internal(format!("cannot read the file record: {e}")))?;
            let mut body = resp.into_body();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| unreachable(&self.socket, e))?;
                if let Some(data) = frame.data_ref() {
                    out.write_all(data).map_err(|e| write_error(&e))?;
                }
            }
            Ok(file)
        })
    }
}

fn error_of(bytes: &[u8]) -> MemError {
    serde_json::from_slice::<MemError>(bytes).unwrap_or_else(|_| {
        MemError::internal(format!(
            "the server answered with something that is not an error document: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len() + 1
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

/// An MCP stdio session's operations while a `serve` holds the workspace:
/// they run in that server, through the same door.
pub struct Served {
    remote: Remote,
    config: std::sync::Arc<mem_service::WorkspaceConfig>,
}

impl Served {
    pub fn new(remote: Remote, dir: &Path) -> MemResult<Self> {
        Ok(Self {
            remote,
            config: std::sync::Arc::new(mem_service::WorkspaceConfig::load(dir)?),
        })
    }
}

impl mem_server::mcp::Backend for Served {
    fn config(&self) -> std::sync::Arc<mem_service::WorkspaceConfig> {
        self.config.clone()
    }

    /// The server decides the caller: the owner, or the remote's token.
    fn run(
        &self,
        _: &Access,
        name: &str,
        args: serde_json::Value,
    ) -> MemResult<Done<serde_json::Value>> {
        self.remote.run_json(name, &args)
    }
}
