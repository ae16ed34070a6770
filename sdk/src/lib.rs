//! mem-plugin-sdk: write a mem-host plugin as ordinary Rust.
//!
//! A plugin is a WebAssembly component implementing one world of the WIT
//! package `mem:plugin@0.1.0`. This crate gives an author one trait per
//! world ([`Processor`], [`RelationDetector`], [`Policy`], [`Selector`],
//! [`Adapter`]) with default methods where a sensible default exists, one
//! macro ([`export_plugin!`]) that turns an implementation into the
//! component's exports, the shared WIT records ([`types`]) with small
//! constructors, and safe wrappers over the host imports ([`log`],
//! [`config`], [`kv`], [`embed`]).
//!
//! The key decision: the export macro generates the bindings of the chosen
//! world *in the author's crate*, so the built component embeds exactly one
//! world, while every record type and host import comes from this crate.
//! On a native target the host imports behave as an in-process test double
//! (see [`native`]), so plugin logic is unit-testable with `cargo test`;
//! the `mem-plugin-harness` crate runs the real component under the real
//! host limits.
//!
//! ```ignore
//! use mem_plugin_sdk::{Processor, types::*};
//! struct Csv;
//! impl Processor for Csv {
//!     const MIME_TYPES: &'static [&'static str] = &["text/csv"];
//!     fn process(file: FileInput) -> Result<Processed, PluginError> { todo!() }
//! }
//! mem_plugin_sdk::export_plugin!(processor: Csv);
//! ```
//! Build with `cargo build --release --target wasm32-wasip2`.

/// The WIT package version this SDK implements.
pub const WIT_VERSION: &str = "0.1.0";

#[doc(hidden)]
pub mod __private {
    pub use wit_bindgen;
}

/// Raw bindings of the host imports (prefer the wrappers [`log`], [`config`], [`kv`], [`embed`]).
#[doc(hidden)]
#[allow(unsafe_code, dead_code, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/v0.1.0",
        world: "mem:plugin/host@0.1.0",
        additional_derives: [PartialEq],
    });
}

include!(concat!(env!("OUT_DIR"), "/export_macro.rs"));

pub mod facts;
mod host;
pub mod text;
pub mod types;

pub use host::{config, embed, kv, log, native};

use types::*;

/// A file processor: file bytes + MIME type → chunks with line ranges,
/// title, metadata, entities, tags.
pub trait Processor {
    /// MIME types handled by the default [`Processor::accepts`]; an entry
    /// ending in `/*` matches a whole top-level type (`text/*`).
    const MIME_TYPES: &'static [&'static str] = &[];

    /// Whether this processor handles `mime`. Must be cheap and
    /// deterministic: the host caches the answer per MIME type.
    fn accepts(mime: &str) -> bool {
        mime_matches(Self::MIME_TYPES, mime)
    }

    /// Processes one whole file. Chunk line ranges are 1-based and inclusive
    /// (`1 <= start <= end`); the host rejects any other range.
    fn process(file: FileInput) -> Result<Processed, PluginError>;
}

/// True when `mime` (parameters like `; charset=utf-8` ignored) is listed
/// in `patterns`, or its top-level type is listed as `type/*`.
pub fn mime_matches(patterns: &[&str], mime: &str) -> bool {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    patterns.iter().any(|p| match p.strip_suffix("/*") {
        Some(top) => essence.split('/').next() == Some(top),
        None => essence == *p,
    })
}

/// A relation detector: subject + candidates → typed, scored relations.
pub trait RelationDetector {
    /// Relations from `subject` to candidates. Every `target` must be the id
    /// of one of `candidates`; scores are in [0, 1].
    fn detect(subject: Item, candidates: Vec<Item>) -> Result<Vec<Relation>, PluginError>;
}

/// A policy: verdicts with reasons on writes and reads. Both default to
/// allowing, so a write-only policy implements only `check_write`.
pub trait Policy {
    /// Judges a proposed write. Every reason carries a stable snake_case code.
    fn check_write(proposal: Proposal) -> Result<Verdict, PluginError> {
        let _ = proposal;
        Ok(Verdict::allow())
    }

    /// Judges an item about to be returned to `request`.
    fn check_read(item: ReadItem, request: ReadRequest) -> Result<Verdict, PluginError> {
        let _ = (item, request);
        Ok(Verdict::allow())
    }
}

/// One stage of the context selection chain.
pub trait Selector {
    /// Ids of kept candidates, best first: a duplicate-free subset of the
    /// candidates' ids, at most `limit` long (the host rejects anything else).
    fn select(
        candidates: Vec<Candidate>,
        query: Query,
        limit: u32,
    ) -> Result<Vec<String>, PluginError>;
}

/// An import/export adapter between an external document and host entries.
pub trait Adapter {
    /// Entries of the document `name` (e.g. `CLAUDE.md`), in document order.
    fn import(name: &str, bytes: Vec<u8>) -> Result<Vec<Entry>, PluginError>;

    /// Renders entries as the document `name`. Default: unsupported.
    fn export(name: &str, entries: Vec<Entry>) -> Result<Vec<u8>, PluginError> {
        let _ = entries;
        Err(PluginError::new(
            "unsupported",
            format!("this adapter cannot export {name}"),
        ))
    }
}

/// Keeps the first `limit` ids of `ordered` (a helper for selectors).
pub fn take_ids<'a>(ordered: impl IntoIterator<Item = &'a Candidate>, limit: u32) -> Vec<String> {
    ordered
        .into_iter()
        .take(limit as usize)
        .map(|c| c.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_patterns_match_essence_and_wildcards() {
        assert!(mime_matches(&["text/*"], "text/markdown; charset=utf-8"));
        assert!(mime_matches(&["application/json"], "Application/JSON"));
        assert!(!mime_matches(&["text/csv"], "text/plain"));
        assert!(!mime_matches(&[], "text/plain"));
    }

    struct Allow;
    impl Policy for Allow {}

    #[test]
    fn policy_defaults_allow() {
        let v = Allow::check_read(
            ReadItem {
                id: "m".into(),
                kind: "fact".into(),
                role: None,
                path: "/".into(),
                lifecycle: "active".into(),
                confidence: 1.0,
                created_at_ms: 0,
                event_at_ms: None,
                tags: vec![],
                source: None,
                attributes: vec![],
                pinned: false,
            },
            ReadRequest {
                agent: None,
                path: None,
                query: String::new(),
                now_ms: 0,
            },
        )
        .unwrap();
        assert_eq!(v.decision, Decision::Allow);
    }
}
