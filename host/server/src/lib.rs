//! mem-host's network surfaces. REST (`/v1`), MCP (stdio and streamable
//! HTTP at `/mcp`) and `/metrics` are thin: they authenticate, translate,
//! and call the service through an access-checked [`Caller`]
//! (`mem_service::access`), so business rules live in one place.

mod auth;
mod error;
pub mod mcp;
mod metrics;
mod openapi;
mod rest;

pub use error::ApiError;

use mem_service::Service;
use std::net::SocketAddr;
use std::sync::Arc;

/// Settings of `mem-host serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub bind: SocketAddr,
    /// Largest JSON request body (bytes).
    pub json_body_limit: usize,
    /// Largest file upload (bytes).
    pub file_body_limit: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 7373)),
            json_body_limit: 1024 * 1024,
            file_body_limit: 64 * 1024 * 1024,
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub svc: Arc<Service>,
    pub metrics: Arc<metrics::Metrics>,
    pub opts: Arc<ServeOptions>,
    /// Wakes the background processor after a file upload.
    pub work: Arc<tokio::sync::Notify>,
    /// Idempotency keys (per caller) whose request is running now.
    pub in_flight: Arc<parking_lot::Mutex<std::collections::HashSet<String>>>,
}

pub use rest::serve;
