//! Invoices, their payments, the manual "paid" button and the assistant, and the duplicate button.

use crate::Ctx;
use firmspace::commands::{AmountText, Command, RequestKey};
use firmspace::fields::{self, FieldError, REF_MAX};
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::ids::ExternalId;
use firmspace::money::{parse_amount, Currency};
use firmspace::payments::invoice::{self, Links};
use firmspace::payments::register::list_for_invoice;
use firmspace::payments::{InvoiceStatus, NewInvoice, Source};
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// Amounts are strings in major units; the links are optional.
#[derive(Deserialize, ToSchema)]
pub struct CreateInvoice {
    #[schema(example = "UAH")]
    currency: String,
    #[schema(example = "100.00")]
    gross: String,
    /// The member notified of its payments; without one, the whole team is.
    owner: Option<String>,
    contact_id: Option<String>,
    deal_id: Option<String>,
    company_id: Option<String>,
    /// `open` (default: issued, takes payments) or `draft` (not issued yet; can be voided).
    status: Option<String>,
}

pub async fn create(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: CreateInvoice = parse_json(body_bytes(ctx.req))?;
    let currency = Currency::parse(&body.currency)
        .map_err(|e| ApiError::bad_request("invalid_currency", e.to_string()))?;
    let new = NewInvoice {
        currency,
        gross: parse_amount(&body.gross)
            .and_then(|gross| currency.check(gross))
            .map_err(|e| ApiError::bad_request("invalid_gross", e.to_string()))?,
        status: match body.status.as_deref() {
            None | Some("open") => InvoiceStatus::Open,
            Some("draft") => InvoiceStatus::Draft,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "invalid_status",
                    "status is open or draft",
                ))
            }
        },
        links: links(&body)?,
    };
    let created = invoice::create(store, &ctx.org, new, ctx.now).await?;
    Ok(json_response(201, &created.to_json()))
}

/// The records an invoice links to: references, each within `REF_MAX` and without `#`.
fn links(body: &CreateInvoice) -> Result<Links, FieldError> {
    let link = |field: &'static str, raw: &Option<String>| {
        fields::optional(raw.as_deref(), |r| fields::reference(field, r, REF_MAX))
    };
    Ok(Links {
        owner: link("owner", &body.owner)?,
        contact_id: link("contact_id", &body.contact_id)?,
        deal_id: link("deal_id", &body.deal_id)?,
        company_id: link("company_id", &body.company_id)?,
    })
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
    let found = invoice::get(store, &ctx.org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    let payments: Vec<Value> = list_for_invoice(store, &ctx.org, id)
        .await?
        .iter()
        .map(|p| p.to_json())
        .collect();
    let notes: Vec<Value> = firmspace::payments::credit::list_for_invoice(store, &ctx.org, id)
        .await?
        .iter()
        .map(|n| n.to_json())
        .collect();
    let mut body = found.to_json();
    body["payments"] = json!(payments);
    body["credit_notes"] = json!(notes);
    Ok(json_response(200, &body))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManualPayment {
    /// `manual` or `assistant`.
    #[schema(example = "manual")]
    source: String,
    /// Major units; without it the invoice's open amount.
    #[schema(inline)]
    amount: Option<AmountText>,
    /// Who pressed the button; defaults to the source.
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
    let command = Command::RegisterPayment {
        invoice_id: id.to_owned(),
        source,
        amount: body.amount,
        actor: body.actor,
    };
    let key = RequestKey::Header(key.as_str().to_owned());
    let done = ctx.perform(store, key, command).await?;
    Ok(json_response(done.status, &done.answer))
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
    let original = invoice::get(store, &ctx.org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    let copy = invoice::create(
        store,
        &ctx.org,
        NewInvoice {
            currency: original.currency,
            gross: original.gross,
            status: InvoiceStatus::Draft,
            links: original.links.clone(),
        },
        ctx.now,
    )
    .await?;
    let mut body = copy.to_json();
    body["duplicate_of"] = json!(original.id.as_str());
    Ok(json_response(201, &body))
}
