//! Fixtures are PDFs written here by lopdf.

use lopdf::content::{Content, Operation};
use lopdf::{Stream, dictionary};

use super::*;

/// A PDF whose pages hold `pages` (lines each; an empty page has no text
/// operators, as a scanned page), with an Info dictionary.
pub fn pdf(pages: &[&[&str]], title: &str) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids = Vec::new();
    for lines in pages {
        let mut ops = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            ops.push(Operation::new("BT", vec![]));
            ops.push(Operation::new("Tf", vec!["F1".into(), 12.into()]));
            ops.push(Operation::new(
                "Td",
                vec![72.into(), (720 - 14 * i as i64).into()],
            ));
            ops.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
            ops.push(Operation::new("ET", vec![]));
        }
        let content = Content { operations: ops }.encode().expect("encode");
        let content_id = doc.add_object(Stream::new(dictionary! {}, content));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    let info_id = doc.add_object(dictionary! {
        "Title" => Object::string_literal(title),
        "Author" => Object::string_literal("Ada Lovelace"),
        "CreationDate" => Object::string_literal("D:20240601143005+02'00'"),
    });
    doc.trailer.set("Root", catalog_id);
    doc.trailer.set("Info", info_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("save");
    out
}

fn input(bytes: Vec<u8>) -> FileInput {
    FileInput::new("report.pdf", "application/pdf", bytes)
}

#[test]
fn text_per_page_with_page_sections_and_metadata() {
    let bytes = pdf(
        &[
            &["Quarterly report", "Revenue grew"],
            &["Second page", "Lighthouse keepers"],
        ],
        "Harbour Report",
    );
    let p = process_pdf(&input(bytes)).expect("processed");
    assert_eq!(p.metadata_value("doc.pages"), Some("2"));
    assert_eq!(p.metadata_value("doc.title"), Some("Harbour Report"));
    assert_eq!(p.metadata_value("doc.author"), Some("Ada Lovelace"));
    assert_eq!(
        p.metadata_value("doc.created_at"),
        Some("2024-06-01T14:30:05+02:00")
    );
    assert_eq!(p.metadata_value("index.partial"), None);
    assert_eq!(p.title.as_deref(), Some("Harbour Report"));
    assert_eq!(p.chunks.len(), 2);
    assert_eq!(p.chunks[1].kind, "page");
    assert_eq!(p.chunks[1].section, vec!["page 2".to_string()]);
    assert!(
        p.chunks[1].text.contains("Lighthouse keepers"),
        "{:?}",
        p.chunks
    );
    assert_eq!(p.chunks[1].lines.start, 1);
}

#[test]
fn image_only_pages_are_partial_with_the_reason() {
    let p = process_pdf(&input(pdf(&[&[], &[]], "Scan"))).expect("processed");
    assert_eq!(p.metadata_value("index.partial"), Some(NO_TEXT_LAYER));
    assert!(p.chunks.is_empty());
    let p = process_pdf(&input(pdf(&[&["words"], &[]], "Half"))).expect("processed");
    assert_eq!(
        p.metadata_value("index.partial"),
        Some("1 of 2 pages have no text layer; OCR is not available")
    );
}

#[test]
fn hostile_pdfs_fail_with_a_reason_never_panic() {
    let e = process_pdf(&input(b"%PDF-1.7\ngarbage".to_vec())).unwrap_err();
    assert!(e.message.contains("damaged"), "{}", e.message);
    let mut cut = pdf(&[&["some text"]], "Cut");
    cut.truncate(cut.len() / 2);
    let _ = process_pdf(&input(cut));
    assert!(process_pdf(&input(Vec::new())).is_err());
}

#[test]
fn pdf_dates_and_strings() {
    assert_eq!(pdf_date("D:2024").as_deref(), Some("2024-01-01T00:00:00Z"));
    assert_eq!(
        pdf_date("D:19991231235959-05'30'").as_deref(),
        Some("1999-12-31T23:59:59-05:30")
    );
    assert_eq!(pdf_date("D:20241301"), None);
    assert_eq!(pdf_date("yesterday"), None);
    assert_eq!(text_string(&[0xFE, 0xFF, 0, b'H', 0, b'i']), "Hi");
    assert_eq!(text_string(b"caf\xe9"), "café");
}
