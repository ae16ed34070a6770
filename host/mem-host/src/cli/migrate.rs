//! `mem-host migrate --to postgres --into DIR ...`: moves the workspace
//! into the shared backend through the bundle format. The workspace is
//! exported to a bundle, imported into a new workspace folder whose
//! `[store]`/`[blobs]` name PostgreSQL and the object store (the import
//! verifies every entry against the manifest's hashes), then the new
//! workspace is exported again and its manifest compared with the first:
//! every record, log entry, blob and plugin must carry the same hash.
//! The source workspace is left as it was.

use super::output::Out;
use crate::client::Client;
use crate::workspace::{self, SessionStart};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::config::{CONFIG_FILE, WorkspaceConfig};
use mem_service::ops::bundles::ExportBundle;
use std::collections::BTreeSet;
use std::io::{BufReader, BufWriter, Seek, SeekFrom};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// PostgreSQL for records and logs, an S3-compatible store for blobs.
    Postgres,
}

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The backend to move to.
    #[arg(long, value_enum)]
    pub to: Target,
    /// The new workspace folder of this host (its mem.toml, index and
    /// plugins); it must not exist yet, or be empty.
    #[arg(long, value_name = "DIR")]
    pub into: PathBuf,
    /// The environment variable that holds the PostgreSQL URL.
    #[arg(long, value_name = "VAR")]
    pub url_env: String,
    /// The PostgreSQL schema of the workspace (it must be new or empty).
    #[arg(long, default_value = "mem")]
    pub schema: String,
    /// The object store's bucket.
    #[arg(long)]
    pub bucket: String,
    /// `http(s)://host:port` of an S3-compatible server (AWS when absent).
    #[arg(long)]
    pub endpoint: Option<String>,
    #[arg(long)]
    pub region: Option<String>,
    /// Key prefix inside the bucket.
    #[arg(long)]
    pub prefix: Option<String>,
    /// The environment variables that hold the access key id and secret.
    #[arg(long, value_name = "VAR")]
    pub access_key_env: Option<String>,
    #[arg(long, value_name = "VAR")]
    pub secret_key_env: Option<String>,
}

/// What `migrate` did.
#[derive(Debug, serde::Serialize)]
pub struct Migrated {
    pub migrated: bool,
    pub to: &'static str,
    pub into: PathBuf,
    /// The bundle the data travelled in (SHA-256 of its manifest).
    pub bundle: String,
    pub records: u64,
    pub log_entries: u64,
    pub blobs: u64,
    /// Every record, log entry, blob and plugin of the new workspace has
    /// the hash it had in the old one.
    pub verified: bool,
}

/// The `[store]` and `[blobs]` tables `a` asks for.
fn deployment_toml(a: &MigrateArgs) -> String {
    let q = |s: &str| toml_string(s);
    let mut t = format!(
        "\n[store]\nbackend = \"postgres\"\nurl_env = {}\nschema = {}\n\n[blobs]\nbackend = \"s3\"\nbucket = {}\n",
        q(&a.url_env),
        q(&a.schema),
        q(&a.bucket)
    );
    for (k, v) in [
        ("endpoint", &a.endpoint),
        ("region", &a.region),
        ("prefix", &a.prefix),
        ("access_key_env", &a.access_key_env),
        ("secret_key_env", &a.secret_key_env),
    ] {
        if let Some(v) = v {
            t.push_str(&format!("{k} = {}\n", q(v)));
        }
    }
    t
}

fn toml_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// A private temporary file for a bundle (it holds the workspace's data).
fn temp_bundle() -> MemResult<std::fs::File> {
    tempfile::tempfile().map_err(|e| MemError::io("cannot create a temporary bundle", &e))
}

fn export_to(c: &Client, file: &mut std::fs::File) -> MemResult<String> {
    let mut w = BufWriter::new(&mut *file);
    let report = c.export_bundle(ExportBundle { scope: None }, &mut w)?;
    drop(w);
    file.seek(SeekFrom::Start(0))
        .map_err(|e| MemError::io("cannot read the temporary bundle", &e))?;
    Ok(report.bundle)
}

/// Digests of what must travel unchanged, from a bundle's manifest.
struct Digests {
    records: BTreeSet<(String, String, String)>,
    entries: BTreeSet<(String, String)>,
    counts: mem_service::bundle::Counts,
}

fn digests(file: &mut std::fs::File) -> MemResult<Digests> {
    let mut manifest = None;
    let outcome = mem_bundle::read(
        BufReader::new(&mut *file),
        &mem_service::bundle::Limits::default(),
        &mut |m, _| {
            manifest = Some(m.clone());
            Ok(false)
        },
        &mut Discard,
    )?;
    drop(outcome);
    let m = manifest.ok_or_else(|| MemError::internal("the bundle had no manifest"))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| MemError::io("cannot read the temporary bundle", &e))?;
    Ok(Digests {
        records: m
            .records
            .iter()
            .map(|r| (r.table.clone(), r.key.clone(), r.sha256.clone()))
            .collect(),
        entries: m
            .entries
            .iter()
            .filter(|e| {
                ["logs/", "blobs/", "plugins/"]
                    .iter()
                    .any(|p| e.path.starts_with(p))
            })
            .map(|e| (e.path.clone(), e.sha256.clone()))
            .collect(),
        counts: m.counts,
    })
}

struct Discard;

impl mem_bundle::BlobSink for Discard {
    fn put(&mut self, _: &str, _: u64, reader: &mut dyn std::io::Read) -> MemResult<()> {
        std::io::copy(reader, &mut std::io::sink())
            .map_err(|e| MemError::io("cannot read the bundle", &e))?;
        Ok(())
    }
}

/// The new workspace holds what the old one held, hash for hash; it may
/// add only the mark of the import itself.
fn compare(source: &Digests, target: &Digests) -> MemResult<()> {
    let missing: Vec<_> = source.records.difference(&target.records).collect();
    let added: Vec<_> = target
        .records
        .difference(&source.records)
        .filter(|(t, k, _)| !(t == "meta" && k.starts_with("bundle_import/")))
        .collect();
    let entries_differ: Vec<_> = source
        .entries
        .symmetric_difference(&target.entries)
        .map(|(p, _)| p.clone())
        .collect();
    if missing.is_empty() && added.is_empty() && entries_differ.is_empty() {
        return Ok(());
    }
    Err(MemError::new(
        ErrorCode::StoreCorrupt,
        "the migrated workspace does not hold exactly what the old one held",
    )
    .with_hint(
        "the old workspace is unchanged; remove the new folder and schema, then migrate again",
    )
    .with_details(serde_json::json!({
        "missing_records": missing.len(),
        "added_records": added.len(),
        "differing_entries": entries_differ,
    })))
}

fn refuse_existing(dir: &Path) -> MemResult<()> {
    let holds = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_some(),
        Err(_) => false,
    };
    if holds {
        return Err(MemError::new(
            ErrorCode::WorkspaceNotEmpty,
            format!("{} exists and is not empty", dir.display()),
        )
        .with_hint(
            "name a new folder with --into; it becomes this host's folder of the shared workspace",
        )
        .with_details(serde_json::json!({ "path": dir })));
    }
    Ok(())
}

pub fn migrate(ws_dir: &Path, out: &Out, a: MigrateArgs) -> MemResult<()> {
    let Target::Postgres = a.to;
    refuse_existing(&a.into)?;
    let source = Client::open(ws_dir, SessionStart::Optimized)?;
    let mut first = temp_bundle()?;
    let bundle = export_to(&source, &mut first)?;
    source.finish();
    drop(source);
    let before = digests(&mut first)?;

    // The new folder: the old settings (its export's, without any
    // deployment of its own) plus the shared backend's sections.
    let name = ws_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().to_string()))
        .unwrap_or_else(|| "default".into());
    let text = format!(
        "{}{}",
        WorkspaceConfig::template(&name),
        deployment_toml(&a)
    );
    WorkspaceConfig::parse(&text)?;
    let made = (|| {
        std::fs::create_dir_all(&a.into)
            .map_err(|e| MemError::io(&format!("cannot create {}", a.into.display()), &e))?;
        write_private(&a.into.join(CONFIG_FILE), text.as_bytes())?;
        workspace::init(&a.into, None)?;
        let target = Client::open(&a.into, SessionStart::Optimized)?;
        target.import_bundle(&mut first)?;
        let mut second = temp_bundle()?;
        export_to(&target, &mut second)?;
        target.finish();
        let after = digests(&mut second)?;
        compare(&before, &after)
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&a.into);
        return Err(e);
    }
    let report = Migrated {
        migrated: true,
        to: "postgres",
        into: a.into.clone(),
        bundle,
        records: before.counts.records.values().sum(),
        log_entries: before.counts.logs.values().sum(),
        blobs: before.counts.blobs,
        verified: true,
    };
    out.emit(&report, |r| {
        format!(
            "migrated {} records, {} log entries and {} blobs into {} (PostgreSQL schema {}); every hash verified",
            r.records,
            r.log_entries,
            r.blobs,
            r.into.display(),
            a.schema
        )
    })
}

fn write_private(path: &Path, bytes: &[u8]) -> MemResult<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .map_err(|e| MemError::io(&format!("cannot write {}", path.display()), &e))
}
