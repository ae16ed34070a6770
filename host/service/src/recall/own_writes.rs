//! What a read must find of the writes acknowledged before it.
//!
//! A caller reads its own writes: a search by a token (or by the owner)
//! first brings the index up to that caller's last acknowledged write. A
//! write by another caller is found once the worker has replayed it (it
//! starts as the write is acknowledged: tens of milliseconds), as hosts of
//! a shared store already see each other's writes. Making every search
//! wait for every other caller's write made 8 searching clients beside one
//! agent remembering 20 memories a second wait on the index 40% of the
//! time. A read outside a caller's call (a CLI command, the worker) still
//! waits for every acknowledged write.

use crate::Service;
use std::cell::Cell;
use std::sync::atomic::Ordering;

thread_local! {
    /// The count of acknowledged writes ([`crate::recall::RecallState`]'s
    /// `written`) the call running on this thread must find in the index;
    /// `None` outside a caller's call: every acknowledged write.
    static MUST_SEE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Held while one caller's call runs (see [`Service::reading_as`]).
pub(crate) struct ReadingAs<'a> {
    svc: &'a Service,
    who: &'a str,
    /// What the call's reads had to find as it began.
    need: u64,
    outer: Option<u64>,
}

impl Service {
    /// Runs the reads of the call that follows as `who` (a token id, or
    /// the owner): they find `who`'s own acknowledged writes. When the
    /// guard drops, a write the call made is remembered as `who`'s.
    pub(crate) fn reading_as<'a>(&'a self, who: &'a str) -> ReadingAs<'a> {
        let need = self.recall.writes_of.lock().get(who).copied().unwrap_or(0);
        let outer = MUST_SEE.replace(Some(need));
        ReadingAs {
            svc: self,
            who,
            need,
            outer,
        }
    }

    /// How many acknowledged writes the index must cover before a read
    /// on this thread.
    pub(crate) fn writes_to_see(&self) -> u64 {
        MUST_SEE
            .get()
            .unwrap_or_else(|| self.recall.written.load(Ordering::SeqCst))
    }

    /// After this thread acknowledged a write (counted in `written`): a
    /// read later in the same call finds it too.
    pub(crate) fn saw_own_write(&self, written: u64) {
        MUST_SEE.with(|m| {
            if let Some(need) = m.get() {
                m.set(Some(need.max(written)));
            }
        });
    }
}

impl Drop for ReadingAs<'_> {
    fn drop(&mut self) {
        // Only what this thread counted: `written` also grows with other
        // callers' writes made meanwhile, and taking those as this
        // caller's would make its next reads wait for them.
        let mine = MUST_SEE.get().unwrap_or(0);
        if mine > self.need {
            let mut of = self.svc.recall.writes_of.lock();
            let seen = of.entry(self.who.to_string()).or_default();
            *seen = (*seen).max(mine);
        }
        MUST_SEE.set(self.outer);
    }
}
