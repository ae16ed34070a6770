//! Safe wrappers over the host imports, with an in-process double on
//! native targets so plugin logic can be unit-tested without a host.
//!
//! Every import is a capability: it works only when the plugin's manifest
//! requests it and the workspace grants it. A denied call returns a
//! [`HostError`](crate::types::HostError) with code `denied` (and the host
//! reports the missing grant if the plugin call then fails); `log` never
//! fails, it drops what it may not write.

#[cfg(target_arch = "wasm32")]
mod imp {
    use crate::bindings::mem::plugin::{config, embed, kv, log};
    use crate::types::HostError;

    pub fn log(level: log::Level, message: &str) {
        log::log(level, message);
    }
    pub fn config_get(key: &str) -> Result<Option<String>, HostError> {
        config::get(key)
    }
    pub fn config_entries() -> Result<Vec<(String, String)>, HostError> {
        config::entries()
    }
    pub fn kv_get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
        kv::get(key)
    }
    pub fn kv_set(key: &str, value: &[u8]) -> Result<(), HostError> {
        kv::set(key, value)
    }
    pub fn kv_delete(key: &str) -> Result<(), HostError> {
        kv::delete(key)
    }
    pub fn kv_list_keys(prefix: &str, limit: u32) -> Result<Vec<String>, HostError> {
        kv::list_keys(prefix, limit)
    }
    pub fn embed_model() -> Result<(String, u32), HostError> {
        embed::model()
    }
    pub fn embed(texts: &[String]) -> Result<Vec<Vec<f32>>, HostError> {
        embed::embed(texts)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::native::with;
    use crate::bindings::mem::plugin::log::Level;
    use crate::types::{HostError, HostErrorCode};

    fn unavailable(what: &str) -> HostError {
        HostError {
            code: HostErrorCode::Unavailable,
            message: format!("{what} is not set up in the native test double"),
        }
    }

    pub fn log(level: Level, message: &str) {
        with(|h| h.logs.push((level, message.to_string())));
    }
    pub fn config_get(key: &str) -> Result<Option<String>, HostError> {
        Ok(with(|h| h.config.get(key).cloned()))
    }
    pub fn config_entries() -> Result<Vec<(String, String)>, HostError> {
        Ok(with(|h| {
            h.config
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }))
    }
    pub fn kv_get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
        Ok(with(|h| h.kv.get(key).cloned()))
    }
    pub fn kv_set(key: &str, value: &[u8]) -> Result<(), HostError> {
        if key.is_empty() {
            return Err(HostError {
                code: HostErrorCode::Invalid,
                message: "empty key".into(),
            });
        }
        with(|h| h.kv.insert(key.to_string(), value.to_vec()));
        Ok(())
    }
    pub fn kv_delete(key: &str) -> Result<(), HostError> {
        with(|h| h.kv.remove(key));
        Ok(())
    }
    pub fn kv_list_keys(prefix: &str, limit: u32) -> Result<Vec<String>, HostError> {
        Ok(with(|h| {
            h.kv.keys()
                .filter(|k| k.starts_with(prefix))
                .take(limit as usize)
                .cloned()
                .collect()
        }))
    }
    pub fn embed_model() -> Result<(String, u32), HostError> {
        with(|h| h.embedder.map(|(name, dims, _)| (name.to_string(), dims)))
            .ok_or_else(|| unavailable("embed"))
    }
    pub fn embed(texts: &[String]) -> Result<Vec<Vec<f32>>, HostError> {
        let f = with(|h| h.embedder.map(|(_, _, f)| f)).ok_or_else(|| unavailable("embed"))?;
        Ok(texts.iter().map(|t| f(t)).collect())
    }
}

/// The host log (capability `log`).
pub mod log {
    pub use crate::bindings::mem::plugin::log::Level;

    pub fn log(level: Level, message: &str) {
        super::imp::log(level, message);
    }
    pub fn debug(message: &str) {
        log(Level::Debug, message);
    }
    pub fn info(message: &str) {
        log(Level::Info, message);
    }
    pub fn warn(message: &str) {
        log(Level::Warn, message);
    }
    pub fn error(message: &str) {
        log(Level::Error, message);
    }
}

/// The plugin's own settings from `mem.toml` (capability `config`).
pub mod config {
    use crate::types::HostError;

    /// One setting; `Ok(None)` when unset.
    pub fn get(key: &str) -> Result<Option<String>, HostError> {
        super::imp::config_get(key)
    }

    /// Every setting, sorted by key.
    pub fn entries() -> Result<Vec<(String, String)>, HostError> {
        super::imp::config_entries()
    }

    /// The setting parsed as `T`, or `default` when it is unset, not
    /// granted, or does not parse (a plugin should work with no config).
    pub fn get_or<T: std::str::FromStr>(key: &str, default: T) -> T {
        match get(key) {
            Ok(Some(v)) => v.trim().parse().unwrap_or(default),
            _ => default,
        }
    }
}

/// The plugin's private key-value namespace (capability `kv`).
pub mod kv {
    use crate::types::HostError;

    pub fn get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
        super::imp::kv_get(key)
    }
    pub fn set(key: &str, value: &[u8]) -> Result<(), HostError> {
        super::imp::kv_set(key, value)
    }
    pub fn delete(key: &str) -> Result<(), HostError> {
        super::imp::kv_delete(key)
    }
    /// Keys starting with `prefix`, sorted, at most `limit`.
    pub fn list_keys(prefix: &str, limit: u32) -> Result<Vec<String>, HostError> {
        super::imp::kv_list_keys(prefix, limit)
    }
}

/// The host's text embedder (capability `embed`).
pub mod embed {
    use crate::types::HostError;

    /// `(model id, dimensions)`.
    pub fn model() -> Result<(String, u32), HostError> {
        super::imp::embed_model()
    }
    /// One L2-normalised vector per text, in order.
    pub fn embed(texts: &[String]) -> Result<Vec<Vec<f32>>, HostError> {
        super::imp::embed(texts)
    }
}

/// The native test double behind the host wrappers (non-wasm targets only):
/// per-thread settings, key-value map, captured logs and an optional embedder.
pub mod native {
    #[cfg(not(target_arch = "wasm32"))]
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use crate::bindings::mem::plugin::log::Level;

    /// An embedder for tests: `(model id, dimensions, function)`.
    pub type NativeEmbedder = (&'static str, u32, fn(&str) -> Vec<f32>);

    #[derive(Default)]
    pub struct NativeHost {
        pub config: BTreeMap<String, String>,
        pub kv: BTreeMap<String, Vec<u8>>,
        pub logs: Vec<(Level, String)>,
        pub embedder: Option<NativeEmbedder>,
    }

    #[cfg(not(target_arch = "wasm32"))]
    thread_local! {
        static HOST: RefCell<NativeHost> = RefCell::new(NativeHost::default());
    }

    /// Runs `f` on this thread's double.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with<R>(f: impl FnOnce(&mut NativeHost) -> R) -> R {
        HOST.with(|h| f(&mut h.borrow_mut()))
    }

    /// Sets one setting seen through `config` on this thread.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn set_config(key: &str, value: &str) {
        with(|h| h.config.insert(key.to_string(), value.to_string()));
    }

    /// Drains the messages logged on this thread.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn take_logs() -> Vec<(Level, String)> {
        with(|h| std::mem::take(&mut h.logs))
    }

    /// Resets this thread's double.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn reset() {
        with(|h| *h = NativeHost::default());
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn native_double_backs_the_wrappers() {
        native::reset();
        native::set_config("max", "12");
        assert_eq!(config::get_or("max", 5u32), 12);
        assert_eq!(config::get_or("missing", 5u32), 5);
        kv::set("a/1", b"x").unwrap();
        kv::set("b/1", b"y").unwrap();
        assert_eq!(kv::list_keys("a/", 10).unwrap(), vec!["a/1".to_string()]);
        assert!(kv::set("", b"z").is_err());
        log::info("hello");
        assert_eq!(native::take_logs().len(), 1);
        assert!(embed::model().is_err());
    }
}
