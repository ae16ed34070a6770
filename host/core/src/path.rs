//! Virtual paths: the folder tree files and memories live in.
//!
//! Rules (each violation names its rule in a `bad_path` error): absolute,
//! no trailing slash (except the root `/`), no empty, `.` or `..` segment,
//! no segment that starts or ends with whitespace, no NUL, control,
//! zero-width or text-direction character, at most [`MAX_PATH_CHARS`]
//! characters.
//! Paths are case-sensitive and compared byte-wise.

use crate::error::{ErrorCode, MemError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Longest accepted path in characters (at most 4 KiB of UTF-8); defends
/// the key space of every backend.
pub const MAX_PATH_CHARS: usize = 1024;

/// Characters that render as nothing or reorder text: zero-width
/// characters, joiners, bidirectional controls and marks, the BOM. Two
/// paths that look the same must be the same path.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'            // soft hyphen
        | '\u{034F}'          // combining grapheme joiner
        | '\u{061C}'          // Arabic letter mark
        | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
        | '\u{180E}'          // Mongolian vowel separator
        | '\u{200B}'..='\u{200F}' // zero-width space/joiners, LRM, RLM
        | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
        | '\u{2066}'..='\u{206F}' // bidi isolates, deprecated format characters
        | '\u{FEFF}'          // BOM / zero-width no-break space
        | '\u{FE00}'..='\u{FE0F}' // variation selectors
    )
}

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
        if raw.chars().count() > MAX_PATH_CHARS {
            return Err(fail(
                "too_long",
                &format!("longer than {MAX_PATH_CHARS} characters"),
            ));
        }
        if raw.contains('\0') {
            return Err(fail("nul_byte", "contains a NUL byte"));
        }
        if raw.chars().any(char::is_control) {
            return Err(fail("control_character", "contains a control character"));
        }
        if let Some(c) = raw.chars().find(|c| is_invisible(*c)) {
            return Err(fail(
                "invisible_character",
                &format!(
                    "contains U+{:04X}, an invisible or text-direction character that makes lookalike paths",
                    c as u32
                ),
            ));
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
                s if s.trim() != s => {
                    return Err(fail(
                        "padded_segment",
                        &format!("segment {s:?} starts or ends with whitespace"),
                    ));
                }
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
            "description": "Absolute virtual path: starts with '/', no trailing slash, no empty, '.' or '..' segment, no segment padded with whitespace, no control or invisible character.",
            "pattern": path_pattern(),
            "minLength": 1,
            "maxLength": MAX_PATH_CHARS
        })
    }
}

/// Control and invisible characters (those of [`is_invisible`]) as a
/// regex class body, for schema patterns of names, paths and tags.
pub const INVISIBLE_CLASS: &str = "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0";

/// The path rules as a JSON Schema pattern (ECMA-262, no lookaround), so a
/// client's validator refuses what the server refuses.
pub fn path_pattern() -> String {
    let any = format!("[^/{INVISIBLE_CLASS}]");
    let edge = format!("[^/{INVISIBLE_CLASS}\\s]");
    let edge_no_dot = format!("[^/{INVISIBLE_CLASS}\\s.]");
    // A segment: one non-dot character; or two or more with non-space
    // ends that are not `..` (a leading dot needs a non-dot after it when
    // the segment is two long).
    let seg =
        format!("(?:{edge_no_dot}|{edge_no_dot}{any}*{edge}|\\.{edge_no_dot}|\\.{any}+{edge})");
    format!("^/(?:{seg}(?:/{seg})*)?$")
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
            rule(&format!("/{}", "x".repeat(MAX_PATH_CHARS))),
            "too_long"
        );
        assert_eq!(rule("/a/ b"), "padded_segment");
        assert_eq!(rule("/a /b"), "padded_segment");
        assert_eq!(rule("/a/b\u{00a0}"), "padded_segment");
        assert_eq!(rule("/pay\u{202e}fdp.exe"), "invisible_character");
        assert_eq!(rule("/a\u{200b}b"), "invisible_character");
        assert_eq!(rule("/\u{feff}a"), "invisible_character");
    }

    /// The schema's pattern accepts exactly what `parse` accepts, so a
    /// client validating against the OpenAPI document is never surprised.
    #[test]
    fn the_schema_pattern_agrees_with_parse() {
        let re = regex::Regex::new(&path_pattern()).unwrap();
        for p in [
            "/",
            "/a",
            "/a/b.c",
            "/a/.hidden",
            "/a/..b",
            "/a/...",
            "/a b/c d",
            "/é/ü",
            "/a/.",
            "/a/..",
            "/a/ b",
            "/a /b",
            "/a//b",
            "/a/",
            "a",
            "/a\u{200b}",
            "/x\u{202e}y",
            "/a\tb",
            "/.a",
            "/..",
            "/.",
            "/a/b ",
            "/ ",
        ] {
            assert_eq!(
                re.is_match(p),
                VPath::parse(p).is_ok(),
                "pattern and parse disagree on {p:?}"
            );
        }
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
