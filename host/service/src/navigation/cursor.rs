//! The stateless page cursors of the navigation reads (catalog, trace):
//! `{tag}{revision}-{position}-{digest}`. A cursor says where the next page
//! starts in the answer read at `revision` (trace: an index into its
//! answer; catalog: the hex of the last item's `{path}\0{id}`), and carries
//! the digest of the request's filters, so it cannot be replayed against
//! another question or a changed workspace.

use mem_core::{ErrorCode, MemError, MemResult};
use serde_json::json;

/// One kind of cursor: its leading tag and what it pages (for errors).
pub(crate) struct Kind {
    pub tag: char,
    pub pages: &'static str,
}

impl Kind {
    /// The cursor of the page starting at `position`.
    pub(crate) fn encode(
        &self,
        revision: u64,
        position: impl std::fmt::Display,
        digest: &str,
    ) -> String {
        format!("{}{revision}-{position}-{digest}", self.tag)
    }

    /// Where a page starts: 0 without a cursor, else the cursor's
    /// position. Another tag, shape or digest is unprocessable; another
    /// revision is `cursor_stale`.
    pub(crate) fn decode(
        &self,
        cursor: Option<&str>,
        revision: u64,
        digest: &str,
    ) -> MemResult<usize> {
        let Some(c) = cursor else { return Ok(0) };
        let pos = self.decode_raw(c, revision, digest)?;
        pos.parse().map_err(|_| self.bad(c))
    }

    /// A cursor's position as it was encoded (after the same checks as
    /// [`Self::decode`]).
    pub(crate) fn decode_raw<'c>(
        &self,
        c: &'c str,
        revision: u64,
        digest: &str,
    ) -> MemResult<&'c str> {
        let bad = || self.bad(c);
        let mut parts = c.strip_prefix(self.tag).ok_or_else(bad)?.split('-');
        let (Some(rev), Some(pos), Some(dig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let rev: u64 = rev.parse().map_err(|_| bad())?;
        if dig != digest {
            return Err(MemError::new(
                ErrorCode::Unprocessable,
                format!("the cursor belongs to a {} with other filters", self.pages),
            )
            .with_hint("send the cursor with the same request, or drop it")
            .with_details(json!({ "field": "cursor" })));
        }
        if rev != revision {
            return Err(stale(rev, revision));
        }
        Ok(pos)
    }

    /// `unprocessable`: not a cursor of this kind of page.
    pub(crate) fn bad(&self, c: &str) -> MemError {
        MemError::new(ErrorCode::Unprocessable, format!("bad cursor {c:?}"))
            .with_hint(format!(
                "pass back the next_cursor of the previous page of the same {}",
                self.pages
            ))
            .with_details(json!({ "field": "cursor" }))
    }
}

/// `cursor_stale`: the workspace changed under a paged read.
pub(crate) fn stale(cursor_revision: u64, revision: u64) -> MemError {
    MemError::new(
        ErrorCode::CursorStale,
        format!(
            "the workspace changed since the cursor was issued (revision {cursor_revision}, now {revision})"
        ),
    )
    .with_hint("start again without the cursor: the first page reads the current state")
    .with_details(json!({ "cursor_revision": cursor_revision, "revision": revision }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: Kind = Kind {
        tag: 'c',
        pages: "catalog request",
    };

    #[test]
    fn cursors_round_trip_and_refuse_a_changed_workspace() {
        assert_eq!(K.decode(None, 7, "abcdef01").unwrap(), 0);
        let c = K.encode(7, 12, "abcdef01");
        assert_eq!(c, "c7-12-abcdef01");
        assert_eq!(K.decode(Some(&c), 7, "abcdef01").unwrap(), 12);
        let e = K.decode(Some(&c), 8, "abcdef01").unwrap_err();
        assert_eq!(e.code, ErrorCode::CursorStale);
        assert_eq!(e.code.http_status(), 409);
        let other = K.decode(Some(&c), 7, "00000000").unwrap_err();
        assert_eq!(other.code, ErrorCode::Unprocessable);
        for bad in [
            "",
            "c",
            "c7-12",
            "x7-12-abcdef01",
            "c7-12-abcdef01-1",
            "c-1-2-abcdef01",
        ] {
            assert_eq!(
                K.decode(Some(bad), 7, "abcdef01").unwrap_err().code,
                ErrorCode::Unprocessable,
                "{bad}"
            );
        }
    }
}
