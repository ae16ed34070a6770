//! `serve` (REST, MCP over HTTP, metrics) and `token` (who may call it).

use super::output::Out;
use crate::client::Client;
use crate::workspace;
use clap::{Args, Subcommand};
use mem_core::{MemError, MemResult};
use mem_service::ops::admin::{TokenList, TokenRevoke};
use mem_service::tokens::TokenRequest;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (`:0` picks a free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:7373")]
    pub bind: SocketAddr,
    /// Log format on stderr: `text` or `json`.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Largest JSON request body, in bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_body: usize,
    /// Largest file upload, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    pub max_upload: usize,
}

/// Multi-threaded: a runaway plugin or a slow embedding on one worker must
/// not stall the others.
pub fn runtime() -> MemResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| MemError::io("cannot start the async runtime", &e))
}

fn init_logs(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests in one process) is harmless: keep the first.
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

pub fn serve(dir: &Path, a: ServeArgs) -> MemResult<()> {
    init_logs(&a.log_format);
    let ws =
        workspace::open(dir, workspace::SessionStart::Optimized).map_err(|e| match e.code {
            mem_core::ErrorCode::StoreLocked => workspace::explain_lock(dir, e),
            _ => e,
        })?;
    // Open and catch up the index before listening, not on the first request.
    ws.service.open_index()?;
    let svc = Arc::clone(&ws.service);
    let opts = mem_server::ServeOptions {
        bind: a.bind,
        json_body_limit: a.max_body,
        file_body_limit: a.max_upload,
        socket: Some(dir.join(mem_server::socket::SOCKET_FILE)),
    };
    runtime()?.block_on(mem_server::serve(svc, opts, shutdown_signal(), |addr| {
        // Scripts (and the tests) read the bound port from this line.
        eprintln!("listening on http://{addr}");
    }))
}

#[derive(Debug, Args)]
pub struct WebArgs {
    /// Sign in as this token (id or name) instead of the owner.
    #[arg(long)]
    pub token: Option<String>,
    /// The address `serve` listens on, as the browser reaches it.
    #[arg(long, default_value = "http://127.0.0.1:7373")]
    pub url: String,
}

/// A one-time sign-in link: the nonce is stored (hashed) in the workspace,
/// through the running server's socket when it holds the workspace.
pub fn web(client: &Client, out: &Out, a: WebArgs) -> MemResult<()> {
    let s = client
        .run(mem_service::ops::web::WebSignIn { token: a.token })?
        .value;
    let link = mem_service::web::SignInLink {
        url: format!("{}/signin/{}", a.url.trim_end_matches('/'), s.nonce),
        expires_at: s.expires_at,
        token: s.token,
    };
    out.emit(&link, |l| {
        format!(
            "open this link once, before {}, to sign in as {}:\n{}",
            mem_core::time::to_rfc3339(&l.expires_at),
            l.token
                .as_deref()
                .map(|t| format!("token {t}"))
                .unwrap_or_else(|| "the owner".into()),
            l.url
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; its secret is printed once and never stored.
    Create(TokenCreateArgs),
    /// Every token (never the secrets), with today's call count.
    List,
    /// Revoke a token by id or name; its next call gets 401.
    Revoke {
        /// Token id or name.
        token: String,
    },
}

#[derive(Debug, Args)]
pub struct TokenCreateArgs {
    #[arg(long)]
    pub name: String,
    /// Comma-separated: search, read, write, delete, admin.
    #[arg(long, value_delimiter = ',', required = true)]
    pub scope: Vec<String>,
    /// Comma-separated folders the token is confined to.
    #[arg(long, value_delimiter = ',')]
    pub paths: Vec<String>,
    /// Lifetime (`30d`, `12h`) or an RFC 3339 time.
    #[arg(long)]
    pub expires: Option<String>,
    /// Calls per UTC day.
    #[arg(long)]
    pub quota: Option<String>,
}

pub fn token(client: &Client, out: &Out, c: TokenCommand) -> MemResult<()> {
    match c {
        TokenCommand::Create(a) => {
            let t = client
                .run(TokenRequest {
                    name: a.name,
                    scopes: a.scope,
                    paths: a.paths,
                    expires: a.expires,
                    quota: a.quota,
                })?
                .value;
            out.emit(&t, |t| {
                format!(
                    "created token {} ({}) with scopes {}\nsecret (shown once, store it now): {}",
                    t.token.name,
                    t.token.id,
                    t.token
                        .scopes
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    t.secret
                )
            })
        }
        TokenCommand::List => out.emit(&client.run(TokenList {})?.value, |list| {
            if list.is_empty() {
                return "no tokens; create one with `mem-host token create`".into();
            }
            list.iter()
                .map(|t| {
                    format!(
                        "{}  {:<16} {:<28} paths={} calls_today={}{}{}",
                        t.id,
                        t.name,
                        t.scopes
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(","),
                        if t.paths.is_empty() {
                            "*".into()
                        } else {
                            t.paths.join(",")
                        },
                        t.calls_today,
                        t.quota_per_day.map(|q| format!("/{q}")).unwrap_or_default(),
                        if t.revoked_at.is_some() {
                            "  REVOKED"
                        } else {
                            ""
                        },
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        }),
        TokenCommand::Revoke { token } => {
            let t = client
                .run(TokenRevoke {
                    id: token,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&t, |t| format!("revoked token {} ({})", t.name, t.id))
        }
    }
}
