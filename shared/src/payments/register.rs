//! `register_payment`: the only code that books money. One consistent `BatchGetItem` reads the
//! event's key, the invoice and (for a provider that reverses) the counterpart; a stored event is
//! a duplicate answered from that read alone. Otherwise one `TransactWriteItems` puts the event
//! under its key (`attribute_not_exists(pk)`), moves the invoice conditioned on the version it
//! read, holds the counterpart to what was read, and files a review item when a person must look.

use super::event::PaymentEvent;
use super::invoice::{invoice_pk, payments_list_pk, Invoice};
use super::rules::{decide, unconfirmed, Decision, Related};
use super::PaymentInput;
use crate::ids::{LocalId, OrgId};
use crate::review::ReviewItem;
use crate::store::item::{n, s, tag_name, Read};
use crate::store::{Cond, Item, Step, Store, StoreError, Transacted, Update};
use std::time::Duration;
use thiserror::Error;

/// Attempts before giving up on a contended invoice (each loser of a race re-reads and retries).
const MAX_ATTEMPTS: u32 = 40;

#[derive(Debug, Error)]
pub enum PaymentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("invoice stayed contended for {MAX_ATTEMPTS} attempts")]
    Contended,
    #[error("the provider could not confirm the payment now: {0}")]
    Unconfirmable(String),
    /// The record a linked payment was conditioned on (a bank row's match) changed meanwhile:
    /// nothing was written; read it again and decide anew.
    #[error("the linked record changed meanwhile")]
    LinkMoved,
}

impl PaymentError {
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store(e) => e.is_retryable(),
            Self::Contended | Self::Unconfirmable(_) | Self::LinkMoved => true,
        }
    }
}

/// What the provider itself says about the first arrival of a payment, asked before it books.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirmation {
    Confirmed,
    /// Not this merchant's, or not paid: stored with applied 0 and an `unconfirmed_payment`
    /// review item.
    Refused(String),
    /// The provider could not be asked now: nothing is written, the sender retries (503).
    Unavailable(String),
}

/// Asks a payment's provider before money is booked. Asked once per new payment (never for a
/// duplicate, never for a reversal), after the read and before the transaction.
pub trait Confirm: Sync {
    fn confirm(
        &self,
        input: &PaymentInput,
    ) -> impl std::future::Future<Output = Confirmation> + Send;
}

/// Nobody to ask: the signature is what is trusted.
pub struct Trusted;

impl Confirm for Trusted {
    async fn confirm(&self, _: &PaymentInput) -> Confirmation {
        Confirmation::Confirmed
    }
}

#[derive(Clone, Debug)]
pub enum Registered {
    Booked(PaymentEvent),
    /// The key was already stored; `same_payload` says whether this arrival says the same.
    Duplicate {
        stored: PaymentEvent,
        same_payload: bool,
    },
}

impl Registered {
    /// The answer to this arrival: the first answer, marked `duplicate` on a repeat.
    pub fn answer(&self) -> serde_json::Value {
        match self {
            Self::Booked(event) => event.answer(false),
            Self::Duplicate { stored, .. } => stored.answer(true),
        }
    }

    pub fn event(&self) -> &PaymentEvent {
        match self {
            Self::Booked(event) | Self::Duplicate { stored: event, .. } => event,
        }
    }
}

pub(crate) fn backoff(attempt: u32) -> Duration {
    let cap = 5u64.saturating_mul(1 << attempt.min(6)).min(200);
    let jitter = u64::from(u16::from_le_bytes(crate::ids::random_bytes::<2>()));
    Duration::from_millis(cap / 2 + jitter % (cap / 2 + 1))
}

/// What one read found. `related` is `None` when the payment has no counterpart to check.
struct Found {
    stored: Option<Item>,
    invoice: Option<Invoice>,
    related: Option<Option<Item>>,
}

async fn read(store: &Store, input: &PaymentInput) -> Result<Found, StoreError> {
    let invoice_pk = input
        .invoice_ref
        .as_deref()
        .filter(|id| LocalId::parse("invoice_id", id).is_ok())
        .map(|id| invoice_pk(&input.org, id));
    let mut pks = vec![input.pk()];
    pks.extend(invoice_pk.clone());
    pks.extend(input.related_pk());
    let mut found = store.get_many(&pks).await?.into_iter();
    let stored = found.next().flatten();
    let invoice = match invoice_pk {
        Some(_) => found.next().flatten(),
        None => None,
    };
    Ok(Found {
        stored,
        invoice: invoice.as_ref().map(Invoice::from_item).transpose()?,
        related: input.related_pk().map(|_| found.next().flatten()),
    })
}

/// What is stored about the counterpart, for the rules.
fn related(input: &PaymentInput, found: &Option<Option<Item>>) -> Result<Related, StoreError> {
    Ok(match (found, &input.reverses) {
        (Some(Some(original)), Some(_)) => Related::Original {
            applied: original.dec_of("applied")?,
        },
        (Some(Some(_)), None) => Related::Reversal,
        _ => Related::Nothing,
    })
}

fn duplicate(input: &PaymentInput, item: &Item) -> Result<Registered, StoreError> {
    let stored = PaymentEvent::from_item(item)?;
    let same_payload = stored.fingerprint == input.fingerprint();
    Ok(Registered::Duplicate {
        stored,
        same_payload,
    })
}

/// The steps that store `event` and apply `decision` to the invoice as it was read.
fn steps(
    input: &PaymentInput,
    event: &PaymentEvent,
    decision: &Decision,
    before: Option<&Invoice>,
    related: &Option<Option<Item>>,
) -> Vec<Step> {
    let mut steps = vec![Step::PutNew(event.to_item())];
    if let (Some(inv), Some(change)) = (before, decision.change) {
        steps.push(Step::Update {
            pk: inv.pk(),
            update: Update::new()
                .set("paid", n(change.paid))
                .set("status", s(tag_name(&change.status)))
                .set("version", n(inv.version + 1))
                .set("updated_at", s(crate::time::format(input.at)))
                .when(Cond::Equals("version".into(), n(inv.version))),
        });
    }
    match (input.related_pk(), related) {
        (Some(pk), Some(Some(_))) => steps.push(Step::Present(pk)),
        (Some(pk), _) => steps.push(Step::Absent(pk)),
        _ => {}
    }
    if let Some(reason) = event.outcome.review_reason() {
        steps.push(Step::PutNew(review_for(event, reason).to_item()));
    }
    steps
}

/// Books one arrival of money. A second arrival of the same (source, external id) returns
/// `Duplicate` after one read and writes nothing; a concurrent twin that loses the race is a
/// duplicate too.
pub async fn register_payment(
    store: &Store,
    input: &PaymentInput,
) -> Result<Registered, PaymentError> {
    register_confirmed(store, input, &Trusted).await
}

/// `register_payment`, asking `confirm` before a new payment books money.
pub async fn register_confirmed(
    store: &Store,
    input: &PaymentInput,
    confirm: &impl Confirm,
) -> Result<Registered, PaymentError> {
    register(store, input, confirm, &|_| None).await
}

/// `register_payment` with one more step in its transaction, made from the event it stores: the
/// payment and what links to it (a bank row's match, with the amount applied) are written
/// together or not at all. A refusal of that step is `LinkMoved`, with nothing written.
pub async fn register_linked(
    store: &Store,
    input: &PaymentInput,
    link: &(dyn Fn(&PaymentEvent) -> Step + Sync),
) -> Result<Registered, PaymentError> {
    register(store, input, &Trusted, &|event| Some(link(event))).await
}

#[tracing::instrument(skip_all, fields(event_key = %input.event_key()))]
async fn register(
    store: &Store,
    input: &PaymentInput,
    confirm: &impl Confirm,
    link: &(dyn Fn(&PaymentEvent) -> Option<Step> + Sync),
) -> Result<Registered, PaymentError> {
    let mut confirmation = None;
    for attempt in 0..MAX_ATTEMPTS {
        let found = read(store, input).await?;
        if let Some(item) = &found.stored {
            return Ok(duplicate(input, item)?);
        }
        if input.reverses.is_none() && confirmation.is_none() {
            confirmation = Some(confirm.confirm(input).await);
        }
        let rel = related(input, &found.related)?;
        let before = found.invoice;
        let decision = match &confirmation {
            Some(Confirmation::Unavailable(why)) => {
                return Err(PaymentError::Unconfirmable(why.clone()))
            }
            Some(Confirmation::Refused(why)) => {
                tracing::warn!(%why, "the provider did not confirm the payment; nothing applied");
                unconfirmed(input)
            }
            _ => decide(before.as_ref(), input, rel),
        };
        let after = before.as_ref().map(|inv| match decision.change {
            Some(change) => Invoice {
                paid: change.paid,
                status: change.status,
                version: inv.version + 1,
                ..inv.clone()
            },
            None => inv.clone(),
        });
        let event = PaymentEvent::new(input, &decision, before.as_ref(), after.as_ref());
        let mut steps = steps(input, &event, &decision, before.as_ref(), &found.related);
        let linked_at = steps.len();
        steps.extend(link(&event));
        match store.transact(steps).await? {
            Transacted::Refused { step, .. } if step == linked_at => {
                return Err(PaymentError::LinkMoved)
            }
            Transacted::Done => {
                tracing::info!(outcome = ?decision.outcome, "payment stored");
                return Ok(Registered::Booked(event));
            }
            Transacted::Refused {
                step: 0,
                existing: Some(item),
            } => return Ok(duplicate(input, &item)?),
            _ => {
                tracing::debug!(attempt, "invoice or counterpart moved; retrying");
                tokio::time::sleep(backoff(attempt)).await;
            }
        }
    }
    Err(PaymentError::Contended)
}

fn review_for(event: &PaymentEvent, reason: &str) -> ReviewItem {
    ReviewItem {
        org: event.org.clone(),
        kind: "payment".into(),
        reason: reason.into(),
        key: event.key().to_string(),
        at: event.at,
        detail: serde_json::json!({
            "invoice_id": event.invoice_id,
            "received": event.received.map(crate::money::display),
            "unapplied": crate::money::display(event.unapplied),
            "currency": event.currency.as_ref().map(|c| c.as_str()),
        }),
    }
}

/// The payments booked on an invoice, oldest first.
pub async fn list_for_invoice(
    store: &Store,
    org: &OrgId,
    invoice_id: &str,
) -> Result<Vec<PaymentEvent>, StoreError> {
    store
        .list(&payments_list_pk(org, invoice_id), false, 1000)
        .await?
        .iter()
        .map(PaymentEvent::from_item)
        .collect()
}
