//! Invoices, their payments, the manual "paid" button and the assistant, and the duplicate button.

use crate::route::{
    doc, path, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, CREATED, IDEMPOTENCY_KEY,
    INVOICE_ID, NO_INVOICE,
};
use crate::Ctx;
use firmspace::commands::answers::PaymentRegistered;
use firmspace::commands::money::{CreateInvoice, DuplicateInvoice, RegisterPayment};
use firmspace::commands::AmountText;
use firmspace::http::{json_response, typed_response, ApiError};
use firmspace::ids::ExternalId;
use firmspace::payments::invoice;
use firmspace::payments::Source;
use firmspace::store::lists::EventKind;
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// A new draft (or issued) invoice, its body the command itself.
impl FromRoute for CreateInvoice {
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/invoices",
                op: Op::Org(OrgOp::CreateInvoice),
                summary: "Create an invoice (open, or a draft) with the next number",
                params: &[],
                body: Some(doc::<CreateInvoice>),
                ok: CREATED,
                answer: Answer::Performed,
                errors: &[(
                    400,
                    "`malformed`, `invalid_currency` (not ISO 4217 with minor units), `invalid_gross` \
                     (not a positive amount below 10^10 with at most the currency's fraction digits), \
                     `invalid_field` (a link over 128 characters or holding `#`, white space or a control \
                     character), `invalid_status` (not open or draft)",
                )],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        asked.body()
    }
}

/// The organisation's invoices, newest first.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items: Vec<Value> = invoice::list(store, &ctx.org, 200)
        .await?
        .iter()
        .map(|i| i.to_json())
        .collect();
    Ok(json_response(200, &json!({ "items": items })))
}

/// The invoice `id` with its payments and credit notes, or 404.
pub async fn read(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let detail = firmspace::payments::detail::detail(store, &ctx.org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    Ok(typed_response(200, &detail))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManualPayment {
    /// `manual` or `assistant`.
    #[schema(example = "manual", pattern = "^(manual|assistant)$")]
    source: String,
    /// Major units; without it the invoice's open amount.
    #[schema(inline)]
    amount: Option<AmountText>,
    /// Who pressed the button; defaults to the source.
    #[schema(min_length = 1, max_length = 128)]
    actor: Option<String>,
}

/// The manual "paid" button and the assistant: keyed by the request's `Idempotency-Key`. The same
/// key and body get the stored answer; the same key with another body is a 409.
impl FromRoute for RegisterPayment {
    const SPENDS: Option<EventKind> = Some(EventKind::Payment);

    fn stored_now(answer: &PaymentRegistered) -> bool {
        matches!(answer, PaymentRegistered::Booked(booked) if !booked.is_repeat())
    }
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/invoices/{id}/payments",
        op: Op::Org(OrgOp::PayInvoice),
        summary: "The manual \"paid\" button and the assistant, once per Idempotency-Key",
        params: &[path("id", "the invoice's id (`inv_...`)"), IDEMPOTENCY_KEY],
        body: Some(doc::<ManualPayment>),
        ok: &[(
            200,
            "booked, or the stored answer to the same key and body (`duplicate: true`)",
        )],
        answer: Answer::One(doc::<firmspace::payments::event::PaymentAnswer>),
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `invalid_idempotency_key`, `malformed`, \
                         `invalid_source`, `invalid_amount`, `invalid_field` (`actor`)",
            ),
            NO_INVOICE,
            (
                409,
                "`idempotency_key_reused`: the key came with another body (a review item is filed)",
            ),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: ManualPayment = asked.body()?;
        let source = match body.source.as_str() {
            "manual" => Source::Manual,
            "assistant" => Source::Assistant,
            _ => {
                return Err(ApiError::bad_request(
                    "invalid_source",
                    "source must be manual or assistant",
                ))
            }
        };
        Ok(Self {
            invoice_id: asked.param("id").to_owned(),
            source,
            amount: body.amount,
            actor: body.actor,
        })
    }
}

/// The request's `Idempotency-Key`: 1 to 255 visible characters without `#`.
pub(crate) fn idempotency_key(req: &lambda_http::Request) -> Result<ExternalId, ApiError> {
    let raw = req.headers().get("idempotency-key").ok_or_else(|| {
        ApiError::bad_request(
            "missing_idempotency_key",
            "Idempotency-Key header is required",
        )
    })?;
    let invalid = |detail: &str| ApiError::bad_request("invalid_idempotency_key", detail);
    let key = raw
        .to_str()
        .map_err(|_| invalid("Idempotency-Key must be visible ASCII characters"))?;
    ExternalId::parse("Idempotency-Key", key).map_err(|e| invalid(&e.to_string()))
}

/// A copy on purpose: a new draft with a new number, never a retry.
impl FromRoute for DuplicateInvoice {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/invoices/{id}/duplicate",
        op: Op::Org(OrgOp::DuplicateInvoice),
        summary: "Copy an invoice as a new draft with the next number",
        params: INVOICE_ID,
        body: None,
        ok: CREATED,
        answer: Answer::Performed,
        errors: &[NO_INVOICE],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            invoice_id: asked.param("id").to_owned(),
        })
    }
}
