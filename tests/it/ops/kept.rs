//! A person's decision on money a payment kept applies once: a payment for an unknown invoice
//! put on the invoice a person names (ten clicks at once: one payment), an overpayment's excess
//! on another invoice, and a second payment the person says is the same money as the first
//! reversed once.

use super::{org_by_key, Ops};
use crate::support::fixtures;
use chrono::Utc;
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::payments::providers::Provider;
use futures::future::join_all;
use rust_decimal_macros::dec;
use serde_json::{json, Value};

/// A payment of `amount` UAH for `invoice` (`pay_id` its provider id), through the webhook.
async fn pay(o: &Ops, hook: &IntegrationId, invoice: &str, pay_id: &str, amount: &str) {
    let app = payment_webhook::app(o.env.store.clone());
    let body = fixtures::standard_body(pay_id, invoice, Some(amount));
    let req = fixtures::standard_request_with_id(
        hook,
        &body,
        Utc::now().timestamp(),
        &format!("m-{pay_id}"),
    );
    assert_eq!(app.handle(req).await.unwrap().status(), 200);
}

/// The open review item of `reason`: its id and key.
async fn open_item(o: &Ops, key: &str, reason: &str) -> (String, String) {
    let (_, open) = o.get("/ops/review?state=open&limit=200", key).await;
    let item = open["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["reason"] == reason)
        .unwrap_or_else(|| panic!("no open {reason}: {open}"))
        .clone();
    (
        item["id"].as_str().unwrap().to_owned(),
        item["key"].as_str().unwrap().to_owned(),
    )
}

async fn paid(o: &Ops, org: &OrgId, invoice: &str) -> String {
    let found = firmspace::payments::invoice::get(&o.env.store, org, invoice)
        .await
        .unwrap()
        .unwrap();
    firmspace::money::display(found.paid)
}

fn resolve(id: &str) -> String {
    format!("/ops/review/{id}/resolve")
}

#[tokio::test]
async fn money_kept_for_review_goes_on_the_invoice_a_person_names_once() {
    let o = Ops::new().await;
    let (key, org) = org_by_key(&o).await;
    let hook = fixtures::integration(&o.env, &org, Provider::Standard).await;
    let target = fixtures::invoice(&o.env, &org, dec!(100), "UAH").await;
    let dollars = fixtures::invoice(&o.env, &org, dec!(100), "USD").await;
    let target_id = target.id.as_str().to_owned();

    // 40.00 for an invoice that does not exist: kept, unknown_invoice.
    pay(&o, &hook, "inv_0000000000000000", "pi_lost", "40.00").await;
    let (id, _) = open_item(&o, &key, "unknown_invoice").await;
    let (status, refused) = o
        .post(&resolve(&id), &key, "k-none", &json!({"decision": "apply"}))
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_field"))
    );
    let wrong = json!({"decision": "apply", "invoice_id": dollars.id.as_str()});
    let (status, refused) = o.post(&resolve(&id), &key, "k-usd", &wrong).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("currency_mismatch")),
        "{refused}"
    );
    // A payment that named no amount kept none: nothing to apply, and it can still be dismissed.
    let empty = firmspace::review::ReviewItem {
        org: org.clone(),
        kind: firmspace::review::Kind::Payment,
        reason: firmspace::review::Reason::InvoiceClosed,
        key: "payment:stripe:pi_no_amount".into(),
        at: Utc::now(),
        detail: json!({"invoice_id": target_id, "unapplied": "0.00", "currency": "UAH"}),
    };
    assert!(empty.put(&o.env.store).await.unwrap());
    let (empty_id, _) = open_item(&o, &key, "invoice_closed").await;
    let apply = json!({"decision": "apply", "invoice_id": target_id});
    let (status, refused) = o.post(&resolve(&empty_id), &key, "k-empty", &apply).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("nothing_kept"))
    );
    let dismiss = json!({"decision": "dismiss"});
    assert_eq!(
        o.post(&resolve(&empty_id), &key, "k-dismiss", &dismiss)
            .await
            .0,
        200
    );

    // Ten clicks at once, each its own request: one payment of 40.00, the item resolved.
    let body = json!({"decision": "apply", "invoice_id": target_id});
    let clicks = join_all((0..10).map(|i| {
        let (path, body) = (resolve(&id), body.clone());
        let key = key.clone();
        let o = &o;
        async move { o.post(&path, &key, &format!("click-{i}"), &body).await }
    }))
    .await;
    assert!(
        clicks.iter().all(|(s, _)| [200, 409].contains(s)),
        "{clicks:?}"
    );
    assert!(
        clicks
            .iter()
            .any(|(s, a)| *s == 200 && a["payment"].is_object()),
        "{clicks:?}"
    );
    assert_eq!(paid(&o, &org, &target_id).await, "40.00");
    let (_, resolved) = o.get("/ops/review?state=resolved", &key).await;
    assert_eq!(resolved["items"][0]["decision"], "apply", "{resolved}");

    // An overpayment: 15.00 on a 10.00 invoice; its 5.00 excess goes on the target.
    let small = fixtures::invoice(&o.env, &org, dec!(10), "UAH").await;
    pay(&o, &hook, small.id.as_str(), "pi_over", "15.00").await;
    let (over, _) = open_item(&o, &key, "overpayment").await;
    let (status, answer) = o.post(&resolve(&over), &key, "k-over", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(paid(&o, &org, &target_id).await, "45.00");
    assert_eq!(paid(&o, &org, small.id.as_str()).await, "10.00");
}

#[tokio::test]
async fn a_second_payment_said_to_be_the_same_money_is_reversed_once() {
    let o = Ops::new().await;
    let (key, org) = org_by_key(&o).await;
    let hook = fixtures::integration(&o.env, &org, Provider::Standard).await;
    let invoice = fixtures::invoice(&o.env, &org, dec!(100), "UAH").await;
    let id = invoice.id.as_str();
    pay(&o, &hook, id, "pi_first", "60.00").await;
    // The customer's bank sent it twice: 40.00 applied, 20.00 kept as an overpayment.
    pay(&o, &hook, id, "pi_again", "60.00").await;
    assert_eq!(paid(&o, &org, id).await, "100.00");
    let (item, item_key) = open_item(&o, &key, "overpayment").await;
    let first = item_key.replace("pi_again", "pi_first");
    // A payment kept whole (its invoice closed) put nothing on it: nothing to take back.
    pay(&o, &hook, id, "pi_late", "5.00").await;
    let (late, late_key) = open_item(&o, &key, "invoice_closed").await;
    let same_as_first =
        json!({"decision": "same_money", "as": late_key.replace("pi_late", "pi_first")});
    let (status, refused) = o
        .post(&resolve(&late), &key, "s-late", &same_as_first)
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("nothing_to_reverse")),
        "{refused}"
    );
    let itself = json!({"decision": "same_money", "as": item_key});
    let (status, refused) = o.post(&resolve(&item), &key, "s-self", &itself).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_field"))
    );
    let unknown = json!({"decision": "same_money", "as": item_key.replace("pi_again", "pi_none")});
    assert_eq!(
        o.post(&resolve(&item), &key, "s-none", &unknown).await.0,
        404
    );

    let same = json!({"decision": "same_money", "as": first});
    let path = resolve(&item);
    let (a, b) = tokio::join!(
        o.post(&path, &key, "s-1", &same),
        o.post(&path, &key, "s-2", &same),
    );
    let answers: Vec<&Value> = [&a, &b].iter().map(|(_, v)| v).collect();
    assert!(
        [a.0, b.0].contains(&200) && [a.0, b.0].iter().all(|s| [200, 409].contains(s)),
        "{answers:?}"
    );
    assert_eq!(
        paid(&o, &org, id).await,
        "60.00",
        "the second payment's 40.00 taken back"
    );
    let reversals = o
        .env
        .items_of("payment_event")
        .await
        .into_iter()
        .filter(|i| i.get("reverses").is_some())
        .count();
    assert_eq!(reversals, 1, "one keyed reversal");
}

/// The provider's reversal of the payment `key` names (`payment:SOURCE:ID`), booked as its
/// webhook books one, and its consequences' kept-money follow-up through the match worker twice.
async fn reversed(o: &Ops, org: &OrgId, key: &str) {
    use firmspace::effects::Consequence;
    use firmspace::payments::{register, PaymentEvent, PaymentInput, Source};
    let (source, id) = key
        .strip_prefix("payment:")
        .unwrap()
        .rsplit_once(':')
        .unwrap();
    let original = firmspace::ids::ExternalId::parse("id", id).unwrap();
    let source = Source::parse(source).unwrap();
    let input = PaymentInput {
        org: org.clone(),
        invoice_ref: None,
        external_id: firmspace::payments::reversal_id(&original),
        source,
        amount: None,
        currency: None,
        at: Utc::now(),
        actor: "provider".into(),
        reverses: Some(original),
        reversible: false,
        via: None,
    };
    let input = register::on_its_payments_invoice(&o.env.store, input)
        .await
        .unwrap();
    register::register_payment(&o.env.store, &input)
        .await
        .unwrap();
    let stored = o.env.store.get(&input.pk()).await.unwrap().unwrap();
    let worker = match_worker::app(o.env.store.clone(), 5);
    let follow: Vec<Consequence> = PaymentEvent::from_item(&stored)
        .unwrap()
        .consequences()
        .into_iter()
        .filter(|c| matches!(c, Consequence::Unkeep(_)))
        .collect();
    assert_eq!(follow.len(), 1, "a reversal's kept money follows it");
    let body = serde_json::to_string(&follow[0]).unwrap();
    for copy in ["1", "2"] {
        let event = crate::support::queues::event_of(copy, &body);
        let out = worker.process(event, Utc::now()).await;
        assert!(out.batch_item_failures.is_empty(), "{out:?}");
    }
}

#[tokio::test]
async fn kept_money_a_person_applied_follows_the_reversal_of_its_payment_once() {
    let o = Ops::new().await;
    let (key, org) = org_by_key(&o).await;
    let hook = fixtures::integration(&o.env, &org, Provider::Standard).await;
    let small = fixtures::invoice(&o.env, &org, dec!(10), "UAH").await;
    let target = fixtures::invoice(&o.env, &org, dec!(100), "UAH").await;
    // 15.00 on a 10.00 invoice: its 5.00 excess put on the target by a person.
    pay(&o, &hook, small.id.as_str(), "pi_over", "15.00").await;
    let (over, over_key) = open_item(&o, &key, "overpayment").await;
    let body = json!({"decision": "apply", "invoice_id": target.id.as_str()});
    let (status, answer) = o.post(&resolve(&over), &key, "k-over", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(paid(&o, &org, target.id.as_str()).await, "5.00");
    // The provider reverses the payment: what it applied and what a person put elsewhere go back.
    reversed(&o, &org, &over_key).await;
    assert_eq!(paid(&o, &org, small.id.as_str()).await, "0.00");
    assert_eq!(
        paid(&o, &org, target.id.as_str()).await,
        "0.00",
        "the kept 5.00 taken back once, however often the follow-up came"
    );
    // Money kept and not yet applied when its payment is reversed can no longer be applied.
    pay(&o, &hook, "inv_0000000000000000", "pi_lost", "40.00").await;
    let (lost, lost_key) = open_item(&o, &key, "unknown_invoice").await;
    reversed(&o, &org, &lost_key).await;
    let (status, refused) = o.post(&resolve(&lost), &key, "k-lost", &body).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("source_reversed")),
        "{refused}"
    );
    assert_eq!(paid(&o, &org, target.id.as_str()).await, "0.00");
}

/// An approval cut off after it claimed the item and before it booked: when the provider
/// reverses the source, there is no approval's payment to take back, and a person is told
/// (`reversal_without_payment`); no invoice loses money it never got.
#[tokio::test]
async fn kept_money_an_approval_never_booked_goes_to_a_person_when_its_source_is_reversed() {
    let o = Ops::new().await;
    let (key, org) = org_by_key(&o).await;
    let hook = fixtures::integration(&o.env, &org, Provider::Standard).await;
    let small = fixtures::invoice(&o.env, &org, dec!(10), "UAH").await;
    let target = fixtures::invoice(&o.env, &org, dec!(100), "UAH").await;
    pay(&o, &hook, small.id.as_str(), "pi_cut", "15.00").await;
    let (_, over_key) = open_item(&o, &key, "overpayment").await;
    // The approval claimed the item to apply it, and went no further.
    let pk =
        firmspace::review::review_item_pk(&org, firmspace::review::Reason::Overpayment, &over_key);
    let claim = firmspace::store::Update::new().set(
        firmspace::review::APPLYING,
        firmspace::store::item::s("apply"),
    );
    assert!(o.env.store.update_if(&pk, &claim).await.unwrap());
    reversed(&o, &org, &over_key).await;
    let (_, open) = o.get("/ops/review?state=open&limit=200", &key).await;
    let reasons: Vec<&str> = open["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["reason"].as_str())
        .collect();
    assert!(reasons.contains(&"reversal_without_payment"), "{open}");
    assert_eq!(paid(&o, &org, target.id.as_str()).await, "0.00");
    assert_eq!(paid(&o, &org, small.id.as_str()).await, "0.00");
}
