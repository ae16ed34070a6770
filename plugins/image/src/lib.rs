//! `image`: the first-party processor for photos and pictures.
//!
//! Images have no text, so what makes one findable is its metadata:
//! dimensions (from the header, never decoding pixels) and EXIF (capture
//! time, GPS, camera, orientation). The keys are shared with the timeline:
//! `image.width`, `image.height`, `image.orientation`, `camera.make`,
//! `camera.model`, `time.captured_at` (RFC 3339 with offset, only when EXIF
//! gives the zone), `time.captured_local` (EXIF time without a zone, so its
//! instant is uncertain), `geo.lat`, `geo.lon` (decimal degrees). One chunk
//! describes the image in words (name, size, camera, date, place) so
//! `search` finds it.

use std::io::Cursor;

use exif::{Exif, In, Tag, Value};
use mem_plugin_sdk::Processor;
use mem_plugin_sdk::types::*;

pub struct Image;

impl Processor for Image {
    const MIME_TYPES: &'static [&'static str] = &[
        "image/jpeg",
        "image/png",
        "image/webp",
        "image/gif",
        "image/tiff",
        "image/heic",
        "image/heif",
        "image/avif",
        "image/bmp",
    ];

    fn process(file: FileInput) -> Result<Processed, PluginError> {
        process_image(&file)
    }
}

/// Dimensions and EXIF of `file`; an image whose header cannot be read
/// (truncated, not an image) is an error, EXIF being absent is not.
pub fn process_image(file: &FileInput) -> Result<Processed, PluginError> {
    let size = imagesize::blob_size(&file.bytes).map_err(|e| {
        PluginError::invalid_input(format!(
            "not a readable image ({e}); the header is damaged or truncated"
        ))
    })?;
    let mut out = Processed::empty();
    let mut meta = vec![
        ("format".to_string(), "image".to_string()),
        ("image.width".to_string(), size.width.to_string()),
        ("image.height".to_string(), size.height.to_string()),
    ];
    let exif = exif::Reader::new()
        .read_from_container(&mut Cursor::new(&file.bytes))
        .ok();
    if let Some(exif) = &exif {
        meta.extend(exif_metadata(exif));
    }
    out.chunks.push(Chunk::new(
        describe(&file.name, &meta),
        LineRange::new(1, 1),
        "image",
    ));
    out.metadata = meta;
    out.title = Some(file.name.clone()).filter(|n| !n.is_empty());
    out.tags.push("image".into());
    Ok(out)
}

/// The agreed metadata keys found in `exif`.
pub fn exif_metadata(exif: &Exif) -> Vec<(String, String)> {
    let mut meta = Vec::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            meta.push((k.to_string(), v));
        }
    };
    put(
        "image.orientation",
        exif.get_field(Tag::Orientation, In::PRIMARY)
            .and_then(|f| f.value.get_uint(0))
            .map(|o| o.to_string()),
    );
    put("camera.make", ascii(exif, Tag::Make));
    put("camera.model", ascii(exif, Tag::Model));
    let local = ascii(exif, Tag::DateTimeOriginal)
        .or_else(|| ascii(exif, Tag::DateTime))
        .and_then(|t| exif_local_time(&t));
    let offset = ascii(exif, Tag::OffsetTimeOriginal)
        .or_else(|| ascii(exif, Tag::OffsetTime))
        .filter(|o| valid_offset(o));
    match (local, offset) {
        (Some(l), Some(o)) => put("time.captured_at", Some(format!("{l}{o}"))),
        (Some(l), None) => put("time.captured_local", Some(l)),
        _ => {}
    }
    if let (Some(lat), Some(lon)) = (
        gps(exif, Tag::GPSLatitude, Tag::GPSLatitudeRef, 90.0),
        gps(exif, Tag::GPSLongitude, Tag::GPSLongitudeRef, 180.0),
    ) {
        put("geo.lat", Some(format!("{lat:.6}")));
        put("geo.lon", Some(format!("{lon:.6}")));
    }
    meta
}

fn ascii(exif: &Exif, tag: Tag) -> Option<String> {
    match &exif.get_field(tag, In::PRIMARY)?.value {
        Value::Ascii(parts) => {
            let s: String = parts
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect::<Vec<_>>()
                .join(" ");
            let s = s.trim_matches(|c: char| c == '\0' || c.is_whitespace());
            Some(s.to_string())
        }
        _ => None,
    }
}

/// `2024:06:01 14:30:05` → `2024-06-01T14:30:05`; anything else is dropped.
pub fn exif_local_time(t: &str) -> Option<String> {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 19
        && digits(0..4)
        && digits(5..7)
        && digits(8..10)
        && digits(11..13)
        && digits(14..16)
        && digits(17..19)
        && b[4] == b':'
        && b[7] == b':'
        && b[13] == b':'
        && b[16] == b':';
    if !shape || &t[0..4] == "0000" {
        return None;
    }
    Some(format!(
        "{}-{}-{}T{}",
        &t[0..4],
        &t[5..7],
        &t[8..10],
        &t[11..19]
    ))
}

/// `+02:00`, `-05:30`.
fn valid_offset(o: &str) -> bool {
    let b = o.as_bytes();
    b.len() == 6
        && matches!(b[0], b'+' | b'-')
        && b[1..3].iter().all(u8::is_ascii_digit)
        && b[3] == b':'
        && b[4..6].iter().all(u8::is_ascii_digit)
}

/// Degrees/minutes/seconds with a N/S or E/W reference, as signed decimal
/// degrees; out of range or malformed is none.
fn gps(exif: &Exif, tag: Tag, reference: Tag, limit: f64) -> Option<f64> {
    let Value::Rational(dms) = &exif.get_field(tag, In::PRIMARY)?.value else {
        return None;
    };
    let part = |i: usize| dms.get(i).filter(|r| r.denom != 0).map(|r| r.to_f64());
    let deg = part(0)? + part(1).unwrap_or(0.0) / 60.0 + part(2).unwrap_or(0.0) / 3600.0;
    let sign = match ascii(exif, reference)?.as_str() {
        "S" | "W" => -1.0,
        "N" | "E" => 1.0,
        _ => return None,
    };
    let v = sign * deg;
    (v.is_finite() && v.abs() <= limit).then_some(v)
}

/// The words search finds the image by.
fn describe(name: &str, meta: &[(String, String)]) -> String {
    let get = |k: &str| {
        meta.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let mut s = format!("Image {name}");
    if let (Some(w), Some(h)) = (get("image.width"), get("image.height")) {
        s.push_str(&format!(", {w}×{h} pixels"));
    }
    let camera: Vec<&str> = [get("camera.make"), get("camera.model")]
        .into_iter()
        .flatten()
        .collect();
    if !camera.is_empty() {
        s.push_str(&format!(", taken with {}", camera.join(" ")));
    }
    if let Some(t) = get("time.captured_at").or(get("time.captured_local")) {
        s.push_str(&format!(", on {}", t.replace('T', " at ")));
    }
    if let (Some(lat), Some(lon)) = (get("geo.lat"), get("geo.lon")) {
        s.push_str(&format!(", at {lat}, {lon}"));
    }
    s.push('.');
    s
}

mem_plugin_sdk::export_plugin!(processor: Image);

#[cfg(test)]
mod tests;
