//! `register_payment` against ministack: each rule, and the races.

use crate::support::app::Crm;
use chrono::Utc;
use firmspace::ids::{ExternalId, OrgId};
use firmspace::money::Currency;
use firmspace::payments::invoice;
use firmspace::payments::{
    register_payment, Invoice, InvoiceStatus, PaymentInput, Registered, Source,
};
use firmspace::store::item::s;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::Value;

fn input(org: &OrgId, invoice_id: &str, key: &str, amount: Option<Decimal>) -> PaymentInput {
    PaymentInput {
        org: org.clone(),
        invoice_ref: Some(invoice_id.to_owned()),
        source: Source::Manual,
        external_id: ExternalId::parse("id", key).unwrap(),
        amount,
        currency: Some(Currency::parse("UAH").unwrap()),
        at: Utc::now(),
        actor: "test".into(),
        reverses: None,
        reversible: false,
        via: None,
    }
}

/// A fresh organisation and an open UAH invoice of `gross`.
async fn with_invoice(gross: Decimal) -> (Crm, Invoice) {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(gross, "UAH").await;
    (crm, inv)
}

/// The manual payment `key` of `amount` for `inv`, registered.
async fn pay(crm: &Crm, inv: &Invoice, key: &str, amount: Option<Decimal>) -> Registered {
    register_payment(crm.store(), &input(&crm.org, inv.id.as_str(), key, amount))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_second_delivery_of_a_payment_applies_nothing() {
    let (crm, inv) = with_invoice(dec!(100)).await;
    let first = pay(&crm, &inv, "p1", Some(dec!(40))).await;
    assert!(matches!(first, Registered::New(ref record) if record.applied == dec!(40)));
    let second = pay(&crm, &inv, "p1", Some(dec!(40))).await;
    assert!(matches!(second, Registered::Repeat { ref stored } if stored.applied == dec!(40)));
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!(
        (after.paid, after.version, after.status),
        (dec!(40), 1, InvoiceStatus::PartiallyPaid)
    );
    assert_eq!(crm.count("payment_event").await, 1);
}

#[tokio::test]
async fn fifty_concurrent_identical_deliveries_book_one_payment() {
    let (crm, inv) = with_invoice(dec!(100)).await;
    let payment = input(&crm.org, inv.id.as_str(), "p_same", Some(dec!(40)));
    let results =
        futures::future::join_all((0..50).map(|_| register_payment(crm.store(), &payment))).await;
    let booked = results
        .iter()
        .filter(|r| matches!(r, Ok(Registered::New(_))))
        .count();
    let duplicates = results
        .iter()
        .filter(|r| matches!(r, Ok(Registered::Repeat { .. })))
        .count();
    assert_eq!(
        (booked, duplicates),
        (1, 49),
        "no twin may fail: {results:?}"
    );
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.version), (dec!(40), 1));
    assert_eq!(crm.count("payment_event").await, 1);
}

#[tokio::test]
async fn twenty_concurrent_partial_payments_all_apply() {
    let (crm, inv) = with_invoice(dec!(1000)).await;
    let payments: Vec<_> = (0..20)
        .map(|i| {
            input(
                &crm.org,
                inv.id.as_str(),
                &format!("part_{i}"),
                Some(dec!(25)),
            )
        })
        .collect();
    let results =
        futures::future::join_all(payments.iter().map(|p| register_payment(crm.store(), p))).await;
    assert!(
        results.iter().all(|r| matches!(r, Ok(Registered::New(_)))),
        "{results:?}"
    );
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.version), (dec!(500), 20));
    assert_eq!(crm.count("payment_event").await, 20);
}

#[tokio::test]
async fn a_payment_without_amount_applies_what_is_open_and_closes_the_invoice() {
    let (crm, inv) = with_invoice(dec!(100)).await;
    pay(&crm, &inv, "a", Some(dec!(30))).await;
    pay(&crm, &inv, "b", None).await;
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.status), (dec!(100), InvoiceStatus::Paid));
    // Once paid, a further payment without an amount applies nothing: never the gross again.
    let again = pay(&crm, &inv, "c", None).await;
    assert!(
        matches!(again, Registered::New(ref record) if record.applied.is_zero() && record.outcome == firmspace::payments::Outcome::InvoiceClosed)
    );
    assert_eq!(crm.stored_invoice(inv.id.as_str()).await.paid, dec!(100));
    assert_eq!(crm.count("review").await, 1);
}

#[tokio::test]
async fn an_overpayment_caps_paid_at_gross_and_asks_for_review() {
    let (crm, inv) = with_invoice(dec!(100)).await;
    let out = pay(&crm, &inv, "big", Some(dec!(130))).await;
    let Registered::New(record) = out else {
        panic!("booked")
    };
    assert_eq!((record.applied, record.unapplied), (dec!(100), dec!(30)));
    assert_eq!(
        crm.stored_invoice(inv.id.as_str()).await.status,
        InvoiceStatus::Paid
    );
    let review = crm.review().await;
    assert_eq!(review.len(), 1);
    assert_eq!(review[0]["reason"], "overpayment");
    assert_eq!(review[0]["detail"]["unapplied"], "30.00");
    // It says in words what it is about: the invoice by its number, the money received.
    let about = review[0]["about"].as_str().unwrap_or_default();
    assert!(
        about.starts_with("overpayment: ")
            && about.contains(&format!("invoice {}", inv.number))
            && about.contains("130.00"),
        "{about}"
    );
}

#[tokio::test]
async fn another_currency_and_an_unknown_invoice_are_stored_with_applied_zero() {
    let (crm, inv) = with_invoice(dec!(100)).await;
    let mut euros = input(&crm.org, inv.id.as_str(), "eur", Some(dec!(10)));
    euros.currency = Some(Currency::parse("EUR").unwrap());
    register_payment(crm.store(), &euros).await.unwrap();
    register_payment(
        crm.store(),
        &input(&crm.org, "inv_doesnotexist", "lost", Some(dec!(10))),
    )
    .await
    .unwrap();
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.version), (dec!(0), 0));
    assert_eq!(crm.count("payment_event").await, 2);
    let reasons = crm.reasons().await;
    for reason in ["currency_mismatch", "unknown_invoice"] {
        assert!(reasons.contains(&reason.to_owned()), "{reasons:?}");
    }
}

#[tokio::test]
async fn a_reversal_is_booked_once_and_gives_the_balance_back_once() {
    let (crm, inv) = with_invoice(dec!(100)).await;
    pay(&crm, &inv, "mono1", Some(dec!(100))).await;
    let mut reversal = input(&crm.org, inv.id.as_str(), "mono1:reversal", Some(dec!(100)));
    reversal.reverses = Some(ExternalId::parse("id", "mono1").unwrap());
    register_payment(crm.store(), &reversal).await.unwrap();
    let again = register_payment(crm.store(), &reversal).await.unwrap();
    assert!(matches!(again, Registered::Repeat { .. }));
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!(
        (after.paid, after.status, after.version),
        (dec!(0), InvoiceStatus::Open, 2)
    );
}

fn new_invoice(contact_id: Option<String>) -> firmspace::payments::NewInvoice {
    firmspace::payments::NewInvoice {
        currency: Currency::parse("UAH").unwrap(),
        gross: dec!(10),
        status: InvoiceStatus::Open,
        links: firmspace::payments::invoice::Links {
            contact_id,
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn an_invoice_whose_write_fails_uses_up_no_number() {
    let crm = Crm::new().await;
    let org = crm.org.clone();
    // Past the API's limits, only DynamoDB can refuse it: an item over 400 KB.
    let oversize = invoice::create(
        crm.store(),
        &org,
        new_invoice(Some("c".repeat(500 * 1024))),
        Utc::now(),
    )
    .await;
    assert!(oversize.is_err());
    let next = invoice::create(crm.store(), &org, new_invoice(None), Utc::now())
        .await
        .unwrap();
    assert_eq!(next.number, "INV-00001");
    assert_eq!(crm.count("invoice").await, 1);
}

#[tokio::test]
async fn invoices_created_at_once_get_consecutive_numbers() {
    let crm = Crm::new().await;
    let org = crm.org.clone();
    let created = futures::future::join_all(
        (0..8).map(|_| invoice::create(crm.store(), &org, new_invoice(None), Utc::now())),
    )
    .await;
    let mut numbers: Vec<String> = created.into_iter().map(|c| c.unwrap().number).collect();
    numbers.sort();
    let expected: Vec<String> = (1..=8).map(|n| format!("INV-{n:05}")).collect();
    assert_eq!(numbers, expected);
}

#[tokio::test]
async fn invoices_listed_whole_before_their_list_held_keys_alone_are_listed_with_the_new_ones() {
    let (crm, old) = with_invoice(dec!(100)).await;
    // As an invoice was stored before: its list on the first index, whole.
    let mut item = old.to_item();
    item.remove("gsi3pk");
    let sk = item.remove("gsi3sk").expect("a place on the list");
    item.insert("gsi1pk".into(), s(crm.org.pk("INVOICES")));
    item.insert("gsi1sk".into(), sk);
    crm.env.store.replace(item).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let new = crate::support::fixtures::invoice(&crm.env, &crm.org, dec!(40), "UAH").await;
    // A payment on the old one changes it where it is listed.
    pay(&crm, &old, "old-1", Some(dec!(30))).await;
    let listed = crm
        .expect_status("GET", "/api/invoices", Value::Null, 200)
        .await;
    let shown: Vec<(&str, &str)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["number"].as_str().unwrap(), i["paid"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            (new.number.as_str(), "0.00"),
            (old.number.as_str(), "30.00")
        ],
        "newest first, each once: {listed}"
    );
}
