//! The bridge from the synchronous `Store` trait to async clients.
//!
//! Why a runtime of the store's own: the service calls the store from
//! plain threads (the CLI) and from tokio's blocking pool (the server),
//! and a client that starts or blocks on a runtime inside another
//! runtime's context panics. Here every call is a future spawned onto the
//! store's runtime and awaited through a std channel, which works from any
//! thread, inside a runtime context or not.

use mem_core::store::StoreError;
use std::future::Future;
use tokio::runtime::{Builder, Handle, Runtime};

/// Worker threads of the store's runtime: the work is network waits.
const THREADS: usize = 2;

pub(crate) struct Bridge {
    /// Shut down (without blocking) when the store is dropped, which may
    /// happen inside another runtime's context.
    rt: Option<Runtime>,
    handle: Handle,
}

impl Bridge {
    pub(crate) fn new() -> Result<Self, StoreError> {
        let rt = Builder::new_multi_thread()
            .worker_threads(THREADS)
            .thread_name("mem-store-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Io(format!("cannot start the store's runtime: {e}")))?;
        let handle = rt.handle().clone();
        Ok(Self {
            rt: Some(rt),
            handle,
        })
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `fut` on the store's runtime and waits for its result.
    pub(crate) fn run<T, F>(&self, fut: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        run_on(&self.handle, fut)
    }
}

/// [`Bridge::run`] for holders of a handle only (a blob reader).
pub(crate) fn run_on<T, F>(handle: &Handle, fut: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StoreError>> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(fut.await);
    });
    // A panic in the future drops `tx`: an error here, never a hang.
    rx.recv()
        .map_err(|_| StoreError::Io("the store's runtime stopped during a call".into()))?
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server calls the store from tokio's blocking pool and async
    /// code may call it directly: neither may panic.
    #[test]
    fn calls_work_from_inside_another_runtime() {
        let bridge = std::sync::Arc::new(Bridge::new().unwrap());
        let outer = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let b = bridge.clone();
        let from_blocking = outer
            .block_on(async move {
                tokio::task::spawn_blocking(move || b.run(async { Ok::<_, StoreError>(7) })).await
            })
            .unwrap()
            .unwrap();
        assert_eq!(from_blocking, 7);
        let b = bridge.clone();
        let from_async = outer
            .block_on(async move { b.run(async { Ok::<_, StoreError>(8) }) })
            .unwrap();
        assert_eq!(from_async, 8);
        // Dropping the store inside a runtime context must not panic either.
        outer.block_on(async move { drop(bridge) });
    }

    #[test]
    fn a_panicking_call_is_an_error() {
        let bridge = Bridge::new().unwrap();
        let r: Result<(), StoreError> = bridge.run(async { panic!("boom") });
        assert!(matches!(r, Err(StoreError::Io(_))));
    }
}
