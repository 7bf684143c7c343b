//! Credit notes and void: documents made on purpose (a copy on purpose is a new document, not a
//! retry). A credit note is keyed by its request's `Idempotency-Key`; its number comes from its
//! own gap-free series (`CN-00001`), taken in the one transaction that stores the note and moves
//! the invoice (conditioned on the version read). What it credits on the unpaid part lowers what
//! is open; what it credits on the paid part leaves the invoice paid and is a refund a person
//! makes (`refund_due`). The total credited never exceeds the invoice's gross.

use super::invoice::{invoice_pk, take_number, Invoice, InvoiceStatus, Links};
use super::rules::status_for;
use crate::consequences::{Consequence, Fired, Notification, Trigger};
use crate::ids::{key_part, EventKey, ExternalId, LocalId, OrgId};
use crate::money::{self, Currency};
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::item::{n, s, tag_name, Builder, Read};
use crate::store::lists::EventKind;
use crate::store::{
    Answer, Cond, Decision, Item, Mismatch, Plan, Seen, Step, Store, StoreError, Update, Written,
};
use crate::time;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// The stored item's `kind`: one of the event kinds the stream hands to the fan-out.
pub const KIND: &str = "credit_note";

/// At most this many lines on one note.
pub const LINES_MAX: usize = 100;

/// One line of a credit note: what is credited, and how much.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditLine {
    pub description: String,
    pub amount: Decimal,
}

/// What a request asks to credit, checked at the edge (the amount against the invoice here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCreditNote {
    pub org: OrgId,
    pub invoice_id: String,
    /// The request's `Idempotency-Key`: the note's identity.
    pub key: ExternalId,
    /// `None`: the lines' sum, or without lines all that is still creditable.
    pub amount: Option<Decimal>,
    pub reason: String,
    pub lines: Vec<CreditLine>,
    pub actor: String,
    pub at: DateTime<Utc>,
}

impl NewCreditNote {
    fn pk(&self) -> String {
        self.org
            .pk(&format!("CREDIT_NOTE#{}", key_part(self.key.as_str())))
    }

    pub fn event_key(&self) -> EventKey {
        EventKey::new(KIND, self.key.as_str())
    }

    /// What the request says: the same key with another body is another request.
    fn fingerprint(&self) -> String {
        let canonical = json!([self.invoice_id, self.amount, self.reason, self.lines]);
        hex::encode(Sha256::digest(canonical.to_string()))[..32].to_owned()
    }
}

/// A stored credit note.
#[derive(Clone, Debug, PartialEq)]
pub struct CreditNote {
    pub org: OrgId,
    pub id: LocalId,
    pub number: String,
    pub key: ExternalId,
    pub invoice_id: String,
    pub invoice_number: String,
    pub amount: Decimal,
    pub currency: Currency,
    pub reason: String,
    pub lines: Vec<CreditLine>,
    /// The part credited on what was paid already: money a person gives back.
    pub refund_due: Decimal,
    pub links: Links,
    pub actor: String,
    pub at: DateTime<Utc>,
    pub fingerprint: String,
    /// The invoice as this note left it.
    pub invoice: Value,
}

fn list_pk(org: &OrgId, invoice_id: &str) -> String {
    org.pk(&format!("INVOICE#{invoice_id}#CREDIT_NOTES"))
}

/// A credit note as every answer shows it: the type the answers are made of and the OpenAPI
/// document describes (`CreditNote`).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = CreditNote)]
pub struct CreditNoteView {
    #[schema(example = "cn_0123456789abcdef")]
    pub credit_note_id: String,
    #[schema(example = "CN-00001")]
    pub number: String,
    pub invoice_id: String,
    #[schema(example = "30.00")]
    pub amount: String,
    pub currency: &'static str,
    pub reason: String,
    pub lines: Vec<CreditNoteLineView>,
    /// The part credited on what was already paid: a refund a person makes (`refund_due`).
    pub refund_due: String,
    /// The API key that issued it.
    pub actor: String,
    #[schema(format = DateTime)]
    pub at: String,
}

/// A credit note's line as answers show it (`CreditNoteLine`).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = CreditNoteLine)]
pub struct CreditNoteLineView {
    pub description: String,
    pub amount: String,
}

impl CreditNote {
    pub fn event_key(&self) -> EventKey {
        EventKey::new(KIND, self.key.as_str())
    }

    pub fn to_item(&self) -> Item {
        let pk = self
            .org
            .pk(&format!("CREDIT_NOTE#{}", key_part(self.key.as_str())));
        Builder::new(&pk, KIND, self.org.as_str())
            .str("credit_note_id", self.id.as_str())
            .str("number", &self.number)
            .str("idempotency_key", self.key.as_str())
            .str("invoice_id", &self.invoice_id)
            .str("invoice_number", &self.invoice_number)
            .num("amount", self.amount)
            .str("currency", self.currency.as_str())
            .str("reason", &self.reason)
            .str(
                "lines",
                serde_json::to_string(&self.lines).unwrap_or_default(),
            )
            .num("refund_due", self.refund_due)
            .opt_str("owner", self.links.owner.clone())
            .opt_str("contact_id", self.links.contact_id.clone())
            .opt_str("deal_id", self.links.deal_id.clone())
            .opt_str("company_id", self.links.company_id.clone())
            .str("actor", &self.actor)
            .time("at", self.at)
            .str("fingerprint", &self.fingerprint)
            .str("invoice", self.invoice.to_string())
            .list(
                &list_pk(&self.org, &self.invoice_id),
                &format!("{}#{}", time::format(self.at), self.number),
            )
            .on_events(
                &self.org,
                EventKind::CreditNote,
                (self.at, self.event_key().as_str()),
            )
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |detail: String| crate::store::item::malformed(item, &detail);
        let json_of = |name: &str| -> Result<Value, StoreError> {
            serde_json::from_str(item.str_of(name)?).map_err(|e| bad(format!("{name}: {e}")))
        };
        let text = |name: &str| item.opt_str(name).map(str::to_owned);
        Ok(Self {
            org: OrgId::parse(item.str_of("org")?).map_err(|e| bad(e.to_string()))?,
            id: LocalId::parse("credit_note_id", item.str_of("credit_note_id")?)
                .map_err(|e| bad(e.to_string()))?,
            number: item.str_of("number")?.to_owned(),
            key: ExternalId::parse("idempotency_key", item.str_of("idempotency_key")?)
                .map_err(|e| bad(e.to_string()))?,
            invoice_id: item.str_of("invoice_id")?.to_owned(),
            invoice_number: item.str_of("invoice_number")?.to_owned(),
            amount: item.dec_of("amount")?,
            currency: Currency::parse(item.str_of("currency")?).map_err(|e| bad(e.to_string()))?,
            reason: item.str_of("reason")?.to_owned(),
            lines: serde_json::from_value(json_of("lines")?).map_err(|e| bad(e.to_string()))?,
            refund_due: item.dec_of("refund_due")?,
            links: Links {
                owner: text("owner"),
                contact_id: text("contact_id"),
                deal_id: text("deal_id"),
                company_id: text("company_id"),
            },
            actor: item.str_of("actor")?.to_owned(),
            at: item.time_of("at")?,
            fingerprint: item.str_of("fingerprint")?.to_owned(),
            invoice: json_of("invoice")?,
        })
    }

    /// The note as every answer shows it.
    pub fn view(&self) -> CreditNoteView {
        CreditNoteView {
            credit_note_id: self.id.as_str().to_owned(),
            number: self.number.clone(),
            invoice_id: self.invoice_id.clone(),
            amount: self.currency.show(self.amount),
            currency: self.currency.as_str(),
            reason: self.reason.clone(),
            lines: self
                .lines
                .iter()
                .map(|l| CreditNoteLineView {
                    description: l.description.clone(),
                    amount: self.currency.show(l.amount),
                })
                .collect(),
            refund_due: self.currency.show(self.refund_due),
            actor: self.actor.clone(),
            at: time::format(self.at),
        }
    }

    /// An activity line on each record the invoice links to, a notification to its owner (the
    /// team when none), and `credit_note.created` for the rules: each keyed by the note.
    pub fn consequences(&self) -> Vec<Consequence> {
        let key = self.event_key();
        let mut text = format!(
            "Credit note {} for {}: {} {} ({})",
            self.number,
            self.invoice_number,
            self.currency.show(self.amount),
            self.currency.as_str(),
            self.reason
        );
        if !self.refund_due.is_zero() {
            text.push_str(&format!(
                "; {} {} to refund",
                self.currency.show(self.refund_due),
                self.currency.as_str()
            ));
        }
        let mut out = self.links.activity(
            &self.org,
            key.as_str(),
            ("credit_note", None),
            &text,
            self.at,
        );
        out.push(
            Notification {
                org: self.org.clone(),
                key: key.clone(),
                recipient: self.links.owner.clone(),
                text,
                at: self.at,
            }
            .into(),
        );
        out.push(
            Fired {
                org: self.org.clone(),
                trigger: Trigger::CreditNoteCreated,
                event_key: key,
                at: self.at,
                context: json!({
                    "credit_note_id": self.id.as_str(), "number": self.number,
                    "invoice_id": self.invoice_id, "amount": self.currency.show(self.amount),
                    "refund_due": self.currency.show(self.refund_due),
                    "contact_id": self.links.contact_id, "owner": self.links.owner,
                }),
            }
            .into(),
        );
        out
    }
}

impl Answer for CreditNote {
    /// The note, and the invoice as it left it.
    fn answer(&self) -> Value {
        let answer = CreditNoteIssued {
            duplicate: false,
            note: self.view(),
            invoice: self.invoice.clone(),
        };
        serde_json::to_value(answer).expect("a credit note's answer serialises")
    }
}

/// The answer to a credit note: the note and the invoice as it left it (`duplicate`, set by
/// the arrival: `Written::answer`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct CreditNoteIssued {
    pub duplicate: bool,
    #[serde(flatten)]
    pub note: CreditNoteView,
    /// As stored with the note.
    #[schema(value_type = super::invoice::InvoiceView)]
    pub invoice: Value,
}

#[derive(Debug, Error)]
pub enum CreditError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such invoice")]
    NoInvoice,
    /// A draft is not issued yet, a void invoice owes nothing.
    #[error("a credit note credits an issued invoice; this one is {0}")]
    NotIssued(String),
    #[error("the credit notes would exceed the invoice: at most {0} is left to credit")]
    Exceeds(String),
    #[error("{0}")]
    Amount(String),
}

/// How issuing a credit note ended: stored now, or the note stored under its key.
pub type Issued = Written<CreditNote>;

/// Issues a credit note once per key: the note, its number and the invoice's balance in one
/// transaction; a refund due is a review item in the same transaction.
pub async fn issue(store: &Store, new: &NewCreditNote) -> Result<Issued, CreditError> {
    store.write(&mut issuing(new), new.at).await
}

/// A credit note's decision, for a caller that writes it with more (a request's record).
pub fn issuing(new: &NewCreditNote) -> impl Decision<Out = CreditNote, Error = CreditError> + '_ {
    Issue { new }
}

struct Issue<'a> {
    new: &'a NewCreditNote,
}

impl Issue<'_> {
    fn counter_pk(&self) -> String {
        self.new.org.pk("COUNTER#credit_note")
    }

    /// The amount asked, checked against what the invoice has left to credit.
    fn amount(&self, invoice: &Invoice) -> Result<Decimal, CreditError> {
        let creditable = invoice.net();
        let lines: Decimal = self.new.lines.iter().map(|l| l.amount).sum();
        let amount = match (self.new.amount, self.new.lines.is_empty()) {
            (Some(amount), true) => amount,
            (Some(amount), false) if amount == lines => amount,
            (Some(_), false) => {
                return Err(CreditError::Amount(
                    "amount must equal the sum of the lines' amounts".into(),
                ))
            }
            (None, false) => lines,
            (None, true) => creditable,
        };
        invoice
            .currency
            .check(amount)
            .map_err(|e| CreditError::Amount(e.to_string()))?;
        if amount <= Decimal::ZERO {
            return Err(CreditError::Exceeds(invoice.currency.show(creditable)));
        }
        if amount > creditable {
            return Err(CreditError::Exceeds(invoice.currency.show(creditable)));
        }
        Ok(amount)
    }
}

impl Decision for Issue<'_> {
    type Out = CreditNote;
    type Error = CreditError;

    fn keys(&self) -> Vec<String> {
        let new = self.new;
        vec![
            new.pk(),
            self.counter_pk(),
            invoice_pk(&new.org, &new.invoice_id),
        ]
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<CreditNote>, CreditError> {
        let new = self.new;
        if let Some(item) = seen.stored() {
            let stored = CreditNote::from_item(item)?;
            let mismatch = Mismatch::of(
                &stored.fingerprint,
                &new.fingerprint(),
                &[("invoice_id", stored.invoice_id != new.invoice_id)],
            );
            return Ok(Plan::Done(Written::again(stored, mismatch)));
        }
        let invoice = seen
            .get(2)
            .map(Invoice::from_item)
            .transpose()?
            .ok_or(CreditError::NoInvoice)?;
        if matches!(invoice.status, InvoiceStatus::Draft | InvoiceStatus::Void) {
            return Err(CreditError::NotIssued(tag_name(&invoice.status)));
        }
        let amount = self.amount(&invoice)?;
        let on_unpaid = amount.min(invoice.open());
        let credited = invoice.credited + amount;
        let after = Invoice {
            credited,
            status: status_for(invoice.paid, invoice.gross - credited),
            version: invoice.version + 1,
            ..invoice.clone()
        };
        let (number, count) = take_number(&new.org, &self.counter_pk(), seen.get(1))?;
        let note = CreditNote {
            org: new.org.clone(),
            id: LocalId::generate("cn_"),
            number: format!("CN-{number:05}"),
            key: new.key.clone(),
            invoice_id: new.invoice_id.clone(),
            invoice_number: invoice.number.clone(),
            amount,
            currency: invoice.currency,
            reason: new.reason.clone(),
            lines: new.lines.clone(),
            refund_due: amount - on_unpaid,
            links: invoice.links.clone(),
            actor: new.actor.clone(),
            at: new.at,
            fingerprint: new.fingerprint(),
            invoice: after.to_json(),
        };
        let steps = steps(&note, count, &invoice, &after);
        Ok(Plan::Write { steps, out: note })
    }
}

/// The note, its number, the invoice moved from the version read, and a refund due if any:
/// one transaction.
fn steps(note: &CreditNote, count: Step, before: &Invoice, after: &Invoice) -> Vec<Step> {
    let mut steps = vec![
        Step::PutNew(note.to_item()),
        count,
        Step::Update {
            pk: before.pk(),
            update: Update::new()
                .set("credited", n(after.credited))
                .set("status", s(tag_name(&after.status)))
                .set("version", n(after.version))
                .set("updated_at", s(time::format(note.at)))
                .when(Cond::Equals("version".into(), n(before.version))),
        },
    ];
    if !note.refund_due.is_zero() {
        steps.push(Step::PutNew(refund_due(note).to_item()));
    }
    steps
}

/// The money a person gives back: the part of a note credited on what was paid.
fn refund_due(note: &CreditNote) -> ReviewItem {
    ReviewItem {
        org: note.org.clone(),
        kind: Kind::Payment,
        reason: Reason::RefundDue,
        key: note.event_key().to_string(),
        at: note.at,
        detail: json!({
            "credit_note_id": note.id.as_str(),
            "number": note.number,
            "invoice_id": note.invoice_id,
            "refund_due": note.currency.show(note.refund_due),
            "currency": note.currency.as_str(),
        }),
    }
}

/// The open `refund_due` items of an invoice's credit notes, oldest first: what a reversal of
/// its payments may settle (`refunds_reversed`).
pub async fn open_refunds(
    store: &Store,
    org: &OrgId,
    invoice_id: &str,
) -> Result<Vec<Item>, StoreError> {
    let notes = list_for_invoice(store, org, invoice_id).await?;
    let pks: Vec<String> = notes
        .iter()
        .filter(|n| !n.refund_due.is_zero())
        .map(|n| refund_due(n).pk())
        .collect();
    if pks.is_empty() {
        return Ok(Vec::new());
    }
    Ok(store
        .get_many(&pks)
        .await?
        .into_iter()
        .flatten()
        .filter(|i| {
            i.opt_str("state") == Some("open") && i.opt_str(crate::review::APPLYING).is_none()
        })
        .collect())
}

/// What a reversal that took back `taken_back` does to the open refunds: the customer got that
/// money back from their bank, so a refund it covers is resolved by `system` with the note
/// `reversed`, and the first it does not cover asks for less (`detail.refund_due` lowered).
/// Each step holds to the item as it was read (open, its detail unchanged), in the reversal's
/// own transaction.
pub fn refunds_reversed(
    org: &OrgId,
    refunds: &[Item],
    taken_back: Decimal,
    now: DateTime<Utc>,
) -> Vec<Step> {
    let mut left = taken_back;
    let (mut steps, mut resolved) = (Vec::new(), Vec::new());
    for item in refunds {
        let (Some(pk), Some(raw)) = (item.opt_str("pk"), item.opt_str("detail")) else {
            continue;
        };
        let mut detail: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
        let due = detail["refund_due"]
            .as_str()
            .and_then(|d| d.parse::<Decimal>().ok())
            .unwrap_or_default();
        if left <= Decimal::ZERO || due <= Decimal::ZERO {
            break;
        }
        let held = Cond::All(vec![
            Cond::Equals("state".into(), s("open")),
            Cond::Lacks(crate::review::APPLYING.into()),
            Cond::Equals("detail".into(), s(raw)),
        ]);
        let update = if left >= due {
            resolved.push(pk);
            crate::review::resolution(org, pk, ("system", "reversed", None), now).when(held)
        } else {
            let currency = detail["currency"]
                .as_str()
                .and_then(|c| Currency::parse(c).ok());
            detail["refund_due"] = json!(money::shown(due - left, currency));
            Update::new()
                .set("detail", s(detail.to_string()))
                .when(held)
        };
        left -= due.min(left);
        steps.push(Step::Update {
            pk: pk.to_owned(),
            update,
        });
    }
    steps.extend(crate::store::counters::resolved_many(org, &resolved));
    steps
}

/// An invoice's credit notes, oldest first.
pub async fn list_for_invoice(
    store: &Store,
    org: &OrgId,
    invoice_id: &str,
) -> Result<Vec<CreditNote>, StoreError> {
    store
        .list(&list_pk(org, invoice_id), false, 1000)
        .await?
        .iter()
        .map(CreditNote::from_item)
        .collect()
}

#[derive(Debug, Error)]
pub enum VoidError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such invoice")]
    NoInvoice,
    /// Only a draft is voided: an issued invoice is corrected by a credit note.
    #[error("only a draft invoice can be voided (this one is {0}); credit an issued one")]
    NotDraft(String),
}

/// Voiding a draft invoice, as a decision: its one read, and one update held to the version
/// read (a lost condition reads again). A void invoice is a repeat: the same answer, nothing
/// written.
struct Void<'a> {
    org: &'a OrgId,
    id: &'a str,
}

impl Decision for Void<'_> {
    type Out = Invoice;
    type Error = VoidError;

    fn keys(&self) -> Vec<String> {
        vec![invoice_pk(self.org, self.id)]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Invoice>, VoidError> {
        let invoice = match seen.stored() {
            Some(item) => Invoice::from_item(item)?,
            None => return Err(VoidError::NoInvoice),
        };
        match invoice.status {
            InvoiceStatus::Void => return Ok(Plan::Done(Written::Repeat { stored: invoice })),
            InvoiceStatus::Draft => {}
            other => return Err(VoidError::NotDraft(tag_name(&other))),
        }
        let update = Update::new()
            .set("status", s(tag_name(&InvoiceStatus::Void)))
            .set("version", n(invoice.version + 1))
            .set("updated_at", s(time::format(now)))
            .when(Cond::Equals("version".into(), n(invoice.version)));
        let steps = vec![Step::Update {
            pk: invoice.pk(),
            update,
        }];
        let out = Invoice {
            status: InvoiceStatus::Void,
            version: invoice.version + 1,
            ..invoice
        };
        Ok(Plan::Write { steps, out })
    }
}

/// Voids a draft invoice: new, or a repeat when it was void already. A void invoice takes no
/// payment (`invoice_void`).
pub async fn void(
    store: &Store,
    org: &OrgId,
    id: &str,
    now: DateTime<Utc>,
) -> Result<Written<Invoice>, VoidError> {
    store.write(&mut voiding(org, id)?, now).await
}

/// A void's decision, for a caller that writes it with more (a request's record): refused
/// `NoInvoice` for an id no invoice can have.
pub fn voiding<'a>(
    org: &'a OrgId,
    id: &'a str,
) -> Result<impl Decision<Out = Invoice, Error = VoidError> + 'a, VoidError> {
    if LocalId::parse("invoice_id", id).is_err() {
        return Err(VoidError::NoInvoice);
    }
    Ok(Void { org, id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    fn note(refund_due: Decimal) -> CreditNote {
        CreditNote {
            org: OrgId::parse("o0123456789ab").unwrap(),
            id: LocalId::parse("id", "cn_1").unwrap(),
            number: "CN-00001".into(),
            key: ExternalId::parse("key", "cn-key-1").unwrap(),
            invoice_id: "inv_1".into(),
            invoice_number: "INV-00001".into(),
            amount: dec!(30),
            currency: Currency::parse("UAH").unwrap(),
            reason: "returned goods".into(),
            lines: vec![CreditLine {
                description: "one chair".into(),
                amount: dec!(30),
            }],
            refund_due,
            links: Links {
                owner: Some("u1".into()),
                contact_id: Some("ct_1".into()),
                ..Links::default()
            },
            actor: "key_1".into(),
            at: chrono::DateTime::UNIX_EPOCH,
            fingerprint: "f".into(),
            invoice: json!({"id": "inv_1"}),
        }
    }

    #[test]
    fn a_note_reads_back_as_itself_and_its_consequences_are_keyed_by_it() {
        let note = note(dec!(10));
        assert_eq!(CreditNote::from_item(&note.to_item()).unwrap(), note);
        let keys: Vec<String> = note.consequences().iter().map(Consequence::key).collect();
        assert_eq!(
            keys,
            [
                "activity:contact:ct_1:credit_note:cn-key-1",
                "notification:credit_note:cn-key-1",
                "trigger:credit_note.created:credit_note:cn-key-1"
            ]
        );
        assert!(refund_due(&note).detail["refund_due"] == "10.00");
    }
}
