//! Content coming in: bytes are streamed into the blob store with bounded
//! memory (hashed while written, its size limit enforced as it arrives,
//! its MIME type sniffed from the first bytes), before any record points
//! at them. A blob no record comes to reference is swept by the store.

use crate::Service;
use crate::mime;
use mem_core::{ErrorCode, MemError, MemResult};
use serde_json::json;
use std::io::Read;

/// Content in the blob store, not yet referenced by a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Staged {
    pub sha256: String,
    pub size: u64,
    pub mime: String,
    /// The same bytes were stored before.
    pub deduplicated: bool,
}

/// Passes bytes through while keeping the first ones (for sniffing) and
/// refusing to go past `limit`.
struct Intake<'r> {
    inner: &'r mut dyn Read,
    head: Vec<u8>,
    seen: u64,
    limit: u64,
    over: bool,
}

impl Read for Intake<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen += n as u64;
        if self.seen > self.limit {
            self.over = true;
            return Err(std::io::Error::other("content is larger than the limit"));
        }
        let room = mime::SNIFF_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&buf[..n.min(room)]);
        Ok(n)
    }
}

impl Service {
    /// Streams `reader` into the blob store under the workspace's file size
    /// limit; `name` refines the sniffed type of text.
    /// `hint` is a client's MIME type hint (parsed by `mime::parse_hint`;
    /// it only chooses among text types).
    pub(crate) fn stage_content(
        &self,
        reader: &mut dyn Read,
        name: &str,
        hint: Option<&str>,
    ) -> MemResult<Staged> {
        let limit = self.config().limits.max_file_bytes;
        let mut intake = Intake {
            inner: reader,
            head: Vec::new(),
            seen: 0,
            limit,
            over: false,
        };
        let written = self.store().put_blob_from(&mut intake);
        if intake.over {
            return Err(MemError::new(
                ErrorCode::PayloadTooLarge,
                format!("the file is larger than the limit of {limit} bytes"),
            )
            .with_hint("raise limits.max_file_bytes in mem.toml, or split the file")
            .with_details(json!({ "limit": limit })));
        }
        let written = written?;
        let complete = written.size as usize <= mime::SNIFF_BYTES;
        Ok(Staged {
            mime: mime::sniff_head(&intake.head, complete, name, hint),
            sha256: written.sha256,
            size: written.size,
            deduplicated: written.existed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_hashed_sniffed_and_limited_while_it_streams() {
        let (_d, s) = crate::tests::service();
        let staged = s
            .stage_content(&mut &b"# Title\n\nbody\n"[..], "a.md", None)
            .unwrap();
        assert_eq!(staged.mime, "text/markdown");
        assert_eq!(staged.size, 14);
        assert_eq!(
            staged.sha256,
            mem_core::hash::sha256_hex(b"# Title\n\nbody\n")
        );
        assert!(!staged.deduplicated);
        let again = s
            .stage_content(&mut &b"# Title\n\nbody\n"[..], "b.md", None)
            .unwrap();
        assert!(again.deduplicated);

        let mut cfg = crate::WorkspaceConfig::default();
        cfg.limits.max_file_bytes = 8;
        let (_d2, small) = crate::tests::service_with(cfg);
        let e = small
            .stage_content(&mut &b"0123456789"[..], "x.txt", None)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::PayloadTooLarge);
        assert!(
            !small
                .store()
                .has_blob(&mem_core::hash::sha256_hex(b"0123456789"))
                .unwrap()
        );
    }
}
