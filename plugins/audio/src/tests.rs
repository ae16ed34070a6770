//! Fixtures are made here: a WAV by hound, an MP3 from silent MPEG frames,
//! both tagged by lofty's own writer.

use lofty::config::WriteOptions;
use lofty::tag::{Tag, TagExt, TagType};

use super::*;

/// One second of 8 kHz mono silence.
fn wav() -> Vec<u8> {
    let mut c = Cursor::new(Vec::new());
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 8000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::new(&mut c, spec).expect("wav");
    for _ in 0..8000 {
        w.write_sample(0i16).expect("sample");
    }
    w.finalize().expect("finalize");
    c.into_inner()
}

/// `frames` silent MPEG-1 Layer III frames at 128 kbit/s, 44.1 kHz.
fn mp3(frames: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..frames {
        let mut f = vec![0u8; 417];
        f[..4].copy_from_slice(&[0xFF, 0xFB, 0x90, 0x64]);
        out.extend(f);
    }
    out
}

/// `bytes` with a tag of `kind` holding title, artist and album.
pub fn tagged(bytes: Vec<u8>, kind: TagType) -> Vec<u8> {
    let mut tag = Tag::new(kind);
    tag.set_title("Harbour Lights".into());
    tag.set_artist("The Quayside Band".into());
    tag.set_album("Evening Tides".into());
    let mut c = Cursor::new(bytes);
    tag.save_to(&mut c, WriteOptions::default()).expect("tag");
    c.into_inner()
}

fn input(name: &str, mime: &str, bytes: Vec<u8>) -> FileInput {
    FileInput::new(name, mime, bytes)
}

#[test]
fn wav_tags_and_duration_are_metadata_and_the_file_is_partial() {
    let bytes = tagged(wav(), TagType::RiffInfo);
    let p = process_audio(&input("dock.wav", "audio/x-wav", bytes)).expect("processed");
    assert_eq!(p.metadata_value("audio.duration_ms"), Some("1000"));
    assert_eq!(p.metadata_value("audio.sample_rate"), Some("8000"));
    assert_eq!(p.metadata_value("audio.title"), Some("Harbour Lights"));
    assert_eq!(p.metadata_value("audio.artist"), Some("The Quayside Band"));
    assert_eq!(p.metadata_value("index.partial"), Some(NO_SPEECH));
    assert_eq!(p.title.as_deref(), Some("Harbour Lights"));
    assert!(
        p.chunks[0].text.contains("Quayside"),
        "{}",
        p.chunks[0].text
    );
}

#[test]
fn mp3_with_id3_tag() {
    let bytes = tagged(mp3(100), TagType::Id3v2);
    let p = process_audio(&input("song.mp3", "audio/mpeg", bytes)).expect("processed");
    assert_eq!(p.metadata_value("audio.album"), Some("Evening Tides"));
    let ms: u64 = p
        .metadata_value("audio.duration_ms")
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    assert!((2500..=2800).contains(&ms), "{ms}");
    assert!(p.chunks[0].text.contains("Evening Tides"));
}

#[test]
fn hostile_audio_is_an_error_never_a_panic() {
    assert!(process_audio(&input("x.mp3", "audio/mpeg", b"garbage bytes".to_vec())).is_err());
    assert!(process_audio(&input("x.wav", "audio/x-wav", Vec::new())).is_err());
    let mut cut = tagged(wav(), TagType::RiffInfo);
    cut.truncate(30);
    let _ = process_audio(&input("cut.wav", "audio/x-wav", cut));
    let mut bad_id3 = b"ID3\x04\x00\x00\x7f\x7f\x7f\x7f".to_vec();
    bad_id3.extend([0xAB; 64]);
    let _ = process_audio(&input("bad.mp3", "audio/mpeg", bad_id3));
}
