//! `mcp`: the MCP server over stdin/stdout, for agent clients that launch
//! the host themselves. Acts as the workspace owner, or as the token in
//! `MEM_TOKEN` when it is set.

use super::serve::runtime;
use crate::workspace;
use mem_core::MemResult;
use mem_service::access::Access;
use std::path::Path;
use std::sync::Arc;

pub fn mcp(dir: &Path) -> MemResult<()> {
    let ws = workspace::open(dir).map_err(|e| match e.code {
        mem_core::ErrorCode::StoreLocked => workspace::explain_lock(dir, e).with_hint(
            "a `mem-host serve` holds this workspace: point the agent at its MCP endpoint (http://127.0.0.1:7373/mcp with a token), or stop the server",
        ),
        _ => e,
    })?;
    let svc = Arc::clone(&ws.service);
    let access = match std::env::var("MEM_TOKEN") {
        Ok(secret) if !secret.trim().is_empty() => svc.authenticate(&secret)?,
        _ => Access::owner(),
    };
    runtime()?.block_on(mem_server::mcp::serve_stdio(svc, access))
}
