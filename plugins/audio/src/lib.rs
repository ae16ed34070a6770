//! `audio`: the first-party processor for music and recordings.
//!
//! No speech model runs inside a plugin, so a recording's words are out of
//! reach: what is indexed is its tags and duration (`audio.duration_ms`,
//! `audio.title`, `audio.artist`, `audio.album`, `audio.genre`,
//! `audio.year`, `audio.track`, `audio.sample_rate`, `audio.channels`) and
//! one chunk made of them, and the file is reported `partial` (metadata
//! key `index.partial`) with the reason.

use std::io::Cursor;

use lofty::config::ParseOptions;
use lofty::file::{AudioFile, TaggedFileExt};
use lofty::probe::Probe;
use lofty::tag::{Accessor, ItemKey};
use mem_plugin_sdk::Processor;
use mem_plugin_sdk::types::*;

pub struct Audio;

/// Why an audio file is only partly indexed.
pub const NO_SPEECH: &str = "no speech model is available; tags only";

impl Processor for Audio {
    const MIME_TYPES: &'static [&'static str] = &["audio/*"];

    fn process(file: FileInput) -> Result<Processed, PluginError> {
        process_audio(&file)
    }
}

/// Tags and duration of `file`; an unreadable file is an error.
pub fn process_audio(file: &FileInput) -> Result<Processed, PluginError> {
    let unreadable = |e: lofty::error::LoftyError| {
        PluginError::invalid_input(format!(
            "not a readable audio file ({e}); MP3, FLAC, Ogg, WAV and M4A are supported"
        ))
    };
    let tagged = Probe::new(Cursor::new(&file.bytes))
        .options(ParseOptions::new().read_cover_art(false))
        .guess_file_type()
        .map_err(|e| unreadable(e.into()))?
        .read()
        .map_err(unreadable)?;
    let props = tagged.properties();
    let mut meta: Vec<(String, String)> = vec![("format".into(), "audio".into())];
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            meta.push((k.to_string(), v));
        }
    };
    put(
        "audio.duration_ms",
        Some(props.duration().as_millis().to_string()),
    );
    put(
        "audio.sample_rate",
        props.sample_rate().map(|r| r.to_string()),
    );
    put("audio.channels", props.channels().map(|c| c.to_string()));
    if let Some(tag) = tagged.primary_tag().or_else(|| tagged.first_tag()) {
        put("audio.title", tag.title().map(|s| s.into_owned()));
        put("audio.artist", tag.artist().map(|s| s.into_owned()));
        put("audio.album", tag.album().map(|s| s.into_owned()));
        put("audio.genre", tag.genre().map(|s| s.into_owned()));
        put(
            "audio.year",
            tag.get_string(&ItemKey::Year)
                .or_else(|| tag.get_string(&ItemKey::RecordingDate))
                .map(str::to_string),
        );
        put("audio.track", tag.track().map(|t| t.to_string()));
        put("audio.comment", tag.comment().map(|s| s.into_owned()));
    }
    let mut out = Processed::empty();
    out.title = meta
        .iter()
        .find(|(k, _)| k == "audio.title")
        .map(|(_, v)| v.clone())
        .or_else(|| Some(file.name.clone()).filter(|n| !n.is_empty()));
    out.chunks.push(Chunk::new(
        describe(&file.name, &meta),
        LineRange::new(1, 1),
        "audio",
    ));
    meta.push(("index.partial".into(), NO_SPEECH.into()));
    out.metadata = meta;
    out.tags.push("audio".into());
    Ok(out)
}

/// The words search finds the recording by.
fn describe(name: &str, meta: &[(String, String)]) -> String {
    let get = |k: &str| {
        meta.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let mut s = format!("Audio {name}");
    for (key, label) in [
        ("audio.title", "title"),
        ("audio.artist", "artist"),
        ("audio.album", "album"),
        ("audio.genre", "genre"),
        ("audio.year", "year"),
        ("audio.comment", "comment"),
    ] {
        if let Some(v) = get(key) {
            s.push_str(&format!(", {label} {v}"));
        }
    }
    if let Some(ms) = get("audio.duration_ms").and_then(|m| m.parse::<u64>().ok()) {
        s.push_str(&format!(", {}:{:02} long", ms / 60_000, ms / 1000 % 60));
    }
    s.push('.');
    s
}

mem_plugin_sdk::export_plugin!(processor: Audio);

#[cfg(test)]
mod tests;
