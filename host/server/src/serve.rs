//! The life of `mem-host serve`: listen (TCP for clients, the owner's
//! socket for the CLI), run the workspace's worker, and on shutdown stop
//! accepting, let in-flight requests finish, stop the worker and flush,
//! so no acknowledged write is lost.

use crate::{AppState, ServeOptions, metrics::Metrics};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::Service;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (svc, stop) = (svc.clone(), stop.clone());
        std::thread::Builder::new()
            .name("mem-worker".into())
            .spawn(move || svc.run_worker(&stop))
            .map_err(|e| MemError::io("cannot start the worker", &e))?
    };
    let local = match &state.opts.socket {
        Some(path) => Some(crate::socket::listen(path, svc.clone(), cancel.clone())?),
        None => None,
    };
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
    stop.store(true, Ordering::SeqCst);
    svc.wake_worker();
    let joined = tokio::task::spawn_blocking(move || worker.join())
        .await
        .map_err(|e| MemError::internal(e.to_string()))?;
    if joined.is_err() {
        tracing::warn!("the worker stopped with a panic");
    }
    served?;
    let flush = svc.clone();
    tokio::task::spawn_blocking(move || flush.flush())
        .await
        .map_err(|e| MemError::internal(e.to_string()))??;
    tracing::info!("stopped");
    Ok(())
}
