//! Matching bank rows to invoices, through `register_linked` only: every match, re-match and
//! unmatch is one payment event (a `bank` payment, or its reversal) written in the same
//! transaction as the row's new match state, conditioned on the row's `match_seq`. So:
//!
//! - a row's payment keys are `payment:bank:{tx_id}:{seq}` (the match made at that sequence) and
//!   its reversal `…:{seq}:reversal`: unique in the organisation however often one row moves
//!   between invoices, and a retried request finds its own event;
//! - at any moment a row is matched to at most one invoice, with the amount its payment applied
//!   there, and every earlier match of it is reversed: the money applied across all invoices is
//!   zero or the row's (applied) amount on exactly one invoice;
//! - concurrent requests on one row serialise on `match_seq`: the loser's transaction is refused
//!   whole (nothing written) and it decides again from what the winner left.
//!
//! A re-match is an unmatch then a match, each one transaction; between them the row is matched
//! to nothing, which keeps the invariant.

use super::{BankTx, Match};
use crate::ids::{ExternalId, OrgId};
use crate::payments::invoice::{self, Invoice};
use crate::payments::{
    register_linked, reversal_id, Link, PaymentError, PaymentEvent, PaymentInput, Source,
};
use crate::store::item::{n, s};
use crate::store::write::Rounds;
use crate::store::{Cond, Step, Store, StoreError, Update, Written};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

mod auto;
pub use auto::{auto_match, invoice_numbers, Auto, UNMATCHED};

#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    #[error("no such bank row")]
    NoRow,
    #[error("no such invoice")]
    NoInvoice,
    #[error("the row is a debit: only credits pay invoices")]
    NotACredit,
    #[error("the row is in {row}, the invoice in {invoice}")]
    CurrencyMismatch { row: String, invoice: String },
    #[error("the row is not matched")]
    NotMatched,
    /// A pushed row the statement has not shown yet (possibly forged): matched by hand only
    /// when the person says so.
    #[error("the row is not confirmed by the bank's statement yet")]
    Unconfirmed,
    #[error("the row kept changing; try again")]
    Contended,
    #[error(transparent)]
    Payment(#[from] PaymentError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a match request did.
#[derive(Clone, Debug)]
pub struct Matched {
    /// The row was matched to this invoice already: nothing written.
    pub duplicate: bool,
    pub applied: Decimal,
    pub invoice: Option<Invoice>,
    /// The invoice the row was taken from by a re-match, as it is now.
    pub previous: Option<Invoice>,
}

/// What an unmatch did: the money taken back and the invoice as it is now.
#[derive(Clone, Debug)]
pub struct Unmatched {
    pub reverted: Decimal,
    pub invoice: Option<Invoice>,
}

fn external(tx_id: &str, seq: u64) -> ExternalId {
    ExternalId::parse("external_id", &format!("{tx_id}:{seq}")).expect("a tx id and a number")
}

pub(super) async fn row(store: &Store, org: &OrgId, tx_id: &str) -> Result<BankTx, MatchError> {
    super::get(store, org, tx_id)
        .await?
        .ok_or(MatchError::NoRow)
}

async fn invoice_now(store: &Store, org: &OrgId, id: &str) -> Result<Option<Invoice>, StoreError> {
    store
        .get(&invoice::invoice_pk(org, id))
        .await?
        .map(|item| Invoice::from_item(&item))
        .transpose()
}

/// The payment's link to the row: held while the row is at the sequence it was read at.
fn linked<'a>(tx: &'a BankTx, step: impl Fn(&PaymentEvent) -> Step + Send + Sync + 'a) -> Link<'a> {
    Link {
        pk: tx.pk(),
        at: ("match_seq", tx.match_seq),
        step: Box::new(step),
    }
}

/// The row's next match state, conditioned on the sequence it was read at.
fn link(tx: &BankTx, next: Option<(&str, Decimal, &ExternalId)>) -> Step {
    let seq = tx.match_seq;
    let mut update = Update::new().set("match_seq", n(seq + 1));
    update = match next {
        Some((invoice_id, applied, ext)) => update
            .set("match_invoice", s(invoice_id))
            .set("match_applied", n(applied))
            .set("match_ext", s(ext.as_str())),
        None => update
            .remove("match_invoice")
            .remove("match_applied")
            .remove("match_ext"),
    };
    Step::Update {
        pk: tx.pk(),
        update: update.when(Cond::Equals("match_seq".into(), n(seq))),
    }
}

/// The invoice a row may be matched to: a credit, confirmed by the statement (or the person
/// says so), an invoice of the row's currency.
async fn matchable(
    store: &Store,
    tx: &BankTx,
    invoice_id: &str,
    confirm_unconfirmed: bool,
) -> Result<Invoice, MatchError> {
    if !tx.row.is_credit() {
        return Err(MatchError::NotACredit);
    }
    if tx.confirmed_at.is_none() && !confirm_unconfirmed {
        return Err(MatchError::Unconfirmed);
    }
    let target = invoice_now(store, &tx.org, invoice_id)
        .await?
        .ok_or(MatchError::NoInvoice)?;
    if target.currency != tx.row.currency {
        return Err(MatchError::CurrencyMismatch {
            row: tx.row.currency.as_str().into(),
            invoice: target.currency.as_str().into(),
        });
    }
    Ok(target)
}

/// Matches a credit row to an invoice (a re-match takes the money back from the old invoice
/// first). The same invoice again is a duplicate and writes nothing.
pub async fn match_row(
    store: &Store,
    org: &OrgId,
    tx_id: &str,
    invoice_id: &str,
    (actor, confirm_unconfirmed): (&str, bool),
    now: DateTime<Utc>,
) -> Result<Matched, MatchError> {
    let mut previous = None;
    let mut rounds = Rounds::new();
    while rounds.next().await {
        let tx = row(store, org, tx_id).await?;
        let target = matchable(store, &tx, invoice_id, confirm_unconfirmed).await?;
        match &tx.matched {
            Some(m) if m.invoice_id == invoice_id => {
                return Ok(Matched {
                    duplicate: true,
                    applied: m.applied,
                    invoice: Some(target),
                    previous,
                })
            }
            Some(m) => {
                let old = m.invoice_id.clone();
                match undo(store, &tx, m, actor, now).await {
                    Ok(_) => previous = invoice_now(store, org, &old).await?,
                    Err(MatchError::Payment(PaymentError::LinkMoved)) => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            None => {}
        }
        match apply(store, &tx, invoice_id, actor, now).await? {
            Some(event) => {
                resolve_review(store, org, tx_id, invoice_id, actor, now).await?;
                return Ok(Matched {
                    duplicate: false,
                    applied: event.applied,
                    invoice: invoice_now(store, org, invoice_id).await?,
                    previous,
                });
            }
            None => continue,
        }
    }
    Err(MatchError::Contended)
}

/// The match of an unmatched row, read at its `match_seq`, to `invoice_id`: one payment event
/// and the row's new state in one transaction. `None` when the row moved meanwhile (another
/// request matched or unmatched it): nothing of this request was written, decide again. A
/// retry that finds its own event stored counts only while the row still holds that match.
pub(super) async fn apply(
    store: &Store,
    tx: &BankTx,
    invoice_id: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Option<PaymentEvent>, MatchError> {
    let ext = external(&tx.id(), tx.match_seq + 1);
    let input = PaymentInput {
        org: tx.org.clone(),
        invoice_ref: Some(invoice_id.to_owned()),
        source: Source::Bank,
        external_id: ext.clone(),
        amount: Some(tx.row.amount),
        currency: Some(tx.row.currency),
        at: now,
        actor: actor.to_owned(),
        reverses: None,
        reversible: false,
        via: None,
    };
    let ext_step = ext.clone();
    let step = move |event: &PaymentEvent| link(tx, Some((invoice_id, event.applied, &ext_step)));
    match register_linked(store, &input, &linked(tx, step)).await {
        Ok(Written::New(event)) => Ok(Some(event)),
        Ok(Written::Repeat { stored } | Written::Conflict { stored, .. }) => {
            let now_held = row(store, &tx.org, &tx.id()).await?;
            let ours = now_held
                .matched
                .is_some_and(|m| m.ext == ext.as_str() && m.invoice_id == invoice_id);
            Ok(ours.then_some(stored))
        }
        Err(PaymentError::LinkMoved) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Takes a row's money back from its invoice.
pub async fn unmatch_row(
    store: &Store,
    org: &OrgId,
    tx_id: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Unmatched, MatchError> {
    let mut rounds = Rounds::new();
    while rounds.next().await {
        let tx = row(store, org, tx_id).await?;
        let Some(m) = tx.matched.clone() else {
            return Err(MatchError::NotMatched);
        };
        match undo(store, &tx, &m, actor, now).await {
            // The reversal of the match read is stored (by this request, or by a concurrent
            // unmatch of the same match): the row was unmatched; a later match is later history.
            Ok(reverted) => {
                return Ok(Unmatched {
                    reverted,
                    invoice: invoice_now(store, org, &m.invoice_id).await?,
                });
            }
            Err(MatchError::Payment(PaymentError::LinkMoved)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(MatchError::Contended)
}

/// The reversal of the row's current match, with the row left unmatched: one transaction.
async fn undo(
    store: &Store,
    tx: &BankTx,
    m: &Match,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Decimal, MatchError> {
    let original = ExternalId::parse("external_id", &m.ext).map_err(|e| StoreError::Malformed {
        pk: tx.pk(),
        detail: e.to_string(),
    })?;
    let input = PaymentInput {
        org: tx.org.clone(),
        invoice_ref: Some(m.invoice_id.clone()),
        source: Source::Bank,
        external_id: reversal_id(&original),
        amount: Some(tx.row.amount),
        currency: Some(tx.row.currency),
        at: now,
        actor: actor.to_owned(),
        reverses: Some(original),
        reversible: false,
        via: None,
    };
    let step = |_: &PaymentEvent| link(tx, None);
    let registered = register_linked(store, &input, &linked(tx, step)).await?;
    if !registered.is_new() {
        // The reversal was stored before without the row (a person's `same_money` of an
        // earlier release): the row still names the match it reversed, and leaves it now, held
        // to the sequence read (moved meanwhile, it was moved by another unmatch or match).
        store.transact(vec![link(tx, None)]).await?;
    }
    Ok(-registered.value().applied)
}

/// The row of a bank payment (`{tx_id}:{seq}`, as its event's external id names it) when the
/// row still holds that match: its link to the payment's reversal, which leaves the row
/// unmatched in the reversal's own transaction. `None` for another payment, or a row that moved
/// on (its match reversed already, the reversal stored).
pub async fn reversal_link(
    store: &Store,
    org: &OrgId,
    external_id: &ExternalId,
) -> Result<Option<BankTx>, StoreError> {
    let Some((tx_id, _)) = external_id.as_str().rsplit_once(':') else {
        return Ok(None);
    };
    let Some(tx) = super::get(store, org, tx_id).await? else {
        return Ok(None);
    };
    let holds = tx
        .matched
        .as_ref()
        .is_some_and(|m| m.ext == external_id.as_str());
    Ok(holds.then_some(tx))
}

/// The link that leaves `tx` unmatched with the reversal of its match.
pub fn unlinking(tx: &BankTx) -> Link<'_> {
    linked(tx, |_: &PaymentEvent| link(tx, None))
}

/// A manual match settles what the machine could not decide about the row: its review item
/// leaves the open lists.
async fn resolve_review(
    store: &Store,
    org: &OrgId,
    tx_id: &str,
    invoice_id: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let pk = crate::review::review_item_pk(org, UNMATCHED, tx_id);
    let note = format!("matched to {invoice_id}");
    crate::review::settle(store, org, &pk, actor, &note, now).await?;
    Ok(())
}
