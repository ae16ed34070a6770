//! The page's HTML: escaping, the layout every page shares, and the few
//! widgets pages repeat. Plain strings, not a template engine: the pages
//! are small, and every interpolated value goes through [`esc`].

use mem_service::access::Scope;
use serde_json::Value;
use std::fmt::Write;

/// A query parameter, trimmed; `None` when absent or blank.
pub fn arg(q: &std::collections::HashMap<String, String>, k: &str) -> Option<String> {
    q.get(k)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Escapes text for an HTML element or a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query parameter value.
pub fn qp(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A JSON value as display text: strings bare, absent as empty.
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `v[key]` as escaped display text.
pub fn field(v: &Value, key: &str) -> String {
    esc(&text(&v[key]))
}

/// Who is signed in, what they may do, and the CSRF token of their forms.
pub struct Viewer<'a> {
    pub who: String,
    pub csrf: &'a str,
    pub can: &'a dyn Fn(Scope) -> bool,
}

impl Viewer<'_> {
    /// The hidden CSRF field every form carries.
    pub fn csrf_field(&self) -> String {
        format!(
            r#"<input type="hidden" name="csrf" value="{}">"#,
            esc(self.csrf)
        )
    }

    /// A one-button POST form to `action` with hidden `fields`.
    pub fn button(&self, action: &str, label: &str, fields: &[(&str, &str)]) -> String {
        let mut hidden = self.csrf_field();
        for (k, v) in fields {
            let _ = write!(
                hidden,
                r#"<input type="hidden" name="{}" value="{}">"#,
                esc(k),
                esc(v)
            );
        }
        format!(
            r#"<form method="post" action="{}" class="inline">{hidden}<button type="submit">{}</button></form>"#,
            esc(action),
            esc(label)
        )
    }
}

/// The pages of the navigation, with the scope each needs.
const NAV: &[(&str, &str, Scope)] = &[
    ("/memories", "Memories", Scope::Read),
    ("/search", "Search", Scope::Search),
    ("/context", "Context", Scope::Search),
    ("/timeline", "Timeline", Scope::Search),
    ("/review", "Review", Scope::Admin),
    ("/audit", "Audit", Scope::Admin),
    ("/drive", "Drive", Scope::Read),
    ("/tasks", "Tasks", Scope::Read),
    ("/plugins", "Plugins", Scope::Admin),
    ("/tokens", "Tokens", Scope::Admin),
    ("/status", "Status", Scope::Read),
];

/// A whole page: `title`, the navigation (what `viewer` may open), `body`.
pub fn page(title: &str, viewer: Option<&Viewer<'_>>, body: &str) -> String {
    let mut nav = String::new();
    if let Some(v) = viewer {
        nav.push_str(r#"<nav aria-label="Sections"><ul>"#);
        for (href, label, scope) in NAV {
            if (v.can)(*scope) {
                let _ = write!(nav, r#"<li><a href="{href}">{label}</a></li>"#);
            }
        }
        let _ = write!(
            nav,
            r#"</ul><div class="who"><span>Signed in as {}</span><form method="post" action="/signout" class="inline">{}<button type="submit">Sign out</button></form></div></nav>"#,
            esc(&v.who),
            v.csrf_field()
        );
    }
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t} · mem-host</title>
<link rel="stylesheet" href="/assets/style.css">
<script src="/assets/app.js" defer></script>
</head><body>
<a class="skip" href="#main">Skip to content</a>
<header><a class="brand" href="/">mem-host</a>{nav}</header>
<main id="main" tabindex="-1"><h1>{t}</h1>
{body}
</main></body></html>"##,
        t = esc(title),
    )
}

/// The structured error a page shows: code, message, hint, details.
pub fn error_box(e: &mem_core::MemError) -> String {
    let details = if e.details.is_null() {
        String::new()
    } else {
        format!(
            "<details><summary>Details</summary><pre>{}</pre></details>",
            esc(&serde_json::to_string_pretty(&e.details).unwrap_or_default())
        )
    };
    format!(
        r#"<section class="error" role="alert"><p><strong class="code">{}</strong> {}</p><p class="hint">{}</p>{details}</section>"#,
        esc(e.code.as_str()),
        esc(&e.message),
        esc(&e.hint)
    )
}

/// A "next page" link when the listing has one: `base` with the cursor.
pub fn next_link(base: &str, next: &Value) -> String {
    match next.as_str() {
        Some(c) => {
            let sep = if base.contains('?') { '&' } else { '?' };
            format!(
                r#"<p class="pager"><a rel="next" href="{}">Next page</a></p>"#,
                esc(&format!("{base}{sep}cursor={}", qp(c)))
            )
        }
        None => String::new(),
    }
}

/// A labelled text input.
pub fn input(name: &str, label: &str, value: &str, extra: &str) -> String {
    format!(
        r#"<label>{}<input name="{}" value="{}" {extra}></label>"#,
        esc(label),
        esc(name),
        esc(value)
    )
}

/// A labelled select with `options` (value, label); `current` selected.
pub fn select(name: &str, label: &str, options: &[(&str, &str)], current: &str) -> String {
    let mut out = format!(r#"<label>{}<select name="{}">"#, esc(label), esc(name));
    for (v, l) in options {
        let sel = if *v == current { " selected" } else { "" };
        let _ = write!(
            out,
            r#"<option value="{}"{sel}>{}</option>"#,
            esc(v),
            esc(l)
        );
    }
    out.push_str("</select></label>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_values_is_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x")</script>&'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
        let v = serde_json::json!({"content": "<b>hi</b>"});
        assert_eq!(field(&v, "content"), "&lt;b&gt;hi&lt;/b&gt;");
    }

    #[test]
    fn the_page_offers_only_what_the_viewer_may_open() {
        let can = |s: Scope| matches!(s, Scope::Read | Scope::Search);
        let v = Viewer {
            who: "viewer".into(),
            csrf: "c",
            can: &can,
        };
        let html = page("T", Some(&v), "");
        assert!(html.contains(r#"href="/memories""#));
        assert!(!html.contains(r#"href="/review""#));
        assert!(!html.contains(r#"href="/audit""#));
        assert!(html.contains(r#"name="csrf" value="c""#));
        assert!(!html.contains("<script>"), "no inline script");
    }
}
