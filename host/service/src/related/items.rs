//! Memories and files as the items relation detectors compare, with the
//! facts (`at:`, `name:`, `person:`, `place:`) the detectors read from
//! their tags (see the plugin SDK's `facts`).

use super::ItemType;
use crate::Service;
use crate::gate::apply::claim_role;
use crate::records::load;
use crate::types::TypeRegistry;
use mem_core::model::{FileRecord, Lifecycle, Memory};
use mem_core::plugin::{DetectItem, ProcessedFile};
use mem_core::store::Table;
use mem_core::{MemResult, VPath, id};

/// Characters of a file's text a detector sees: its start says what it is about.
const MAX_FILE_TEXT_CHARS: usize = 2000;
/// Characters of a memory a `label` shows.
const LABEL_CHARS: usize = 80;

/// Memory attributes naming people or places (comma-separated values).
const PERSON_ATTRIBUTES: &[&str] = &["person", "people", "attendees", "with", "author"];
const PLACE_ATTRIBUTES: &[&str] = &["place", "location", "where"];

/// An item `related` can relate: an active memory or a file.
pub(crate) struct Relatable {
    pub id: String,
    pub item: ItemType,
    pub path: VPath,
    pub label: String,
    pub detect: DetectItem,
}

fn label_of(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() > LABEL_CHARS {
        let cut: String = line.chars().take(LABEL_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

fn split_values(v: &str) -> impl Iterator<Item = &str> {
    v.split([',', ';']).map(str::trim).filter(|s| !s.is_empty())
}

/// The detector's view of a memory.
pub(crate) fn memory_item(registry: &TypeRegistry, m: &Memory) -> DetectItem {
    let at = m.provenance.event_at.unwrap_or(m.created_at);
    let mut tags = vec![
        "source:memory".to_string(),
        format!("at:{}", at.timestamp_millis()),
    ];
    for (key, value) in &m.attributes {
        let key = key.to_lowercase();
        let fact = if PERSON_ATTRIBUTES.contains(&key.as_str()) {
            "person"
        } else if PLACE_ATTRIBUTES.contains(&key.as_str()) {
            "place"
        } else {
            continue;
        };
        tags.extend(split_values(value).map(|v| format!("{fact}:{v}")));
    }
    DetectItem {
        id: m.id.clone(),
        kind: m.kind.clone(),
        role: claim_role(registry, &m.kind),
        text: m.content.clone().unwrap_or_default(),
        path: m.path.as_str().to_string(),
        tags,
    }
}

/// A front matter `date` (`2026-03-04`, or an RFC 3339 time) in unix ms.
fn date_ms(date: &str) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(date.trim()) {
        return Some(t.timestamp_millis());
    }
    let d = chrono::NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").ok()?;
    Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

/// The detector's view of a file: its title and the start of its text,
/// its name, date and the people and places its processors found.
pub(crate) fn file_item(f: &FileRecord, content: Option<&ProcessedFile>) -> DetectItem {
    let mut text = String::new();
    let mut tags = vec!["source:file".to_string(), format!("name:{}", f.name)];
    let mut at = f.created_at.timestamp_millis();
    if let Some(c) = content {
        if let Some(t) = &c.title {
            tags.push(format!("title:{t}"));
            text.push_str(t);
        }
        for chunk in &c.chunks {
            if text.chars().count() >= MAX_FILE_TEXT_CHARS {
                break;
            }
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&chunk.text);
        }
        if let Some(ms) = c.metadata.get("date").and_then(|d| date_ms(d)) {
            at = ms;
        }
        for e in &c.entities {
            if e.kind == "person" || e.kind == "place" {
                tags.push(format!("{}:{}", e.kind, e.value));
            }
        }
    }
    tags.push(format!("at:{at}"));
    tags.extend(f.tags.iter().cloned());
    DetectItem {
        id: f.id.clone(),
        kind: "file".into(),
        role: None,
        text: text.chars().take(MAX_FILE_TEXT_CHARS).collect(),
        path: f.path.as_str().to_string(),
        tags,
    }
}

impl Service {
    /// The memory or file `target` (an id, or a file's path), when it
    /// exists and can relate (a memory must be active).
    pub(crate) fn relatable(&self, target: &str) -> MemResult<Option<Relatable>> {
        if id::has_prefix(target, id::MEMORY) {
            let Some(m) = load::<Memory>(self.store(), Table::Memories, target)? else {
                return Ok(None);
            };
            return Ok(self.relatable_memory(&m.value));
        }
        let file = if target.starts_with('/') {
            match VPath::parse(target) {
                Ok(p) => self.file_at(&p)?,
                Err(_) => None,
            }
        } else if id::has_prefix(target, id::FILE) {
            load::<FileRecord>(self.store(), Table::Files, target)?
        } else {
            None
        };
        match file {
            Some(f) => Ok(Some(self.relatable_file(&f.value)?)),
            None => Ok(None),
        }
    }

    pub(crate) fn relatable_memory(&self, m: &Memory) -> Option<Relatable> {
        if m.lifecycle != Lifecycle::Active {
            return None;
        }
        let config = self.config();
        Some(Relatable {
            id: m.id.clone(),
            item: ItemType::Memory,
            path: m.path.clone(),
            label: label_of(m.content.as_deref().unwrap_or("")),
            detect: memory_item(&config.types.registry, m),
        })
    }

    pub(crate) fn relatable_file(&self, f: &FileRecord) -> MemResult<Relatable> {
        let content = load::<ProcessedFile>(self.store(), Table::FileContent, &f.id)?;
        Ok(Relatable {
            id: f.id.clone(),
            item: ItemType::File,
            path: f.path.clone(),
            label: f.name.clone(),
            detect: file_item(f, content.as_ref().map(|c| &c.value)),
        })
    }
}
