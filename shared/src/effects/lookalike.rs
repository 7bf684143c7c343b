//! Lookalike money goes to a person, never merged. A payment booked on an invoice is held
//! against the payments of the same amount and currency that reached the same invoice, or the
//! same contact, within a week of it either way, under another key (another source, another
//! id): a card payment booked from Stripe and the same money arriving the next day as a bank
//! row are two payments, and only a person can say whether they are one. One
//! `possible_same_money` review item is filed for the payment booked later, naming every
//! lookalike booked before it, whichever happened first (a card payment recovered after the
//! bank row that followed it is held against that row).
//!
//! Two reads of one window each: the invoice's payments list and the contact's activity log
//! (a payment's line carries its money), both on the lists index.

use super::{EntityKind, Lookalike};
use crate::payments::invoice::payments_list_pk;
use crate::payments::PaymentEvent;
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::item::Read;
use crate::store::{Index, Store, StoreError};
use crate::time;
use chrono::Duration;
use serde_json::{json, Value};

/// How far apart (either way) two payments may have happened to be held against each other.
pub const WINDOW_DAYS: i64 = 7;

/// At most this many earlier payments are read from each list of the window.
const READ_MAX: i32 = 50;

/// Files `possible_same_money` when `payment` has lookalikes: `true` when this call filed it
/// (a redelivered check finds it filed).
pub async fn check(store: &Store, payment: &Lookalike) -> Result<bool, StoreError> {
    let mut found = Vec::new();
    for lookalike in lookalikes(store, payment).await? {
        if !named_by(store, payment, &lookalike).await? {
            found.push(lookalike);
        }
    }
    if found.is_empty() {
        return Ok(false);
    }
    let item = ReviewItem {
        org: payment.org.clone(),
        kind: Kind::Payment,
        reason: Reason::PossibleSameMoney,
        key: payment.event_key.as_str().to_owned(),
        at: payment.at,
        detail: json!({
            "invoice_id": payment.invoice_id, "invoice_number": payment.invoice_number,
            "contact_id": payment.contact_id, "amount": payment.amount,
            "currency": payment.currency, "lookalikes": found,
        }),
    };
    tracing::info!(event_key = %payment.event_key, lookalikes = found.len(), "possible same money");
    item.put(store).await
}

/// The payments of the same money within the window, either way, on the invoice's payments
/// list and the contact's activity log: each once, the payment itself not among them.
async fn lookalikes(store: &Store, payment: &Lookalike) -> Result<Vec<Value>, StoreError> {
    let from = time::format(payment.at - Duration::days(WINDOW_DAYS));
    // Either way: what is booked already, whenever it happened.
    let to = format!(
        "{}#\u{10FFFF}",
        time::format(payment.at + Duration::days(WINDOW_DAYS))
    );
    let window = Some((from.as_str(), to.as_str()));
    let mut found = Vec::new();
    let list = payments_list_pk(&payment.org, &payment.invoice_id);
    let (items, _) = store
        .page_in(Index::Lists, &list, window, true, READ_MAX, None)
        .await?;
    for item in &items {
        let Ok(event) = PaymentEvent::from_item(item) else {
            continue;
        };
        let money = (event.received.unwrap_or(event.applied), event.currency);
        let shown = money.1.map(|c| crate::money::shown(money.0, Some(c)));
        if event.reverses.is_none() && same(payment, shown.as_deref(), money.1.map(|c| c.as_str()))
        {
            found.push(earlier(event.key().as_str(), item, shown.as_deref()));
        }
    }
    if let Some(contact) = &payment.contact_id {
        let log = super::activity::log_pk(&payment.org, EntityKind::Contact, contact);
        let (lines, _) = store
            .page_in(Index::Lists, &log, window, true, READ_MAX, None)
            .await?;
        for line in &lines {
            let Some(key) = line.opt_str("payment_key").map(str::to_owned) else {
                continue;
            };
            let known = found.iter().any(|f| f["event_key"] == key.as_str());
            if line.opt_str("entry_kind") == Some("payment")
                && !known
                && same(payment, line.opt_str("amount"), line.opt_str("currency"))
            {
                found.push(earlier(&key, line, line.opt_str("amount")));
            }
        }
    }
    found.retain(|f| f["event_key"] != payment.event_key.as_str());
    Ok(found)
}

/// Whether `lookalike`'s own item names `payment` already: the pair is with a person (its check
/// ran after this payment was booked), so it is not filed twice. One read, only when a
/// lookalike is found.
async fn named_by(
    store: &Store,
    payment: &Lookalike,
    lookalike: &Value,
) -> Result<bool, StoreError> {
    let Some(key) = lookalike["event_key"].as_str() else {
        return Ok(false);
    };
    let pk = crate::review::review_item_pk(&payment.org, Reason::PossibleSameMoney, key);
    let Some(item) = store.get(&pk).await? else {
        return Ok(false);
    };
    let detail: Value = item
        .opt_str("detail")
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    let named = detail["lookalikes"].as_array().into_iter().flatten();
    Ok(named
        .into_iter()
        .any(|l| l["event_key"] == payment.event_key.as_str()))
}

fn same(payment: &Lookalike, amount: Option<&str>, currency: Option<&str>) -> bool {
    amount == Some(payment.amount.as_str()) && currency == Some(payment.currency.as_str())
}

/// An earlier payment as the review item names it: its key, source, id, time and amount.
fn earlier(key: &str, item: &crate::store::Item, amount: Option<&str>) -> Value {
    let (source, external_id) = key
        .strip_prefix("payment:")
        .and_then(|k| k.split_once(':'))
        .unwrap_or_default();
    json!({
        "event_key": key, "source": source, "external_id": external_id,
        "at": item.opt_str("at"), "amount": amount,
    })
}
