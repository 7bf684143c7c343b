use super::*;
use crate::ids::{ExternalId, LocalId, OrgId};
use crate::money::Currency;
use crate::payments::invoice::Links;
use crate::payments::{PaymentInput, Source};
use crate::review::Reason;
use proptest::prelude::*;
use rust_decimal_macros::dec;
use std::collections::HashMap;

fn invoice(gross: Decimal, paid: Decimal, status: InvoiceStatus) -> Invoice {
    Invoice {
        org: OrgId::parse("o0123456789ab").unwrap(),
        id: LocalId::parse("id", "inv_1").unwrap(),
        number: "INV-00001".into(),
        currency: Currency::parse("UAH").unwrap(),
        gross,
        paid,
        credited: rust_decimal::Decimal::ZERO,
        status,
        version: 3,
        links: Links::default(),
        created_at: chrono::DateTime::UNIX_EPOCH,
    }
}

fn payment(key: &str, amount: Option<Decimal>) -> PaymentInput {
    PaymentInput {
        org: OrgId::parse("o0123456789ab").unwrap(),
        invoice_ref: Some("inv_1".into()),
        source: Source::Stripe,
        external_id: ExternalId::parse("id", key).unwrap(),
        amount,
        currency: None,
        at: chrono::DateTime::UNIX_EPOCH,
        actor: "test".into(),
        reverses: None,
        reversible: false,
        via: None,
    }
}

#[test]
fn a_partial_payment_moves_open_to_partially_paid() {
    let inv = invoice(dec!(100), dec!(0), InvoiceStatus::Open);
    let d = decide(Some(&inv), &payment("p1", Some(dec!(40))), Related::Nothing);
    assert_eq!(d.outcome, Outcome::Applied);
    assert_eq!(d.applied, dec!(40));
    assert_eq!(
        d.change,
        Some(Change {
            paid: dec!(40),
            status: InvoiceStatus::PartiallyPaid
        })
    );
}

#[test]
fn the_last_partial_closes_the_invoice() {
    let inv = invoice(dec!(100), dec!(60), InvoiceStatus::PartiallyPaid);
    let d = decide(Some(&inv), &payment("p2", Some(dec!(40))), Related::Nothing);
    assert_eq!(d.change.unwrap().status, InvoiceStatus::Paid);
}

#[test]
fn no_amount_applies_only_what_is_still_open() {
    let inv = invoice(dec!(100), dec!(70), InvoiceStatus::PartiallyPaid);
    let d = decide(Some(&inv), &payment("p3", None), Related::Nothing);
    assert_eq!(d.applied, dec!(30));
    assert_eq!(d.received, Some(dec!(30)));
    assert_eq!(d.change.unwrap().paid, dec!(100));
}

#[test]
fn an_overpayment_keeps_the_excess_unapplied_for_review() {
    let inv = invoice(dec!(100), dec!(90), InvoiceStatus::PartiallyPaid);
    let d = decide(Some(&inv), &payment("p4", Some(dec!(25))), Related::Nothing);
    assert_eq!(d.outcome, Outcome::Overpaid);
    assert_eq!((d.applied, d.unapplied), (dec!(10), dec!(15)));
    assert_eq!(d.change.unwrap().paid, dec!(100));
    assert_eq!(
        d.outcome.review_reason().map(Reason::name),
        Some("overpayment")
    );
}

#[test]
fn a_payment_for_a_closed_invoice_applies_nothing() {
    for (status, outcome) in [
        (InvoiceStatus::Paid, Outcome::InvoiceClosed),
        (InvoiceStatus::Void, Outcome::InvoiceVoid),
    ] {
        let inv = invoice(dec!(100), dec!(100), status);
        let d = decide(Some(&inv), &payment("p5", Some(dec!(5))), Related::Nothing);
        assert_eq!((d.outcome, d.applied, d.change), (outcome, dec!(0), None));
        assert_eq!(d.unapplied, dec!(5));
    }
}

#[test]
fn another_currency_applies_nothing() {
    let inv = invoice(dec!(100), dec!(0), InvoiceStatus::Open);
    let mut p = payment("p6", Some(dec!(5)));
    p.currency = Some(Currency::parse("EUR").unwrap());
    let d = decide(Some(&inv), &p, Related::Nothing);
    assert_eq!((d.outcome, d.applied), (Outcome::CurrencyMismatch, dec!(0)));
}

#[test]
fn an_amount_the_invoice_currency_cannot_hold_is_not_rounded_in() {
    let inv = invoice(dec!(100), dec!(0), InvoiceStatus::Open);
    let d = decide(
        Some(&inv),
        &payment("p8", Some(dec!(5.005))),
        Related::Nothing,
    );
    assert_eq!((d.outcome, d.applied), (Outcome::CurrencyMismatch, dec!(0)));
    let d = decide(
        Some(&inv),
        &payment("p9", Some(dec!(5.050))),
        Related::Nothing,
    );
    assert_eq!((d.outcome, d.applied), (Outcome::Applied, dec!(5.05)));
}

#[test]
fn an_unknown_invoice_is_unmatched() {
    let d = decide(None, &payment("p7", Some(dec!(5))), Related::Nothing);
    assert_eq!((d.outcome, d.applied), (Outcome::Unmatched, dec!(0)));
    assert_eq!(
        d.outcome.review_reason().map(Reason::name),
        Some("unknown_invoice")
    );
}

#[test]
fn a_reversal_takes_back_what_the_payment_applied() {
    let inv = invoice(dec!(100), dec!(100), InvoiceStatus::Paid);
    let mut p = payment("p8:reversal", None);
    p.reverses = Some(ExternalId::parse("id", "p8").unwrap());
    let d = decide(Some(&inv), &p, Related::Original { applied: dec!(60) });
    assert_eq!((d.outcome, d.applied), (Outcome::Reversed, dec!(-60)));
    assert_eq!(
        d.change,
        Some(Change {
            paid: dec!(40),
            status: InvoiceStatus::PartiallyPaid
        })
    );
}

#[test]
fn a_payment_arriving_after_its_reversal_applies_nothing() {
    let inv = invoice(dec!(100), dec!(0), InvoiceStatus::Open);
    let d = decide(
        Some(&inv),
        &payment("p10", Some(dec!(100))),
        Related::Reversal,
    );
    assert_eq!(
        (d.outcome, d.applied, d.change),
        (Outcome::ReversedBeforePayment, dec!(0), None)
    );
    assert_eq!(
        d.outcome.review_reason().map(Reason::name),
        Some("reversed_before_payment")
    );
}

#[test]
fn a_reversal_without_its_payment_is_for_review() {
    let inv = invoice(dec!(100), dec!(0), InvoiceStatus::Open);
    let mut p = payment("p9:reversal", None);
    p.reverses = Some(ExternalId::parse("id", "p9").unwrap());
    let d = decide(Some(&inv), &p, Related::Nothing);
    assert_eq!((d.outcome, d.change), (Outcome::ReversalUnmatched, None));
}

#[test]
fn a_reversal_for_an_unknown_invoice_is_stored_as_money_going_back() {
    let mut p = payment("p11:reversal", Some(dec!(42)));
    p.reverses = Some(ExternalId::parse("id", "p11").unwrap());
    let d = decide(None, &p, Related::Nothing);
    assert_eq!(
        (d.outcome, d.received, d.applied, d.unapplied),
        (
            Outcome::ReversalUnmatched,
            Some(dec!(-42)),
            dec!(0),
            dec!(-42)
        )
    );
    let unknown = decide(None, &payment("p12", Some(dec!(42))), Related::Nothing);
    assert_eq!(unknown.received, Some(dec!(42)), "a payment stays positive");
}

/// A delivery in a generated sequence: which payment (its key) and what it carries.
#[derive(Clone, Debug)]
struct Delivery {
    key: u8,
    amount: Option<Decimal>,
}

fn deliveries() -> impl Strategy<Value = Vec<Delivery>> {
    // Each key always carries the same amount (a repeat is a repeat); keys repeat and reorder.
    (
        proptest::collection::vec(proptest::option::of(1u32..8000), 8),
        proptest::collection::vec(0u8..8, 0..40),
    )
        .prop_map(|(amounts, order)| {
            order
                .into_iter()
                .map(|key| Delivery {
                    key,
                    amount: amounts[key as usize].map(|cents| Decimal::new(cents.into(), 2)),
                })
                .collect()
        })
}

proptest! {
    #[test]
    fn paid_is_the_sum_of_applied_over_distinct_events(seq in deliveries(), gross_cents in 1u32..20000) {
        let gross = Decimal::new(gross_cents.into(), 2);
        let mut inv = invoice(gross, dec!(0), InvoiceStatus::Open);
        let mut events: HashMap<u8, Decision> = HashMap::new();
        for delivery in &seq {
            if events.contains_key(&delivery.key) {
                continue; // the conditional put refuses a stored key
            }
            let d = decide(Some(&inv), &payment(&format!("k{}", delivery.key), delivery.amount), Related::Nothing);
            if let Some(change) = d.change {
                inv.paid = change.paid;
                inv.status = change.status;
            }
            events.insert(delivery.key, d);
        }
        let applied: Decimal = events.values().map(|d| d.applied).sum();
        prop_assert_eq!(inv.paid, applied);
        prop_assert!(inv.paid <= gross);
        prop_assert!(events.values().all(|d| d.applied >= Decimal::ZERO));
        let distinct: std::collections::HashSet<u8> = seq.iter().map(|d| d.key).collect();
        prop_assert_eq!(events.len(), distinct.len());
        prop_assert_eq!(inv.status, status_for(inv.paid, gross));
    }
}

#[test]
fn a_credited_invoice_is_paid_by_what_the_credit_left_open() {
    let mut inv = invoice(dec!(100), dec!(0), InvoiceStatus::Open);
    inv.credited = dec!(30);
    let d = decide(
        Some(&inv),
        &payment("p-net", Some(dec!(80))),
        Related::Nothing,
    );
    assert_eq!(
        (d.outcome, d.applied, d.unapplied),
        (Outcome::Overpaid, dec!(70), dec!(10))
    );
    assert_eq!(d.change.map(|c| c.status), Some(InvoiceStatus::Paid));
}
