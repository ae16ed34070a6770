//! Fixtures are made here: EXIF written by kamadak-exif's writer inside a
//! minimal JPEG (SOI, APP1, SOF0, EOI) that header readers accept.

use exif::experimental::Writer;
use exif::{Field, In, Rational, Tag, Value};

use super::*;

fn field(tag: Tag, value: Value) -> Field {
    Field {
        tag,
        ifd_num: In::PRIMARY,
        value,
    }
}

fn ascii_v(s: &str) -> Value {
    Value::Ascii(vec![s.as_bytes().to_vec()])
}

/// A JPEG of `w`×`h` carrying `fields` as EXIF.
pub fn jpeg_with_exif(w: u16, h: u16, fields: &[Field]) -> Vec<u8> {
    let mut tiff = Cursor::new(Vec::new());
    let mut writer = Writer::new();
    for f in fields {
        writer.push_field(f);
    }
    writer.write(&mut tiff, false).expect("write exif");
    let tiff = tiff.into_inner();
    let mut out = vec![0xFF, 0xD8, 0xFF, 0xE1];
    let len = (tiff.len() + 8) as u16;
    out.extend(len.to_be_bytes());
    out.extend(b"Exif\0\0");
    out.extend(&tiff);
    out.extend([0xFF, 0xC0, 0x00, 0x11, 0x08]);
    out.extend(h.to_be_bytes());
    out.extend(w.to_be_bytes());
    out.extend([0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01]);
    out.extend([0xFF, 0xD9]);
    out
}

fn r(n: u32, d: u32) -> Rational {
    Rational { num: n, denom: d }
}

pub fn holiday_fields(with_offset: bool) -> Vec<Field> {
    let mut f = vec![
        field(Tag::Make, ascii_v("Canon")),
        field(Tag::Model, ascii_v("EOS 80D")),
        field(Tag::Orientation, Value::Short(vec![6])),
        field(Tag::DateTimeOriginal, ascii_v("2024:06:01 14:30:05")),
        field(
            Tag::GPSLatitude,
            Value::Rational(vec![r(48, 1), r(51, 1), r(2400, 100)]),
        ),
        field(Tag::GPSLatitudeRef, ascii_v("N")),
        field(
            Tag::GPSLongitude,
            Value::Rational(vec![r(2, 1), r(21, 1), r(0, 1)]),
        ),
        field(Tag::GPSLongitudeRef, ascii_v("W")),
    ];
    if with_offset {
        f.push(field(Tag::OffsetTimeOriginal, ascii_v("+02:00")));
    }
    f
}

fn input(name: &str, mime: &str, bytes: Vec<u8>) -> FileInput {
    FileInput::new(name, mime, bytes)
}

#[test]
fn jpeg_exif_becomes_the_agreed_metadata_and_a_description() {
    let bytes = jpeg_with_exif(640, 480, &holiday_fields(true));
    let p = process_image(&input("beach.jpg", "image/jpeg", bytes)).expect("processed");
    assert_eq!(p.metadata_value("image.width"), Some("640"));
    assert_eq!(p.metadata_value("image.height"), Some("480"));
    assert_eq!(p.metadata_value("image.orientation"), Some("6"));
    assert_eq!(p.metadata_value("camera.make"), Some("Canon"));
    assert_eq!(p.metadata_value("camera.model"), Some("EOS 80D"));
    assert_eq!(
        p.metadata_value("time.captured_at"),
        Some("2024-06-01T14:30:05+02:00")
    );
    assert_eq!(p.metadata_value("time.captured_local"), None);
    assert_eq!(p.metadata_value("geo.lat"), Some("48.856667"));
    assert_eq!(p.metadata_value("geo.lon"), Some("-2.350000"));
    assert_eq!(p.chunks.len(), 1);
    let text = &p.chunks[0].text;
    assert!(
        text.contains("beach.jpg") && text.contains("Canon EOS 80D"),
        "{text}"
    );
    assert!(text.contains("2024-06-01"), "{text}");
}

#[test]
fn capture_time_without_zone_is_local_only() {
    let bytes = jpeg_with_exif(10, 20, &holiday_fields(false));
    let p = process_image(&input("a.jpg", "image/jpeg", bytes)).expect("processed");
    assert_eq!(p.metadata_value("time.captured_at"), None);
    assert_eq!(
        p.metadata_value("time.captured_local"),
        Some("2024-06-01T14:30:05")
    );
}

#[test]
fn png_without_exif_has_dimensions_only() {
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    png.extend(b"IHDR");
    png.extend(300u32.to_be_bytes());
    png.extend(200u32.to_be_bytes());
    png.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    let p = process_image(&input("logo.png", "image/png", png)).expect("processed");
    assert_eq!(p.metadata_value("image.width"), Some("300"));
    assert_eq!(p.metadata_value("image.height"), Some("200"));
    assert_eq!(p.metadata_value("camera.make"), None);
}

#[test]
fn hostile_images_are_errors_or_ignored_exif_never_panics() {
    // Truncated header, garbage, and EXIF with nonsense values.
    assert!(process_image(&input("x.jpg", "image/jpeg", vec![0xFF, 0xD8, 0xFF])).is_err());
    assert!(process_image(&input("x.png", "image/png", b"not an image".to_vec())).is_err());
    let bad = [
        field(Tag::DateTimeOriginal, ascii_v("yesterday")),
        field(Tag::OffsetTimeOriginal, ascii_v("CET")),
        field(Tag::GPSLatitude, Value::Rational(vec![r(500, 1), r(1, 0)])),
        field(Tag::GPSLatitudeRef, ascii_v("Q")),
    ];
    let p = process_image(&input("x.jpg", "image/jpeg", jpeg_with_exif(1, 1, &bad)))
        .expect("header is fine");
    assert_eq!(p.metadata_value("time.captured_at"), None);
    assert_eq!(p.metadata_value("time.captured_local"), None);
    assert_eq!(p.metadata_value("geo.lat"), None);
    let mut cut = jpeg_with_exif(4, 4, &holiday_fields(true));
    cut.truncate(40);
    let _ = process_image(&input("cut.jpg", "image/jpeg", cut));
}

#[test]
fn exif_local_time_rejects_malformed() {
    assert_eq!(
        exif_local_time("2024:06:01 14:30:05").as_deref(),
        Some("2024-06-01T14:30:05")
    );
    assert_eq!(exif_local_time("0000:00:00 00:00:00"), None);
    assert_eq!(exif_local_time("2024-06-01"), None);
    assert_eq!(exif_local_time("2024:06:01 14:30:0é"), None);
}
