use super::*;

fn input(name: &str, html: &str) -> FileInput {
    FileInput::new(name, "text/html", html.as_bytes().to_vec())
}

const PAGE: &str = "<!doctype html>
<html><head><title>Garden &amp; Kitchen</title>
<style>body { color: red }</style>
<script>var secret = 'tracking';</script></head>
<body>
<nav><a href=/>Home</a> <a href=/about>About</a></nav>
<h1>Tomatoes</h1>
<p>Plant tomatoes after
the last frost.</p>
<!-- a comment with <p>markup</p> -->
<h2>Watering</h2>
<p>Water deeply twice a week &mdash; not daily.</p>
<h1>Basil</h1>
<p>Basil likes warmth&#33;</p>
</body></html>
";

#[test]
fn headings_are_sections_and_boilerplate_is_dropped() {
    let p = process_html(&input("garden.html", PAGE));
    assert_eq!(p.title.as_deref(), Some("Garden & Kitchen"));
    let all: String = p.chunks.iter().map(|c| c.text.as_str()).collect();
    assert!(!all.contains("secret") && !all.contains("color"), "{all}");
    assert!(!all.contains("About") && !all.contains("markup"), "{all}");
    let sections: Vec<_> = p.chunks.iter().map(|c| c.section.clone()).collect();
    assert_eq!(
        sections,
        vec![
            vec!["Tomatoes".to_string()],
            vec!["Tomatoes".to_string(), "Watering".to_string()],
            vec!["Basil".to_string()],
        ]
    );
    let first = &p.chunks[0];
    assert!(first.text.contains("Plant tomatoes after the last frost."));
    assert_eq!((first.lines.start, first.lines.end), (7, 9));
    assert_eq!(p.chunks[2].text, "Basil\n\nBasil likes warmth!");
    assert_eq!((p.chunks[2].lines.start, p.chunks[2].lines.end), (13, 14));
}

#[test]
fn hostile_html_never_panics_and_keeps_valid_lines() {
    let cases = [
        "",
        "<",
        "<<<>>>",
        "<script>never closed",
        "<title>t",
        "<h1>unclosed heading",
        "&#xFFFFFFFF; &#55296; &bogus; &",
        "<p>é</p><!-- unterminated",
        "text only\n\n\nmore",
        "<h7>x</h7><H2>Upper</H2>body",
    ];
    for html in cases {
        let p = process_html(&input("x.html", html));
        for c in &p.chunks {
            assert!(
                c.lines.start >= 1 && c.lines.start <= c.lines.end,
                "{html:?}"
            );
        }
    }
    let p = process_html(&input("x.html", "<H2>Upper</H2>body"));
    assert_eq!(p.chunks[0].section, vec!["Upper".to_string()]);
    let bin: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let _ = process_html(&FileInput {
        bytes: bin,
        ..input("b.html", "")
    });
}

#[test]
fn entities_decode() {
    assert_eq!(
        decode_entities("a &lt;b&gt; &#65;&#x42; &zz; &"),
        "a <b> AB &zz; &"
    );
}

#[test]
fn a_page_without_readable_text_is_partial_with_the_reason() {
    for page in [
        "<!doctype html><html><head><script>var a = 1;",
        "<!doctype html><html><body><nav>Home</nav></body></html>",
        "",
    ] {
        let p = process_html(&input("x.html", page));
        assert!(p.chunks.is_empty(), "{page:?}");
        assert_eq!(
            p.metadata_value("index.partial"),
            Some(NO_READABLE_TEXT),
            "{page:?}"
        );
    }
    let p = process_html(&input("garden.html", PAGE));
    assert_eq!(p.metadata_value("index.partial"), None);
}
