//! Large inputs: a file above [`LARGE_INPUT_BYTES`] is cut at line
//! boundaries in one pass over its own buffer, without the per-format
//! parse (which holds several copies of the text at once). This keeps the
//! peak at about twice the file size, so a 20 MB file indexes within the
//! default 64 MiB plugin memory limit instead of failing it.

use mem_plugin_sdk::text::numbered_lines;
use mem_plugin_sdk::types::*;

/// Files larger than this take the single-pass path.
pub const LARGE_INPUT_BYTES: usize = 4 * 1024 * 1024;

/// Takes the file's bytes as text in place (a copy only when they are not
/// valid UTF-8) and cuts them into chunks of at most `max_chars`.
pub fn process(file: FileInput, max_chars: usize) -> Processed {
    let size = file.bytes.len();
    let mut bytes = file.bytes;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let mut p = Processed::empty();
    let mut acc = String::new();
    let mut range = LineRange::new(1, 1);
    let mut count = 0u32;
    for (n, line) in numbered_lines(&text) {
        count = n;
        let mut line = line;
        loop {
            let room = max_chars.saturating_sub(acc.chars().count() + usize::from(!acc.is_empty()));
            if line.chars().count() <= room {
                break;
            }
            if acc.is_empty() {
                // One line longer than a chunk: cut at a char boundary.
                let cut = line
                    .char_indices()
                    .nth(max_chars)
                    .map_or(line.len(), |(i, _)| i);
                p.chunks
                    .push(Chunk::new(&line[..cut], LineRange::new(n, n), "text"));
                line = &line[cut..];
            } else {
                p.chunks
                    .push(Chunk::new(std::mem::take(&mut acc), range, "text"));
            }
            range = LineRange::new(n, n);
        }
        if acc.is_empty() {
            range = LineRange::new(n, n);
        } else {
            acc.push('\n');
        }
        acc.push_str(line);
        range.end = n;
    }
    if !acc.trim().is_empty() {
        p.chunks.push(Chunk::new(acc, range, "text"));
    }
    p.chunks.retain(|c| !c.text.trim().is_empty());
    p.metadata = vec![
        ("format".into(), "text".into()),
        ("large".into(), "true".into()),
        ("lines".into(), count.to_string()),
        ("bytes".into(), size.to_string()),
    ];
    p.title = Some(file.name).filter(|n| !n.is_empty());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_20_mb_file_is_cut_at_lines_with_contiguous_ranges() {
        let line = "the quick brown fox jumps over the lazy dog 0123456789\n";
        let text = line.repeat(20 * 1024 * 1024 / line.len());
        let lines = text.lines().count() as u32;
        let p = process(
            FileInput {
                id: "f".into(),
                path: "/big.log".into(),
                name: "big.log".into(),
                mime: "text/plain".into(),
                bytes: text.into_bytes(),
            },
            1500,
        );
        assert!(p.chunks.len() > 10_000);
        assert_eq!(p.chunks[0].lines.start, 1);
        assert_eq!(p.chunks.last().map(|c| c.lines.end), Some(lines));
        for w in p.chunks.windows(2) {
            assert_eq!(w[0].lines.end + 1, w[1].lines.start);
        }
        assert!(p.chunks.iter().all(|c| c.text.chars().count() <= 1500));
    }

    #[test]
    fn over_long_lines_and_invalid_utf8_are_cut_safely() {
        let mut bytes = b"\xEF\xBB\xBFstart\n".to_vec();
        bytes.extend("é".repeat(5000).as_bytes());
        bytes.extend(b"\n\xff\xfe tail\n");
        let p = process(
            FileInput {
                id: "f".into(),
                path: "/x".into(),
                name: "x".into(),
                mime: "text/plain".into(),
                bytes,
            },
            1000,
        );
        assert!(p.chunks[0].text.starts_with("start"));
        assert!(p.chunks.iter().all(|c| c.text.chars().count() <= 1000));
        assert!(
            p.chunks
                .iter()
                .all(|c| c.lines.start >= 1 && c.lines.start <= c.lines.end)
        );
        assert_eq!(p.chunks.last().map(|c| c.lines.end), Some(3));
    }
}
