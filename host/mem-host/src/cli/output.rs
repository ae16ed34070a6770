//! Rendering: one place decides between human text and JSON, so every
//! command prints the same document shape the schemas describe.

use super::Format;
use mem_core::{MemError, MemResult};
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Exit status of a command that succeeded in running but reports a
/// negative finding (`check` → BLOCK, `lint` → errors, `audit verify` →
/// tampering): its report is on stdout, its status says so.
static EXIT_STATUS: AtomicU8 = AtomicU8::new(0);

pub fn set_exit_status(code: u8) {
    EXIT_STATUS.store(code, Ordering::Relaxed);
}

pub fn exit_status() -> u8 {
    EXIT_STATUS.load(Ordering::Relaxed)
}

/// Set when the reader of stdout has gone (`mem-host … | head`): closing
/// the pipe is the reader's choice, so the command stops and exits quietly,
/// as other Unix tools do, instead of reporting an error. Writes already
/// made are kept (the command returns normally, so the store closes).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// The error of a failed write to the command's output, noting a reader
/// that went away.
pub fn write_failed(context: &str, e: &std::io::Error) -> MemError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
    MemError::io(context, e)
}

#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub format: Format,
}

impl Out {
    pub fn new(format: Format) -> Self {
        Self { format }
    }

    pub fn json(&self) -> bool {
        self.format == Format::Json
    }

    /// Prints `value` as one compact JSON line, or as `human(value)`.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce(&T) -> String) -> MemResult<()> {
        let text = if self.json() {
            to_json(value)?
        } else {
            human(value)
        };
        print_line(&text)
    }

    /// Prints one line (a JSONL record, or a human line) and flushes, so a
    /// consumer sees each acknowledgement as it happens.
    pub fn line(&self, text: &str) -> MemResult<()> {
        print_line(text)
    }
}

pub fn to_json<T: Serialize>(value: &T) -> MemResult<String> {
    serde_json::to_string(value).map_err(|e| MemError::internal(format!("cannot render JSON: {e}")))
}

fn print_line(text: &str) -> MemResult<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")
        .and_then(|_| stdout.flush())
        .map_err(|e| write_failed("cannot write to stdout", &e))
}

/// Renders an error for stderr: the JSON document, or a readable line.
pub fn render_error(format: Format, err: &MemError) -> String {
    match format {
        Format::Json => to_json(err).unwrap_or_else(|_| format!("{{\"code\":\"{}\"}}", err.code)),
        Format::Human => {
            let mut s = format!("error[{}]: {}", err.code, err.message);
            if !err.hint.is_empty() {
                s.push_str(&format!("\n  hint: {}", err.hint));
            }
            s
        }
    }
}

/// All of `reader` as text: bytes that are not UTF-8 are `bad_encoding`
/// (not an I/O problem), and nothing is stored.
pub fn read_text(reader: &mut dyn std::io::Read, what: &str) -> MemResult<String> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| MemError::io(&format!("cannot read {what}"), &e))?;
    String::from_utf8(bytes).map_err(|e| {
        MemError::new(
            mem_core::ErrorCode::BadEncoding,
            format!(
                "{what} is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
        .with_hint("convert it to UTF-8, or store binary content as a file with `put`")
    })
}

/// `1.2 KiB`-style sizes for people.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The first line of `text`, at most `max` characters, for listings.
pub fn preview(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && !text.contains('\n') {
        return line.to_string();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_previews() {
        assert_eq!(human_size(12), "12 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(preview("short", 10), "short");
        assert_eq!(preview("a long line of text", 8), "a long …");
        assert_eq!(preview("two\nlines", 10), "two…");
    }
}
