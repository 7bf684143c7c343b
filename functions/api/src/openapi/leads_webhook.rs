//! `POST /hooks/{integration_id}/leads`, served by the lead-webhook function: a website form's
//! submission. The first delivery answers 201 with the card it made, every repeat 200.

use super::parts::JSON;
use super::webhook::{
    header, operation_of, IgnoredDelivery, UnparseableDelivery, SIGNED, SIGNED_AT,
};
use crate::route::{doc, Schemas};
use crate::route::{In, Param};
use firmspace::leads::{Envelope as LeadPayload, LeadAnswer};
use firmspace::signature::standard;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, OneOfBuilder, Ref, ResponseBuilder, ResponsesBuilder};

pub const PATH: &str = "/hooks/{integration_id}/leads";

const PARAMS: &[Param] = &[
    Param {
        name: "integration_id",
        at: In::Path,
        required: true,
        doc: "the leads integration's id, from POST /api/integrations",
    },
    header(
        standard::ID,
        "the message id; keys a submission without `submission_id`",
    ),
    SIGNED_AT,
    SIGNED,
];

pub fn operation(schemas: &mut Schemas) -> Operation {
    let body =
        ContentBuilder::new().schema(Some(Ref::from_schema_name(doc::<LeadPayload>(schemas))));
    let lead = doc::<LeadAnswer>(schemas);
    let created = ResponseBuilder::new()
        .description("the first delivery of this submission: one contact and one card made")
        .content(
            JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(lead.clone())))
                .build(),
        );
    let repeated = OneOfBuilder::new()
        .item(Ref::from_schema_name(lead))
        .item(Ref::from_schema_name(doc::<IgnoredDelivery>(schemas)))
        .item(Ref::from_schema_name(doc::<UnparseableDelivery>(schemas)));
    let ok = ResponseBuilder::new()
        .description(
            "a repeat, under the same or a new `webhook-id` (`duplicate: true`, the first card; \
             other fields under the same id keep the first and file `payload_mismatch`), a type \
             other than `lead.submitted`, or a body that breaks a limit kept for review",
        )
        .content(JSON, ContentBuilder::new().schema(Some(repeated)).build());
    let responses = ResponsesBuilder::new()
        .response("201", created.build())
        .response("200", ok.build());
    operation_of(
        "A website form's submission (served by lead-webhook)",
        PARAMS,
        body,
        responses,
        "leads",
    )
}
