//! `POST /hooks/{integration_id}/sms`, served by the sms-webhook function: a prepaid SMS
//! carrier's event. The signature and its 5-minute window are checked before the body is read.

use super::parts::JSON;
use super::webhook::{
    header, operation_of, IgnoredDelivery, UnparseableDelivery, SIGNED, SIGNED_AT,
};
use crate::ledger::schemas::{SmsAnswer, SmsPayload};
use crate::route::{doc, Schemas};
use crate::route::{In, Param};
use firmspace::signature::standard;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, OneOfBuilder, Ref, ResponseBuilder, ResponsesBuilder};

pub const PATH: &str = "/hooks/{integration_id}/sms";

const PARAMS: &[Param] = &[
    Param {
        name: "integration_id",
        at: In::Path,
        required: true,
        doc: "the sms integration's id, from POST /api/integrations",
    },
    header(
        standard::ID,
        "the event id: a repeat of it gets the stored answer",
    ),
    SIGNED_AT,
    SIGNED,
];

pub fn operation(schemas: &mut Schemas) -> Operation {
    let body =
        ContentBuilder::new().schema(Some(Ref::from_schema_name(doc::<SmsPayload>(schemas))));
    let answers = OneOfBuilder::new()
        .item(Ref::from_schema_name(doc::<SmsAnswer>(schemas)))
        .item(Ref::from_schema_name(doc::<IgnoredDelivery>(schemas)))
        .item(Ref::from_schema_name(doc::<UnparseableDelivery>(schemas)));
    let ok = ResponseBuilder::new()
        .description(
            "booked (one debit and one inbox line per message), the stored answer to a repeat of \
             the event id, or the original lines of a message re-pushed under a new event id \
             (both `duplicate: true`); a type we do not book; an unparseable body kept for review",
        )
        .content(JSON, ContentBuilder::new().schema(Some(answers)).build());
    operation_of(
        "A prepaid SMS carrier's event (served by sms-webhook)",
        PARAMS,
        body,
        ResponsesBuilder::new().response("200", ok.build()),
        "sms",
    )
}
