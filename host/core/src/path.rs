//! Virtual paths: the folder tree files and memories live in.
//!
//! Rules (each violation names its rule in a `bad_path` error): absolute,
//! no trailing slash (except the root `/`), no empty, `.` or `..` segment,
//! no NUL or other control character, at most [`MAX_PATH_BYTES`] bytes.
//! Paths are case-sensitive and compared byte-wise.

use crate::error::{ErrorCode, MemError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Longest accepted path; defends the key space of every backend.
pub const MAX_PATH_BYTES: usize = 1024;

/// A validated virtual path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VPath(String);

impl VPath {
    pub fn root() -> Self {
        Self("/".to_string())
    }

    /// Validates `raw`, naming the first rule it breaks.
    pub fn parse(raw: &str) -> Result<Self, MemError> {
        let fail = |rule: &str, why: &str| {
            MemError::new(ErrorCode::BadPath, format!("bad path {raw:?}: {why}"))
                .with_hint("use an absolute path such as /projects/notes, without trailing slash, '.' or '..'")
                .with_details(serde_json::json!({ "path": raw, "rule": rule }))
        };
        if raw.is_empty() {
            return Err(fail("empty", "the path is empty"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(fail(
                "too_long",
                &format!("longer than {MAX_PATH_BYTES} bytes"),
            ));
        }
        if raw.contains('\0') {
            return Err(fail("nul_byte", "contains a NUL byte"));
        }
        if raw.chars().any(char::is_control) {
            return Err(fail("control_character", "contains a control character"));
        }
        if !raw.starts_with('/') {
            return Err(fail("not_absolute", "must start with '/'"));
        }
        if raw == "/" {
            return Ok(Self::root());
        }
        if raw.ends_with('/') {
            return Err(fail("trailing_slash", "must not end with '/'"));
        }
        for seg in raw[1..].split('/') {
            match seg {
                "" => return Err(fail("empty_segment", "contains an empty segment ('//')")),
                "." => return Err(fail("dot_segment", "contains a '.' segment")),
                ".." => return Err(fail("dot_dot_segment", "contains a '..' segment")),
                _ => {}
            }
        }
        Ok(Self(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// The parent folder; `None` for the root.
    pub fn parent(&self) -> Option<VPath> {
        if self.is_root() {
            return None;
        }
        match self.0.rfind('/') {
            Some(0) => Some(Self::root()),
            Some(i) => Some(Self(self.0[..i].to_string())),
            None => None,
        }
    }

    /// The last segment; empty for the root.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }

    /// `self/name`, validating `name` as a single segment.
    pub fn join(&self, name: &str) -> Result<VPath, MemError> {
        if name.contains('/') {
            return Err(MemError::new(
                ErrorCode::BadPath,
                format!("name {name:?} must not contain '/'"),
            )
            .with_details(serde_json::json!({ "path": name, "rule": "slash_in_name" })));
        }
        if self.is_root() {
            Self::parse(&format!("/{name}"))
        } else {
            Self::parse(&format!("{}/{name}", self.0))
        }
    }

    /// True when `self` is `other` or lies below it.
    pub fn is_within(&self, other: &VPath) -> bool {
        other.is_root()
            || self.0 == other.0
            || (self.0.starts_with(&other.0) && self.0.as_bytes().get(other.0.len()) == Some(&b'/'))
    }

    /// Every ancestor from the root down to (excluding) `self`.
    pub fn ancestors(&self) -> Vec<VPath> {
        let mut out = Vec::new();
        let mut cur = self.parent();
        while let Some(p) = cur {
            cur = p.parent();
            out.push(p);
        }
        out.reverse();
        out
    }

    /// Re-roots `self` from under `from` to under `to` (for folder moves).
    pub fn rebase(&self, from: &VPath, to: &VPath) -> Result<VPath, MemError> {
        let rest = if self == from {
            ""
        } else {
            &self.0[from.0.len()..]
        };
        if to.is_root() {
            if rest.is_empty() {
                Ok(Self::root())
            } else {
                Self::parse(rest)
            }
        } else {
            Self::parse(&format!("{}{rest}", to.0))
        }
    }

    /// The prefix that every strict descendant's path starts with.
    pub fn child_prefix(&self) -> String {
        if self.is_root() {
            "/".to_string()
        } else {
            format!("{}/", self.0)
        }
    }
}

impl fmt::Display for VPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for VPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for VPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        VPath::parse(&raw).map_err(|e| serde::de::Error::custom(e.message))
    }
}

impl schemars::JsonSchema for VPath {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "VPath".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Absolute virtual path: starts with '/', no trailing slash, no empty/'.'/'..' segments.",
            "pattern": "^/([^/\\u0000]+(/[^/\\u0000]+)*)?$",
            "maxLength": MAX_PATH_BYTES
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(raw: &str) -> String {
        VPath::parse(raw).unwrap_err().details["rule"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn accepts_good_paths() {
        for p in [
            "/",
            "/a",
            "/a/b.c",
            "/Projects/Notes",
            "/a/.hidden",
            "/a/..b",
        ] {
            assert_eq!(VPath::parse(p).unwrap().as_str(), p);
        }
    }

    #[test]
    fn rejects_each_rule_by_name() {
        assert_eq!(rule(""), "empty");
        assert_eq!(rule("a/b"), "not_absolute");
        assert_eq!(rule("/a/"), "trailing_slash");
        assert_eq!(rule("/a//b"), "empty_segment");
        assert_eq!(rule("/a/./b"), "dot_segment");
        assert_eq!(rule("/a/../b"), "dot_dot_segment");
        assert_eq!(rule("/a\0b"), "nul_byte");
        assert_eq!(rule("/a\nb"), "control_character");
        assert_eq!(
            rule(&format!("/{}", "x".repeat(MAX_PATH_BYTES))),
            "too_long"
        );
    }

    #[test]
    fn parent_name_and_within() {
        let p = VPath::parse("/a/b/c").unwrap();
        assert_eq!(p.parent().unwrap().as_str(), "/a/b");
        assert_eq!(p.name(), "c");
        assert_eq!(VPath::parse("/a").unwrap().parent().unwrap(), VPath::root());
        assert!(p.is_within(&VPath::parse("/a").unwrap()));
        assert!(p.is_within(&p));
        assert!(
            !VPath::parse("/ab")
                .unwrap()
                .is_within(&VPath::parse("/a").unwrap())
        );
        assert!(p.is_within(&VPath::root()));
        assert_eq!(
            p.ancestors().iter().map(VPath::as_str).collect::<Vec<_>>(),
            ["/", "/a", "/a/b"]
        );
    }

    #[test]
    fn case_sensitive() {
        assert_ne!(VPath::parse("/A").unwrap(), VPath::parse("/a").unwrap());
    }

    #[test]
    fn rebase_moves_subtree() {
        let p = VPath::parse("/a/b/c").unwrap();
        let from = VPath::parse("/a").unwrap();
        let to = VPath::parse("/x/y").unwrap();
        assert_eq!(p.rebase(&from, &to).unwrap().as_str(), "/x/y/b/c");
        assert_eq!(from.rebase(&from, &to).unwrap().as_str(), "/x/y");
    }
}
