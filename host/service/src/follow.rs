//! Following a shared event log: on a shared store other hosts write too,
//! and this host's search index (derived local state) must find their
//! writes as well as its own. A follower thread waits for the log to move
//! past the index's watermark ([`mem_core::store::Store::wait_for_log`]:
//! woken by the backend's notifications, at the latest after
//! [`FOLLOW_WAIT`]) and replays it as after a local write. It also runs
//! the blob sweep now and then, which the embedded store does at open.
//!
//! The bound, measured by the two-host test: a write acknowledged on one
//! host is found by search on another within the notification's latency
//! plus one replay (8 to 14 ms on loopback); if notifications are lost,
//! within [`FOLLOW_WAIT`] plus one replay.

use crate::Service;
use mem_core::store::Log;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest wait between two looks at the log.
pub const FOLLOW_WAIT: Duration = Duration::from_secs(1);

/// How often a host sweeps blobs no record references.
const SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);

impl Service {
    /// Runs until `stop` is set (seen within [`FOLLOW_WAIT`]).
    pub(crate) fn run_follower(&self, stop: &AtomicBool) {
        let mut swept = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let after = match self.index() {
                Ok(Some(index)) => index.watermark(),
                // No index (or none yet): nothing to follow with.
                Ok(None) | Err(_) => {
                    std::thread::sleep(FOLLOW_WAIT);
                    continue;
                }
            };
            self.store().wait_for_log(Log::Events, after, FOLLOW_WAIT);
            if stop.load(Ordering::Relaxed) {
                break;
            }
            self.sync_index_after_write();
            if swept.elapsed() >= SWEEP_EVERY {
                swept = Instant::now();
                if let Err(e) = self.store().gc_blobs() {
                    tracing::warn!(error = %e, "the blob sweep failed");
                }
            }
        }
    }
}
