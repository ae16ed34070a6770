//! The background worker of a long-running process (`serve`, `mcp`): it
//! processes queued files, replays acknowledged writes into the index,
//! computes relations and saves deferred state, as work arrives; a CLI
//! command settles the same way before it exits. Relations of a backlog
//! yield to requests (see [`RELATE_UNDER_LOAD_EVERY`]).

use crate::Service;
use mem_core::{MemError, MemResult};
use parking_lot::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn warn(what: &str, e: &MemError) {
    tracing::warn!(code = %e.code, error = %e.message, "{what}");
}

/// How long the worker sleeps without work before it saves deferred
/// derived state anyway.
pub(crate) const WORKER_IDLE: Duration = Duration::from_secs(5);

/// While calls keep every core busy, the worker computes a step of the
/// relations backlog at most this often. Relations are derived data no
/// request waits for (`related` computes a step itself); a bulk import's
/// backlog, a step every few seconds, took a tenth of a loaded server's
/// CPU. With calls arriving it computes a step per idle wait; a server no
/// call reached during the last step works through it step after step
/// (back to back under one client, they tripled its p99).
pub(crate) const RELATE_UNDER_LOAD_EVERY: Duration = Duration::from_secs(30);

/// While writes keep arriving, the worker computes a step of relations at
/// most this often (the writes of the interval in one step). A step's cost
/// is mostly its candidates (the newest memories and files, each compared
/// by every detector in wasm), whatever its items: one step per write of
/// an agent remembering 20 memories a second took 40% of a searching
/// server's CPU.
pub(crate) const RELATE_WHILE_WRITING_EVERY: Duration = Duration::from_secs(1);

/// What kind of worker round settles (see [`Service::settle_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    /// No work arrived for a while (or a CLI command is finishing): save
    /// everything deferred, compute relations.
    Idle,
    /// Relations are pending and no call came during the last step.
    Backlog,
    /// Writes woke the worker.
    Writes,
}

/// This machine's cores, read once (the standard library reads the
/// cgroup's quota files each time it is asked).
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Counts a surface's call as running while it lives.
pub(crate) struct Foreground<'a>(&'a AtomicUsize);

impl Drop for Foreground<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the worker knows of the process's load.
#[derive(Debug, Default)]
pub(crate) struct WorkerState {
    /// Surface calls running now (see [`Service::foreground_call`]).
    foreground: AtomicUsize,
    /// Surface calls started since the process started.
    calls: AtomicU64,
    /// When the worker last computed a step of relations.
    pub(crate) related_at: Mutex<Option<Instant>>,
    /// A worker runs in this process: it saves deferred state whenever it
    /// is idle (at least every [`WORKER_IDLE`]) and as it stops, so what
    /// only informs (the recall log, token call counts) is written in
    /// batches instead of a store commit per call.
    pub(crate) running: AtomicBool,
}

impl Service {
    /// The worker loop of a long-running process: drains the processing
    /// queue as work arrives and saves deferred derived state when idle,
    /// until `stop` is set (checked at least every few seconds).
    pub fn run_worker(&self, stop: &AtomicBool) {
        if let Err(e) = self.requeue_pending() {
            warn("cannot queue pending files", &e);
        }
        // A workspace from before the tallies is counted as the server
        // starts, not in the first catalog page someone waits for.
        if let Err(e) = self.ensure_tallies() {
            warn("cannot count the catalog's tallies", &e);
        }
        let mut go_on = false;
        while !stop.load(Ordering::Relaxed) {
            let idle = {
                let mut ids = self.processing.ids.lock();
                // A write woke the worker while it was busy, or relations
                // are pending and no call came during the last step: go on.
                ids.is_empty()
                    && !self.is_index_behind()
                    && !go_on
                    && self
                        .processing
                        .ready
                        .wait_for(&mut ids, WORKER_IDLE)
                        .timed_out()
            };
            if stop.load(Ordering::Relaxed) {
                break;
            }
            // While writes keep arriving, the index saves its vectors at
            // most every few seconds (at its commits); rewriting the whole
            // vectors file after every round made ingest pay for it again
            // and again. An idle round saves everything.
            let calls = self.worker.calls.load(Ordering::Relaxed);
            let round = match (idle, go_on) {
                (true, _) => Round::Idle,
                (false, true) => Round::Backlog,
                (false, false) => Round::Writes,
            };
            let relating = self.settle_with(round);
            go_on = relating && self.worker.calls.load(Ordering::Relaxed) == calls;
        }
    }

    /// Finishes what writes left for later: processes queued files,
    /// brings the index up to the log, computes a step of relations,
    /// saves deferred state. The worker
    /// runs it as work arrives; a CLI command runs it before it exits.
    pub fn settle(&self) {
        self.settle_with(Round::Idle);
    }

    /// [`Self::settle`]; an idle round also saves the index's deferred
    /// state now (else the store's only) and counts the tallies if they
    /// need it. True when it computed a step of relations and more are
    /// pending.
    pub(crate) fn settle_with(&self, round: Round) -> bool {
        let save_index = round == Round::Idle;
        if let Err(e) = self.drain_processing() {
            warn("background processing failed", &e);
        }
        // Counted again after an import (see `tally::invalidate`), or when
        // writes kept the worker's first count from finishing: on a round
        // with no writes waiting (a count that writes keep invalidating is
        // a whole pass over the records for nothing).
        if save_index && let Err(e) = self.ensure_tallies() {
            warn("cannot count the catalog's tallies", &e);
        }
        self.catch_up_index();
        let relating = self.relations_may_run(round) && {
            *self.worker.related_at.lock() = Some(Instant::now());
            self.catch_up_related()
        };
        let saved = if save_index {
            self.flush()
        } else {
            self.store().flush().map_err(mem_core::MemError::from)
        };
        if let Err(e) = saved {
            warn("cannot save deferred state", &e);
        }
        relating
    }

    /// Whether a worker saves this process's deferred state (see
    /// [`WorkerState::running`]).
    pub(crate) fn worker_runs(&self) -> bool {
        self.worker.running.load(Ordering::Relaxed)
    }

    /// Counts a surface's call (the door's `run`) as running while the
    /// guard lives: the worker leaves relations alone while calls keep
    /// every core busy.
    pub(crate) fn foreground_call(&self) -> Foreground<'_> {
        self.worker.calls.fetch_add(1, Ordering::Relaxed);
        self.worker.foreground.fetch_add(1, Ordering::Relaxed);
        Foreground(&self.worker.foreground)
    }

    /// Whether a step of relations runs now: unless calls occupy every
    /// core, and then once every [`RELATE_UNDER_LOAD_EVERY`]; while writes
    /// keep arriving, once every [`RELATE_WHILE_WRITING_EVERY`].
    fn relations_may_run(&self, round: Round) -> bool {
        let since = |every: Duration| {
            self.worker
                .related_at
                .lock()
                .is_none_or(|t| t.elapsed() >= every)
        };
        (round != Round::Writes || since(RELATE_WHILE_WRITING_EVERY))
            && (self.worker.foreground.load(Ordering::Relaxed) < cores()
                || since(RELATE_UNDER_LOAD_EVERY))
    }

    /// What a command of a short-lived process (the CLI) does before it
    /// exits: settles what its own writes left. A command that wrote
    /// nothing only saves deferred state: the relations backlog of a bulk
    /// import is left to the next write or to a server's worker, so reads
    /// (`memory get`, `search`) do not pay for a step of it.
    pub fn finish_command(&self) {
        let queued = !self.processing.ids.lock().is_empty();
        let wrote = self.recall.written.load(Ordering::SeqCst) > 0;
        if queued || wrote {
            self.settle();
        } else if let Err(e) = self.flush() {
            warn("cannot save deferred state", &e);
        }
    }

    /// Wakes a worker waiting in [`Service::run_worker`] (to stop it).
    pub fn wake_worker(&self) {
        // Under the queue's lock: the worker checks for work under it too,
        // so a wake-up between its check and its wait is not lost.
        let _queue = self.processing.ids.lock();
        self.processing.ready.notify_all();
    }

    /// Starts the worker of a long-running process on its own thread, and
    /// on a shared store the follower of the other hosts' writes
    /// (see [`crate::follow`]).
    pub fn spawn_worker(self: &std::sync::Arc<Self>) -> MemResult<Worker> {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        self.worker.running.store(true, Ordering::Relaxed);
        let (svc, flag) = (self.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("mem-worker".into())
            .spawn(move || svc.run_worker(&flag))
            .map_err(|e| MemError::io("cannot start the worker", &e))?;
        let follower = if self.store().is_shared() {
            let (svc, flag) = (self.clone(), stop.clone());
            Some(
                std::thread::Builder::new()
                    .name("mem-follower".into())
                    .spawn(move || svc.run_follower(&flag))
                    .map_err(|e| MemError::io("cannot start the log follower", &e))?,
            )
        } else {
            None
        };
        Ok(Worker {
            svc: self.clone(),
            stop,
            thread,
            follower,
        })
    }
}

impl Service {
    /// Replays writes into the index on a thread of its own while a bulk
    /// command of a short-lived process (`remember --jsonl`) goes on
    /// writing, instead of all of them after the last line: the model
    /// embeds one group while the next is stored. A CLI without it wrote
    /// 20k memories in 8 s with one core and then embedded them all. Only
    /// the index: relations and the rest wait for the command's finish.
    pub fn index_alongside(self: &std::sync::Arc<Self>) -> MemResult<IndexAlongside> {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (svc, flag) = (self.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("mem-indexer".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    {
                        let mut ids = svc.processing.ids.lock();
                        if !svc.is_index_behind() && !flag.load(Ordering::SeqCst) {
                            svc.processing.ready.wait_for(&mut ids, WORKER_IDLE);
                        }
                    }
                    if !flag.load(Ordering::SeqCst) {
                        svc.catch_up_index();
                    }
                }
            })
            .map_err(|e| MemError::io("cannot start the indexer", &e))?;
        Ok(IndexAlongside {
            svc: self.clone(),
            stop,
            thread: Some(thread),
        })
    }
}

/// The thread of [`Service::index_alongside`]; dropping it stops the
/// thread after its current sync (what is left is the finish's).
pub struct IndexAlongside {
    svc: std::sync::Arc<Service>,
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for IndexAlongside {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.svc.wake_worker();
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            tracing::warn!("the indexer stopped with a panic");
        }
    }
}

/// A running worker thread ([`Service::spawn_worker`]).
pub struct Worker {
    svc: std::sync::Arc<Service>,
    stop: std::sync::Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
    follower: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Stops the worker after its current round (blocking until it ends)
    /// and saves deferred state.
    pub fn stop(self) -> MemResult<()> {
        self.stop.store(true, Ordering::SeqCst);
        self.svc.wake_worker();
        if self.thread.join().is_err() {
            tracing::warn!("the worker stopped with a panic");
        }
        if let Some(f) = self.follower
            && f.join().is_err()
        {
            tracing::warn!("the log follower stopped with a panic");
        }
        self.svc.flush()
    }
}
