use super::*;

fn service() -> (tempfile::TempDir, Arc<Service>) {
    let dir = tempfile::tempdir().unwrap();
    let store = mem_store::SledStore::open(&dir.path().join("store")).unwrap();
    let svc = Service::new(Arc::new(store), mem_service::WorkspaceConfig::default());
    (dir, Arc::new(svc))
}

#[test]
fn errors_are_tool_results_with_the_one_error_document() {
    let e = MemError::new(ErrorCode::ConfirmationRequired, "forgetting needs confirm")
        .with_hint("pass confirm: true");
    let r = tool_error(&e);
    assert_eq!(r.is_error, Some(true));
    let text = &r.content[0].as_text().unwrap().text;
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["code"], "confirmation_required");
    assert_eq!(v["message"], "forgetting needs confirm");
    assert_eq!(v["hint"], "pass confirm: true");
    assert!(v.get("details").is_none());
}

#[test]
fn the_tool_list_is_the_agent_surface_only() {
    let (_d, svc) = service();
    let tools = &listed(svc.as_ref()).1;
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mem_archive",
            "mem_catalog",
            "mem_check",
            "mem_checkpoint",
            "mem_checkpoint_get",
            "mem_checkpoint_list",
            "mem_context",
            "mem_export",
            "mem_feedback",
            "mem_file_annotation_decide",
            "mem_forget",
            "mem_get",
            "mem_import",
            "mem_list",
            "mem_memory_get",
            "mem_memory_list",
            "mem_propose",
            "mem_put",
            "mem_related",
            "mem_remember",
            "mem_restore",
            "mem_resume",
            "mem_search",
            "mem_task_list",
            "mem_timeline",
            "mem_trace",
            "mem_types",
        ]
    );
    for t in tools {
        for banned in ["review", "token", "audit", "policy", "admin", "plugin"] {
            assert!(!t.name.contains(banned), "{} is not for agents", t.name);
        }
        assert!(
            t.description.as_deref().is_some_and(|d| d.len() > 40),
            "{}",
            t.name
        );
        assert_eq!(
            t.input_schema.get("type").and_then(|v| v.as_str()),
            Some("object")
        );
    }
}

fn required(t: &Tool) -> Vec<String> {
    t.input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Regression: `mem_remember`'s schema left `idempotency_key` optional
/// while the server required it.
#[test]
fn regression_input_schemas_require_what_the_server_requires() {
    let (_d, svc) = service();
    let tools = &listed(svc.as_ref()).1;
    let find = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
    assert!(required(find("mem_remember")).contains(&"idempotency_key".to_string()));
    let forget = find("mem_forget");
    assert!(required(forget).contains(&"confirm".to_string()));
    assert_eq!(forget.input_schema["properties"]["confirm"]["const"], true);
    for n in ["mem_feedback", "mem_archive", "mem_restore", "mem_forget"] {
        let t = find(n);
        assert!(
            t.input_schema["properties"]["idempotency_key"].is_object(),
            "{n} takes an idempotency key"
        );
        assert!(!required(t).contains(&"idempotency_key".to_string()), "{n}");
    }
    // The workspace's own types are the kinds an agent may name.
    let kinds = &find("mem_remember").input_schema["properties"]["kind"]["enum"];
    assert!(
        kinds.as_array().unwrap().contains(&"decision".into()),
        "{kinds}"
    );
}

#[test]
fn resource_uris_parse() {
    assert_eq!(
        parse_uri("mem://memory/mem_1").unwrap(),
        MemUri::Memory("mem_1")
    );
    assert_eq!(
        parse_uri("mem://file/file_1#L3-9").unwrap(),
        MemUri::File("file_1")
    );
    assert_eq!(parse_uri("mem://catalog").unwrap(), MemUri::Catalog);
    for bad in [
        "mem://catalog/x",
        "mem://memory/",
        "mem://other/x",
        "http://x/y",
        "mem://file/a/b",
    ] {
        assert_eq!(
            parse_uri(bad).unwrap_err().code,
            ErrorCode::BadRequest,
            "{bad}"
        );
    }
}

#[test]
fn a_remote_request_without_access_is_refused() {
    let (_d, svc) = service();
    let remote = MemMcp::remote(svc.clone());
    let mut ext = Extensions::new();
    assert_eq!(
        remote.access_of(&ext).unwrap_err().code,
        ErrorCode::Unauthorized
    );
    // An HTTP request that skipped the auth layer: refused even though a
    // stdio session would fall back to its own caller.
    let (parts, ()) = axum::http::Request::new(()).into_parts();
    ext.insert(parts);
    let local = MemMcp::local(svc, Access::owner());
    assert_eq!(
        local.access_of(&ext).unwrap_err().code,
        ErrorCode::Unauthorized
    );
    let mut req = axum::http::Request::new(());
    req.extensions_mut().insert(Access::owner());
    let (parts, ()) = req.into_parts();
    let mut ext = Extensions::new();
    ext.insert(parts);
    assert_eq!(remote.access_of(&ext).unwrap(), Access::owner());
}

/// Regression: feedback, archive, restore and forget had no idempotency
/// over MCP; a retry after a lost answer got a version conflict.
#[tokio::test(flavor = "multi_thread")]
async fn regression_a_retried_archive_returns_the_first_answer() {
    let (_d, svc) = service();
    let mcp = MemMcp::local(svc.clone(), Access::owner());
    let ext = Extensions::new();
    let args = |v: Value| -> JsonObject { serde_json::from_value(v).unwrap() };
    let r = mcp
        .call(
            "mem_remember",
            &ext,
            args(serde_json::json!({"content": "x", "kind": "fact", "path": "/a", "idempotency_key": "r1"})),
        )
        .await;
    let id = r.structured_content.unwrap()["memory"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let archive =
        args(serde_json::json!({"id": id, "expected_version": 1, "idempotency_key": "a1"}));
    let first = mcp.call("mem_archive", &ext, archive.clone()).await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    let again = mcp.call("mem_archive", &ext, archive).await;
    assert_eq!(again.is_error, Some(false), "{again:?}");
    assert_eq!(again.structured_content, first.structured_content);
}

/// Agents are told to read the catalog before anything else.
#[test]
fn the_instructions_send_agents_to_the_catalog_first() {
    let catalog = INSTRUCTIONS.find("mem_catalog").unwrap();
    assert!(INSTRUCTIONS.contains(CATALOG_URI));
    for later in ["mem_context", "mem_search", "mem_remember"] {
        assert!(catalog < INSTRUCTIONS.find(later).unwrap(), "{later}");
    }
}

#[test]
fn mem_put_takes_exactly_one_of_content_and_content_base64() {
    use serde_json::json;
    let (_d, svc) = service();
    let tools = &listed(svc.as_ref()).1;
    let put = tools
        .iter()
        .find(|t| t.name == "mem_put")
        .expect("mem_put is listed");
    let schema = Value::Object((*put.input_schema).clone());
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let ok = |args: Value| v.is_valid(&args);
    assert!(ok(json!({ "path": "/a.txt", "content": "x" })));
    assert!(ok(
        json!({ "path": "/a.bin", "content_base64": "AAE=", "mime": "text/plain" })
    ));
    assert!(!ok(json!({ "path": "/a.txt" })), "neither");
    assert!(
        !ok(json!({ "path": "/a.txt", "content": "x", "content_base64": "AAE=" })),
        "both"
    );
    let d = put.description.as_deref().unwrap_or_default();
    assert!(d.contains("exactly one") && d.contains("hint"), "{d}");
}
