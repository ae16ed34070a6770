//! The OpenAPI 3.1 document, generated from the route table and the same
//! operation types the service decodes, and tailored to the running
//! workspace (its memory types, its limits): it states what the server
//! enforces.

use crate::rest::table::{Kind, Route};
use mem_service::WorkspaceConfig;
use mem_service::ops::fields::tailor;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// The schema of an operation's request, inlined, without `skip` fields.
fn request_schema(route: &Route, config: &WorkspaceConfig) -> Value {
    let mut s = route.op.request_schema(config);
    if let Some(o) = s.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    s
}

/// Removes `names` from an object schema's properties and required list.
fn without(mut schema: Value, names: &[&str]) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for n in names {
            props.remove(*n);
        }
    }
    if let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| !r.as_str().is_some_and(|r| names.contains(&r)));
    }
    schema
}

fn operation(route: &Route, g: &mut schemars::SchemaGenerator, config: &WorkspaceConfig) -> Value {
    let request = request_schema(route, config);
    let required: Vec<String> = request
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let props = request
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let path_params = route.path_params();
    let mut params: Vec<Value> = path_params
        .iter()
        .map(|name| {
            let schema = props.get(*name).cloned().unwrap_or(json!({ "type": "string" }));
            json!({ "name": name, "in": "path", "required": true, "schema": strip_description(schema) })
        })
        .collect();
    // Raw bodies carry content; their other fields are query parameters.
    let body_fields: &[&str] = match route.kind {
        Kind::Upload => &["content", "content_base64", "source_metadata"],
        Kind::DocumentIn => &["content"],
        Kind::BundleIn => &["content_base64"],
        _ => &[],
    };
    if route.takes_query() {
        for (name, schema) in &props {
            if path_params.contains(&name.as_str()) || body_fields.contains(&name.as_str()) {
                continue;
            }
            let mut schema = schema.clone();
            let description = schema.as_object_mut().and_then(|o| o.remove("description"));
            let mut p = json!({
                "name": name, "in": "query",
                "required": required.contains(name),
                "schema": schema,
            });
            if schema_is_array(&p["schema"]) {
                p["style"] = json!("form");
                p["explode"] = json!(true);
            }
            if let Some(d) = description {
                p["description"] = d;
            }
            params.push(p);
        }
    }
    let mut op = json!({
        "operationId": route.operation_id,
        "summary": route.summary,
        "x-mem-scope": route.op.scope.as_str(),
        "x-mem-operation": route.op.name,
        "parameters": params,
    });
    match route.kind {
        Kind::Upload => {
            if let Some(Value::Array(ps)) = op.get_mut("parameters") {
                let max = mem_core::model::MAX_SOURCE_METADATA_BYTES;
                ps.push(json!({
                    "name": "X-Mem-Source-Metadata", "in": "header", "required": false,
                    "description": format!("Where and when the content comes from: a JSON object as text with any of captured_at (RFC 3339 with a zone), lat, lon, location_accuracy, place, source_kind, source_name; refused whole (422 bad_source_metadata) when a field is unknown, repeated, null or out of range, or when it is longer than {max} bytes (maxLength counts characters, which bounds ASCII text exactly)."),
                    "schema": { "type": "string", "maxLength": max }
                }));
            }
            // No body is an empty file (HTTP cannot tell them apart). A
            // form carries the source metadata as a part instead of the
            // header (`rest::form`).
            let max = mem_core::model::MAX_SOURCE_METADATA_BYTES;
            op["requestBody"] = json!({ "required": false, "content": {
                "application/octet-stream": { "schema": { "type": "string", "contentMediaType": "application/octet-stream" } },
                "multipart/form-data": { "schema": {
                    "type": "object",
                    "properties": {
                        (crate::rest::form::SOURCE_PART): { "type": "string", "maxLength": max, "description": "The source metadata as the X-Mem-Source-Metadata header carries it (not both)." },
                        (crate::rest::form::FILE_PART): { "type": "string", "format": "binary", "description": "The file's bytes." }
                    },
                    "required": [crate::rest::form::FILE_PART],
                    "additionalProperties": false
                }}
            }});
        }
        Kind::DocumentIn => {
            op["requestBody"] = json!({ "required": true, "content": {
                "application/octet-stream": { "schema": { "type": "string", "format": "binary", "contentMediaType": "text/plain" } }
            }});
        }
        Kind::BundleIn => {
            op["requestBody"] = json!({ "required": true, "content": {
                "application/octet-stream": { "schema": { "type": "string", "format": "binary", "contentMediaType": "application/zstd" } }
            }});
        }
        Kind::Json if !route.takes_query() => {
            let mut exclude = path_params.clone();
            exclude.extend_from_slice(body_fields);
            let body = without(request, &exclude);
            // A body with nothing required may be left out (`{}` is meant).
            let needed = body
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty());
            op["requestBody"] = json!({ "required": needed, "content": {
                "application/json": { "schema": body }
            }});
        }
        _ => {}
    }
    let ok_status = if route.created { "201" } else { "200" };
    let content = match route.kind {
        Kind::Download => json!({ "*/*": { "schema": { "type": "string" } } }),
        Kind::BundleOut => json!({
            "application/zstd": { "schema": { "type": "string", "format": "binary" } }
        }),
        // A split export (a folder of notes) answers JSON.
        Kind::DocumentOut => {
            let mut schema = route.op.output_schema(g).to_value();
            tailor(&mut schema, config);
            json!({
                "text/markdown": { "schema": { "type": "string" } },
                "text/plain": { "schema": { "type": "string" } },
                "application/json": { "schema": schema }
            })
        }
        _ => {
            let mut schema = route.op.output_schema(g).to_value();
            tailor(&mut schema, config);
            json!({ "application/json": { "schema": schema } })
        }
    };
    let mut responses = Map::new();
    responses.insert(
        ok_status.into(),
        json!({ "description": "success", "content": content.clone() }),
    );
    if route.created {
        responses.insert(
            "200".into(),
            json!({ "description": "an idempotent replay of an earlier success (`replayed: true`)", "content": content }),
        );
    }
    responses.insert(
        "default".into(),
        json!({ "description": "an error: {code, message, hint, details}", "content": {
            "application/json": { "schema": { "$ref": "#/components/schemas/Error" } }
        }}),
    );
    op["responses"] = Value::Object(responses);
    op
}

fn schema_is_array(s: &Value) -> bool {
    match s.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(a)) => a.iter().any(|t| t == "array"),
        _ => false,
    }
}

fn strip_description(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("description");
    }
    v
}

/// The whole document for `routes`.
pub(crate) fn document(routes: &[Route], config: &WorkspaceConfig) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut g = settings.into_generator();
    let mut paths = Map::new();
    for r in routes {
        let op = operation(r, &mut g, config);
        let entry = paths.entry(r.path.to_string()).or_insert_with(|| json!({}));
        entry[r.method] = op;
    }
    let mut schemas = g.take_definitions(true);
    schemas.insert(
        "Error".into(),
        g.root_schema_for::<mem_core::MemError>().to_value(),
    );
    let mut schemas = Value::Object(schemas.into_iter().collect());
    tailor(&mut schemas, config);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mem-host",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Local-first memory host for AI agents. Every route needs `Authorization: Bearer <token>`; `x-mem-scope` names the token scope it needs (admin implies all), `x-mem-operation` the service operation it reaches (the same one the CLI and MCP reach). Objects outside a token's scope or paths read as 404. Writes take an `idempotency_key` field (or the `Idempotency-Key` header): the same key and request answer the first result again (200, `replayed: true`, header `Idempotent-Replayed`), the same key with another request is 409 `idempotency_conflict`.",
        },
        "servers": [{ "url": "http://127.0.0.1:7373" }],
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": schemas,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_documented_with_its_scope_and_refs_resolve() {
        let routes = crate::rest::table::routes();
        let doc = document(&routes, &WorkspaceConfig::default());
        for r in &routes {
            let op = &doc["paths"][r.path][r.method];
            assert_eq!(op["operationId"], r.operation_id, "{} {}", r.method, r.path);
            assert_eq!(op["x-mem-scope"], r.op.scope.as_str());
        }
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(schemas.contains_key(name), "dangling $ref {name}");
        }
    }

    /// The contract says what the server enforces: required fields, ranges,
    /// enums and the workspace's own memory types.
    #[test]
    fn the_document_states_the_constraints_the_server_checks() {
        let doc = document(&crate::rest::table::routes(), &WorkspaceConfig::default());
        let remember = &doc["paths"]["/v1/memories"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"];
        let required: Vec<&str> = remember["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(required.contains(&"idempotency_key"), "{required:?}");
        assert!(
            remember["properties"]["kind"]["enum"]
                .as_array()
                .unwrap()
                .contains(&json!("decision"))
        );
        let list = &doc["paths"]["/v1/memories"]["get"]["parameters"];
        let limit = list
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "limit")
            .unwrap();
        assert_eq!(limit["schema"]["maximum"], 1000);
        let forget = &doc["paths"]["/v1/memories/{id}/forget"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"];
        assert!(
            forget["properties"].get("id").is_none(),
            "the path carries id"
        );
        assert_eq!(forget["properties"]["confirm"]["const"], true);
    }
}
