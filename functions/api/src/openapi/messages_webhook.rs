//! `POST /hooks/{integration_id}/messages` (and `GET`, WhatsApp's handshake), served by the
//! message-webhook function: a messenger's delivery, each message stored once.

use super::parts::{error, parameter, JSON};
use super::webhook::{
    header, operation_of, IgnoredDelivery, UnparseableDelivery, STANDARD_ID, STANDARD_SIGNATURE,
    STANDARD_TIMESTAMP,
};
use crate::route::{doc, Schemas};
use crate::route::{In, Param};
use firmspace::messages::{BatchAnswer, GenericMessage, MessageAnswer};
use firmspace::signature::{telegram, whatsapp};
use utoipa::openapi::path::{Operation, OperationBuilder};
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OneOfBuilder, Ref, ResponseBuilder, ResponsesBuilder, Type,
};

pub const PATH: &str = "/hooks/{integration_id}/messages";

const ID: Param = Param {
    name: "integration_id",
    at: In::Path,
    required: true,
    doc: "the messages integration's id, from POST /api/integrations",
};

const PARAMS: &[Param] = &[
    ID,
    header(
        telegram::SECRET_TOKEN,
        "telegram: the secret_token given to setWebhook (compared in constant time)",
    ),
    header(
        whatsapp::SIGNATURE,
        "whatsapp: `sha256=<hex HMAC-SHA256 of the body with the app secret>`",
    ),
    STANDARD_ID,
    STANDARD_TIMESTAMP,
    STANDARD_SIGNATURE,
];

pub fn operation(schemas: &mut Schemas) -> Operation {
    let body =
        ContentBuilder::new().schema(Some(Ref::from_schema_name(doc::<GenericMessage>(schemas))));
    let answers = OneOfBuilder::new()
        .item(Ref::from_schema_name(doc::<MessageAnswer>(schemas)))
        .item(Ref::from_schema_name(doc::<BatchAnswer>(schemas)))
        .item(Ref::from_schema_name(doc::<IgnoredDelivery>(schemas)))
        .item(Ref::from_schema_name(doc::<UnparseableDelivery>(schemas)));
    let ok = ResponseBuilder::new()
        .description(
            "one message (Telegram, generic) or the batch form (WhatsApp, always), each with \
             `duplicate`; a repeat stores nothing and answers the same ids; another update \
             (edited message, reaction, member update) `status: ignored`; an unparseable body \
             kept for review",
        )
        .content(JSON, ContentBuilder::new().schema(Some(answers)).build());
    operation_of(
        "A messenger's delivery (served by message-webhook)",
        PARAMS,
        body,
        ResponsesBuilder::new().response("200", ok.build()),
        "messages",
    )
}

/// WhatsApp's subscription check.
pub fn handshake() -> Operation {
    let query = |name: &'static str, doc: &'static str| Param {
        name,
        at: In::Query,
        required: true,
        doc,
    };
    let params = [
        ID,
        query("hub.mode", "`subscribe`"),
        query(
            "hub.verify_token",
            "the verify_token POST /api/integrations answered",
        ),
        query("hub.challenge", "echoed back (1-256 visible characters)"),
    ];
    let text = ContentBuilder::new()
        .schema(Some(ObjectBuilder::new().schema_type(Type::String).build()))
        .build();
    let responses = ResponsesBuilder::new()
        .response(
            "200",
            ResponseBuilder::new()
                .description("`hub.challenge`, as text/plain")
                .content("text/plain", text),
        )
        .response("400", error("`invalid_challenge`"))
        .response("403", error("`forbidden`: the verify token does not match"))
        .response("404", error("`not_found`: no such messages integration"))
        .response(
            "405",
            error("`method_not_allowed`: not a WhatsApp integration"),
        );
    OperationBuilder::new()
        .operation_id(Some("verifyMessagesWebhook"))
        .tag("webhooks")
        .summary(Some(
            "WhatsApp's subscription handshake (served by message-webhook)",
        ))
        .parameters(Some(params.iter().map(parameter)))
        .responses(responses.build())
        .build()
}
