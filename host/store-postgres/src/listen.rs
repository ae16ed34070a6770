//! Following other hosts' commits: a dedicated connection LISTENs on the
//! workspace's channel, and every commit that appends events NOTIFYs it
//! with the events log's last sequence number (delivered when that commit
//! is visible). [`Signal::wait`] wakes a follower as soon as one arrives.
//! Notifications are a speed-up, not the truth: a follower still reads the
//! log, and wakes at its timeout anyway, so a lost connection (re-made
//! here with a pause) costs latency, never an entry.

use futures_util::StreamExt;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{AsyncMessage, NoTls};

/// Pause before listening again after the connection failed.
const RECONNECT: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Signal {
    /// (newest events sequence number notified, wake-ups so far)
    state: Mutex<(u64, u64)>,
    cv: Condvar,
}

impl Signal {
    fn notified(&self, seq: Option<u64>) {
        let mut s = self.state.lock();
        if let Some(seq) = seq {
            s.0 = s.0.max(seq);
        }
        s.1 += 1;
        self.cv.notify_all();
    }

    /// Returns once a commit after `after` was notified, the listener
    /// (re)connected (something may have been missed), or `timeout` passed.
    pub(crate) fn wait(&self, after: u64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock();
        let wakes = s.1;
        while s.0 <= after && s.1 == wakes {
            if self.cv.wait_until(&mut s, deadline).timed_out() {
                break;
            }
        }
    }
}

/// Listens until the runtime stops.
pub(crate) async fn run(config: tokio_postgres::Config, channel: String, signal: Arc<Signal>) {
    loop {
        if let Ok((client, mut conn)) = config.connect(NoTls).await {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let driver = tokio::spawn(async move {
                let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
                while let Some(Ok(m)) = messages.next().await {
                    if let AsyncMessage::Notification(n) = m
                        && tx.send(n.payload().parse::<u64>().ok()).is_err()
                    {
                        break;
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN \"{channel}\""))
                .await
                .is_ok()
            {
                signal.notified(None);
                while let Some(seq) = rx.recv().await {
                    signal.notified(seq);
                }
            }
            driver.abort();
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_on_a_newer_commit_or_the_timeout() {
        let s = Arc::new(Signal::default());
        let t = Instant::now();
        s.wait(0, Duration::from_millis(30));
        assert!(t.elapsed() >= Duration::from_millis(30));
        let s2 = s.clone();
        let waker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s2.notified(Some(5));
        });
        let t = Instant::now();
        s.wait(4, Duration::from_secs(10));
        assert!(t.elapsed() < Duration::from_secs(5));
        waker.join().unwrap_or(());
        // Already notified past `after`: no wait at all.
        let t = Instant::now();
        s.wait(4, Duration::from_secs(10));
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
