//! The database layout of one workspace and its versioned migrations.
//!
//! One PostgreSQL schema per workspace: a table per record collection
//! (`t_<table>`: `bytea` keys, so keys order byte-wise like sled's and may
//! hold NUL), a table per log (`log_<log>`, keyed by sequence number),
//! `log_heads` (the last sequence number of each log, assigned under the
//! commit lock), `blobs` (size, reference count and state of every blob
//! whose bytes are in the object store) and `store_meta` (the schema
//! version). Migrations run under an advisory lock, so hosts starting
//! together migrate once; a database newer than this binary is refused.

use mem_core::store::{Log, Table};

/// The layout this binary writes and the newest it reads. Version 1 holds
/// records in the format of the embedded store's schema 3; a change of
/// either the layout or the record format bumps it.
pub const SCHEMA_VERSION: u32 = 1;

/// The SQL of migration `version` (to that version from the one before).
pub(crate) fn migration(schema: &str, version: u32) -> Option<String> {
    match version {
        1 => {
            let mut sql = String::new();
            for t in Table::ALL {
                sql.push_str(&format!(
                    "CREATE TABLE {} (k bytea PRIMARY KEY, v bytea NOT NULL);\n",
                    table(schema, *t)
                ));
            }
            for l in Log::ALL {
                sql.push_str(&format!(
                    "CREATE TABLE {} (seq bigint PRIMARY KEY, v bytea NOT NULL);\n\
                     INSERT INTO \"{schema}\".log_heads (log, last) VALUES ('{}', 0);\n",
                    log(schema, *l),
                    l.name()
                ));
            }
            sql.insert_str(
                0,
                &format!(
                    "CREATE TABLE \"{schema}\".log_heads (log text PRIMARY KEY, last bigint NOT NULL);\n\
                     CREATE TABLE \"{schema}\".blobs (\n\
                       sha256 text PRIMARY KEY,\n\
                       size bigint NOT NULL,\n\
                       refs bigint NOT NULL DEFAULT 0,\n\
                       -- uploading: bytes on their way; stored: readable; deleting: the last\n\
                       -- reference went, the object is being removed.\n\
                       state text NOT NULL CHECK (state IN ('uploading', 'stored', 'deleting')),\n\
                       touched_at timestamptz NOT NULL DEFAULT now()\n\
                     );\n\
                     CREATE INDEX blobs_unreferenced ON \"{schema}\".blobs (touched_at) WHERE refs = 0;\n"
                ),
            );
            Some(sql)
        }
        _ => None,
    }
}

/// The quoted name of a record collection's table.
pub(crate) fn table(schema: &str, t: Table) -> String {
    format!("\"{schema}\".t_{}", t.name())
}

/// The quoted name of a log's table.
pub(crate) fn log(schema: &str, l: Log) -> String {
    format!("\"{schema}\".log_{}", l.name())
}

/// The channel commits notify with the events log's last sequence number.
pub(crate) fn channel(schema: &str) -> String {
    format!("mem_{schema}")
}

/// Advisory lock keys of a workspace: commits, and migrations.
pub(crate) fn lock_keys(schema: &str) -> (i64, i64) {
    let h = mem_core::hash::sha256_hex(format!("mem-host store {schema}").as_bytes());
    let n = u64::from_str_radix(&h[..16], 16).unwrap_or(0);
    let commit = n as i64;
    (commit, commit ^ 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_up_to_the_current_one_has_a_migration() {
        for v in 1..=SCHEMA_VERSION {
            assert!(migration("s", v).is_some(), "{v}");
        }
        assert!(migration("s", SCHEMA_VERSION + 1).is_none());
        let sql = migration("s", 1).unwrap_or_default();
        for t in Table::ALL {
            assert!(sql.contains(&table("s", *t)), "{}", t.name());
        }
    }

    #[test]
    fn workspaces_lock_apart() {
        let (a, am) = lock_keys("a");
        let (b, _) = lock_keys("b");
        assert_ne!(a, b);
        assert_ne!(a, am);
        assert_eq!(lock_keys("a"), (a, am));
    }
}
