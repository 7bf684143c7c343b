//! `POST /hooks/{integration_id}/calls`, served by the call-webhook function: a SIP provider's
//! call result. Only a final status makes a call; the first report answers 201, a repeat 200.

use super::parts::JSON;
use super::webhook::{
    header, operation_of, IgnoredDelivery, UnparseableDelivery, STANDARD_ID, STANDARD_SIGNATURE,
    STANDARD_TIMESTAMP,
};
use crate::route::{doc, Schemas};
use crate::route::{In, Param};
use crate::schemas::CallAnswer;
use firmspace::calls::providers::Envelope as StandardCall;
use firmspace::signature::twilio;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, OneOfBuilder, Ref, ResponseBuilder, ResponsesBuilder};

pub const PATH: &str = "/hooks/{integration_id}/calls";

const PARAMS: &[Param] = &[
    Param {
        name: "integration_id",
        at: In::Path,
        required: true,
        doc: "the calls integration's id, from POST /api/integrations",
    },
    header(
        twilio::SIGNATURE,
        "twilio: base64 HMAC-SHA1 of this URL followed by the form parameters sorted by name",
    ),
    STANDARD_ID,
    STANDARD_TIMESTAMP,
    STANDARD_SIGNATURE,
];

pub fn operation(schemas: &mut Schemas) -> Operation {
    let body =
        ContentBuilder::new().schema(Some(Ref::from_schema_name(doc::<StandardCall>(schemas))));
    let call = doc::<CallAnswer>(schemas);
    let created = ResponseBuilder::new()
        .description("the first report of this call")
        .content(
            JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(call.clone())))
                .build(),
        );
    let repeated = OneOfBuilder::new()
        .item(Ref::from_schema_name(call))
        .item(Ref::from_schema_name(doc::<IgnoredDelivery>(schemas)))
        .item(Ref::from_schema_name(doc::<UnparseableDelivery>(schemas)));
    let ok = ResponseBuilder::new()
        .description(
            "a repeat (`duplicate: true` and the stored call; another status or duration for the \
             same key keeps the first and files `payload_mismatch`), a status before the end, or \
             an unparseable body kept for review",
        )
        .content(JSON, ContentBuilder::new().schema(Some(repeated)).build());
    let responses = ResponsesBuilder::new()
        .response("201", created.build())
        .response("200", ok.build());
    operation_of(
        "A SIP provider's call result (served by call-webhook)",
        PARAMS,
        body,
        responses,
        "calls",
    )
}
