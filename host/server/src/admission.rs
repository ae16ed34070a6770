//! Admission: how many service calls run at once, and what waits.
//!
//! Every request's service work runs on tokio's blocking pool, which grows
//! to hundreds of threads. Left alone, 64 concurrent searches on a 2-core
//! machine all run at once: each takes 32 times longer, the embedder's
//! sessions and the index's locks are fought over, and every client's p99
//! is the slowest request's. Admission runs at most `slots` calls at a
//! time (a few per core: enough to cover a write's fsync or a page fault)
//! and queues the rest in arrival order, so latency under load is
//! queueing, which a client can reason about, not collapse. A request is
//! refused (503 `overloaded`, `retry-after`) only when the queue is full
//! or it has waited longer than a client should: then no answer in time
//! is coming anyway, and a retry later is better for everyone.

use mem_core::{ErrorCode, MemError, MemResult};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Calls running at once, per core. Two per core keeps both cores busy
/// while one call waits on the disk (a durable write's fsync).
const SLOTS_PER_CORE: usize = 2;
/// Requests that may wait for a slot. Past it a new request is refused at
/// once: at ~100 requests/s per core, 1024 waiting is seconds of work.
pub(crate) const MAX_WAITING: usize = 1024;
/// Longest a request waits for a slot before it is refused. Clients'
/// timeouts are commonly 10–30 s; an answer after that helps no one.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(10);
/// What `retry-after` says when a request is refused.
pub(crate) const RETRY_AFTER_SECS: u64 = 1;

/// The server's admission queue (one per `serve`).
#[derive(Debug)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    capacity: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    max_wait: Duration,
    shed: AtomicU64,
}

impl Admission {
    /// Slots for this machine: [`SLOTS_PER_CORE`] per core, at least 2.
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new((cores * SLOTS_PER_CORE).max(2), MAX_WAITING, MAX_WAIT)
    }

    pub fn new(slots: usize, max_waiting: usize, max_wait: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(slots)),
            capacity: slots,
            waiting: AtomicUsize::new(0),
            max_waiting,
            max_wait,
            shed: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the blocking pool once a slot is free (in arrival
    /// order), or refuses with `overloaded`.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> MemResult<T> {
        let permit = self.admit().await?;
        blocking(move || {
            let out = f();
            drop(permit);
            out
        })
        .await
    }

    async fn admit(&self) -> MemResult<OwnedSemaphorePermit> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        let before = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _left = Waiting(&self.waiting);
        if before >= self.max_waiting {
            return Err(self.refuse("queue_full"));
        }
        match tokio::time::timeout(self.max_wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_)) => Err(MemError::internal("the admission queue was closed")),
            Err(_) => Err(self.refuse("waited_too_long")),
        }
    }

    fn refuse(&self, why: &str) -> MemError {
        self.shed.fetch_add(1, Ordering::Relaxed);
        MemError::new(
            ErrorCode::Overloaded,
            "the server has more requests waiting than it can start in time",
        )
        .with_hint(format!(
            "retry after {RETRY_AFTER_SECS} s (the retry-after header), or send fewer requests at once"
        ))
        .with_details(json!({
            "reason": why,
            "retry_after": RETRY_AFTER_SECS,
            "running_limit": self.capacity,
            "waiting_limit": self.max_waiting,
            "max_wait_ms": self.max_wait.as_millis() as u64,
        }))
    }

    /// Calls running now.
    pub fn running(&self) -> usize {
        self.capacity - self.slots.available_permits()
    }

    /// Requests waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Requests refused since start.
    pub fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// The queue's gauges and counter in the Prometheus text format.
    pub fn render(&self) -> String {
        format!(
            "# HELP mem_admission_slots Service calls that may run at once.\n\
             # TYPE mem_admission_slots gauge\n\
             mem_admission_slots {}\n\
             # HELP mem_admission_running Service calls running now.\n\
             # TYPE mem_admission_running gauge\n\
             mem_admission_running {}\n\
             # HELP mem_admission_waiting Requests waiting for a slot now.\n\
             # TYPE mem_admission_waiting gauge\n\
             mem_admission_waiting {}\n\
             # HELP mem_admission_shed_total Requests refused as overloaded (503).\n\
             # TYPE mem_admission_shed_total counter\n\
             mem_admission_shed_total {}\n",
            self.capacity,
            self.running(),
            self.waiting(),
            self.shed()
        )
    }
}

/// Runs `f` on tokio's blocking pool (service work does disk and model
/// work, which must not stall the async workers), admitted or not.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> MemResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| MemError::internal(format!("the request's worker failed: {e}")))
}

/// Counts a waiting request for as long as it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn blocked(flag: &Arc<AtomicBool>) -> impl FnOnce() + Send + 'static {
        let flag = flag.clone();
        move || {
            while !flag.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    async fn settle(a: &Admission, running: usize, waiting: usize) {
        for _ in 0..500 {
            if a.running() == running && a.waiting() == waiting {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!(
            "expected {running} running and {waiting} waiting, saw {} and {}",
            a.running(),
            a.waiting()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_past_the_slots_wait_in_turn_and_then_run() {
        let a = Arc::new(Admission::new(2, 8, Duration::from_secs(30)));
        let release = Arc::new(AtomicBool::new(false));
        let mut runs = Vec::new();
        for _ in 0..5 {
            let a = a.clone();
            let f = blocked(&release);
            runs.push(tokio::spawn(async move { a.run(f).await }));
        }
        settle(&a, 2, 3).await;
        release.store(true, Ordering::SeqCst);
        for r in runs {
            r.await.expect("task").expect("admitted");
        }
        assert_eq!((a.running(), a.waiting(), a.shed()), (0, 0, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_refuses_with_retry_after_and_runs_nothing() {
        let a = Arc::new(Admission::new(1, 1, Duration::from_secs(30)));
        let release = Arc::new(AtomicBool::new(false));
        let first = {
            let (a, f) = (a.clone(), blocked(&release));
            tokio::spawn(async move { a.run(f).await })
        };
        settle(&a, 1, 0).await;
        let second = {
            let (a, f) = (a.clone(), blocked(&release));
            tokio::spawn(async move { a.run(f).await })
        };
        settle(&a, 1, 1).await;
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let err = a
            .run(move || r.store(true, Ordering::SeqCst))
            .await
            .expect_err("the queue is full");
        assert_eq!(err.code, ErrorCode::Overloaded);
        assert_eq!(err.details["reason"], "queue_full");
        assert_eq!(err.details["retry_after"], RETRY_AFTER_SECS);
        assert!(!ran.load(Ordering::SeqCst), "a refused call never runs");
        assert_eq!(a.shed(), 1);
        release.store(true, Ordering::SeqCst);
        first.await.expect("task").expect("admitted");
        second.await.expect("task").expect("admitted");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_that_waits_too_long_is_refused() {
        let a = Arc::new(Admission::new(1, 8, Duration::from_millis(50)));
        let release = Arc::new(AtomicBool::new(false));
        let first = {
            let (a, f) = (a.clone(), blocked(&release));
            tokio::spawn(async move { a.run(f).await })
        };
        settle(&a, 1, 0).await;
        let err = a.run(|| ()).await.expect_err("waited past max_wait");
        assert_eq!(err.details["reason"], "waited_too_long");
        assert_eq!(a.waiting(), 0, "a refused request no longer waits");
        release.store(true, Ordering::SeqCst);
        first.await.expect("task").expect("admitted");
        assert!(a.render().contains("mem_admission_shed_total 1\n"));
    }
}
