//! What can go wrong with a bundle, each with its own stable code.

use mem_core::{ErrorCode, MemError};
use serde_json::json;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum BundleError {
    #[error("the bundle has format version {found}; this mem-host reads up to {supported}")]
    UnsupportedVersion { found: u64, supported: u32 },
    #[error("the bundle lacks blob {sha256}")]
    MissingBlob { sha256: String },
    #[error("{path}: its {what} is {actual}, the manifest says {expected}")]
    HashMismatch {
        path: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("not a valid mem-host bundle: {reason}")]
    Invalid { reason: String },
    #[error("the bundle is past what an import takes: {what} (limit {limit})")]
    TooLarge { what: String, limit: u64 },
    #[error("cannot write the bundle: {0}")]
    Write(String),
    /// A failure of the blob source or sink (the store), as it was.
    #[error("{0}")]
    Other(MemError),
}

impl BundleError {
    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::Invalid {
            reason: reason.into(),
        }
    }
}

impl From<BundleError> for MemError {
    fn from(e: BundleError) -> Self {
        let message = e.to_string();
        match e {
            BundleError::UnsupportedVersion { found, supported } => {
                MemError::new(ErrorCode::BundleUnsupportedVersion, message)
                    .with_details(json!({ "found": found, "supported": supported }))
            }
            BundleError::MissingBlob { sha256 } => {
                MemError::new(ErrorCode::BundleMissingBlob, message)
                    .with_details(json!({ "sha256": sha256 }))
            }
            BundleError::HashMismatch {
                path,
                what,
                expected,
                actual,
            } => MemError::new(ErrorCode::BundleHashMismatch, message).with_details(json!({
                "entry": path, "field": what, "expected": expected, "actual": actual
            })),
            BundleError::Invalid { reason } => MemError::new(ErrorCode::BundleInvalid, message)
                .with_details(json!({ "reason": reason })),
            BundleError::TooLarge { what, limit } => {
                MemError::new(ErrorCode::PayloadTooLarge, message)
                    .with_hint("this is not a bundle mem-host exports; export it again, or import it on a machine with higher limits")
                    .with_details(json!({ "what": what, "limit": limit }))
            }
            BundleError::Write(_) => MemError::new(ErrorCode::Io, message),
            BundleError::Other(e) => e,
        }
    }
}
