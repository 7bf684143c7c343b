//! The stored payment event: what arrived, what it did, the invoice as it left it, and the first
//! answer to its request. Its item layout is written and read here only: by `register_payment`,
//! by the invoice's payment list, and by the stream fan-out.

use super::invoice::{payments_list_pk, Invoice, InvoiceStatus, Links};
use super::rules::{Decision, Outcome};
use super::{event_key, payment_pk, PaymentInput, Source};
use crate::ids::{EventKey, ExternalId, OrgId};
use crate::money::{self, Currency};
use crate::store::item::{malformed, Builder, Read};
use crate::store::lists as ops;
use crate::store::{Item, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::Value;

/// The stored item's `kind`.
pub const KIND: &str = "payment_event";

/// A stored payment of an invoice, as its payments list shows it (`PaymentLine`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = PaymentLine)]
pub struct PaymentLineView {
    /// `manual`, `assistant`, `bank`, `stripe`, `monobank`, or a standard sender's integration id.
    pub source: String,
    pub external_id: String,
    pub event_key: String,
    pub received: Option<String>,
    pub applied: String,
    pub unapplied: String,
    pub currency: Option<&'static str>,
    pub outcome: Outcome,
    #[schema(format = DateTime)]
    pub at: String,
}

/// The answer to a payment, stored with it and given again to every repeat with
/// `duplicate: true` (`Written::answer` sets it), `applied` zero, and what the first did.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PaymentAnswer {
    pub duplicate: bool,
    pub event_key: String,
    /// What this delivery applied to the invoice: `0.00` for a repeat.
    pub applied: String,
    /// A repeat only: what the first delivery applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_applied: Option<String>,
    /// A repeat only: the first delivery's payment (its event key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    pub outcome: Outcome,
    /// The invoice after the payment (a repeat: as it is now); null when no invoice matched.
    pub invoice: Option<super::invoice::InvoiceView>,
}

/// The invoice as this payment left it, carried on the event so that its consequences are
/// derived from the event alone.
#[derive(Clone, Debug, PartialEq)]
pub struct InvoiceAfter {
    pub number: String,
    pub status: InvoiceStatus,
    pub paid: Decimal,
    pub gross: Decimal,
    /// This payment closed the invoice (it was open before and is paid or void now).
    pub closed_now: bool,
    pub links: Links,
    /// What the first answer shows of the invoice besides: its currency, credit, version and
    /// creation (stored as small fields, so the answer is rebuilt, not stored whole).
    pub currency: Currency,
    pub credited: Decimal,
    pub version: u64,
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PaymentEvent {
    pub org: OrgId,
    pub source: Source,
    pub external_id: ExternalId,
    pub invoice_id: Option<String>,
    pub currency: Option<Currency>,
    pub received: Option<Decimal>,
    pub applied: Decimal,
    pub unapplied: Decimal,
    pub outcome: Outcome,
    pub at: DateTime<Utc>,
    pub actor: String,
    pub fingerprint: String,
    pub reverses: Option<ExternalId>,
    pub invoice: Option<InvoiceAfter>,
    /// The first answer, returned again (with `"duplicate": true`) to every retry.
    pub answer: Value,
    /// The integration it came through, if any.
    pub via: Option<String>,
}

impl PaymentEvent {
    /// The event a decision makes, with the answer its request gets.
    pub fn new(
        input: &PaymentInput,
        decision: &Decision,
        before: Option<&Invoice>,
        after: Option<&Invoice>,
    ) -> Self {
        let invoice = before.zip(after).map(|(before, after)| InvoiceAfter {
            number: before.number.clone(),
            status: after.status,
            paid: after.paid,
            gross: after.gross,
            closed_now: !before.status.is_closed() && after.status.is_closed(),
            links: before.links.clone(),
            currency: after.currency,
            credited: after.credited,
            version: after.version,
            created_at: after.created_at,
        });
        let key = input.event_key();
        Self {
            org: input.org.clone(),
            source: input.source.clone(),
            external_id: input.external_id.clone(),
            invoice_id: before
                .map(|i| i.id.as_str().to_owned())
                .or_else(|| input.invoice_ref.clone()),
            currency: input.currency.or(before.map(|i| i.currency)),
            received: decision.received,
            applied: decision.applied,
            unapplied: decision.unapplied,
            outcome: decision.outcome,
            at: input.at,
            actor: input.actor.clone(),
            fingerprint: input.fingerprint(),
            reverses: input.reverses.clone(),
            invoice,
            via: input.via.clone(),
            answer: serde_json::to_value(PaymentAnswer {
                duplicate: false,
                event_key: key.as_str().to_owned(),
                applied: money::shown(
                    decision.applied,
                    input.currency.or(before.map(|i| i.currency)),
                ),
                first_applied: None,
                payment_id: None,
                outcome: decision.outcome,
                invoice: after.map(Invoice::view),
            })
            .expect("a payment's answer serialises"),
        }
    }

    pub fn key(&self) -> EventKey {
        event_key(&self.source, &self.external_id)
    }

    pub fn pk(&self) -> String {
        payment_pk(&self.org, &self.source, &self.external_id)
    }

    /// The invoice's payments list, or the organisation's unmatched money.
    fn list_pk(&self) -> String {
        match (&self.invoice_id, &self.invoice) {
            (Some(id), Some(_)) => payments_list_pk(&self.org, id),
            _ => self.org.pk("PAYMENTS#UNMATCHED"),
        }
    }

    /// The payment as an invoice's payments list shows it.
    pub fn view(&self) -> PaymentLineView {
        PaymentLineView {
            source: self.source.to_string(),
            external_id: self.external_id.as_str().to_owned(),
            event_key: self.key().as_str().to_owned(),
            received: self.received.map(|a| money::shown(a, self.currency)),
            applied: money::shown(self.applied, self.currency),
            unapplied: money::shown(self.unapplied, self.currency),
            currency: self.currency.as_ref().map(Currency::as_str),
            outcome: self.outcome,
            at: time::format(self.at),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a payment's view serialises")
    }

    /// The first answer as the event's own fields make it: what `new` answered, whenever the
    /// invoice it names is the one it left (always, but for items stored before the answer was
    /// rebuilt). An item keeps the whole answer only where this would differ.
    fn rebuilt_answer(&self) -> Value {
        let invoice = match (&self.invoice, &self.invoice_id) {
            (Some(after), Some(id)) => crate::ids::LocalId::parse("id", id).ok().map(|id| {
                Invoice {
                    org: self.org.clone(),
                    id,
                    number: after.number.clone(),
                    currency: after.currency,
                    gross: after.gross,
                    paid: after.paid,
                    credited: after.credited,
                    status: after.status,
                    version: after.version,
                    links: after.links.clone(),
                    created_at: after.created_at,
                }
                .view()
            }),
            _ => None,
        };
        serde_json::to_value(PaymentAnswer {
            duplicate: false,
            event_key: self.key().as_str().to_owned(),
            applied: money::shown(self.applied, self.currency),
            first_applied: None,
            payment_id: None,
            outcome: self.outcome,
            invoice,
        })
        .expect("a payment's answer serialises")
    }

    pub fn to_item(&self) -> Item {
        let builder = Builder::new(&self.pk(), KIND, self.org.as_str())
            .str("event_key", self.key().as_str())
            .str("source", self.source.to_string())
            .str("external_id", self.external_id.as_str())
            .opt_str("invoice_id", self.invoice_id.as_deref())
            .opt_str("currency", self.currency.as_ref().map(Currency::as_str))
            .opt_num("received", self.received)
            .num("applied", self.applied)
            .num("unapplied", self.unapplied)
            .tag("outcome", &self.outcome)
            .time("at", self.at)
            .str("actor", &self.actor)
            .str("fingerprint", &self.fingerprint)
            // The answer is rebuilt from the fields (`rebuilt_answer`), so it is stored only
            // where that would differ: an item under 1 KB is half the write units, each index's
            // copy of it included.
            .opt_str(
                "answer",
                (self.rebuilt_answer() != self.answer).then(|| self.answer.to_string()),
            )
            .opt_str("reverses", self.reverses.as_ref().map(ExternalId::as_str))
            .opt_str("integration_id", self.via.clone())
            .list(
                &self.list_pk(),
                &format!("{}#{}", time::format(self.at), self.key()),
            )
            .on_events(
                &self.org,
                ops::EventKind::Payment,
                (self.at, self.key().as_str()),
            );
        match &self.invoice {
            None => builder,
            Some(inv) => builder
                .str("invoice_number", &inv.number)
                .tag("invoice_status", &inv.status)
                .num("invoice_paid", inv.paid)
                .num("invoice_gross", inv.gross)
                .bool("closed_invoice", inv.closed_now)
                .opt_str("owner", inv.links.owner.as_deref())
                .opt_str("contact_id", inv.links.contact_id.as_deref())
                .opt_str("deal_id", inv.links.deal_id.as_deref())
                .opt_str("company_id", inv.links.company_id.as_deref())
                .opt_str(
                    "invoice_currency",
                    (Some(inv.currency) != self.currency).then(|| inv.currency.as_str()),
                )
                .opt_num(
                    "invoice_credited",
                    (!inv.credited.is_zero()).then_some(inv.credited),
                )
                .num("invoice_version", inv.version)
                .time("invoice_created", inv.created_at),
        }
        .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |name: &str| malformed(item, name);
        let currency = item
            .opt_str("currency")
            .map(|c| Currency::parse(c).map_err(|_| bad("currency")))
            .transpose()?;
        let invoice = match item.opt_str("invoice_number") {
            None => None,
            Some(number) => Some(InvoiceAfter {
                number: number.to_owned(),
                status: item.tag_of("invoice_status")?,
                paid: item.dec_of("invoice_paid")?,
                gross: item.dec_of("invoice_gross")?,
                closed_now: item.bool_of("closed_invoice"),
                links: Links {
                    owner: item.opt_str("owner").map(str::to_owned),
                    contact_id: item.opt_str("contact_id").map(str::to_owned),
                    deal_id: item.opt_str("deal_id").map(str::to_owned),
                    company_id: item.opt_str("company_id").map(str::to_owned),
                },
                currency: match item.opt_str("invoice_currency") {
                    Some(c) => Currency::parse(c).map_err(|_| bad("invoice_currency"))?,
                    None => currency.ok_or_else(|| bad("currency"))?,
                },
                credited: item.opt_dec("invoice_credited").unwrap_or_default(),
                // Items stored with their whole answer carry none of these; their answer is
                // read as stored.
                version: item.u64_of("invoice_version").unwrap_or(0),
                created_at: item.opt_time("invoice_created").unwrap_or_default(),
            }),
        };
        let external = |name: &str| -> Result<Option<ExternalId>, StoreError> {
            item.opt_str(name)
                .map(|raw| ExternalId::parse("external_id", raw).map_err(|_| bad(name)))
                .transpose()
        };
        let mut event = Self {
            org: OrgId::parse(item.str_of("org")?).map_err(|_| bad("org"))?,
            source: Source::parse(item.str_of("source")?).ok_or_else(|| bad("source"))?,
            external_id: external("external_id")?.ok_or_else(|| bad("external_id"))?,
            invoice_id: item.opt_str("invoice_id").map(str::to_owned),
            currency,
            received: item.opt_dec("received"),
            applied: item.dec_of("applied")?,
            unapplied: item.dec_of("unapplied")?,
            outcome: item.tag_of("outcome")?,
            at: item.time_of("at")?,
            actor: item.str_of("actor")?.to_owned(),
            fingerprint: item.str_of("fingerprint")?.to_owned(),
            reverses: external("reverses")?,
            invoice,
            answer: Value::Null,
            via: item.opt_str("integration_id").map(str::to_owned),
        };
        event.answer = match item.opt_str("answer") {
            Some(stored) => serde_json::from_str(stored).map_err(|_| bad("answer"))?,
            None => event.rebuilt_answer(),
        };
        Ok(event)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::payments::rules::decide;
    use crate::payments::Related;
    use rust_decimal_macros::dec;

    pub(crate) fn sample(closed: bool) -> PaymentEvent {
        let org = OrgId::parse("o0123456789ab").unwrap();
        let invoice = Invoice {
            org: org.clone(),
            id: crate::ids::LocalId::parse("id", "inv_1").unwrap(),
            number: "INV-00001".into(),
            currency: Currency::parse("UAH").unwrap(),
            gross: if closed { dec!(40) } else { dec!(100) },
            paid: dec!(0),
            credited: rust_decimal::Decimal::ZERO,
            status: InvoiceStatus::Open,
            version: 0,
            links: Links {
                owner: None,
                contact_id: Some("c1".into()),
                deal_id: Some("d1".into()),
                company_id: None,
            },
            created_at: time::from_unix(1_800_000_000).unwrap(),
        };
        let input = PaymentInput {
            org,
            invoice_ref: Some("inv_1".into()),
            source: Source::Stripe,
            external_id: ExternalId::parse("id", "pi_1").unwrap(),
            amount: Some(dec!(40)),
            currency: None,
            at: time::from_unix(1_800_000_000).unwrap(),
            actor: "test".into(),
            reverses: None,
            reversible: false,
            via: None,
        };
        let decision = decide(Some(&invoice), &input, Related::Nothing);
        let change = decision.change.unwrap();
        let after = Invoice {
            paid: change.paid,
            status: change.status,
            version: 1,
            ..invoice.clone()
        };
        PaymentEvent::new(&input, &decision, Some(&invoice), Some(&after))
    }

    #[test]
    fn the_item_reads_back_as_the_event_it_was_written_from() {
        for closed in [false, true] {
            let event = sample(closed);
            assert_eq!(PaymentEvent::from_item(&event.to_item()).unwrap(), event);
        }
    }

    #[test]
    fn the_answer_is_rebuilt_from_the_fields_and_the_item_stays_under_a_kilobyte() {
        // The longest source: a Standard Webhooks sender's integration id.
        let mut event = sample(true);
        event.source = Source::parse("o0123456789ab_9a188af13079fdf632f69789db2484c2").unwrap();
        event.external_id = ExternalId::parse("id", "pay_0123456789abcdef").unwrap();
        event.answer = event.rebuilt_answer();
        let item = event.to_item();
        assert_eq!(item.get("answer"), None, "rebuilt, not stored");
        let size = crate::store::item::size(&item);
        assert!(size < 1024, "{size} bytes: {item:?}");
        assert_eq!(PaymentEvent::from_item(&item).unwrap(), event);
        // An item stored with its whole answer reads it as stored.
        let mut old = event.to_item();
        old.insert("answer".into(), crate::store::item::s(r#"{"as":"stored"}"#));
        assert_eq!(
            PaymentEvent::from_item(&old).unwrap().answer,
            serde_json::json!({"as": "stored"})
        );
    }

    #[test]
    fn an_item_missing_an_attribute_is_malformed_not_empty() {
        let mut item = sample(true).to_item();
        item.remove("applied");
        let err = PaymentEvent::from_item(&item).unwrap_err();
        assert!(err.to_string().contains("applied"), "{err}");
    }

    #[test]
    fn a_repeat_applied_nothing_and_names_what_the_first_applied() {
        use crate::store::Written;
        let event = sample(false);
        let first = Written::New(event.clone()).answer();
        let again = Written::Repeat { stored: event }.answer();
        assert_eq!(first["duplicate"], false);
        assert_eq!(again["duplicate"], true);
        assert_ne!(first["applied"], "0.00");
        assert_eq!(again["applied"], "0.00");
        assert_eq!(again["first_applied"], first["applied"]);
        assert_eq!(again["payment_id"], first["event_key"]);
        assert_eq!(again["invoice"], first["invoice"]);
        assert_eq!(first["event_key"], "payment:stripe:pi_1");
    }
}
