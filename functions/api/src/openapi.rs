//! The OpenAPI 3.1 document of every HTTP route, served at `GET /api/openapi.json`: the `/api/`
//! routes from the route table that dispatches them, and the payment webhook (served by the
//! `payment-webhook` function) beside them.

mod bank_webhook;
mod calls_webhook;
mod leads_webhook;
mod messages_webhook;
mod ops;
mod parts;
/// The `/ops` operations the document describes.
pub use ops::OPERATIONS as OPS_OPERATIONS;
mod sms_webhook;
mod webhook;

use crate::route::{doc, Answer, Auth, Method, Op, Route, Schemas};
use crate::routes;
use crate::schemas::ErrorBody;
use firmspace::http::{json_response, ApiError};
use lambda_http::{Body, Response};
use parts::{answer_schema, error, replayed, LIMITED, REPLAYED, SERVER};
use utoipa::openapi::path::{Operation, OperationBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, OpenApi, OpenApiBuilder,
    OpenApiVersion, PathItem, PathsBuilder, RefOr, ResponseBuilder, ResponsesBuilder, Schema,
    SecurityRequirement,
};

use parts::{ADMIN_TOKEN, ORG_KEY};

/// The whole document.
pub fn document() -> OpenApi {
    let mut schemas = Schemas::new();
    doc::<ErrorBody>(&mut schemas);
    let mut paths = PathsBuilder::new();
    for route in routes::all() {
        let operation = operation(route, &mut schemas);
        paths = paths.path(route.path, PathItem::new(method(route.method), operation));
    }
    let hook = webhook::operation(&mut schemas);
    paths = paths.path(webhook::PATH, PathItem::new(HttpMethod::Post, hook));
    let calls = calls_webhook::operation(&mut schemas);
    paths = paths.path(calls_webhook::PATH, PathItem::new(HttpMethod::Post, calls));
    let messages = messages_webhook::operation(&mut schemas);
    let mut item = PathItem::new(HttpMethod::Post, messages);
    item.get = Some(messages_webhook::handshake());
    paths = paths.path(messages_webhook::PATH, item);
    let mut item = PathItem::new(HttpMethod::Post, bank_webhook::operation(&mut schemas));
    item.get = Some(bank_webhook::check());
    paths = paths.path(bank_webhook::PATH, item);
    paths = ops::paths(paths, &mut schemas);
    let sms = sms_webhook::operation(&mut schemas);
    paths = paths.path(sms_webhook::PATH, PathItem::new(HttpMethod::Post, sms));
    let leads = leads_webhook::operation(&mut schemas);
    paths = paths.path(leads_webhook::PATH, PathItem::new(HttpMethod::Post, leads));
    let paths = replays_marked(paths.build());
    let info = InfoBuilder::new()
        .title("Firmspace Events")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "Payments, invoices, calls, messages, contacts, bank rows and their consequences. Amounts are JSON strings in major units \
             with their currency's digits; errors are RFC 9457 problems (application/problem+json) with our `error` code.",
        ));
    let components = ComponentsBuilder::new()
        .schemas_from_iter(schemas)
        .security_scheme(ORG_KEY, bearer("the organisation's API key (`fsk_...`)"))
        .security_scheme(
            ADMIN_TOKEN,
            bearer("the admin token (POST /api/orgs, and every /ops route)"),
        );
    // The stack's base URL: a deployed stack's `ApiUrl`, or the local stack's `api_url`.
    let server = utoipa::openapi::ServerBuilder::new()
        .url("{api_url}")
        .description(Some(
            "the stack: its ApiUrl output, or target/local-stack.json's api_url",
        ))
        .parameter(
            "api_url",
            utoipa::openapi::ServerVariableBuilder::new()
                .default_value("http://127.0.0.1:4566/_aws/execute-api/local")
                .description(Some("the stack's base URL, without a trailing slash")),
        )
        .build();
    OpenApiBuilder::new()
        .openapi(OpenApiVersion::Version31)
        .info(info)
        .servers(Some(vec![server]))
        .paths(paths)
        .components(Some(components.build()))
        .build()
}

/// A webhook's success is a duplicate's too: every `POST /hooks/...` answer `200` documents
/// `Idempotent-Replayed`.
fn replays_marked(mut paths: utoipa::openapi::Paths) -> utoipa::openapi::Paths {
    for (path, item) in paths.paths.iter_mut() {
        let Some(post) = item.post.as_mut().filter(|_| path.starts_with("/hooks/")) else {
            continue;
        };
        if let Some(RefOr::T(ok)) = post.responses.responses.get_mut("200") {
            ok.headers.insert(REPLAYED.into(), RefOr::T(replayed()));
        }
    }
    paths
}

/// The `GET /api/openapi.json` answer.
pub fn response() -> Result<Response<Body>, ApiError> {
    let body = serde_json::to_value(document()).map_err(|e| ApiError::internal(&e, false))?;
    Ok(json_response(200, &body))
}

pub fn method(method: Method) -> HttpMethod {
    match method {
        Method::Get => HttpMethod::Get,
        Method::Post => HttpMethod::Post,
        Method::Delete => HttpMethod::Delete,
    }
}

fn bearer(description: &str) -> SecurityScheme {
    let scheme = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .description(Some(description));
    SecurityScheme::Http(scheme.build())
}

/// A route's success body: its schema and media type.
/// What the command a route's operation performs answers is its answer (`Answer::Performed`).
fn answer_of(route: &Route, schemas: &mut Schemas) -> (RefOr<Schema>, &'static str) {
    let answer = match (route.answer, route.op) {
        (Answer::Performed, Op::Org(op)) => op.answer().map_or(route.answer, Answer::One),
        (answer, _) => answer,
    };
    answer_schema(&answer, schemas)
}

fn operation(route: &Route, schemas: &mut Schemas) -> Operation {
    let (answer, media) = answer_of(route, schemas);
    let mut responses = ResponsesBuilder::new();
    let keyed = route.params.iter().any(|p| p.name == "Idempotency-Key");
    for (status, when) in route.ok {
        let content = ContentBuilder::new().schema(Some(answer.clone())).build();
        let ok = ResponseBuilder::new()
            .description(*when)
            .content(media, content);
        let ok = match keyed {
            true => ok.header(REPLAYED, replayed()),
            false => ok,
        };
        responses = responses.response(status.to_string(), ok.build());
    }
    let auth = route.op.auth();
    for (status, codes) in route.errors.iter().chain(common_errors(auth)) {
        responses = responses.response(status.to_string(), error(codes));
    }
    // A path parameter names something that may not be there: every such route can be 404.
    let named = route.path.contains('{');
    if named && !route.errors.iter().any(|(status, _)| *status == 404) {
        let codes = "`not_found`: nothing of the caller's under that id";
        responses = responses.response("404", error(codes));
    }
    if named && !route.errors.iter().any(|(status, _)| *status == 405) {
        let (status, codes) = parts::OTHER_PATH;
        responses = responses.response(status.to_string(), error(codes));
    }
    let mut operation = OperationBuilder::new()
        .operation_id(Some(route.op.name()))
        .tag(tag(route.path))
        .summary(Some(route.summary))
        .parameters(Some(
            route
                .params
                .iter()
                .map(|p| parts::parameter_of(route.path, p)),
        ))
        .request_body(route.body.map(|doc| parts::json_body(doc, true, schemas)))
        .responses(responses.build());
    let scheme = match auth {
        Auth::Public => None,
        Auth::Admin => Some(ADMIN_TOKEN),
        Auth::OrgKey => Some(ORG_KEY),
    };
    if let Some(scheme) = scheme {
        // A key's scope is a role the bearer scheme requires (OpenAPI 3.1 allows role names).
        let scopes: Vec<&str> = route.scopes().iter().map(|s| s.name()).collect();
        operation = operation.security(SecurityRequirement::new(scheme, scopes));
    }
    operation.build()
}

/// The 401, 429 and 5xx every authenticated route can give.
fn common_errors(auth: Auth) -> &'static [(u16, &'static str)] {
    match auth {
        Auth::Public => &[],
        Auth::Admin => &[
            (401, "`unauthorized`: admin token missing or wrong"),
            LIMITED,
            SERVER[0],
            SERVER[1],
        ],
        Auth::OrgKey => &[
            (401, "`unauthorized`: API key missing, unknown or revoked"),
            (403, "`forbidden`: the key lacks the scope the route needs"),
            LIMITED,
            SERVER[0],
            SERVER[1],
        ],
    }
}

/// An operation's tag: what its path is about (`/api/invoices/...` → `invoices`), `webhooks`
/// for `/hooks/...`, `ops` for the operator's routes.
pub fn tag(path: &str) -> String {
    let mut segments = path.trim_start_matches('/').split('/');
    match (segments.next(), segments.next()) {
        (Some("api"), Some(first)) => first.split('.').next().unwrap_or(first).to_owned(),
        (Some("hooks"), _) => "webhooks".into(),
        (Some(first), _) => first.to_owned(),
        (None, _) => "other".into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_operation_that_needs_a_key_declares_it() {
        let document = serde_json::to_value(super::document()).expect("the document serialises");
        let mut open = Vec::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("an item") {
                let security = operation["security"].as_array().map_or(0, Vec::len);
                let public = ["/ops", "/api/openapi.json"].contains(&path.as_str())
                    || path.starts_with("/hooks/");
                if security == 0 && !public {
                    open.push(format!("{method} {path}"));
                }
            }
        }
        assert!(open.is_empty(), "operations with no security: {open:?}");
        let mut unsatisfiable = Vec::new();
        no_value_satisfies(&document, "", &mut unsatisfiable);
        assert!(
            unsatisfiable.is_empty(),
            "schemas no value satisfies: {unsatisfiable:?}"
        );
        // Every `limit` an integer, the stack a server, a new key's scopes the closed set.
        let limits: Vec<&serde_json::Value> = document["paths"]
            .as_object()
            .expect("paths")
            .values()
            .flat_map(|item| item.as_object().expect("an item").values())
            .flat_map(|op| op["parameters"].as_array().into_iter().flatten())
            .filter(|p| p["name"] == "limit")
            .collect();
        assert!(limits.len() >= 5, "{limits:?}");
        assert!(
            limits.iter().all(|p| p["schema"]["type"] == "integer"),
            "{limits:?}"
        );
        assert_eq!(document["servers"][0]["url"], "{api_url}");
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("an item") {
                if path.contains('{') {
                    assert!(operation["responses"]["404"].is_object(), "{method} {path}");
                    // An id that makes the path another route's (a webhook URL's is its own).
                    let other = operation["responses"]["405"].is_object();
                    assert!(other || path.starts_with("/hooks/"), "{method} {path}");
                }
            }
        }
        let times = document
            .to_string()
            .matches(r#""format":"date-time""#)
            .count();
        assert!(times >= 30, "timestamps are date-times: {times}");
        let scopes = &document["components"]["schemas"]["NewKey"]["properties"]["scopes"];
        assert_eq!(
            scopes["items"]["$ref"], "#/components/schemas/Scope",
            "{scopes}"
        );
        // A review item's closed sets are enums, its always-present fields required.
        let item = &document["components"]["schemas"]["ReviewItem"];
        for field in ["kind", "reason", "key", "at", "state", "about"] {
            let required = item["required"].as_array().expect("required fields");
            assert!(
                required.contains(&serde_json::json!(field)),
                "{field}: {item}"
            );
        }
        let schemas = &document["components"]["schemas"];
        assert_eq!(
            schemas["RunRow"]["properties"]["state"]["$ref"],
            "#/components/schemas/RunState"
        );
        assert_eq!(
            schemas["EventRow"]["properties"]["kind"]["$ref"],
            "#/components/schemas/EventKind"
        );
        assert!(schemas["RunState"]["enum"]
            .as_array()
            .is_some_and(|s| s.contains(&serde_json::json!("needs_check"))));
        let direction = &schemas["CallFields"]["properties"]["direction"]["$ref"];
        assert_eq!(direction, "#/components/schemas/Direction");
        let kept = &schemas["KeptAnswer"]["oneOf"];
        assert!(
            kept.as_array().is_some_and(|k| k.len() >= 7),
            "a kept answer's shapes: {kept}"
        );
        let reasons = &document["components"]["schemas"]["Reason"]["enum"];
        assert!(
            reasons
                .as_array()
                .is_some_and(|r| r.contains(&serde_json::json!("possible_same_money"))),
            "{reasons}"
        );
        // Every field the server holds to a limit says it: a cursor is never empty, a window's
        // ends are times, a recipient a member's id, an activity log's kind one of three, a
        // call's status one of the nine a softphone sends.
        let params = |path: &str, method: &str| {
            document["paths"][path][method]["parameters"]
                .as_array()
                .expect("parameters")
                .clone()
        };
        let param = |path: &str, method: &str, name: &str| {
            params(path, method)
                .into_iter()
                .find(|p| p["name"] == name)
                .unwrap_or_else(|| panic!("{name} of {method} {path}"))["schema"]
                .clone()
        };
        assert_eq!(param("/api/deals", "get", "cursor")["minLength"], 1);
        let id = param("/api/integrations/{id}/import", "post", "id");
        assert_eq!(id["pattern"], super::parts::PATH_SEGMENT, "{id}");
        assert_eq!(param("/api/ledger", "get", "from")["format"], "date-time");
        assert_eq!(
            param("/api/notifications", "get", "recipient")["pattern"],
            firmspace::ids::LOCAL_ID_PATTERN
        );
        assert_eq!(
            param("/api/activity/{kind}/{entity_id}", "get", "kind")["enum"],
            serde_json::json!(["contact", "deal", "company"])
        );
        let call = &schemas["CallFields"]["properties"];
        assert!(call["status"]["pattern"]
            .as_str()
            .is_some_and(|p| p.contains("no-answer")));
        assert_eq!(call["duration"]["maximum"], 86400);
        assert_eq!(call["call_id"]["minLength"], 1);
        let resolve = &document["paths"]["/ops/review/{id}/resolve"]["post"]["security"];
        assert_eq!(
            resolve,
            &serde_json::json!([{"organisation_api_key": ["write", "ops"]}, {"admin_token": []}])
        );
    }

    #[test]
    fn every_reference_names_a_schema_of_the_document() {
        let document = serde_json::to_value(super::document()).expect("the document serialises");
        let text = document.to_string();
        let schemas = document["components"]["schemas"]
            .as_object()
            .expect("schemas");
        let prefix = "\"$ref\":\"#/components/schemas/";
        let dangling: Vec<&str> = text
            .split(prefix)
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap_or_default())
            .filter(|name| !schemas.contains_key(*name))
            .collect();
        assert!(dangling.is_empty(), "references to no schema: {dangling:?}");
        // A command's answer is its own type's schema: an event's answer as the event's, the
        // softphone's report either the call or a report not ended yet.
        let call = &document["paths"]["/api/calls"]["post"]["responses"]["201"]["content"]
            ["application/json"]["schema"]["$ref"];
        assert_eq!(call, "#/components/schemas/CallRecorded");
        let shapes = schemas["CallRecorded"]["oneOf"].to_string();
        assert!(
            shapes.contains("CallAnswer") && shapes.contains("CallIgnored"),
            "{shapes}"
        );
    }

    /// Every `allOf` whose members' types have nothing in common, by where it is.
    fn no_value_satisfies(value: &serde_json::Value, at: &str, out: &mut Vec<String>) {
        use serde_json::Value;
        let types = |v: &Value| -> Option<Vec<String>> {
            match &v["type"] {
                Value::String(t) => Some(vec![t.clone()]),
                Value::Array(ts) => Some(
                    ts.iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect(),
                ),
                _ => None,
            }
        };
        match value {
            Value::Object(map) => {
                if let Some(Value::Array(all)) = map.get("allOf") {
                    let mut common: Option<Vec<String>> = None;
                    for member in all.iter().filter_map(types) {
                        common = Some(match common {
                            None => member,
                            Some(c) => c.into_iter().filter(|t| member.contains(t)).collect(),
                        });
                    }
                    if common.is_some_and(|c| c.is_empty()) {
                        out.push(at.to_owned());
                    }
                }
                for (name, inner) in map {
                    no_value_satisfies(inner, &format!("{at}/{name}"), out);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    no_value_satisfies(inner, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod closed_sets {
    /// The closed sets an answer names are enums in the document, each of its values (what a
    /// generated client takes for a type of its own).
    #[test]
    fn the_closed_sets_of_the_answers_are_enums() {
        let doc = serde_json::to_value(super::document()).unwrap();
        let schemas = &doc["components"]["schemas"];
        for (name, values) in [
            ("StoredOutcome", &["stored", "repush", "review", "held"][..]),
            ("Outcome", &["applied", "unconfirmed"]),
            ("ConsequenceKind", &["notification", "activity", "rule_run"]),
            ("ConsequenceDone", &["done", "missing"]),
            ("RunDecidedState", &["sent", "sending"]),
            ("FileImportState", &["queued", "running", "done"]),
            ("RequestState", &["running", "done"]),
        ] {
            let listed = schemas[name]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: {}", schemas[name]));
            for value in values {
                assert!(
                    listed.iter().any(|v| v == value),
                    "{name} lacks {value}: {listed:?}"
                );
            }
        }
        let row = &schemas["EventRow"]["properties"]["outcome"];
        assert_eq!(row["$ref"], "#/components/schemas/EventOutcome", "{row}");
        let one_of = schemas["EventOutcome"]["oneOf"].to_string();
        for set in ["Outcome", "StoredOutcome"] {
            assert!(
                one_of.contains(&format!("#/components/schemas/{set}")),
                "{one_of}"
            );
        }
    }
}
