//! mem-host's network surfaces. REST (`/v1`), MCP (stdio and streamable
//! HTTP at `/mcp`), `/metrics`, and the owner's local socket are thin:
//! they authenticate, translate, and run the one service operation each
//! request names through the caller's door (`mem_service::door`), so
//! business rules live in one place.

mod admission;
mod auth;
mod error;
pub mod mcp;
mod metrics;
mod openapi;
mod rest;
mod serve;
pub mod socket;
mod web;

pub use error::ApiError;
pub use serve::serve;

use mem_service::Service;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Settings of `mem-host serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub bind: SocketAddr,
    /// Largest JSON request body (bytes).
    pub json_body_limit: usize,
    /// Largest file upload (bytes).
    pub file_body_limit: usize,
    /// The owner's local socket (the CLI talks to the server through it
    /// while the server holds the workspace); `None` for no socket.
    pub socket: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 7373)),
            json_body_limit: 1024 * 1024,
            file_body_limit: 64 * 1024 * 1024,
            socket: None,
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub svc: Arc<Service>,
    pub metrics: Arc<metrics::Metrics>,
    pub opts: Arc<ServeOptions>,
    /// How many service calls run at once, and the queue of the rest.
    pub admission: Arc<admission::Admission>,
}
