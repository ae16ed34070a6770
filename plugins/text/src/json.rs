//! JSON: one block per top-level member (object key or array element),
//! with the lines it spans, packed up to the size cap. Returns `None` for
//! text that is not a JSON object or array (the caller falls back to plain
//! text), so a broken file is still searchable.

use mem_plugin_sdk::text::numbered_lines;
use mem_plugin_sdk::types::*;

use crate::pack;

/// `(line, label)` of each top-level member start, and the closing line.
fn members(text: &str) -> Option<(Vec<(u32, String)>, u32)> {
    let mut depth = 0usize;
    let mut line = 1u32;
    let mut in_string = false;
    let mut escaped = false;
    let mut expect_member = false;
    let mut is_object = false;
    let mut starts = Vec::new();
    let mut string_buf = String::new();
    let mut capture_key = false;
    let mut close_line = None;
    let mut index = 0usize;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                if capture_key {
                    if let Some(last) = starts.last_mut() {
                        let (_, label): &mut (u32, String) = last;
                        *label = std::mem::take(&mut string_buf);
                    }
                    capture_key = false;
                }
                continue;
            }
            if capture_key {
                string_buf.push(c);
            }
            continue;
        }
        if close_line.is_some() {
            if !c.is_whitespace() {
                return None;
            }
            continue;
        }
        if depth == 0 {
            match c {
                '{' | '[' => {
                    is_object = c == '{';
                    depth = 1;
                    expect_member = true;
                }
                c if c.is_whitespace() => {}
                _ => return None,
            }
            continue;
        }
        if depth == 1 && expect_member && !c.is_whitespace() && c != '}' && c != ']' {
            let label = if is_object {
                String::new()
            } else {
                format!("[{index}]")
            };
            index += 1;
            starts.push((line, label));
            expect_member = false;
            if is_object && c == '"' {
                capture_key = true;
            }
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    close_line = Some(line);
                }
            }
            ',' if depth == 1 => expect_member = true,
            _ => {}
        }
    }
    if in_string || depth != 0 {
        return None;
    }
    Some((starts, close_line?))
}

pub(crate) fn process(text: &str, max_chars: usize) -> Option<Processed> {
    let (starts, close) = members(text)?;
    let lines: Vec<(u32, &str)> = numbered_lines(text).collect();
    let line_text = |a: u32, b: u32| -> String {
        lines
            .iter()
            .filter(|(n, _)| *n >= a && *n <= b)
            .map(|(_, l)| *l)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut p = Processed::empty();
    if starts.is_empty() {
        p.chunks = pack(
            vec![(LineRange::new(1, close), line_text(1, close))],
            max_chars,
            &[],
            "json",
        );
        return Some(p);
    }
    // Members starting on one line (minified JSON) share that line's block.
    let mut groups: Vec<(u32, Vec<String>)> = Vec::new();
    for (line, label) in starts {
        match groups.last_mut() {
            Some((l, labels)) if *l == line => labels.push(label),
            _ => groups.push((line, vec![label])),
        }
    }
    for (i, (start, labels)) in groups.iter().enumerate() {
        let end = match groups.get(i + 1) {
            Some((next, _)) => next - 1,
            None if close > *start => close - 1,
            None => close,
        };
        let section: Vec<String> = labels.iter().filter(|l| !l.is_empty()).cloned().collect();
        p.chunks.extend(pack(
            vec![(LineRange::new(*start, end), line_text(*start, end))],
            max_chars,
            &section,
            "json",
        ));
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chunk_per_top_level_member() {
        let doc = "{\n  \"name\": \"mem\",\n  \"deps\": {\n    \"a\": 1\n  },\n  \"tags\": [\"x\", \"}\"]\n}\n";
        let p = process(doc, 1500).expect("valid");
        let got: Vec<(Vec<String>, u32, u32)> = p
            .chunks
            .iter()
            .map(|c| (c.section.clone(), c.lines.start, c.lines.end))
            .collect();
        assert_eq!(
            got,
            vec![
                (vec!["name".to_string()], 2, 2),
                (vec!["deps".to_string()], 3, 5),
                (vec!["tags".to_string()], 6, 6)
            ]
        );
    }

    #[test]
    fn minified_and_arrays_and_invalid() {
        let p = process("{\"a\":1,\"b\":2}", 1500).expect("valid");
        assert_eq!(p.chunks.len(), 1);
        assert_eq!(p.chunks[0].lines, LineRange::new(1, 1));
        assert_eq!(p.chunks[0].section, vec!["a".to_string(), "b".to_string()]);
        let p = process("[\n 1,\n 2\n]", 1500).expect("valid");
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.chunks[1].section, vec!["[1]".to_string()]);
        assert!(process("{\"a\": 1", 1500).is_none());
        assert!(process("not json", 1500).is_none());
        assert!(process("{} trailing", 1500).is_none());
    }
}
