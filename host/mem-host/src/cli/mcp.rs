//! `mcp`: the MCP server over stdin/stdout, for agent clients that launch
//! the host themselves. Acts as the workspace owner, or as the token in
//! `MEM_TOKEN` when it is set.

use super::serve::runtime;
use crate::client::{Remote, Served};
use crate::workspace;
use mem_core::MemResult;
use mem_service::access::Access;
use std::path::Path;
use std::sync::Arc;

pub fn mcp(dir: &Path) -> MemResult<()> {
    let token = std::env::var("MEM_TOKEN")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let ws = match workspace::open(dir, workspace::SessionStart::Optimized) {
        Ok(ws) => ws,
        // A running `serve` holds the workspace: the session's operations
        // run there, as the owner or as the token.
        Err(e) if e.code == mem_core::ErrorCode::StoreLocked => {
            let Some(remote) = Remote::connect(dir)? else {
                return Err(workspace::explain_lock(dir, e));
            };
            let served = Arc::new(Served::new(remote.acting_as(token), dir)?);
            check_token(&served)?;
            let session = runtime()?.block_on(mem_server::mcp::serve_stdio_through(
                served.clone(),
                Access::owner(),
            ));
            // The remote owns a runtime of its own: it is dropped here, not
            // inside the session's async context (where that would panic).
            drop(served);
            return session;
        }
        Err(e) => return Err(e),
    };
    let svc = Arc::clone(&ws.service);
    let access = match token {
        Some(secret) => svc.authenticate(&secret)?,
        None => Access::owner(),
    };
    runtime()?.block_on(mem_server::mcp::serve_stdio(svc, access))
}

/// Refuses a bad `MEM_TOKEN` at start, as a session on a free workspace
/// does, instead of failing every tool call.
fn check_token(served: &Served) -> MemResult<()> {
    use mem_server::mcp::Backend;
    match served.run(&Access::owner(), "workspace.types", serde_json::json!({})) {
        Err(e) if e.code == mem_core::ErrorCode::Unauthorized => Err(e),
        _ => Ok(()),
    }
}
