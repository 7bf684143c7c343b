//! The OpenAPI 3.1 document of every HTTP route, served at `GET /api/openapi.json`: the `/api/`
//! routes from the route table that dispatches them, and the payment webhook (served by the
//! `payment-webhook` function) beside them.

mod bank_webhook;
mod calls_webhook;
mod leads_webhook;
mod messages_webhook;
mod ops;
/// The `/ops` operations the document describes.
pub use ops::OPERATIONS as OPS_OPERATIONS;
mod sms_webhook;
mod webhook;

use crate::routes::{self, Answer, Auth, In, Method, Param, Route};
use crate::schemas::ErrorBody;
use firmspace::http::{json_response, ApiError};
use lambda_http::{Body, Response};
use utoipa::openapi::path::{
    Operation, OperationBuilder, Parameter, ParameterBuilder, ParameterIn,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    ArrayBuilder, ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, ObjectBuilder,
    OneOfBuilder, OpenApi, OpenApiBuilder, OpenApiVersion, PathItem, PathsBuilder, Ref, RefOr,
    Required, ResponseBuilder, ResponsesBuilder, Schema, SecurityRequirement, Type,
};
use utoipa::{PartialSchema, ToSchema};

/// The named schemas the document's components collect.
pub type Schemas = Vec<(String, RefOr<Schema>)>;

/// A documented body type: adds its schema (and those it refers to) and returns its name.
pub type Doc = fn(&mut Schemas) -> String;

/// The `Doc` of a `ToSchema` type, for the route table.
pub fn doc<T: ToSchema>(schemas: &mut Schemas) -> String {
    let name = T::name().into_owned();
    schemas.push((name.clone(), T::schema()));
    T::schemas(schemas);
    name
}

const ORG_KEY: &str = "organisation_api_key";
const ADMIN_TOKEN: &str = "admin_token";
const JSON: &str = "application/json";

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
        .security_scheme(ADMIN_TOKEN, bearer("the admin token (POST /api/orgs only)"));
    OpenApiBuilder::new()
        .openapi(OpenApiVersion::Version31)
        .info(info)
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
fn answer_of(route: &Route, schemas: &mut Schemas) -> (RefOr<Schema>, &'static str) {
    answer_schema(&route.answer, schemas)
}

/// An answer's schema and media type.
pub(crate) fn answer_schema(
    answer: &Answer,
    schemas: &mut Schemas,
) -> (RefOr<Schema>, &'static str) {
    match *answer {
        Answer::One(doc) => (Ref::from_schema_name(doc(schemas)).into(), JSON),
        Answer::Items(doc) => (items(doc(schemas)), JSON),
        Answer::Paged(doc) => (page(doc(schemas)), JSON),
        Answer::Html(what) => (
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(what))
                .into(),
            "text/html",
        ),
        Answer::OneOf(docs) => {
            let one_of = docs.iter().fold(OneOfBuilder::new(), |one_of, doc| {
                one_of.item(Ref::from_schema_name(doc(schemas)))
            });
            (one_of.into(), JSON)
        }
        Answer::Document => (
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("this OpenAPI document"))
                .into(),
            JSON,
        ),
        Answer::Csv(columns) => (
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(format!(
                    "RFC 4180 CSV with the header row {}",
                    columns.join(",")
                )))
                .into(),
            "text/csv",
        ),
    }
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
    let mut operation = OperationBuilder::new()
        .operation_id(Some(route.op.name()))
        .tag(tag(route.path))
        .summary(Some(route.summary))
        .parameters(Some(route.params.iter().map(parameter)))
        .request_body(route.body.map(|doc| {
            let content = ContentBuilder::new().schema(Some(Ref::from_schema_name(doc(schemas))));
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content(JSON, content.build())
                .build()
        }))
        .responses(responses.build());
    let scheme = match auth {
        Auth::Public => None,
        Auth::Admin => Some(ADMIN_TOKEN),
        Auth::OrgKey => Some(ORG_KEY),
    };
    if let Some(scheme) = scheme {
        // A key's scope is a role the bearer scheme requires (OpenAPI 3.1 allows role names).
        let scopes: Vec<&str> = route.scope().map(|s| s.name()).into_iter().collect();
        operation = operation.security(SecurityRequirement::new(scheme, scopes));
    }
    operation.build()
}

/// `{"items": [<name>]}`, as the list routes answer.
/// `{"items": [...], "cursor"}`: `cursor` is what the next page's `cursor` takes; at the end it
/// is absent (`/api`) or null (`/ops`).
fn page(name: String) -> RefOr<Schema> {
    let list = ArrayBuilder::new().items(Ref::from_schema_name(name));
    let cursor =
        ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::String,
            Type::Null,
        ]));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("items", list)
        .property("cursor", cursor)
        .required("items")
        .into()
}

fn items(name: String) -> RefOr<Schema> {
    let list = ArrayBuilder::new().items(Ref::from_schema_name(name));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("items", list)
        .required("items")
        .into()
}

/// What any route that reads the store can answer.
const SERVER: [(u16, &str); 2] = [
    (
        500,
        "`internal`: our defect; the detail says nothing internal",
    ),
    (503, "`unavailable`: the store was busy or timed out; retry"),
];

/// A caller over its reads or writes of the minute.
pub const LIMITED: (u16, &str) = (
    429,
    "`rate_limited`: over the key's reads or writes of this minute (`Retry-After`)",
);

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

/// An error answer: an RFC 9457 problem, with the codes this status carries; a 429's and a
/// 503's `Retry-After`.
pub fn error(codes: &str) -> RefOr<utoipa::openapi::Response> {
    let content = ContentBuilder::new().schema(Some(Ref::from_schema_name(ErrorBody::name())));
    let response = ResponseBuilder::new()
        .description(codes)
        .content(firmspace::http::PROBLEM, content.build());
    let retry = codes.contains("`rate_limited`") || codes.contains("`unavailable`");
    let response = match retry {
        true => response.header(
            "Retry-After",
            header("seconds to wait before asking again (a 429 until its minute turns; a 503, 5)"),
        ),
        false => response,
    };
    response.build().into()
}

/// The header of an answer given from a stored answer.
pub const REPLAYED: &str = "Idempotent-Replayed";

/// `Idempotent-Replayed: true` on an answer given from a stored answer; absent on a first one.
pub fn replayed() -> utoipa::openapi::header::Header {
    header("`true` when this answer is the stored answer of an earlier request with the same key; absent on a first answer")
}

fn header(description: &str) -> utoipa::openapi::header::Header {
    utoipa::openapi::header::HeaderBuilder::new()
        .schema(Some(String::schema()))
        .description(Some(description))
        .build()
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

pub fn parameter(param: &Param) -> Parameter {
    let at = match param.at {
        In::Path => ParameterIn::Path,
        In::Query => ParameterIn::Query,
        In::Header => ParameterIn::Header,
    };
    ParameterBuilder::new()
        .name(param.name)
        .parameter_in(at)
        .required(if param.required {
            Required::True
        } else {
            Required::False
        })
        .description(Some(param.doc))
        .schema(Some(match param.name {
            // The one header a route reads: its limit is the document's too.
            "Idempotency-Key" => ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(firmspace::fields::KEY_MAX))
                .into(),
            _ => String::schema(),
        }))
        .build()
}
