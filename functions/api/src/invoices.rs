//! Invoices, their payments, the manual "paid" button and the assistant, and the duplicate button.

use crate::Ctx;
use firmspace::commands::money::CreateInvoice;
use firmspace::commands::{AmountText, RequestKey};
use firmspace::http::{body_bytes, json_response, parse_json, typed_response, ApiError};
use firmspace::ids::ExternalId;
use firmspace::payments::credit::{CreditNote, CreditNoteView};
use firmspace::payments::event::PaymentLineView;
use firmspace::payments::invoice::{self, InvoiceView};
use firmspace::payments::register::list_for_invoice;
use firmspace::payments::PaymentEvent;
use firmspace::payments::Source;
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

pub async fn create(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let new: CreateInvoice = parse_json(body_bytes(ctx.req))?;
    let command = new;
    ctx.answer(store, RequestKey::None, command).await
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

pub async fn read(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    Ok(typed_response(200, &detail(store, &ctx.org, id).await?))
}

/// The invoice `id` of `org` with its payments and credit notes, or 404.
pub(crate) async fn detail(
    store: &Store,
    org: &firmspace::ids::OrgId,
    id: &str,
) -> Result<InvoiceDetail, ApiError> {
    let found = invoice::get(store, org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    let payments = list_for_invoice(store, org, id).await?;
    let notes = firmspace::payments::credit::list_for_invoice(store, org, id).await?;
    Ok(InvoiceDetail {
        invoice: found.view(),
        payments: payments.iter().map(PaymentEvent::view).collect(),
        credit_notes: notes.iter().map(CreditNote::view).collect(),
    })
}

/// An invoice with its payments and its credit notes.
#[derive(Serialize, ToSchema)]
pub struct InvoiceDetail {
    #[serde(flatten)]
    invoice: InvoiceView,
    payments: Vec<PaymentLineView>,
    /// Oldest first.
    credit_notes: Vec<CreditNoteView>,
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
pub async fn pay(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let key = idempotency_key(ctx)?;
    let body: ManualPayment = parse_json(body_bytes(ctx.req))?;
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
    let command = firmspace::commands::money::RegisterPayment {
        invoice_id: id.to_owned(),
        source,
        amount: body.amount,
        actor: body.actor,
    };
    let key = RequestKey::Header(key.as_str().to_owned());
    ctx.answer(store, key, command).await
}

/// The request's `Idempotency-Key`: 1 to 255 visible characters without `#`.
pub(crate) fn idempotency_key(ctx: &Ctx<'_>) -> Result<ExternalId, ApiError> {
    let raw = ctx.req.headers().get("idempotency-key").ok_or_else(|| {
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
pub async fn duplicate(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let command = firmspace::commands::money::DuplicateInvoice {
        invoice_id: id.to_owned(),
    };
    ctx.answer(store, RequestKey::None, command).await
}
