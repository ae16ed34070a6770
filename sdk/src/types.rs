//! The WIT records of `mem:plugin/types`, with small constructors.

pub use crate::bindings::mem::plugin::types::*;

impl PluginError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }

    /// The input cannot be handled (`invalid_input`).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new("invalid_input", message)
    }
}

// `Display` and `Error` for `PluginError` and `HostError` come from wit-bindgen
// (they are the error types of WIT `result`s).

impl From<HostError> for PluginError {
    fn from(e: HostError) -> Self {
        let code = match e.code {
            HostErrorCode::Denied => "capability_denied",
            HostErrorCode::TooLarge => "too_large",
            HostErrorCode::Unavailable => "unavailable",
            HostErrorCode::Invalid => "invalid",
            HostErrorCode::Internal => "host_internal",
        };
        Self::new(code, e.message)
    }
}

impl LineRange {
    /// Lines `start..=end`, 1-based.
    pub fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }
}

impl Processed {
    /// No title, chunks, metadata, entities or tags.
    pub fn empty() -> Self {
        Self {
            title: None,
            chunks: Vec::new(),
            metadata: Vec::new(),
            entities: Vec::new(),
            tags: Vec::new(),
        }
    }

    /// The value of metadata key `key`, if the processor set it.
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl FileInput {
    /// A file at `/{name}` (id `f1`), as the host hands it over; for tests
    /// of a processor.
    pub fn new(name: &str, mime: &str, bytes: Vec<u8>) -> Self {
        Self {
            id: "f1".into(),
            path: format!("/{name}"),
            name: name.into(),
            mime: mime.into(),
            bytes,
        }
    }
}

impl Chunk {
    pub fn new(text: impl Into<String>, lines: LineRange, kind: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            lines,
            section: Vec::new(),
            kind: kind.into(),
        }
    }
}

impl Verdict {
    /// Allow, no reasons.
    pub fn allow() -> Self {
        Self {
            decision: Decision::Allow,
            reasons: Vec::new(),
        }
    }

    pub fn new(decision: Decision, reasons: Vec<Reason>) -> Self {
        Self { decision, reasons }
    }
}

impl Reason {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl Relation {
    pub fn new(
        kind: impl Into<String>,
        target: impl Into<String>,
        score: f32,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            kind: kind.into(),
            target: target.into(),
            score: score.clamp(0.0, 1.0),
            reason: reason.into(),
            difference: None,
        }
    }

    /// With the part the two claims differ in (what the subject says,
    /// what the target says).
    pub fn with_difference(
        mut self,
        subject: impl Into<String>,
        target: impl Into<String>,
    ) -> Self {
        self.difference = Some(Difference {
            subject: subject.into(),
            target: target.into(),
        });
        self
    }
}

impl Entry {
    /// An entry of `kind` with `content`, no section, role, lines, tags or attributes.
    pub fn new(kind: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            content: content.into(),
            section: Vec::new(),
            role: None,
            lines: None,
            tags: Vec::new(),
            attributes: Vec::new(),
        }
    }

    /// The value of attribute `key`, if set.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl Candidate {
    /// `event_at_ms`, falling back to `created_at_ms`.
    pub fn when_ms(&self) -> i64 {
        self.event_at_ms.unwrap_or(self.created_at_ms)
    }
}
