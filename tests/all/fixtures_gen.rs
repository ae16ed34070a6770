//! Fixture files written byte by byte, so the e2e tests need no document
//! libraries: a PDF with a text layer (objects and xref table by hand), a
//! baseline JPEG with an EXIF APP1 segment (a hand-built TIFF IFD), and an
//! MP3 (an ID3v2.3 tag and silent MPEG-1 Layer III frames).

/// A PDF string literal's body: `(`, `)` and `\` escaped.
fn pdf_string(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('(', "\\(")
        .replace(')', "\\)")
}

/// A PDF 1.4 file whose pages hold `pages` (lines each, in Helvetica),
/// with an Info dictionary (title, author, creation date).
pub fn pdf(pages: &[&[&str]], title: &str, author: &str, created: &str) -> Vec<u8> {
    // Objects: 1 catalog, 2 pages, 3 font, 4 info, then per page its page
    // object and its content stream.
    let page_obj = |i: usize| 5 + 2 * i;
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", page_obj(i)))
        .collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        format!(
            "<< /Title ({}) /Author ({}) /CreationDate ({}) >>",
            pdf_string(title),
            pdf_string(author),
            pdf_string(created)
        )
        .into_bytes(),
    ];
    for (i, lines) in pages.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                page_obj(i) + 1
            )
            .into_bytes(),
        );
        let mut content = String::new();
        for (n, line) in lines.iter().enumerate() {
            content.push_str(&format!(
                "BT /F1 12 Tf 72 {} Td ({}) Tj ET\n",
                720 - 14 * n,
                pdf_string(line)
            ));
        }
        let mut stream = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
        stream.extend(content.as_bytes());
        stream.extend(b"\nendstream");
        objects.push(stream);
    }
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend(body);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// One TIFF IFD entry: tag, type (2 ASCII, 3 SHORT, 4 LONG), count and
/// the value's bytes (little-endian).
struct Entry {
    tag: u16,
    kind: u16,
    count: u32,
    value: Vec<u8>,
}

fn ascii(tag: u16, s: &str) -> Entry {
    let mut value = s.as_bytes().to_vec();
    value.push(0);
    Entry {
        tag,
        kind: 2,
        count: value.len() as u32,
        value,
    }
}

fn short(tag: u16, v: u16) -> Entry {
    Entry {
        tag,
        kind: 3,
        count: 1,
        value: v.to_le_bytes().to_vec(),
    }
}

fn long(tag: u16, v: u32) -> Entry {
    Entry {
        tag,
        kind: 4,
        count: 1,
        value: v.to_le_bytes().to_vec(),
    }
}

/// The bytes of an IFD placed at `at` (an offset in the TIFF data): the
/// entries (sorted by tag), no next IFD, then the values longer than 4
/// bytes, each at an even offset.
fn ifd(mut entries: Vec<Entry>, at: u32) -> Vec<u8> {
    entries.sort_by_key(|e| e.tag);
    let mut data_at = at + 2 + 12 * entries.len() as u32 + 4;
    let mut head = (entries.len() as u16).to_le_bytes().to_vec();
    let mut data = Vec::new();
    for e in &entries {
        head.extend(e.tag.to_le_bytes());
        head.extend(e.kind.to_le_bytes());
        head.extend(e.count.to_le_bytes());
        if e.value.len() <= 4 {
            let mut v = e.value.clone();
            v.resize(4, 0);
            head.extend(v);
        } else {
            head.extend(data_at.to_le_bytes());
            data.extend(&e.value);
            if e.value.len() % 2 == 1 {
                data.push(0);
            }
            data_at += e.value.len().next_multiple_of(2) as u32;
        }
    }
    head.extend(0u32.to_le_bytes());
    head.extend(data);
    head
}

/// EXIF (a little-endian TIFF): Make, Model and Orientation in IFD0,
/// DateTimeOriginal and OffsetTimeOriginal in the Exif IFD.
fn exif_tiff(make: &str, model: &str, taken: &str, offset: &str) -> Vec<u8> {
    let ifd0 = |exif_at: u32| {
        ifd(
            vec![
                ascii(0x010F, make),
                ascii(0x0110, model),
                short(0x0112, 1),
                long(0x8769, exif_at),
            ],
            8,
        )
    };
    // IFD0's length does not depend on the pointer's value.
    let exif_at = 8 + ifd0(0).len() as u32;
    let mut tiff = b"II*\0".to_vec();
    tiff.extend(8u32.to_le_bytes());
    tiff.extend(ifd0(exif_at));
    let mut exif = vec![ascii(0x9003, taken)];
    if !offset.is_empty() {
        exif.push(ascii(0x9011, offset));
    }
    tiff.extend(ifd(exif, exif_at));
    tiff
}

fn segment(marker: u8, body: &[u8]) -> Vec<u8> {
    let mut s = vec![0xFF, marker];
    s.extend(((body.len() + 2) as u16).to_be_bytes());
    s.extend(body);
    s
}

/// An 8×8 grey baseline JPEG with EXIF: SOI, APP1 (Exif), DQT, SOF0, two
/// one-symbol Huffman tables, SOS, one MCU of scan data, EOI. `taken` is
/// EXIF's `YYYY:MM:DD HH:MM:SS`, `offset` its `+HH:MM` (empty: no zone).
pub fn jpeg(make: &str, model: &str, taken: &str, offset: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8];
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend(exif_tiff(make, model, taken, offset));
    out.extend(segment(0xE1, &app1));
    let mut dqt = vec![0x00];
    dqt.extend([1u8; 64]);
    out.extend(segment(0xDB, &dqt));
    // 8 bits, 8×8, one component (id 1, 1×1 sampling, table 0).
    out.extend(segment(0xC0, &[8, 0, 8, 0, 8, 1, 1, 0x11, 0]));
    // DC table 0 and AC table 0, each one code of length 1 ("0"): DC
    // category 0, AC end of block.
    for class in [0x00u8, 0x10] {
        let mut dht = vec![class, 1];
        dht.extend([0u8; 15]);
        dht.push(0x00);
        out.extend(segment(0xC4, &dht));
    }
    out.extend(segment(0xDA, &[1, 1, 0x00, 0, 63, 0]));
    // DC "0" + EOB "0", padded with ones.
    out.push(0x3F);
    out.extend([0xFF, 0xD9]);
    out
}

/// An ID3v2.3 text frame (ISO-8859-1).
fn id3_frame(id: &[u8; 4], text: &str) -> Vec<u8> {
    let mut body = vec![0u8];
    body.extend(text.as_bytes());
    let mut f = id.to_vec();
    f.extend((body.len() as u32).to_be_bytes());
    f.extend([0, 0]);
    f.extend(body);
    f
}

/// An MP3: an ID3v2.3 tag (title, artist, album, year) and `frames`
/// silent MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz, 417 bytes each,
/// about 26 ms).
pub fn mp3(title: &str, artist: &str, album: &str, year: &str, frames: usize) -> Vec<u8> {
    let mut tags = Vec::new();
    tags.extend(id3_frame(b"TIT2", title));
    tags.extend(id3_frame(b"TPE1", artist));
    tags.extend(id3_frame(b"TALB", album));
    tags.extend(id3_frame(b"TYER", year));
    let size = tags.len() as u32;
    let mut out = b"ID3\x03\x00\x00".to_vec();
    // The tag size is "synchsafe": 7 bits a byte.
    out.extend([
        ((size >> 21) & 0x7F) as u8,
        ((size >> 14) & 0x7F) as u8,
        ((size >> 7) & 0x7F) as u8,
        (size & 0x7F) as u8,
    ]);
    out.extend(tags);
    for _ in 0..frames {
        let mut f = vec![0u8; 417];
        f[..4].copy_from_slice(&[0xFF, 0xFB, 0x90, 0x64]);
        out.extend(f);
    }
    out
}

#[test]
fn the_fixtures_are_well_formed() {
    let pdf = pdf(&[&["a (b)"], &["c"]], "T", "A", "D:20120304100000+01'00'");
    let text = String::from_utf8_lossy(&pdf).to_string();
    // Every xref offset points at its object. Offsets count bytes of the PDF
    // itself: the lossy text has other offsets past the binary comment line.
    let xref = pdf.windows(5).position(|w| w == b"xref\n").unwrap();
    let table = std::str::from_utf8(&pdf[xref..]).unwrap();
    for (i, line) in table.lines().skip(3).take(8).enumerate() {
        let off: usize = line[..10].parse().unwrap();
        let obj = format!("{} 0 obj", i + 1);
        assert!(pdf[off..].starts_with(obj.as_bytes()), "{i}");
    }
    assert!(text.contains("(a \\(b\\)) Tj"));
    let jpeg = jpeg("Canon", "EOS 5D", "2012:03:04 10:00:00", "+01:00");
    assert_eq!(&jpeg[..4], &[0xFF, 0xD8, 0xFF, 0xE1]);
    assert_eq!(&jpeg[jpeg.len() - 2..], &[0xFF, 0xD9]);
    assert!(jpeg.windows(6).any(|w| w == b"Exif\0\0"));
    let mp3 = mp3("t", "a", "b", "2012", 3);
    assert_eq!(&mp3[..3], b"ID3");
    // Header, four frames of 10 + 1 + text bytes, the MPEG frames.
    assert_eq!(mp3.len(), 10 + (12 + 12 + 12 + 15) + 3 * 417);
}
