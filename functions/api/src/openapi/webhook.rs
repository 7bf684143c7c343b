//! `POST /hooks/{integration_id}/payments`, served by the payment-webhook function and described
//! here so that one document covers the whole HTTP API. The signature is checked before the body
//! is read; which scheme applies is the integration's provider.

use super::parts::{error, parameter, JSON, SERVER};
use crate::route::{doc, Schemas};
use crate::route::{In, Param};
use crate::schemas::PaymentAnswer;
use firmspace::payments::providers::standard::Body as StandardPayment;
use firmspace::signature::{monobank, standard, stripe};
pub(super) use firmspace::webhook::answer::{IgnoredDelivery, UnparseableDelivery};
use utoipa::openapi::path::{Operation, OperationBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::{
    ContentBuilder, OneOfBuilder, Ref, Required, ResponseBuilder, ResponsesBuilder,
};

pub const PATH: &str = "/hooks/{integration_id}/payments";

pub(super) const fn header(name: &'static str, doc: &'static str) -> Param {
    Param {
        name,
        at: In::Header,
        required: false,
        doc,
    }
}

/// The Standard Webhooks headers of a source that takes other providers' deliveries too.
pub(super) const STANDARD_ID: Param = header(standard::ID, "standard: the message id");
pub(super) const STANDARD_TIMESTAMP: Param = header(
    standard::TIMESTAMP,
    "standard: unix seconds, at most 5 minutes off",
);
pub(super) const STANDARD_SIGNATURE: Param = header(
    standard::SIGNATURE,
    "standard: `v1,<base64 HMAC-SHA256 of id.timestamp.body>`",
);
/// The same of a source whose one provider is Standard Webhooks (its id is its own to tell).
pub(super) const SIGNED_AT: Param = header(
    standard::TIMESTAMP,
    "unix seconds; more than 5 minutes off is 401 and writes nothing",
);
pub(super) const SIGNED: Param = header(
    standard::SIGNATURE,
    "`v1,<base64 HMAC-SHA256 of id.timestamp.body>`",
);

const PARAMS: &[Param] = &[
    Param {
        name: "integration_id",
        at: In::Path,
        required: true,
        doc: "the integration's id, from POST /api/integrations (`o..._...`)",
    },
    STANDARD_ID,
    STANDARD_TIMESTAMP,
    header(
        standard::SIGNATURE,
        "standard: `v1,<base64 HMAC-SHA256 of id.timestamp.body>` (space-separated list)",
    ),
    header(
        stripe::SIGNATURE,
        "stripe: `t=<unix seconds>,v1=<hex HMAC-SHA256 of t.body>`, at most 5 minutes off",
    ),
    header(
        monobank::SIGNATURE,
        "monobank: base64 ECDSA P-256 signature of the body by the merchant's public key",
    ),
];

pub fn operation(schemas: &mut Schemas) -> Operation {
    let body =
        ContentBuilder::new().schema(Some(Ref::from_schema_name(doc::<StandardPayment>(schemas))));
    let answers = OneOfBuilder::new()
        .item(Ref::from_schema_name(doc::<PaymentAnswer>(schemas)))
        .item(Ref::from_schema_name(doc::<IgnoredDelivery>(schemas)))
        .item(Ref::from_schema_name(doc::<UnparseableDelivery>(schemas)));
    let ok = ResponseBuilder::new()
        .description(
            "the payment's stored answer (`duplicate: true` on a repeat; unmatched, closed, \
             mismatched or overpaid money is stored too, with a review item), an ignored status, \
             or an unparseable body kept for review",
        )
        .content(JSON, ContentBuilder::new().schema(Some(answers)).build());
    let responses = ResponsesBuilder::new().response("200", ok.build());
    operation_of(
        "A payment provider's webhook (served by payment-webhook)",
        PARAMS,
        body,
        responses,
        "payments",
    )
}

/// A webhook's operation: its parameters, its JSON body, its answers, and the refusals every
/// webhook shares (401, 404, 413 and the 5xx).
pub(super) fn operation_of(
    summary: &str,
    params: &[Param],
    body: ContentBuilder,
    answers: ResponsesBuilder,
    kind: &str,
) -> Operation {
    let mut responses = answers
        .response(
            "401",
            error(
                "`invalid_signature`: missing, wrong, or (where signed) out of the 5-minute window",
            ),
        )
        .response(
            "404",
            error(&format!("`not_found`: no such {kind} integration")),
        )
        .response("413", error("`payload_too_large`: body over 256 KiB"));
    for (status, codes) in SERVER {
        responses = responses.response(status.to_string(), error(codes));
    }
    let mut pascal = kind.to_owned();
    pascal[..1].make_ascii_uppercase();
    OperationBuilder::new()
        .operation_id(Some(format!("receive{pascal}Webhook")))
        .tag("webhooks")
        .summary(Some(summary))
        .parameters(Some(params.iter().map(parameter)))
        .request_body(Some(
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content(JSON, body.build())
                .build(),
        ))
        .responses(responses.build())
        .build()
}
