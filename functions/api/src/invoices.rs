//! Invoices, their payments, the manual "paid" button and the assistant, and the duplicate button.

use crate::Ctx;
use firmspace::fields::{self, FieldError, REF_MAX};
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::ids::ExternalId;
use firmspace::money::{parse_amount, Currency};
use firmspace::payments::invoice::{self, Links};
use firmspace::payments::register::list_for_invoice;
use firmspace::payments::{register_payment, InvoiceStatus, NewInvoice, PaymentInput, Source};
use firmspace::review::Kind;
use firmspace::store::Store;
use firmspace::webhook::answer::key_reused;
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
pub struct ManualPayment {
    /// `manual` or `assistant`.
    #[schema(example = "manual")]
    source: String,
    /// Major units; without it the invoice's open amount.
    amount: Option<String>,
    /// Who pressed the button; defaults to the source.
    actor: Option<String>,
}

/// The manual "paid" button and the assistant: keyed by the request's `Idempotency-Key`. The same
/// key and body get the stored answer; the same key with another body is a 409.
pub async fn pay(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let external_id = idempotency_key(ctx)?;
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
    let asked = Asked {
        source,
        external_id,
        amount: body.amount.as_deref(),
        actor: body.actor.as_deref(),
    };
    Ok(json_response(200, &pay_with(store, ctx, id, asked).await?))
}

/// A payment a person or the assistant asks for, before it is checked.
pub(crate) struct Asked<'a> {
    pub source: Source,
    /// Its identity: the request's `Idempotency-Key`, or the assistant's `call_id`.
    pub external_id: ExternalId,
    pub amount: Option<&'a str>,
    /// For whom the key acted.
    pub actor: Option<&'a str>,
}

/// Books `asked` on invoice `id` through `register_payment`: its answer.
pub(crate) async fn pay_with(
    store: &Store,
    ctx: &Ctx<'_>,
    id: &str,
    asked: Asked<'_>,
) -> Result<Value, ApiError> {
    let actor = fields::optional(asked.actor, |r| fields::reference("actor", r, REF_MAX))?;
    let amount = asked
        .amount
        .map(parse_amount)
        .transpose()
        .map_err(|e| ApiError::bad_request("invalid_amount", e.to_string()))?;
    let invoice = invoice::get(store, &ctx.org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    if let Some(amount) = amount {
        invoice
            .currency
            .check(amount)
            .map_err(|e| ApiError::bad_request("invalid_amount", e.to_string()))?;
    }
    let input = PaymentInput {
        org: ctx.org.clone(),
        invoice_ref: Some(id.to_owned()),
        // The key that asked is the actor; the body's `actor` only says for whom it acted.
        actor: match actor {
            Some(user) => format!("{}/{user}", ctx.key.id),
            None => ctx.key.id.clone(),
        },
        source: asked.source,
        external_id: asked.external_id,
        amount,
        currency: Some(invoice.currency),
        at: ctx.now,
        reverses: None,
        reversible: false,
        via: None,
    };
    let registered = register_payment(store, &input).await?;
    let key = input.event_key();
    if let Some(refused) =
        key_reused(store, &ctx.org, Kind::Payment, &key, &registered, ctx.now).await?
    {
        return Err(refused);
    }
    Ok(registered.answer())
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
