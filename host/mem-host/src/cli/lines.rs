//! Line-oriented input of the batch commands (`remember --jsonl`,
//! `propose batch`, `search --batch`): a file or stdin, read on a thread
//! of its own so the command answers while its input is still open (an
//! agent piping requests one at a time gets each answer as it goes).
//! A line that is not UTF-8 is an error of that line alone.

use mem_core::{ErrorCode, MemError, MemResult};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

/// One non-blank input line: its number (from 1) and its text, or why it
/// has none.
pub struct Line {
    pub no: usize,
    pub text: MemResult<String>,
}

/// Lines read ahead on a reader thread (a bounded queue: a fast file does
/// not pile up in memory).
pub struct Lines {
    rx: Receiver<MemResult<Line>>,
}

const READ_AHEAD: usize = 256;

impl Lines {
    /// Reads `file`, or stdin for `-`.
    pub fn open(file: &Path) -> MemResult<Self> {
        let reader: Box<dyn BufRead + Send> = if file.as_os_str() == "-" {
            Box::new(BufReader::new(std::io::stdin()))
        } else {
            let f = std::fs::File::open(file)
                .map_err(|e| MemError::io(&format!("cannot read {}", file.display()), &e))?;
            Box::new(BufReader::new(f))
        };
        let (tx, rx) = sync_channel(READ_AHEAD);
        std::thread::Builder::new()
            .name("mem-input".into())
            .spawn(move || read_lines(reader, |l| tx.send(l).is_ok()))
            .map_err(|e| MemError::io("cannot start the input reader", &e))?;
        Ok(Self { rx })
    }

    /// The next line; `None` at the end of the input.
    pub fn next_line(&mut self) -> MemResult<Option<Line>> {
        self.rx.recv().ok().transpose()
    }

    /// The next group of lines: at most `max`, closed `wait` after its
    /// first line arrived (or at the end of the input); `None` at the end.
    pub fn next_group(&mut self, max: usize, wait: Duration) -> MemResult<Option<Vec<Line>>> {
        let Some(first) = self.next_line()? else {
            return Ok(None);
        };
        let deadline = Instant::now() + wait;
        let mut group = vec![first];
        while group.len() < max {
            match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => group.push(line?),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        Ok(Some(group))
    }
}

/// Hands every non-blank line of `reader` to `send` until the input ends,
/// a read fails (handed on as the last item) or `send` refuses.
fn read_lines(mut reader: Box<dyn BufRead + Send>, send: impl Fn(MemResult<Line>) -> bool) {
    let mut raw = Vec::new();
    let mut no = 0;
    loop {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) => return,
            Ok(_) => {
                no += 1;
                let text = match std::str::from_utf8(&raw) {
                    Ok(t) if t.trim().is_empty() => continue,
                    Ok(t) => Ok(t.to_string()),
                    Err(e) => Err(MemError::new(
                        ErrorCode::BadEncoding,
                        format!("line {no} is not UTF-8 text (byte {})", e.valid_up_to() + 1),
                    )
                    .with_hint("save the input as UTF-8; the other lines are handled on their own")
                    .with_details(serde_json::json!({ "line": no }))),
                };
                if !send(Ok(Line { no, text })) {
                    return;
                }
            }
            Err(e) => {
                send(Err(MemError::io(
                    &format!("cannot read line {}", no + 1),
                    &e,
                )));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn collect(input: &[u8]) -> Vec<(usize, Result<String, String>)> {
        let got = Mutex::new(Vec::new());
        read_lines(Box::new(std::io::Cursor::new(input.to_vec())), |l| {
            let l = l.unwrap();
            got.lock()
                .unwrap()
                .push((l.no, l.text.map_err(|e| e.code.as_str().to_string())));
            true
        });
        got.into_inner().unwrap()
    }

    #[test]
    fn blank_lines_are_skipped_but_counted_and_bad_bytes_fail_alone() {
        let got = collect(b"one\n\n  \ntw\xffo\nthree");
        assert_eq!(
            got,
            [
                (1, Ok("one\n".to_string())),
                (4, Err("bad_encoding".to_string())),
                (5, Ok("three".to_string())),
            ]
        );
    }
}
