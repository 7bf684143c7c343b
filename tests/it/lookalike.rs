//! Lookalike money goes to a person and is never merged: a payment booked on an invoice is
//! held against the money of the same amount and currency that reached the same invoice or the
//! same contact within a week of it, either way (`possible_same_money`); `distinct` moves nothing,
//! `same_money` reverses the later payment once.

use crate::support::api::ADMIN;
use crate::support::queues::event_of;
use crate::support::{fixtures, TestEnv};
use chrono::{DateTime, Duration, Utc};
use firmspace::effects::{activity, Consequence};
use firmspace::ids::{ExternalId, OrgId};
use firmspace::money::Currency;
use firmspace::payments::invoice::{self, Invoice, Links};
use firmspace::payments::{
    register, InvoiceStatus, NewInvoice, PaymentEvent, PaymentInput, Source,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::{json, Value};

async fn invoice_of(env: &TestEnv, org: &OrgId, contact: &str) -> Invoice {
    let links = Links {
        contact_id: Some(contact.to_owned()),
        ..Links::default()
    };
    let new = NewInvoice {
        currency: Currency::parse("UAH").unwrap(),
        gross: dec!(100),
        status: InvoiceStatus::Open,
        links,
    };
    invoice::create(&env.store, org, new, Utc::now())
        .await
        .unwrap()
}

/// A payment booked on `invoice`, and what its consequences do: its activity lines appended,
/// its lookalike check through the match worker (twice: a redelivery). The review items filed.
async fn booked(
    env: &TestEnv,
    invoice: &Invoice,
    (source, id, amount): (Source, &str, Decimal),
    at: DateTime<Utc>,
) -> Vec<Value> {
    let input = PaymentInput {
        org: invoice.org.clone(),
        invoice_ref: Some(invoice.id.as_str().to_owned()),
        source,
        external_id: ExternalId::parse("id", id).unwrap(),
        amount: Some(amount),
        currency: Some(Currency::parse("UAH").unwrap()),
        at,
        actor: "provider".into(),
        reverses: None,
        reversible: true,
        via: None,
    };
    register::register_payment(&env.store, &input)
        .await
        .unwrap();
    let stored = env.store.get(&input.pk()).await.unwrap().unwrap();
    let worker = match_worker::app(env.store.clone(), 5);
    for consequence in PaymentEvent::from_item(&stored).unwrap().consequences() {
        match &consequence {
            Consequence::Activity(line) => {
                activity::append(&env.store, line).await.unwrap();
            }
            Consequence::Lookalike(_) => {
                let body = serde_json::to_string(&consequence).unwrap();
                for copy in ["1", "2"] {
                    let out = worker.process(event_of(copy, &body), Utc::now()).await;
                    assert!(out.batch_item_failures.is_empty(), "{out:?}");
                }
            }
            _ => {}
        }
    }
    lookalikes(env, &invoice.org).await
}

async fn lookalikes(env: &TestEnv, org: &OrgId) -> Vec<Value> {
    firmspace::review::list(&env.store, org, 50)
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.reason.as_deref() == Some("possible_same_money"))
        .map(|i| serde_json::to_value(i).unwrap())
        .collect()
}

async fn paid(env: &TestEnv, invoice: &Invoice) -> Decimal {
    invoice::get(&env.store, &invoice.org, invoice.id.as_str())
        .await
        .unwrap()
        .unwrap()
        .paid
}

#[tokio::test]
async fn a_card_payment_and_the_same_money_on_a_bank_row_the_next_day_go_to_a_person() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let invoice = invoice_of(&env, &org, "ct_olena").await;
    let day = Utc::now() - Duration::days(2);
    let card = (Source::Stripe, "pi_card", dec!(30));
    assert!(
        booked(&env, &invoice, card, day).await.is_empty(),
        "nothing before it"
    );
    let bank = (Source::Bank, "row_77", dec!(30));
    let items = booked(&env, &invoice, bank, day + Duration::days(1)).await;
    assert_eq!(
        items.len(),
        1,
        "one item, a redelivered check files nothing more: {items:?}"
    );
    let item = &items[0];
    assert_eq!(
        item["key"], "payment:bank:row_77",
        "filed for the later payment"
    );
    let named = item["detail"]["lookalikes"].as_array().unwrap();
    assert_eq!(named.len(), 1, "{item}");
    assert_eq!(
        (
            named[0]["source"].as_str(),
            named[0]["external_id"].as_str(),
            named[0]["amount"].as_str()
        ),
        (Some("stripe"), Some("pi_card"), Some("30.00")),
        "{item}"
    );
    assert!(named[0]["at"].as_str().is_some(), "{item}");
    assert_eq!(paid(&env, &invoice).await, dec!(60), "nothing is unbooked");
    assert!(
        item["about"]
            .as_str()
            .unwrap()
            .contains("bank payment row_77"),
        "{item}"
    );
    // Another amount, or money older than a week: no lookalike.
    let other = (Source::Manual, "cash-1", dec!(10));
    assert_eq!(
        booked(&env, &invoice, other, day + Duration::days(1))
            .await
            .len(),
        1
    );
    let late = (Source::Manual, "cash-2", dec!(30));
    assert_eq!(
        booked(&env, &invoice, late, day + Duration::days(9))
            .await
            .len(),
        1,
        "8 days after the last 30.00: nothing new"
    );
}

/// The lookalike check of the payment booked `key`, run again (a check delayed behind the
/// payment booked after it, or redelivered): the review items then.
async fn checked_again(env: &TestEnv, invoice: &Invoice, pk: &str) -> Vec<Value> {
    let stored = env.store.get(pk).await.unwrap().unwrap();
    let worker = match_worker::app(env.store.clone(), 5);
    for consequence in PaymentEvent::from_item(&stored).unwrap().consequences() {
        if let Consequence::Lookalike(_) = &consequence {
            let body = serde_json::to_string(&consequence).unwrap();
            let out = worker.process(event_of("late", &body), Utc::now()).await;
            assert!(out.batch_item_failures.is_empty(), "{out:?}");
        }
    }
    lookalikes(env, &invoice.org).await
}

#[tokio::test]
async fn money_booked_after_a_lookalike_that_happened_later_goes_to_a_person_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let invoice = invoice_of(&env, &org, "ct_taras").await;
    let day = Utc::now() - Duration::days(3);
    // The bank row first; the card payment it followed is recovered from Stripe after it.
    let bank = (Source::Bank, "row_9", dec!(45));
    assert!(booked(&env, &invoice, bank, day + Duration::days(1))
        .await
        .is_empty());
    let card = (Source::Stripe, "pi_late", dec!(45));
    let items = booked(&env, &invoice, card, day).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["key"], "payment:stripe:pi_late", "{items:?}");
    let named = items[0]["detail"]["lookalikes"].to_string();
    assert!(named.contains("row_9"), "{named}");
    // The bank row's check again, now that the card payment is booked: the pair is with a
    // person already, so nothing more is filed.
    use firmspace::store::item::Read;
    let row = env
        .items_of(firmspace::payments::event::KIND)
        .await
        .into_iter()
        .find(|i| i.opt_str("external_id") == Some("row_9"))
        .expect("the bank row's payment");
    let pk = row.opt_str("pk").unwrap().to_owned();
    assert_eq!(checked_again(&env, &invoice, &pk).await.len(), 1);
}

#[tokio::test]
async fn a_person_answers_distinct_and_nothing_moves_or_same_money_and_the_later_one_is_reversed() {
    let o = crate::ops::Ops::new().await;
    let env = &o.env;
    let org = fixtures::org(env).await.id;
    // Two invoices of one contact: the same 25.00 on each, a day apart.
    let (first, second) = (
        invoice_of(env, &org, "ct_ivan").await,
        invoice_of(env, &org, "ct_ivan").await,
    );
    let day = Utc::now() - Duration::days(1);
    booked(env, &first, (Source::Stripe, "pi_a", dec!(25)), day).await;
    let items = booked(
        env,
        &second,
        (Source::Manual, "cash-a", dec!(25)),
        day + Duration::hours(20),
    )
    .await;
    assert_eq!(items.len(), 1, "the same contact's money: {items:?}");
    assert_eq!(
        items[0]["detail"]["lookalikes"][0]["event_key"],
        "payment:stripe:pi_a"
    );
    // A third lookalike on the first invoice, for `distinct`.
    booked(
        env,
        &first,
        (Source::Manual, "cash-b", dec!(25)),
        day + Duration::hours(21),
    )
    .await;
    let items = lookalikes(env, &org).await;
    assert_eq!(items.len(), 2, "{items:?}");
    let reason = firmspace::review::Reason::PossibleSameMoney;
    let o = &o;
    let resolve = |key: &str, body: Value| {
        let pk = firmspace::review::review_item_pk(&org, reason, key);
        let path = format!("/ops/review/{}/resolve", firmspace::ops::ids::encode(&pk));
        let request = format!("resolve-{key}");
        async move { o.post(&path, ADMIN, &request, &body).await }
    };
    let (status, answer) = resolve(
        "payment:manual:cash-b",
        json!({"decision": "distinct", "note": "two orders"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(paid(env, &first).await, dec!(50), "distinct moves nothing");
    let (status, answer) = resolve(
        "payment:manual:cash-a",
        json!({"decision": "same_money", "note": "one transfer"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["reversal"].is_object(), "{answer}");
    assert_eq!(
        paid(env, &second).await,
        dec!(0),
        "the later payment reversed once"
    );
    assert_eq!(paid(env, &first).await, dec!(50), "the earlier one stays");
    // `distinct` on another reason is refused.
    let proposal = firmspace::review::ReviewItem {
        org: org.clone(),
        kind: firmspace::review::Kind::Payment,
        reason: firmspace::review::Reason::Overpayment,
        key: "payment:manual:x".into(),
        at: Utc::now(),
        detail: json!({}),
    };
    proposal.put(&env.store).await.unwrap();
    let path = format!(
        "/ops/review/{}/resolve",
        firmspace::ops::ids::encode(&proposal.pk())
    );
    let body = json!({"decision": "distinct", "note": "x"});
    let (status, refused) = o.post(&path, ADMIN, "distinct-x", &body).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_decision")),
        "{refused}"
    );
}

/// A bank row matched by hand, and the same money by card before it: `same_money` on the row's
/// payment reverses it and leaves the row unmatched in one transaction, so the row can be
/// matched again (not refused as contended, nor told it moved money it did not).
#[tokio::test]
async fn same_money_on_a_bank_rows_payment_leaves_the_row_unmatched() {
    use crate::bank::matching::{check, row};
    use firmspace::bank::{self, matching};
    let o = crate::ops::Ops::new().await;
    let env = &o.env;
    let org = fixtures::org(env).await.id;
    let (card_on, other) = (
        invoice_of(env, &org, "ct_mila").await,
        invoice_of(env, &org, "ct_mila").await,
    );
    let day = Utc::now() - Duration::days(1);
    booked(env, &card_on, (Source::Stripe, "pi_mila", dec!(30)), day).await;
    let tx = row(env, &org, "r-mila", dec!(30), "transfer").await;
    let tx_id = tx.id();
    let asked = ("person", true);
    let matched = matching::match_row(
        &env.store,
        &org,
        &tx_id,
        card_on.id.as_str(),
        asked,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(matched.applied, dec!(30));
    let payment = firmspace::payments::payment_pk(
        &org,
        &Source::Bank,
        &ExternalId::parse("id", &format!("{tx_id}:1")).unwrap(),
    );
    let items = checked_again(env, &card_on, &payment).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let key = items[0]["key"].as_str().unwrap().to_owned();
    assert_eq!(key, format!("payment:bank:{tx_id}:1"));

    let reason = firmspace::review::Reason::PossibleSameMoney;
    let pk = firmspace::review::review_item_pk(&org, reason, &key);
    let path = format!("/ops/review/{}/resolve", firmspace::ops::ids::encode(&pk));
    let body = json!({"decision": "same_money", "note": "one transfer"});
    let (status, answer) = o.post(&path, ADMIN, "same-mila", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["reversal"].is_object(), "{answer}");
    assert_eq!(
        paid(env, &card_on).await,
        dec!(30),
        "the card's money alone"
    );
    let now = bank::get(&env.store, &org, &tx_id).await.unwrap().unwrap();
    assert!(
        now.matched.is_none(),
        "the row left its match: {:?}",
        now.matched
    );
    let invoices = [card_on.id.as_str().to_owned(), other.id.as_str().to_owned()];
    check(env, &org, &tx_id, &invoices).await;

    // The row is free: matched to the other invoice, its money there once.
    let again = matching::match_row(
        &env.store,
        &org,
        &tx_id,
        other.id.as_str(),
        asked,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!((again.duplicate, again.applied), (false, dec!(30)));
    assert_eq!(paid(env, &other).await, dec!(30));
    check(env, &org, &tx_id, &invoices).await;
}
