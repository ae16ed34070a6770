//! What a citation shows: the lines a locator names, of a file's text or,
//! for a page locator (`p3:L10-24`), of that page's processed text (a
//! PDF's bytes are not its text). Review and resume both quote this way.

use crate::Service;
use crate::records::load;
use mem_core::MemResult;
use mem_core::locator::Locator;
use mem_core::plugin::ProcessedFile;
use mem_core::store::Table;

/// The lines of `text` that `at` names (every line without a locator).
pub(crate) fn lines_of(text: &str, at: Option<&Locator>) -> String {
    text.lines()
        .enumerate()
        .filter(|(i, _)| at.is_none_or(|l| l.covers(i + 1)))
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Service {
    /// The processed text of the lines `at` names on its page, from the
    /// file's `page` chunks; `None` when the file has no such page (not
    /// processed, or not a paged document).
    pub(crate) fn page_lines(&self, file_id: &str, at: &Locator) -> MemResult<Option<String>> {
        let Some(page) = at.page else {
            return Ok(None);
        };
        let processed = load::<ProcessedFile>(self.store(), Table::FileContent, file_id)?;
        let mut lines = Vec::new();
        let mut found = false;
        for chunk in processed.map(|p| p.value.chunks).unwrap_or_default() {
            let on_page = chunk.locator().strip_prefix(&format!("p{page}:")).is_some();
            if !on_page {
                continue;
            }
            found = true;
            let first = chunk.lines.start as usize;
            for (i, line) in chunk.text.lines().enumerate() {
                if at.covers(first + i) {
                    lines.push(line.to_string());
                }
            }
        }
        Ok(found.then(|| lines.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::lines_of;
    use mem_core::locator::Locator;

    #[test]
    fn a_locator_picks_its_lines_and_none_picks_all() {
        let text = "one\ntwo\nthree\nfour";
        assert_eq!(
            lines_of(text, Locator::parse("L2-3").as_ref()),
            "two\nthree"
        );
        assert_eq!(lines_of(text, Locator::parse("L4").as_ref()), "four");
        assert_eq!(lines_of(text, None), text);
        assert_eq!(lines_of(text, Locator::parse("L9").as_ref()), "");
    }
}
