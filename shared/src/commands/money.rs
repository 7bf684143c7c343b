//! The commands that move money: a payment (or, asked by a model, its proposal), a credit
//! note, a void. Each books through the payments domain's one function for it.

use super::amount::AmountText;
use super::{Actor, Env, RequestKey};
use crate::fields::{self, REF_MAX, TITLE_MAX};
use crate::http::ApiError;
use crate::ids::{ExternalId, LocalId};
use crate::money::display;
use crate::payments::credit::{self, CreditError, CreditLine, NewCreditNote, VoidError, Voided};
use crate::payments::{invoice, register_payment, PaymentInput, Source};
use crate::review::{Kind, Reason, ReviewItem};
use crate::webhook::answer::key_reused;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// The longest reason a credit note takes (a line of text).
const REASON_MAX: usize = 500;

/// What to credit: `amount` (major units), else the lines' sum, else all that is left to credit.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditInput {
    #[schema(inline)]
    pub(super) amount: Option<AmountText>,
    /// Why: 1 to 500 characters.
    #[schema(example = "returned goods", min_length = 1, max_length = 500)]
    pub(super) reason: String,
    /// At most 100; each a description (1 to 500 characters) and an amount.
    #[schema(inline, max_items = 100)]
    pub(super) lines: Option<Vec<CreditLineInput>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditLineInput {
    #[schema(min_length = 1, max_length = 500)]
    description: String,
    #[schema(inline)]
    amount: AmountText,
}

/// A payment a person or an assistant asks for, before it is checked.
pub(super) struct Asked<'a> {
    pub source: Source,
    /// Its identity: the request's key.
    pub external_id: ExternalId,
    pub amount: Option<&'a AmountText>,
    /// For whom the key acted.
    pub actor: Option<&'a str>,
}

/// Books `asked` on invoice `id` through `register_payment`: its answer.
pub(super) async fn pay<R>(
    env: &Env<'_, R>,
    by: &Actor,
    id: &str,
    asked: Asked<'_>,
) -> Result<Value, ApiError> {
    let org = by.org();
    let actor = fields::optional(asked.actor, |r| fields::reference("actor", r, REF_MAX))?;
    asked.amount.map(|a| a.decimal("amount")).transpose()?;
    let invoice = invoice::get(env.store, org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    let amount = (asked.amount)
        .map(|a| a.in_currency("amount", invoice.currency))
        .transpose()?;
    let input = PaymentInput {
        org: org.clone(),
        invoice_ref: Some(id.to_owned()),
        // The key that asked is the actor; the body's `actor` only says for whom it acted.
        actor: match actor {
            Some(user) => format!("{}/{user}", by.id()),
            None => by.id(),
        },
        source: asked.source,
        external_id: asked.external_id,
        amount,
        currency: Some(invoice.currency),
        at: env.now,
        reverses: None,
        reversible: false,
        via: None,
    };
    let registered = register_payment(env.store, &input).await?;
    let key = input.event_key();
    if let Some(refused) =
        key_reused(env.store, org, Kind::Payment, &key, &registered, env.now).await?
    {
        return Err(refused);
    }
    Ok(registered.answer())
}

/// A model's payment: one open `payment_proposed` review item for a person, keyed by the tool
/// call, holding what would be booked. Nothing is booked and no invoice changes.
pub(super) async fn propose<R>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    id: &str,
    amount: Option<&AmountText>,
) -> Result<(u16, Value), ApiError> {
    let Actor::Model {
        org,
        rule_id,
        event_key,
    } = by
    else {
        return Err(ApiError::new(403, "forbidden", "only a model proposes"));
    };
    amount.map(|a| a.decimal("amount")).transpose()?;
    let invoice = invoice::get(env.store, org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))?;
    let amount = match amount {
        Some(a) => a.in_currency("amount", invoice.currency)?,
        None => invoice.open(),
    };
    if amount <= rust_decimal::Decimal::ZERO {
        return Err(ApiError::new(
            409,
            "nothing_open",
            "the invoice has nothing open",
        ));
    }
    let item = ReviewItem {
        org: org.clone(),
        kind: Kind::Payment,
        reason: Reason::PaymentProposed,
        key: format!("{rule_id}:{}", key.id()),
        at: env.now,
        detail: json!({
            "invoice_id": invoice.id.as_str(), "invoice_number": invoice.number,
            "amount": display(amount), "currency": invoice.currency.as_str(),
            "rule_id": rule_id, "event_key": event_key.as_str(), "call": key.id(),
        }),
    };
    let filed = item.put(env.store).await?;
    Ok((
        202,
        json!({"state": "proposed", "review_key": item.key, "filed": filed, "detail": item.detail}),
    ))
}

/// Issues a credit note on invoice `id` under the request's key: 201 with the note the first
/// time, 200 with the stored note for the same key and body, 409 for another body.
pub(super) async fn credit<R>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    id: &str,
    body: CreditInput,
) -> Result<(u16, Value), ApiError> {
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
                amount: l.amount.decimal("lines")?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let new = NewCreditNote {
        org: by.org().clone(),
        invoice_id: id.to_owned(),
        key: key.identity()?,
        amount: body.amount.map(|a| a.decimal("amount")).transpose()?,
        reason: fields::line("reason", &body.reason, REASON_MAX)?.to_owned(),
        lines,
        actor: by.id(),
        at: env.now,
    };
    if LocalId::parse("invoice_id", id).is_err() {
        return Err(ApiError::not_found("invoice"));
    }
    let issued = credit::issue(env.store, &new).await.map_err(refused)?;
    let event_key = new.event_key();
    if let Some(refused) = key_reused(
        env.store,
        by.org(),
        Kind::Payment,
        &event_key,
        &issued,
        env.now,
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
pub(super) async fn void<R>(
    env: &Env<'_, R>,
    by: &Actor,
    id: &str,
) -> Result<(u16, Value), ApiError> {
    let voided = credit::void(env.store, by.org(), id, env.now)
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
    Ok((200, answer))
}
