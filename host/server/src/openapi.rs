//! The OpenAPI 3.1 document, generated from the route table and the same
//! Rust types the handlers (de)serialize, via schemars.

use mem_service::access::Scope;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};
use std::any::TypeId;

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// How a route takes its request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    None,
    Json,
    /// Raw bytes (file uploads, documents), with the large body limit.
    Bytes,
}

/// One documented route.
#[derive(Debug, Clone)]
pub(crate) struct RouteDoc {
    pub method: &'static str,
    pub path: &'static str,
    pub operation_id: &'static str,
    pub scope: Scope,
    pub summary: &'static str,
    pub body: Body,
    query: Option<SchemaFn>,
    request: Option<SchemaFn>,
    response: Option<SchemaFn>,
    created: bool,
    idempotent: bool,
    reads: bool,
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

fn root_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.root_schema_for::<T>()
}

fn is_unit<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<()>()
}

/// Documents a route with query type `Q`, JSON body `B` and response `R`
/// (`()` for none).
pub(crate) fn doc<Q, B, R>(
    method: &'static str,
    path: &'static str,
    operation_id: &'static str,
    scope: Scope,
) -> RouteDoc
where
    Q: JsonSchema + 'static,
    B: JsonSchema + 'static,
    R: JsonSchema + 'static,
{
    RouteDoc {
        method,
        path,
        operation_id,
        scope,
        summary: "",
        body: if is_unit::<B>() {
            Body::None
        } else {
            Body::Json
        },
        query: (!is_unit::<Q>()).then_some(root_of::<Q> as SchemaFn),
        request: (!is_unit::<B>()).then_some(schema_of::<B> as SchemaFn),
        response: (!is_unit::<R>()).then_some(schema_of::<R> as SchemaFn),
        created: false,
        idempotent: false,
        reads: false,
    }
}

impl RouteDoc {
    pub fn summary(mut self, s: &'static str) -> Self {
        self.summary = s;
        self
    }
    pub fn body(mut self, b: Body) -> Self {
        self.body = b;
        self
    }
    /// Answers 201 on creation (200 on an idempotent replay).
    pub fn created(mut self) -> Self {
        self.created = true;
        self
    }
    /// Takes the `Idempotency-Key` header.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }
    /// A POST that only reads (its body is a query): nothing to replay,
    /// and a kept answer would go stale.
    pub fn reads(mut self) -> Self {
        self.reads = true;
        self
    }
    /// A write without idempotency of its own: it takes an optional
    /// `Idempotency-Key` handled by the server's reply store.
    pub fn replayable(&self) -> bool {
        self.method != "get" && !self.idempotent && !self.reads
    }
    /// Answers with raw bytes rather than JSON.
    pub fn raw_response(mut self) -> Self {
        self.response = None;
        self
    }

    fn operation(&self, g: &mut SchemaGenerator) -> Value {
        let mut params: Vec<Value> = self
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| {
                json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } })
            })
            .collect();
        if self.idempotent {
            params.push(json!({
                "name": "Idempotency-Key", "in": "header", "required": true,
                "description": "Same key and request: the original result, 200 and replayed=true. Same key, different request: 409 idempotency_conflict.",
                "schema": { "type": "string" }
            }));
        }
        if self.replayable() {
            params.push(json!({
                "name": "Idempotency-Key", "in": "header", "required": false,
                "description": "Optional. The first successful answer is kept: the same key and request again answers 200 with replayed=true; the same key with a different request is 409 idempotency_conflict.",
                "schema": { "type": "string" }
            }));
        }
        if let Some(q) = self.query {
            let root = q(g);
            let required: Vec<&str> = root
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = root.get("properties").and_then(Value::as_object) {
                for (name, schema) in props {
                    let mut schema = schema.clone();
                    let description = schema
                        .as_object_mut()
                        .and_then(|o| o.remove("description"))
                        .unwrap_or(Value::Null);
                    let mut p = json!({
                        "name": name, "in": "query",
                        "required": required.contains(&name.as_str()),
                        "schema": schema,
                    });
                    if !description.is_null() {
                        p["description"] = description;
                    }
                    params.push(p);
                }
            }
        }
        let mut op = json!({
            "operationId": self.operation_id,
            "summary": self.summary,
            "x-mem-scope": self.scope.as_str(),
            "parameters": params,
        });
        match (self.body, self.request) {
            (Body::Bytes, _) => {
                op["requestBody"] = json!({ "required": true, "content": {
                    "application/octet-stream": { "schema": { "type": "string", "contentMediaType": "application/octet-stream" } }
                }});
            }
            (Body::Json, Some(b)) => {
                op["requestBody"] = json!({ "required": true, "content": {
                    "application/json": { "schema": b(g).to_value() }
                }});
            }
            _ => {}
        }
        let ok_status = if self.created { "201" } else { "200" };
        let content = match self.response {
            Some(r) => json!({ "application/json": { "schema": r(g).to_value() } }),
            None => json!({ "application/octet-stream": { "schema": { "type": "string" } } }),
        };
        let mut responses = Map::new();
        responses.insert(
            ok_status.into(),
            json!({ "description": "success", "content": content.clone() }),
        );
        if self.created {
            responses.insert(
                "200".into(),
                json!({ "description": "an idempotent replay of an earlier success", "content": content }),
            );
        }
        responses.insert(
            "default".into(),
            json!({ "description": "error", "content": {
                "application/json": { "schema": { "$ref": "#/components/schemas/Error" } }
            }}),
        );
        op["responses"] = Value::Object(responses);
        op
    }
}

/// The whole document for `routes`.
pub(crate) fn document(routes: &[RouteDoc]) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut g = settings.into_generator();
    let mut paths = Map::new();
    for r in routes {
        let op = r.operation(&mut g);
        let entry = paths.entry(r.path.to_string()).or_insert_with(|| json!({}));
        entry[r.method] = op;
    }
    let mut schemas = g.take_definitions(true);
    schemas.insert(
        "Error".into(),
        g.root_schema_for::<mem_core::MemError>().to_value(),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mem-host",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Local-first memory host for AI agents. Every route needs `Authorization: Bearer <token>`; `x-mem-scope` names the token scope it needs (admin implies all). Objects outside a token's scope or paths read as 404.",
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
        let routes: Vec<RouteDoc> = crate::rest::routes().into_iter().map(|(d, _)| d).collect();
        let doc = document(&routes);
        for r in &routes {
            let op = &doc["paths"][r.path][r.method];
            assert_eq!(op["operationId"], r.operation_id, "{} {}", r.method, r.path);
            assert_eq!(op["x-mem-scope"], r.scope.as_str());
        }
        // Every $ref points at a component that exists.
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(schemas.contains_key(name), "dangling $ref {name}");
        }
        assert!(text.contains("Idempotency-Key"));
    }
}
