//! Texts embedded one at a time (queries) that wait for a session, and
//! the passes that embed them together.

use super::failed;
use mem_core::index::IndexError;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Longest a query waits for a session before it looks again on its own
/// (a session freed by a batch caller, which does not signal, or a signal
/// missed between looking and waiting).
const QUERY_POLL: Duration = Duration::from_millis(2);

/// Texts embedded one at a time (queries) waiting for a session. Under
/// load more searches embed at once than there are sessions; embedding
/// those that wait in one pass costs less CPU per text (a short query on
/// this machine's model: 3.55 ms alone, 2.93 two to a pass, 2.53 four).
#[derive(Default)]
pub(super) struct Queries {
    state: Mutex<QueryState>,
    /// Signalled when a pass ends: answers are in, a session is free.
    pub passed: Condvar,
    /// The most texts one pass has held (tests, and the curious).
    pub largest_pass: AtomicUsize,
}

#[derive(Default)]
struct QueryState {
    next: u64,
    waiting: VecDeque<(u64, String)>,
    answered: HashMap<u64, Result<Vec<f32>, IndexError>>,
}

impl Queries {
    /// Queues `text`; returns its ticket.
    pub fn enter(&self, text: &str) -> u64 {
        let mut st = self.state.lock();
        let ticket = st.next;
        st.next += 1;
        st.waiting.push_back((ticket, text.to_string()));
        ticket
    }

    /// Up to `most` waiting texts, oldest first, for one pass. Each is
    /// answered when the pass drops, with an error if nothing else.
    pub fn take(&self, most: usize) -> Pass<'_> {
        let mut st = self.state.lock();
        let n = st.waiting.len().min(most);
        let texts: Vec<(u64, String)> = st.waiting.drain(..n).collect();
        self.largest_pass.fetch_max(texts.len(), Ordering::Relaxed);
        Pass(self, texts)
    }

    /// Hands each text of `pass` its vector (or the pass's error).
    fn answer(&self, pass: &[(u64, String)], result: Result<Vec<Vec<f32>>, IndexError>) {
        let mut st = self.state.lock();
        match result {
            Ok(vectors) if vectors.len() == pass.len() => {
                for ((ticket, _), v) in pass.iter().zip(vectors) {
                    st.answered.insert(*ticket, Ok(v));
                }
            }
            Ok(vectors) => {
                let e = failed(format!(
                    "the model answered {} vectors for {} texts",
                    vectors.len(),
                    pass.len()
                ));
                for (ticket, _) in pass {
                    st.answered.insert(*ticket, Err(e.clone()));
                }
            }
            Err(e) => {
                for (ticket, _) in pass {
                    st.answered.insert(*ticket, Err(e.clone()));
                }
            }
        }
    }

    /// `ticket`'s answer if it is in; else waits for a pass to end (at
    /// most [`QUERY_POLL`]) and looks again.
    pub fn answer_for(&self, ticket: u64) -> Option<Result<Vec<f32>, IndexError>> {
        let mut st = self.state.lock();
        if let Some(a) = st.answered.remove(&ticket) {
            return Some(a);
        }
        self.passed.wait_for(&mut st, QUERY_POLL);
        st.answered.remove(&ticket)
    }
}

/// The texts of a pass being embedded. If the pass unwinds before they
/// are answered, they get an error, so their callers do not wait forever.
pub(super) struct Pass<'a>(&'a Queries, Vec<(u64, String)>);

impl Pass<'_> {
    pub fn texts(&self) -> Vec<&str> {
        self.1.iter().map(|(_, t)| t.as_str()).collect()
    }

    /// Hands each text its vector (or the pass's error). The texts leave
    /// the pass first: an owner may take its answer before the pass drops,
    /// and the drop must not answer it again.
    pub fn answer(mut self, result: Result<Vec<Vec<f32>>, IndexError>) {
        let texts = std::mem::take(&mut self.1);
        self.0.answer(&texts, result);
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state.lock();
        for (ticket, _) in &self.1 {
            st.answered
                .entry(*ticket)
                .or_insert_with(|| Err(failed("the embedding pass holding this text failed")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_that_unwinds_answers_its_texts_with_an_error() {
        let q = Queries::default();
        let (a, b) = (q.enter("a"), q.enter("b"));
        {
            let pass = q.take(8);
            assert_eq!(pass.texts(), ["a", "b"]);
        }
        assert!(q.answer_for(a).is_some_and(|r| r.is_err()));
        assert!(q.answer_for(b).is_some_and(|r| r.is_err()));
    }

    #[test]
    fn each_text_gets_its_own_vector_and_nothing_is_left_behind() {
        let q = Queries::default();
        let (a, b, c) = (q.enter("a"), q.enter("b"), q.enter("c"));
        let pass = q.take(2);
        pass.answer(Ok(vec![vec![1.0], vec![2.0]]));
        assert_eq!(q.answer_for(b).and_then(Result::ok), Some(vec![2.0]));
        assert_eq!(q.answer_for(a).and_then(Result::ok), Some(vec![1.0]));
        assert_eq!(q.state.lock().answered.len(), 0);
        // The third waits for the next pass; a model that answers the
        // wrong number of vectors fails the pass, not the process.
        let pass = q.take(8);
        assert_eq!(pass.texts(), ["c"]);
        pass.answer(Ok(Vec::new()));
        assert!(q.answer_for(c).is_some_and(|r| r.is_err()));
        assert_eq!(q.state.lock().answered.len(), 0);
        assert_eq!(q.largest_pass.load(Ordering::Relaxed), 2);
    }
}
