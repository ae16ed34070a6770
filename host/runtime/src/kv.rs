//! The `kv` import: a plugin's own key-value namespace in
//! `Table::PluginKv` (`"{plugin}\0{key}"`), bounded per value and per
//! namespace.
//!
//! The bytes a namespace holds are kept in a usage record under the
//! runtime's reserved prefix (`~runtime/kv-usage/{plugin}`, out of every
//! namespace's reach, see `failures`), changed in the same atomic batch as
//! every set and delete, with both the record and the key's old value as
//! conditions. A set used to sum the whole namespace instead: the topic
//! detector caches a vector per text, and at 100k memories each set read
//! its megabytes back (most of a relations step's time). A namespace
//! written before the record existed is summed once, when first written.

use mem_core::plugin::Capability;
use mem_core::store::{Batch, Durability, Scan, StoreError, Table};

use crate::bindings::v0_1_0::host::mem::plugin::kv;
use crate::bindings::v0_1_0::types::{HostError, HostErrorCode};
use crate::state::{CallState, host_error};

/// Longest `kv` key. Defends against keys used as value storage.
pub(crate) const MAX_KV_KEY_BYTES: usize = 512;
/// Most keys one `list-keys` call returns. Defends against a plugin
/// forcing the host to materialise a huge namespace listing.
pub(crate) const MAX_KV_LIST: u32 = 10_000;
/// Attempts of a set or delete whose conditions a concurrent call of the
/// same plugin broke.
const ATTEMPTS: usize = 16;

/// The store key of `key` in `plugin`'s namespace (`Table::PluginKv`).
pub(crate) fn kv_store_key(plugin: &str, key: &str) -> String {
    format!("{plugin}\0{key}")
}

/// The store key of `plugin`'s usage record.
pub(crate) fn usage_key(plugin: &str) -> String {
    format!("~runtime/kv-usage/{plugin}")
}

fn validate_kv_key(key: &str) -> Result<(), HostError> {
    if key.is_empty() {
        return Err(host_error(
            HostErrorCode::Invalid,
            "kv keys must not be empty",
        ));
    }
    if key.len() > MAX_KV_KEY_BYTES {
        return Err(host_error(
            HostErrorCode::TooLarge,
            format!("kv keys are at most {MAX_KV_KEY_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn internal(e: impl std::fmt::Display) -> HostError {
    host_error(
        HostErrorCode::Internal,
        format!("the host store failed: {e}"),
    )
}

/// What a key with `value` counts against the quota.
fn footprint(key: &str, value: Option<&[u8]>) -> u64 {
    value.map_or(0, |v| (key.len() + v.len()) as u64)
}

/// A namespace's usage: the bytes, and the record as stored (the
/// condition of the batch that changes it; `None` when there is none).
struct Usage {
    bytes: u64,
    stored: Option<Vec<u8>>,
}

impl CallState {
    fn kv_key(&self, key: &str) -> String {
        kv_store_key(&self.ctx.name, key)
    }

    fn usage(&self) -> Result<Usage, HostError> {
        let store = &self.ctx.store;
        let stored = store
            .get(Table::PluginKv, &usage_key(&self.ctx.name))
            .map_err(internal)?;
        if let Some(Ok(b)) = stored.as_deref().map(<[u8; 8]>::try_from) {
            return Ok(Usage {
                bytes: u64::from_le_bytes(b),
                stored,
            });
        }
        // Absent (or not ours to trust): sum the namespace once and keep
        // the sum, also when the set that asked is then refused (a full
        // namespace is where a plugin keeps trying).
        let namespace = kv_store_key(&self.ctx.name, "");
        let bytes: u64 = store
            .scan(
                Table::PluginKv,
                &Scan {
                    prefix: &namespace,
                    limit: usize::MAX,
                    ..Scan::default()
                },
            )
            .map_err(internal)?
            .iter()
            .map(|(k, v)| (k.len() - namespace.len() + v.len()) as u64)
            .sum();
        let record = bytes.to_le_bytes().to_vec();
        let mut batch = Batch::new();
        batch.expect(Table::PluginKv, usage_key(&self.ctx.name), stored);
        batch.put(Table::PluginKv, usage_key(&self.ctx.name), record.clone());
        match store.commit(batch, Durability::Immediate) {
            // Another call kept it first: the next attempt reads that one.
            Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(Usage {
                bytes,
                stored: Some(record),
            }),
            Err(e) => Err(internal(e)),
        }
    }

    /// Sets (`Some`) or deletes (`None`) `key`, keeping the usage record
    /// exact; refuses a set that would pass the namespace's quota.
    fn change(&mut self, key: &str, value: Option<Vec<u8>>) -> Result<(), HostError> {
        let full_key = self.kv_key(key);
        let usage_key = usage_key(&self.ctx.name);
        let quota = self.ctx.limits.kv_quota_bytes;
        for _ in 0..ATTEMPTS {
            let usage = self.usage()?;
            let old = self
                .ctx
                .store
                .get(Table::PluginKv, &full_key)
                .map_err(internal)?;
            if value.is_none() && old.is_none() {
                // Nothing to delete: no write, the usage unchanged.
                return Ok(());
            }
            let others = usage.bytes.saturating_sub(footprint(key, old.as_deref()));
            let needed = footprint(key, value.as_deref());
            if value.is_some() && others + needed > quota {
                return Err(host_error(
                    HostErrorCode::TooLarge,
                    format!(
                        "kv namespace quota of {quota} bytes exceeded (used {others}, needed {needed})"
                    ),
                ));
            }
            let mut batch = Batch::new();
            batch.expect(Table::PluginKv, usage_key.clone(), usage.stored);
            batch.expect(Table::PluginKv, full_key.clone(), old);
            match &value {
                Some(v) => batch.put(Table::PluginKv, full_key.clone(), v.clone()),
                None => batch.delete(Table::PluginKv, full_key.clone()),
            };
            let bytes = others + needed;
            batch.put(
                Table::PluginKv,
                usage_key.clone(),
                bytes.to_le_bytes().to_vec(),
            );
            match self.ctx.store.commit(batch, Durability::Immediate) {
                Ok(_) => return Ok(()),
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(internal(e)),
            }
        }
        Err(host_error(
            HostErrorCode::Internal,
            "the kv namespace kept changing under concurrent calls; try again",
        ))
    }
}

impl kv::Host for CallState {
    fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, HostError> {
        self.require(Capability::Kv)?;
        validate_kv_key(&key)?;
        self.ctx
            .store
            .get(Table::PluginKv, &self.kv_key(&key))
            .map_err(internal)
    }

    fn set(&mut self, key: String, value: Vec<u8>) -> Result<(), HostError> {
        self.require(Capability::Kv)?;
        validate_kv_key(&key)?;
        let limits = self.ctx.limits;
        if value.len() as u64 > limits.kv_value_bytes {
            return Err(host_error(
                HostErrorCode::TooLarge,
                format!(
                    "kv values are at most {} bytes (got {})",
                    limits.kv_value_bytes,
                    value.len()
                ),
            ));
        }
        self.change(&key, Some(value))
    }

    fn delete(&mut self, key: String) -> Result<(), HostError> {
        self.require(Capability::Kv)?;
        validate_kv_key(&key)?;
        self.change(&key, None)
    }

    fn list_keys(&mut self, prefix: String, limit: u32) -> Result<Vec<String>, HostError> {
        self.require(Capability::Kv)?;
        let namespace = kv_store_key(&self.ctx.name, "");
        let full_prefix = kv_store_key(&self.ctx.name, &prefix);
        let limit = limit.min(MAX_KV_LIST) as usize;
        let rows = self
            .ctx
            .store
            .scan(
                Table::PluginKv,
                &Scan {
                    prefix: &full_prefix,
                    limit,
                    ..Scan::default()
                },
            )
            .map_err(internal)?;
        Ok(rows
            .into_iter()
            .map(|(k, _)| k[namespace.len()..].to_string())
            .collect())
    }
}
