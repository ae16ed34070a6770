//! First-party processors through the real binary: an HTML page and a
//! tagged WAV (made here, byte by byte) are processed by the bundled wasm
//! plugins and found by `search`.

use crate::support::{Ws, p};

/// One second of 8 kHz mono silence with a RIFF INFO title.
fn tagged_wav(title: &str) -> Vec<u8> {
    let mut fmt = Vec::new();
    fmt.extend(1u16.to_le_bytes()); // PCM
    fmt.extend(1u16.to_le_bytes());
    fmt.extend(8000u32.to_le_bytes());
    fmt.extend(16000u32.to_le_bytes());
    fmt.extend(2u16.to_le_bytes());
    fmt.extend(16u16.to_le_bytes());
    let mut name = title.as_bytes().to_vec();
    name.push(0);
    if name.len() % 2 == 1 {
        name.push(0);
    }
    let mut info = b"INFO".to_vec();
    info.extend(b"INAM");
    info.extend((name.len() as u32).to_le_bytes());
    info.extend(&name);
    let mut body = b"WAVE".to_vec();
    for (id, data) in [
        (&b"fmt "[..], fmt),
        (b"data", vec![0u8; 16000]),
        (b"LIST", info),
    ] {
        body.extend(id);
        body.extend((data.len() as u32).to_le_bytes());
        body.extend(data);
    }
    let mut out = b"RIFF".to_vec();
    out.extend((body.len() as u32).to_le_bytes());
    out.extend(body);
    out
}

fn hits(ws: &Ws, query: &str) -> Vec<String> {
    ws.run(&["search", query]).ok().json()["hits"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| h["path"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn html_and_audio_are_processed_by_their_plugins_and_found() {
    let ws = Ws::new();
    let html = ws.write(
        "garden.html",
        b"<!doctype html><html><head><title>Garden notes</title>\
          <script>var trackingpixel = 1;</script></head><body>\
          <nav>Home About</nav><h1>Tomatoes</h1><p>Plant marigolds beside them.</p></body></html>",
    );
    let put = ws.run(&["put", p(&html), "--to", "/kb"]).ok().json();
    assert_eq!(put["file"]["index_status"], "done", "{put}");
    let wav = ws.write("dock.wav", &tagged_wav("Quayside Shanty"));
    let put = ws.run(&["put", p(&wav), "--to", "/kb"]).ok().json();
    let file = &put["file"];
    assert_eq!(file["index_status"], "partial", "{put}");
    let id = file["id"].as_str().unwrap_or_default();
    let info = ws.run(&["info", id]).ok().json();
    assert!(
        info.to_string()
            .contains("no speech model is available; tags only"),
        "{info}"
    );

    assert_eq!(hits(&ws, "marigolds"), ["/kb/garden.html"]);
    assert!(
        hits(&ws, "trackingpixel").is_empty(),
        "scripts are not indexed"
    );
    assert_eq!(hits(&ws, "Quayside"), ["/kb/dock.wav"]);
}
