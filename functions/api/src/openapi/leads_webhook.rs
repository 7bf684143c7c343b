//! `POST /hooks/{integration_id}/leads`, served by the lead-webhook function: a website form's
//! submission. The first delivery answers 201 with the card it made, every repeat 200.

use super::webhook::{header, operation_of, IgnoredDelivery, UnparseableDelivery};
use super::{doc, Schemas, JSON};
use crate::routes::{In, Param};
use firmspace::signature::standard;
use serde::Serialize;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, OneOfBuilder, Ref, ResponseBuilder, ResponsesBuilder};
use utoipa::ToSchema;

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
    header(
        standard::TIMESTAMP,
        "unix seconds; more than 5 minutes off is 401 and writes nothing",
    ),
    header(
        standard::SIGNATURE,
        "`v1,<base64 HMAC-SHA256 of id.timestamp.body>`",
    ),
];

/// The submission's fields; `name` is required, the rest optional.
#[derive(Serialize, ToSchema)]
struct Submission {
    /// The form's own id of the submission (1 to 255 bytes): its key within the integration;
    /// without it, the signed `webhook-id`.
    submission_id: Option<String>,
    /// 1 to 200 characters.
    name: String,
    /// An e-mail address, at most 254 bytes: the contact's identity, compared in lower case.
    email: Option<String>,
    /// E.164 (+ and 8 to 15 digits; spaces, dashes, dots and parentheses dropped).
    phone: Option<String>,
    /// At most 4000 characters.
    message: Option<String>,
    /// Where the form is (a reference of at most 128 bytes: `website`, `landing-spring`).
    source: Option<String>,
}

#[derive(Serialize, ToSchema)]
struct LeadPayload {
    #[serde(rename = "type")]
    #[schema(example = "lead.submitted")]
    kind: String,
    data: Submission,
}

/// The card and the contact the submission made (a repeat: the first delivery's).
#[derive(Serialize, ToSchema)]
struct LeadAnswer {
    duplicate: bool,
    /// `lead:INTEGRATION_ID:SUBMISSION_ID`.
    key: String,
    deal_id: String,
    contact_id: String,
}

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
