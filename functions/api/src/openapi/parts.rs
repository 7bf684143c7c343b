//! The pieces every part of the document is made of: a parameter, an error answer, an answer's
//! schema, the headers. They import no part of the document.

use crate::route::{Answer, In, Param, Schemas};
use crate::schemas::ErrorBody;
use firmspace::store::lists::EventKind;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{
    ArrayBuilder, ContentBuilder, ObjectBuilder, Ref, RefOr, Required, ResponseBuilder, Schema,
    Type,
};
use utoipa::{PartialSchema, ToSchema};

/// The security schemes: an organisation's API key, and the admin token.
pub(super) const ORG_KEY: &str = "organisation_api_key";
pub(super) const ADMIN_TOKEN: &str = "admin_token";

pub const JSON: &str = "application/json";

/// An answer's schema and media type.
pub fn answer_schema(answer: &Answer, schemas: &mut Schemas) -> (RefOr<Schema>, &'static str) {
    match *answer {
        Answer::One(doc) => (Ref::from_schema_name(doc(schemas)).into(), JSON),
        // `openapi::answer_of` gives a performing route its command's answer; an operation that
        // performs none answers an object (`every_performing_route_answers_what_its_command_does`
        // holds that no route says so).
        Answer::Performed => (ObjectBuilder::new().schema_type(Type::Object).into(), JSON),
        Answer::Items(doc) => (items(doc(schemas)), JSON),
        Answer::Paged(doc) => (page(doc(schemas)), JSON),
        Answer::Html(what) => (
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(what))
                .into(),
            "text/html",
        ),
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
pub const SERVER: [(u16, &str); 2] = [
    (
        500,
        "`internal`: our defect; the detail says nothing internal",
    ),
    (503, "`unavailable`: the store was busy or timed out; retry"),
];

/// A caller over its reads or writes of the minute.
/// What a route with an id in its path may answer besides its own: an id the document refuses
/// (holding `/`, `?` or `#`) makes the path another's, which may take another method.
pub const OTHER_PATH: (u16, &str) = (
    405,
    "`method_not_allowed`: the id made the path another route's, which takes the methods `Allow` names",
);

pub const LIMITED: (u16, &str) = (
    429,
    "`rate_limited`: over the key's reads or writes of this minute (`Retry-After`)",
);

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

/// What an id in a path is: one segment, with no character that would end or change it.
pub const PATH_SEGMENT: &str = "^[^\\s/?#%\\x00-\\x1f\\x7f]+$";

pub fn parameter(param: &Param) -> Parameter {
    parameter_of("", param)
}

/// A parameter of the route at `path` (where a name's values differ by route: `state`).
pub fn parameter_of(path: &str, param: &Param) -> Parameter {
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
        .schema(Some(parameter_schema(path, param)))
        .build()
}

/// A JSON request body of the type `doc` names, which must be sent when `required`.
pub fn json_body(
    doc: crate::route::Doc,
    required: bool,
    schemas: &mut Schemas,
) -> utoipa::openapi::request_body::RequestBody {
    let schema = utoipa::openapi::Ref::from_schema_name(doc(schemas));
    let content = utoipa::openapi::ContentBuilder::new().schema(Some(schema));
    let required = match required {
        true => utoipa::openapi::Required::True,
        false => utoipa::openapi::Required::False,
    };
    utoipa::openapi::request_body::RequestBodyBuilder::new()
        .required(Some(required))
        .content(JSON, content.build())
        .build()
}

fn one_of(values: Vec<String>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
        .into()
}

/// A closed set a query parameter takes on the route at `path`, if it is one.
fn closed_set(path: &str, name: &str) -> Option<RefOr<Schema>> {
    let names = |all: &[&str]| all.iter().map(|s| (*s).to_owned()).collect();
    Some(match name {
        // An event list's kind.
        "kind" => one_of(EventKind::ALL.iter().map(|k| k.name().into()).collect()),
        // A board's stage.
        "stage" => one_of(
            firmspace::deals::Stage::ALL
                .iter()
                .map(firmspace::store::item::tag_name)
                .collect(),
        ),
        // A list's state: the review's, or the runs'.
        "state" if path == "/ops/review" => one_of(names(&firmspace::ops::review::STATES)),
        "state" if path == "/ops/runs" => one_of(names(&firmspace::ops::runs::STATES)),
        _ => return None,
    })
}

/// Every list's page size: an integer, 1 to its most, by default its own (`paging::sizes`).
fn limit_schema(path: &str) -> RefOr<Schema> {
    let (default, max) = crate::paging::sizes(path);
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .maximum(Some(f64::from(max)))
        .default(Some(serde_json::json!(default)))
        .into()
}

/// What a parameter takes: the limits the server holds it to.
fn parameter_schema(path: &str, param: &Param) -> RefOr<Schema> {
    if param.at == In::Query {
        if let Some(set) = closed_set(path, param.name) {
            return set;
        }
    }
    match (param.name, param.at) {
        // Text to find in an event list: 1 to 200 characters.
        ("q", In::Query) => ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(firmspace::ops::events::QUERY_MAX))
            .into(),
        // The one header a route reads: its limit is the document's too.
        ("Idempotency-Key", _) => ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(firmspace::fields::KEY_MAX))
            .into(),
        ("limit", _) => limit_schema(path),
        // What a page's answer gave, never empty.
        ("cursor", _) => ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(4096))
            .into(),
        // A window's ends: RFC 3339 times.
        ("from" | "to", _) => ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::DateTime,
            )))
            .into(),
        // A member's id, as `POST /api/members` takes it.
        ("recipient", _) => ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(firmspace::ids::LOCAL_ID_PATTERN))
            .into(),
        // An activity log's entity.
        ("kind", In::Path) => ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["contact", "deal", "company"]))
            .into(),
        // Every other id in a path: one segment of it, so never a `/`, `?` or `#` (which
        // would make it another path), white space or a control character.
        (_, In::Path) => ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::PATH_ID_MAX))
            .pattern(Some(PATH_SEGMENT))
            .into(),
        _ => String::schema(),
    }
}
