//! `POST /hooks/{integration_id}/bank` (and `GET`, monobank's check), served by the bank-webhook
//! function: monobank's personal webhook, one statement row stored once.

use super::parts::{error, parameter, JSON};
use super::webhook::{IgnoredDelivery, UnparseableDelivery};
use crate::route::{doc, Schemas};
use crate::route::{In, Param};
use firmspace::bank::monobank::Pushed as StatementPush;
use firmspace::bank::BankRowAnswer;
use utoipa::openapi::path::{Operation, OperationBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::{
    ContentBuilder, OneOfBuilder, Ref, Required, ResponseBuilder, ResponsesBuilder,
};

pub const PATH: &str = "/hooks/{integration_id}/bank";

const ID: Param = Param {
    name: "integration_id",
    at: In::Path,
    required: true,
    doc: "the monobank bank integration's id (128 random bits: the URL is the secret)",
};

pub fn operation(schemas: &mut Schemas) -> Operation {
    let body =
        ContentBuilder::new().schema(Some(Ref::from_schema_name(doc::<StatementPush>(schemas))));
    let answers = OneOfBuilder::new()
        .item(Ref::from_schema_name(doc::<BankRowAnswer>(schemas)))
        .item(Ref::from_schema_name(doc::<IgnoredDelivery>(schemas)))
        .item(Ref::from_schema_name(doc::<UnparseableDelivery>(schemas)));
    let ok = ResponseBuilder::new()
        .description("the row stored (or `duplicate: true`), another type or account ignored, or an unreadable body kept for review")
        .content(JSON, ContentBuilder::new().schema(Some(answers)).build());
    OperationBuilder::new()
        .operation_id(Some("receiveBankWebhook"))
        .tag("webhooks")
        .summary(Some("monobank's personal webhook (served by bank-webhook)"))
        .parameters(Some([parameter(&ID)]))
        .request_body(Some(
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content(JSON, body.build())
                .build(),
        ))
        .responses(
            ResponsesBuilder::new()
                .response("200", ok.build())
                .response(
                    "404",
                    error("`not_found`: no such integration (a wrong id writes nothing)"),
                )
                .response("413", error("`payload_too_large`: body over 256 KiB"))
                .build(),
        )
        .build()
}

/// monobank's check before it sends rows.
pub fn check() -> Operation {
    OperationBuilder::new()
        .operation_id(Some("checkBankWebhook"))
        .tag("webhooks")
        .summary(Some("monobank's webhook check (served by bank-webhook)"))
        .parameters(Some([parameter(&ID)]))
        .responses(
            ResponsesBuilder::new()
                .response(
                    "200",
                    ResponseBuilder::new().description("`ok`, text/plain"),
                )
                .response("404", error("`not_found`: no such monobank integration"))
                .build(),
        )
        .build()
}
