//! Credit notes and void: `POST /api/invoices/{id}/credit-notes` once per `Idempotency-Key`, and
//! `POST /api/invoices/{id}/void` for a draft.

use crate::Ctx;
use firmspace::fields::{self, TITLE_MAX};
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::money::parse_amount;
use firmspace::payments::credit::{
    self, CreditError, CreditLine, NewCreditNote, VoidError, Voided,
};
use firmspace::review::Kind;
use firmspace::store::Store;
use firmspace::webhook::answer::key_reused;
use lambda_http::{Body, Response};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

/// The longest reason (a line of text).
const REASON_MAX: usize = 500;

/// What to credit: `amount` (major units), else the lines' sum, else all that is left to credit.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewNote {
    #[schema(example = "30.00")]
    amount: Option<String>,
    /// Why: 1 to 500 characters.
    #[schema(example = "returned goods")]
    reason: String,
    /// At most 100; each a description (1 to 500 characters) and an amount.
    lines: Option<Vec<NewLine>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewLine {
    description: String,
    #[schema(example = "30.00")]
    amount: String,
}

fn amount_of(field: &'static str, raw: &str) -> Result<rust_decimal::Decimal, ApiError> {
    parse_amount(raw).map_err(|e| ApiError {
        field: Some(field),
        ..ApiError::bad_request("invalid_amount", e.to_string())
    })
}

/// Issues a credit note on the invoice: 201 with the note the first time, 200 with the stored
/// note for the same key and body, 409 for the same key with another body.
pub async fn create(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let key = crate::invoices::idempotency_key(ctx)?;
    let body: NewNote = parse_json(body_bytes(ctx.req))?;
    let (status, answer) = issue_with(store, ctx, id, key, body).await?;
    Ok(json_response(status, &answer))
}

/// Issues `body` on invoice `id` under `key` (an `Idempotency-Key` or an assistant's
/// `call_id`): the status and the answer.
pub(crate) async fn issue_with(
    store: &Store,
    ctx: &Ctx<'_>,
    id: &str,
    key: firmspace::ids::ExternalId,
    body: NewNote,
) -> Result<(u16, serde_json::Value), ApiError> {
    let lines = body.lines.unwrap_or_default();
    if lines.len() > credit::LINES_MAX {
        return Err(ApiError {
            field: Some("lines"),
            ..ApiError::bad_request("invalid_field", "at most 100 lines")
        });
    }
    let lines = lines
        .iter()
        .map(|l| {
            Ok(CreditLine {
                description: fields::line("description", &l.description, TITLE_MAX)?.to_owned(),
                amount: amount_of("lines", &l.amount)?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let new = NewCreditNote {
        org: ctx.org.clone(),
        invoice_id: id.to_owned(),
        key,
        amount: body
            .amount
            .as_deref()
            .map(|a| amount_of("amount", a))
            .transpose()?,
        reason: fields::line("reason", &body.reason, REASON_MAX)?.to_owned(),
        lines,
        actor: ctx.key.id.clone(),
        at: ctx.now,
    };
    if firmspace::ids::LocalId::parse("invoice_id", id).is_err() {
        return Err(ApiError::not_found("invoice"));
    }
    let issued = credit::issue(store, &new).await.map_err(refused)?;
    if let Some(refused) = key_reused(
        store,
        &ctx.org,
        Kind::Payment,
        &new.event_key(),
        &issued,
        ctx.now,
    )
    .await?
    {
        return Err(refused);
    }
    let status = if issued.is_new() { 201 } else { 200 };
    Ok((status, issued.answer()))
}

fn refused(e: CreditError) -> ApiError {
    match e {
        CreditError::Store(e) => e.into(),
        CreditError::NoInvoice => ApiError::not_found("invoice"),
        CreditError::NotIssued(_) => ApiError::new(409, "not_issued", e.to_string()),
        CreditError::Exceeds(_) => ApiError::new(409, "credit_exceeds_invoice", e.to_string()),
        CreditError::Amount(_) => ApiError {
            field: Some("amount"),
            ..ApiError::bad_request("invalid_amount", e.to_string())
        },
    }
}

/// Voids a draft invoice; a void one again gets the same answer (`duplicate: true`).
pub async fn void(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let voided = credit::void(store, &ctx.org, id, ctx.now)
        .await
        .map_err(|e| match e {
            VoidError::Store(e) => e.into(),
            VoidError::NoInvoice => ApiError::not_found("invoice"),
            VoidError::NotDraft(_) => ApiError::new(409, "not_draft", e.to_string()),
        })?;
    let (invoice, again) = match voided {
        Voided::Now(invoice) => (invoice, false),
        Voided::Already(invoice) => (invoice, true),
    };
    let mut answer = invoice.to_json();
    answer["duplicate"] = json!(again);
    Ok(json_response(200, &answer))
}
