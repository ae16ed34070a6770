//! Database and object-store failures as `StoreError`s: an unreachable
//! backend is `Unavailable` (never an empty answer), anything else `Io`
//! with the database's own code; every message is scrubbed of secrets.

use crate::options::Secrets;
use mem_core::store::StoreError;

pub(crate) const DATABASE: &str = "database";
pub(crate) const OBJECT_STORE: &str = "object store";

pub(crate) fn unavailable(backend: &str, reason: String) -> StoreError {
    StoreError::Unavailable {
        backend: backend.into(),
        reason,
    }
}

/// SQLSTATE classes that mean "cannot talk to the database now".
fn is_unreachable(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("28")
        || code.starts_with("53")
        || code.starts_with("57P")
        || code == "3D000"
}

pub(crate) fn pg(secrets: &Secrets, e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) if is_unreachable(db.code().code()) => unavailable(
            DATABASE,
            secrets.redact(format!("{} ({})", db.message(), db.code().code())),
        ),
        Some(db) => StoreError::Io(secrets.redact(format!(
            "the database refused a statement: {} ({})",
            db.message(),
            db.code().code()
        ))),
        None => unavailable(DATABASE, secrets.redact(e.to_string())),
    }
}

pub(crate) fn pool(secrets: &Secrets, e: deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => pg(secrets, e),
        deadpool_postgres::PoolError::Timeout(_) => unavailable(
            DATABASE,
            "no connection to the database within the timeout".into(),
        ),
        other => unavailable(DATABASE, secrets.redact(other.to_string())),
    }
}

pub(crate) fn object(secrets: &Secrets, e: object_store::Error) -> StoreError {
    let text = secrets.redact(e.to_string());
    match e {
        object_store::Error::Generic { .. } => unavailable(OBJECT_STORE, text),
        _ => StoreError::Io(format!("the object store failed: {text}")),
    }
}
