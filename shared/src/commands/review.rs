//! A review item resolved by a person, with a decision on what it proposed: `apply` books a
//! model's `payment_proposed` once, through the one payment function, as the approving key;
//! `dismiss` (or no decision) books nothing. The resolution is the claim: it is one
//! conditional move out of `open`, so of two approvals one resolves and books, the other is
//! told it was resolved before; a retry of the approval that resolved (its payment cut off)
//! books the same payment, whose identity is derived from the item.

use super::amount::AmountText;
use super::money::{pay, Asked};
use super::{Actor, Env};
use crate::fields;
use crate::http::ApiError;
use crate::ids::ExternalId;
use crate::ops::review::outcome;
use crate::payments::Source;
use crate::review::{self, Reason, Resolved, NOTE_MAX};
use crate::store::item::s;
use crate::store::item::Read;
use crate::store::{Cond, Item, Update};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

/// A person's decision on what a review item proposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Book what it proposes (a `payment_proposed` item's payment).
    Apply,
    /// Book nothing.
    Dismiss,
}

pub(super) async fn resolve<R>(
    env: &Env<'_, R>,
    by: &Actor,
    pk: &str,
    note: &str,
    decision: Option<Decision>,
) -> Result<(u16, Value), ApiError> {
    let note = fields::text("note", note.trim(), NOTE_MAX)?;
    let who = by.id();
    let payment = match decision {
        Some(Decision::Apply) => apply(env, by, pk).await?,
        _ => None,
    };
    let named = decision.map(|d| crate::store::item::tag_name(&d));
    let asked = (who.as_str(), note, named.as_deref());
    let resolved = review::resolve_deciding(env.store, by.org(), pk, asked, env.now).await?;
    let mut shown =
        outcome(pk, &who, note, &resolved).ok_or_else(|| ApiError::not_found("review item"))?;
    if !matches!(resolved, Resolved::Now { .. }) {
        let detail = "the review item was resolved before";
        return Ok((
            409,
            json!({"error": "not_open", "detail": detail, "outcome": shown}),
        ));
    }
    if let Some(payment) = payment {
        shown["payment"] = payment;
    }
    Ok((200, shown))
}

/// `apply` on an open `payment_proposed` item: the item marked as being applied (a dismissal
/// can no longer resolve it), its payment booked (once, whoever approves and however often),
/// then the item resolved, so a cut-off approval is retried whole. `None` when the item is not
/// open: the resolution then tells so.
async fn apply<R>(env: &Env<'_, R>, by: &Actor, pk: &str) -> Result<Option<Value>, ApiError> {
    let item = env
        .store
        .get(pk)
        .await?
        .ok_or_else(|| ApiError::not_found("review item"))?;
    if item.opt_str("reason") != Some(Reason::PaymentProposed.name()) {
        return Err(ApiError::bad_request(
            "invalid_decision",
            "apply books what a payment_proposed item proposes; this item proposes nothing",
        ));
    }
    // Marked first, under the item's being open: from then on only an approval resolves it.
    let applying = Update::new()
        .set(review::APPLYING, s(by.id()))
        .when(Cond::Equals("state".into(), s("open")));
    if !env.store.update_if(pk, &applying).await? {
        return Ok(None);
    }
    book(env, by, pk, &item).await.map(Some)
}

/// The proposed payment, booked as the approving actor: source `assistant`, its external id
/// derived from the item.
async fn book<R>(env: &Env<'_, R>, by: &Actor, pk: &str, item: &Item) -> Result<Value, ApiError> {
    let detail: Value = item
        .opt_str("detail")
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null);
    let invoice_id = detail["invoice_id"].as_str().unwrap_or_default().to_owned();
    let amount = AmountText::of(&detail["amount"]);
    let digest = hex::encode(Sha256::digest(pk.as_bytes()));
    let external_id = ExternalId::parse("review", &format!("review-{}", &digest[..32]))
        .map_err(|e| ApiError::bad_request("invalid_decision", e.to_string()))?;
    let asked = Asked {
        source: Source::Assistant,
        external_id,
        amount: Some(&amount),
        actor: None,
    };
    pay(env, by, &invoice_id, asked).await
}
