//! The life of `mem-host serve`: listen (TCP for clients, the owner's
//! socket for the CLI), run the workspace's worker, and on shutdown stop
//! accepting, let in-flight requests finish, stop the worker and flush,
//! so no acknowledged write is lost.

use crate::{AppState, ServeOptions, metrics::Metrics};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::Service;
use std::sync::Arc;

/// Runs `mem-host serve` until `shutdown` resolves. `on_bound` hears the
/// actual address (for `:0`).
pub async fn serve(
    svc: Arc<Service>,
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(std::net::SocketAddr),
) -> MemResult<()> {
    let listener = tokio::net::TcpListener::bind(opts.bind)
        .await
        .map_err(|e| {
            MemError::new(
                ErrorCode::Io,
                format!("cannot listen on {}: {e}", opts.bind),
            )
            .with_hint("choose another address with --bind, e.g. 127.0.0.1:7374")
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| MemError::io("cannot read the bound address", &e))?;
    let state = AppState {
        svc: svc.clone(),
        metrics: Arc::new(Metrics::default()),
        opts: Arc::new(opts),
        admission: Arc::new(crate::admission::Admission::for_this_machine()),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    // Without its socket (a path too long for one, say) the server still
    // serves; the owner's CLI is then told the workspace is held.
    let local = state.opts.socket.as_ref().and_then(|path| {
        crate::socket::listen(path, svc.clone(), cancel.clone())
            .inspect_err(
                |e| tracing::warn!(error = %e.message, "the owner's socket is not available"),
            )
            .ok()
    });
    let worker = svc.spawn_worker()?;
    let app = crate::rest::app(state, cancel.clone());
    on_bound(addr);
    tracing::info!(%addr, "listening");
    let stopping = cancel.clone();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: finishing in-flight requests");
            stopping.cancel();
        })
        .await
        .map_err(|e| MemError::io("server failed", &e));
    cancel.cancel();
    if let Some(local) = local {
        let _ = local.await;
    }
    // The worker stops (and the store flushes) even when serving failed.
    let stopped = tokio::task::spawn_blocking(move || worker.stop())
        .await
        .map_err(|e| MemError::internal(e.to_string()))?;
    served?;
    stopped?;
    tracing::info!("stopped");
    Ok(())
}
