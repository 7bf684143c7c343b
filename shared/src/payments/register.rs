//! `register_payment`: the only code that books money. One `BatchGetItem` (eventually consistent
//! first, `Register::stale_holds`) reads the
//! event's key, the invoice and (for a provider that reverses) the counterpart; a stored event is
//! a duplicate answered from that read alone. Otherwise one `TransactWriteItems` puts the event
//! under its key (`attribute_not_exists(pk)`), moves the invoice conditioned on the version it
//! read, holds the counterpart to what was read, and files a review item when a person must look.

use super::event::PaymentEvent;
use super::invoice::{invoice_pk, payments_list_pk, Invoice};
use super::rules::Decision as Applied;
use super::rules::{decide, unconfirmed, Related};
use super::PaymentInput;
use crate::ids::{LocalId, OrgId};
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::item::{n, s, tag_name, Read};
use crate::store::{
    Answer, Cond, Decision, Item, Mismatch, Plan, Seen, Step, Store, StoreError, Update, Written,
};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum PaymentError {
    #[error(transparent)]
    Store(#[from] StoreError),
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
            Self::Unconfirmable(_) | Self::LinkMoved => true,
        }
    }
}

pub use super::confirm::{Confirm, Confirmation, Trusted};

/// How registering a payment ended: booked now, or the stored event of its key.
pub type Registered = Written<PaymentEvent>;

impl Answer for PaymentEvent {
    /// The first answer, as stored with the event.
    fn answer(&self) -> serde_json::Value {
        self.answer.clone()
    }

    /// A repeat applied nothing: `applied` is zero, `first_applied` what the first delivery
    /// applied, `payment_id` the first delivery's payment (its event key), and `invoice` as it
    /// is now when the repeat read it (see `Register::repeat`).
    fn repeated(&self) -> serde_json::Value {
        let mut answer = self.answer.clone();
        if let serde_json::Value::Object(fields) = &mut answer {
            fields.insert(
                "applied".into(),
                crate::money::shown(Decimal::ZERO, self.currency).into(),
            );
            fields.insert(
                "first_applied".into(),
                crate::money::shown(self.applied, self.currency).into(),
            );
            fields.insert("payment_id".into(), self.key().as_str().into());
        }
        answer
    }

    fn review(&self) -> bool {
        self.outcome.review_reason().is_some()
    }
}

/// A reversal as its provider sent it, on the invoice of the payment it reverses: the body's
/// invoice reference is only a hint (the sender may name another invoice, or none). One read, for
/// reversals only; a reversal whose payment is not stored keeps the body's reference.
pub async fn on_its_payments_invoice(
    store: &Store,
    mut input: PaymentInput,
) -> Result<PaymentInput, StoreError> {
    let (Some(_), Some(original)) = (&input.reverses, input.related_pk()) else {
        return Ok(input);
    };
    if let Some(item) = store.get(&original).await? {
        input.invoice_ref = PaymentEvent::from_item(&item)?.invoice_id;
    }
    Ok(input)
}

/// Books one arrival of money. A second arrival of the same (source, external id) is answered
/// from one read and writes nothing; a concurrent twin that loses the race is a repeat too.
pub async fn register_payment(
    store: &Store,
    input: &PaymentInput,
) -> Result<Registered, PaymentError> {
    register_confirmed(store, input, &Trusted).await
}

/// A person's payment's decision (`register_payment`), for a caller that writes it with more
/// (a request's record).
pub fn registering<'a>(
    store: &'a Store,
    input: &'a PaymentInput,
) -> impl Decision<Out = PaymentEvent, Error = PaymentError> + 'a {
    registering_linked(store, input, None)
}

/// [`registering`] with what links to the payment (`register_linked`), as a decision.
pub fn registering_linked<'a>(
    store: &'a Store,
    input: &'a PaymentInput,
    link: Option<&'a Link<'a>>,
) -> impl Decision<Out = PaymentEvent, Error = PaymentError> + 'a {
    Register::new(input, &Trusted, link).reading(store)
}

/// `register_payment`, asking `confirm` before a new payment books money.
pub async fn register_confirmed(
    store: &Store,
    input: &PaymentInput,
    confirm: &impl Confirm,
) -> Result<Registered, PaymentError> {
    register(store, Register::new(input, confirm, None).reading(store)).await
}

/// `register_payment` with one more step in its transaction, made from the event it stores: the
/// payment and what links to it (a bank row's match, with the amount applied) are written
/// together or not at all. The linked item is read with the payment; when it moved from what
/// the caller decided over, nothing is written and the answer is `LinkMoved`.
pub async fn register_linked(
    store: &Store,
    input: &PaymentInput,
    link: &Link<'_>,
) -> Result<Registered, PaymentError> {
    register(
        store,
        Register::new(input, &Trusted, Some(link)).reading(store),
    )
    .await
}

/// The item a payment is linked to, and the step that links it.
pub struct Link<'a> {
    pub pk: String,
    /// The linked item's counter and the value the link was decided at: read with the payment,
    /// a counter that moved means the link no longer holds.
    pub at: (&'static str, u64),
    /// The linking step, made from the event being stored.
    pub step: LinkStep<'a>,
}

/// Makes the linking step from the event being stored.
pub type LinkStep<'a> = Box<dyn Fn(&PaymentEvent) -> Step + Send + Sync + 'a>;

#[tracing::instrument(skip_all, fields(event_key = %decision.input.event_key()))]
async fn register<C: Confirm>(
    store: &Store,
    mut decision: Register<'_, C>,
) -> Result<Registered, PaymentError> {
    let at = decision.input.at;
    let written = store.write(&mut decision, at).await?;
    if let Written::New(event) = &written {
        // At debug: what arrived is the event item and the `deliveries` metric; a line of its
        // own an event would be log volume billed on every payment.
        tracing::debug!(outcome = ?event.outcome, "payment stored");
    }
    Ok(written)
}

/// One payment's decision: its key, its invoice, its counterpart and what it links to, read
/// together; the provider asked once before a new payment books money.
struct Register<'a, C: Confirm> {
    input: &'a PaymentInput,
    confirm: &'a C,
    link: Option<&'a Link<'a>>,
    confirmation: Option<Confirmation>,
    invoice_pk: Option<String>,
    /// Where a reversal reads its invoice's open refunds before each decision.
    store: Option<&'a Store>,
    /// The invoice's open `refund_due` items, read for a new reversal (`credit::open_refunds`).
    refunds: Vec<Item>,
    /// A person's payment keyed by a client's `Idempotency-Key` under one source (`manual`) is
    /// held to the same key being free under the other (`assistant`): one key, one payment.
    sibling_pk: Option<String>,
}

impl<'a, C: Confirm> Register<'a, C> {
    fn new(input: &'a PaymentInput, confirm: &'a C, link: Option<&'a Link<'a>>) -> Self {
        let invoice_pk = input
            .invoice_ref
            .as_deref()
            .filter(|id| LocalId::parse("invoice_id", id).is_ok())
            .map(|id| invoice_pk(&input.org, id));
        Self {
            input,
            confirm,
            link,
            confirmation: None,
            invoice_pk,
            store: None,
            refunds: Vec::new(),
            sibling_pk: sibling_pk(input),
        }
    }

    fn reading(self, store: &'a Store) -> Self {
        Self {
            store: Some(store),
            ..self
        }
    }

    /// Where each read item sits after the event's own: the invoice, the counterpart, the link,
    /// the same key under the other source.
    fn slots(&self) -> [Option<usize>; 4] {
        let mut next = 0;
        [
            self.invoice_pk.is_some(),
            self.input.related_pk().is_some(),
            self.link.is_some(),
            self.sibling_pk.is_some(),
        ]
        .map(|present| {
            present.then(|| {
                next += 1;
                next
            })
        })
    }

    /// The stored event met again, answering with its invoice as it is now: the invoice was
    /// read in the same batch as the event (a repeat costs that one read, eventually
    /// consistent: at most a second old, and never older than the booking, below). A copy
    /// that lost the race to its twin read the invoice before the twin booked: that read is
    /// older than the booking, so the invoice is answered as the booking left it (stored with
    /// the first answer), never a version before the one `first_applied` names.
    fn repeat(&self, seen: &Seen, item: &Item) -> Result<Registered, StoreError> {
        let mut stored = PaymentEvent::from_item(item)?;
        let [invoice_at, ..] = self.slots();
        if let Some(now) = invoice_at.and_then(|i| seen.get(i)) {
            let same = stored.invoice_id.as_deref() == now.str_of("id").ok();
            let now = Invoice::from_item(now)?;
            let booked = stored
                .answer
                .pointer("/invoice/version")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            let current = same && now.version >= booked;
            if let (true, serde_json::Value::Object(fields)) = (current, &mut stored.answer) {
                fields.insert("invoice".into(), now.to_json());
            }
        }
        let input = self.input;
        let given = |differs: bool, present: bool| present && differs;
        let mismatch = Mismatch::of(
            &stored.fingerprint,
            &input.fingerprint(),
            &[
                (
                    "invoice_id",
                    given(
                        input.invoice_ref != stored.invoice_id,
                        input.invoice_ref.is_some(),
                    ),
                ),
                (
                    "amount",
                    given(input.amount != stored.received, input.amount.is_some()),
                ),
                (
                    "currency",
                    given(input.currency != stored.currency, input.currency.is_some()),
                ),
                ("reverses", input.reverses != stored.reverses),
            ],
        );
        Ok(Written::again(stored, mismatch))
    }
}

impl<C: Confirm> Decision for Register<'_, C> {
    type Out = PaymentEvent;
    type Error = PaymentError;

    fn keys(&self) -> Vec<String> {
        let mut pks = vec![self.input.pk()];
        pks.extend(self.invoice_pk.clone());
        pks.extend(self.input.related_pk());
        pks.extend(self.link.map(|l| l.pk.clone()));
        pks.extend(self.sibling_pk.clone());
        pks
    }

    /// Not when the provider is asked before booking (monobank): a copy racing its twin read
    /// stale would ask it again.
    fn reads_stale_first(&self) -> bool {
        !self.confirm.asks()
    }

    /// A repeat holds on a stale read: the event never changes once written, and the invoice
    /// it answers with is never older than the booking (`repeat`); so does a booking that
    /// moves the invoice, held to the version read (the counterpart and the other source's key
    /// are held by `Present` / `Absent`). A payment on no invoice relies on nothing read. What
    /// relies on an invoice it does not move (closed, absent), on a bank row's link or on a
    /// reversal's refunds is decided again on a consistent read.
    fn stale_holds(&self, plan: &Plan<PaymentEvent>) -> bool {
        let steps = match plan {
            Plan::Done(_) => return true,
            Plan::Write { steps, .. } | Plan::Acknowledge { steps, .. } => steps,
        };
        if self.link.is_some() || self.input.reverses.is_some() {
            return false;
        }
        match &self.invoice_pk {
            None => true,
            Some(invoice) => steps
                .iter()
                .any(|step| matches!(step, Step::Update { pk, .. } if pk == invoice)),
        }
    }

    async fn prepare(&mut self, seen: &Seen) -> Result<(), PaymentError> {
        let new = seen.stored().is_none();
        if new && self.input.reverses.is_none() && self.confirmation.is_none() {
            self.confirmation = Some(self.confirm.confirm(self.input).await);
        }
        // Read again before every decision: one a person resolved meanwhile refuses the write.
        let invoice = self.input.invoice_ref.as_deref();
        if let (true, Some(_), Some(store), Some(id)) =
            (new, &self.input.reverses, self.store, invoice)
        {
            self.refunds = super::credit::open_refunds(store, &self.input.org, id).await?;
        }
        Ok(())
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<PaymentEvent>, PaymentError> {
        if let Some(item) = seen.stored() {
            return Ok(Plan::Done(self.repeat(seen, item)?));
        }
        let input = self.input;
        let [invoice_at, related_at, link_at, sibling_at] = self.slots();
        // The same key booked under the other source: a reused key, never a second payment.
        if let Some(sibling) = sibling_at.and_then(|i| seen.get(i)) {
            return Ok(Plan::Done(reused_by(input, sibling)?));
        }
        let before = invoice_at
            .and_then(|i| seen.get(i))
            .map(Invoice::from_item)
            .transpose()?;
        let related = related_at.map(|i| seen.get(i));
        if let Some(link) = self.link {
            let (field, at) = link.at;
            let now = link_at
                .and_then(|i| seen.get(i))
                .map(|item| item.u64_of(field).unwrap_or(0));
            if now != Some(at) {
                return Err(PaymentError::LinkMoved);
            }
        }
        let decision = match &self.confirmation {
            Some(Confirmation::Unavailable(why)) => {
                return Err(PaymentError::Unconfirmable(why.clone()))
            }
            Some(Confirmation::Refused(why)) => {
                tracing::warn!(%why, "the provider did not confirm the payment; nothing applied");
                unconfirmed(input)
            }
            _ => decide(before.as_ref(), input, counterpart(input, related)?),
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
        let mut steps = steps(input, &event, &decision, before.as_ref(), related);
        steps.extend(self.link.map(|l| (l.step)(&event)));
        steps.extend(self.sibling_pk.clone().map(Step::Absent));
        if event.outcome == super::Outcome::Reversed {
            let taken_back = -decision.applied;
            let org = &input.org;
            steps.extend(super::credit::refunds_reversed(
                org,
                &self.refunds,
                taken_back,
                input.at,
            ));
        }
        Ok(Plan::Write { steps, out: event })
    }
}

/// The payment booked under the other source with the same client's key: a conflict on
/// `source`, never a second payment.
fn reused_by(input: &PaymentInput, sibling: &Item) -> Result<Registered, StoreError> {
    let stored = PaymentEvent::from_item(sibling)?;
    let mismatch = Mismatch {
        fields: vec!["source"],
        stored: stored.fingerprint.clone(),
        received: input.fingerprint(),
    };
    Ok(Written::Conflict { stored, mismatch })
}

/// A client's `Idempotency-Key` names one payment whatever source the body says: the key of
/// the same external id under the other person's source (`manual` ↔ `assistant`), held free.
fn sibling_pk(input: &PaymentInput) -> Option<String> {
    if input.reverses.is_some() {
        return None;
    }
    let other = match input.source {
        super::Source::Manual => super::Source::Assistant,
        super::Source::Assistant => super::Source::Manual,
        _ => return None,
    };
    Some(super::payment_pk(&input.org, &other, &input.external_id))
}

/// What is stored about the counterpart, for the rules.
fn counterpart(input: &PaymentInput, found: Option<Option<&Item>>) -> Result<Related, StoreError> {
    Ok(match (found, &input.reverses) {
        (Some(Some(original)), Some(_)) => Related::Original {
            applied: original.dec_of("applied")?,
        },
        (Some(Some(_)), None) => Related::Reversal,
        _ => Related::Nothing,
    })
}

/// The steps that store `event` and apply `decision` to the invoice as it was read.
fn steps(
    input: &PaymentInput,
    event: &PaymentEvent,
    decision: &Applied,
    before: Option<&Invoice>,
    related: Option<Option<&Item>>,
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
        let number = before.map(|inv| inv.number.as_str());
        steps.push(Step::PutNew(review_for(event, reason, number).to_item()));
    }
    steps
}

/// What the review item of a payment a person must look at holds (`detail`), and what a
/// person's decision on it reads back: its invoice (by number, when it has one), the money
/// received and what of it was not applied, so the item says what it is about.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct KeptMoney {
    pub invoice_id: Option<String>,
    pub invoice_number: Option<String>,
    pub received: Option<String>,
    pub amount: Option<String>,
    /// What was not applied, in the currency's digits.
    #[serde(default)]
    pub unapplied: String,
    pub currency: Option<String>,
}

impl KeptMoney {
    /// The money kept, when there is some.
    pub fn money(&self) -> Option<Decimal> {
        self.unapplied
            .parse::<Decimal>()
            .ok()
            .filter(|a| *a > Decimal::ZERO)
    }
}

/// The review item of a payment a person must look at, holding its [`KeptMoney`].
fn review_for(event: &PaymentEvent, reason: Reason, number: Option<&str>) -> ReviewItem {
    let shown = |a| crate::money::shown(a, event.currency);
    let kept = KeptMoney {
        invoice_id: event.invoice_id.clone(),
        invoice_number: number.map(str::to_owned),
        received: event.received.map(shown),
        amount: event.received.map(shown),
        unapplied: shown(event.unapplied),
        currency: event.currency.as_ref().map(|c| c.as_str().to_owned()),
    };
    ReviewItem {
        org: event.org.clone(),
        kind: Kind::Payment,
        reason,
        key: event.key().to_string(),
        at: event.at,
        detail: serde_json::to_value(kept).unwrap_or_default(),
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
