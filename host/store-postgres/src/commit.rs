//! One batch, one transaction, one workspace-wide order.
//!
//! Every commit of a workspace takes the same transaction-scoped advisory
//! lock first, so commits are serialized across hosts: conditions (also on
//! absent keys, which no row lock could guard) are read after every earlier
//! commit is visible, and log sequence numbers are assigned under the lock
//! from `log_heads`. The lock is released only after the commit is visible,
//! so an entry can never become visible after one with a larger number: a
//! follower reading `seq > watermark` skips nothing. At READ COMMITTED each
//! statement sees everything committed before the lock was granted.

use crate::store::Inner;
use mem_core::store::{Batch, Committed, Condition, Durability, Log, Op, StoreError, Table};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

type Params<'a> = [&'a (dyn tokio_postgres::types::ToSql + Sync)];

/// A table's net changes: key → new value (`None`: deleted).
type Changes = HashMap<Vec<u8>, Option<Vec<u8>>>;

/// Applies `batch`; also returns the blobs whose last reference went
/// (their objects are removed after the commit, see `blobs`).
pub(crate) async fn commit(
    i: &Inner,
    batch: Batch,
    durability: Durability,
) -> Result<(Committed, Vec<String>), StoreError> {
    let mut client = i.client().await?;
    let tx = client.transaction().await.map_err(|e| i.pg(e))?;
    if durability == Durability::Deferred {
        // Durable at the next `flush` (a synchronous commit), like sled's.
        tx.batch_execute("SET LOCAL synchronous_commit TO OFF")
            .await
            .map_err(|e| i.pg(e))?;
    }
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&i.commit_key])
        .await
        .map_err(|e| i.pg(e))?;
    check_conditions(i, &tx, &batch.conditions).await?;

    // Net effect per key (the last op wins), per table.
    let mut records: BTreeMap<&str, (Table, Changes)> = BTreeMap::new();
    let mut appends: BTreeMap<&str, (Log, Vec<Vec<u8>>)> = BTreeMap::new();
    let mut order: Vec<Log> = Vec::new();
    let mut refs: Vec<(String, i64)> = Vec::new();
    for op in batch.ops {
        match op {
            Op::Put { table, key, value } => {
                records
                    .entry(table.name())
                    .or_insert_with(|| (table, HashMap::new()))
                    .1
                    .insert(key.into_bytes(), Some(value));
            }
            Op::Delete { table, key } => {
                records
                    .entry(table.name())
                    .or_insert_with(|| (table, HashMap::new()))
                    .1
                    .insert(key.into_bytes(), None);
            }
            Op::Append { log, value } => {
                appends
                    .entry(log.name())
                    .or_insert_with(|| (log, Vec::new()))
                    .1
                    .push(value);
                order.push(log);
            }
            Op::BlobRef { sha256, delta } => refs.push((sha256, delta)),
        }
    }

    for (table, changes) in records.into_values() {
        let (mut keys, mut values, mut gone) = (Vec::new(), Vec::new(), Vec::new());
        for (k, v) in changes {
            match v {
                Some(v) => {
                    keys.push(k);
                    values.push(v);
                }
                None => gone.push(k),
            }
        }
        let t = i.table(table);
        if !gone.is_empty() {
            exec(
                i,
                &tx,
                &format!("DELETE FROM {t} WHERE k = ANY($1)"),
                &[&gone],
            )
            .await?;
        }
        if !keys.is_empty() {
            exec(
                i,
                &tx,
                &format!(
                    "INSERT INTO {t} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
                     ON CONFLICT (k) DO UPDATE SET v = excluded.v"
                ),
                &[&keys, &values],
            )
            .await?;
        }
    }

    // Sequence numbers, in op order per log.
    let mut next: HashMap<&str, i64> = HashMap::new();
    let mut last_events = None;
    for (name, (log, entries)) in &appends {
        let heads = format!("\"{}\".log_heads", i.schema);
        let stmt = tx
            .prepare_cached(&format!(
                "UPDATE {heads} SET last = last + $2 WHERE log = $1 RETURNING last"
            ))
            .await
            .map_err(|e| i.pg(e))?;
        let n = entries.len() as i64;
        let last: i64 = tx
            .query_one(&stmt, &[name, &n])
            .await
            .map_err(|e| i.pg(e))?
            .get(0);
        let first = last - n + 1;
        let seqs: Vec<i64> = (first..=last).collect();
        exec(
            i,
            &tx,
            &format!(
                "INSERT INTO {} (seq, v) SELECT * FROM unnest($1::int8[], $2::bytea[])",
                i.log(*log)
            ),
            &[&seqs, entries],
        )
        .await?;
        next.insert(name, first);
        if *log == Log::Events {
            last_events = Some(last);
        }
    }
    let mut seqs = Vec::with_capacity(order.len());
    for log in order {
        let n = next.entry(log.name()).or_insert(1);
        seqs.push(*n as u64);
        *n += 1;
    }

    // Blob references, one at a time in op order (as sled applies them).
    let mut dropped: Vec<String> = Vec::new();
    for (sha, delta) in refs {
        let row = tx
            .query_opt(
                &tx.prepare_cached(&format!(
                    "UPDATE {} SET refs = refs + $2, touched_at = now() \
                     WHERE sha256 = $1 AND state = 'stored' RETURNING refs",
                    i.blobs()
                ))
                .await
                .map_err(|e| i.pg(e))?,
                &[&sha, &delta],
            )
            .await
            .map_err(|e| i.pg(e))?;
        let Some(row) = row else {
            return Err(StoreError::MissingBlob { sha256: sha });
        };
        if row.get::<_, i64>(0) <= 0 {
            exec(
                i,
                &tx,
                &format!(
                    "UPDATE {} SET refs = 0, state = 'deleting', touched_at = now() WHERE sha256 = $1",
                    i.blobs()
                ),
                &[&sha],
            )
            .await?;
            if !dropped.contains(&sha) {
                dropped.push(sha);
            }
        }
    }

    if let Some(last) = last_events {
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[&crate::schema::channel(&i.schema), &last.to_string()],
        )
        .await
        .map_err(|e| i.pg(e))?;
    }
    tx.commit().await.map_err(|e| i.pg(e))?;
    if durability == Durability::Deferred {
        i.deferred.store(true, Ordering::SeqCst);
    }
    Ok((Committed { seqs }, dropped))
}

async fn exec(
    i: &Inner,
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &str,
    params: &Params<'_>,
) -> Result<u64, StoreError> {
    let stmt = tx.prepare_cached(sql).await.map_err(|e| i.pg(e))?;
    tx.execute(&stmt, params).await.map_err(|e| i.pg(e))
}

/// Reads every condition's key (one query per table) and checks them in
/// order: the first that does not hold is reported by its index.
async fn check_conditions(
    i: &Inner,
    tx: &deadpool_postgres::Transaction<'_>,
    conditions: &[Condition],
) -> Result<(), StoreError> {
    if conditions.is_empty() {
        return Ok(());
    }
    let mut keys: BTreeMap<&str, (Table, Vec<Vec<u8>>)> = BTreeMap::new();
    for Condition::Equals { table, key, .. } in conditions {
        keys.entry(table.name())
            .or_insert_with(|| (*table, Vec::new()))
            .1
            .push(key.as_bytes().to_vec());
    }
    let mut current: HashMap<(&str, Vec<u8>), Vec<u8>> = HashMap::new();
    for (name, (table, ks)) in &keys {
        let stmt = tx
            .prepare_cached(&format!(
                "SELECT k, v FROM {} WHERE k = ANY($1)",
                i.table(*table)
            ))
            .await
            .map_err(|e| i.pg(e))?;
        for row in tx.query(&stmt, &[ks]).await.map_err(|e| i.pg(e))? {
            current.insert((name, row.get(0)), row.get(1));
        }
    }
    for (index, Condition::Equals { table, key, value }) in conditions.iter().enumerate() {
        let now = current.get(&(table.name(), key.as_bytes().to_vec()));
        if now.map(Vec::as_slice) != value.as_deref() {
            return Err(StoreError::ConditionFailed { index });
        }
    }
    Ok(())
}
