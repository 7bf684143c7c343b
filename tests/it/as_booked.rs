//! A duplicate answers the invoice as booked: twenty copies of one payment at once, through the
//! webhook, the REST route and the assistant, book once, and no copy answers the invoice as it
//! was before the booking its `first_applied` names.

use crate::support::app::{deliver, Crm};
use crate::support::fixtures::{self, standard_request, NOW};
use firmspace::payments::providers::Provider;
use rust_decimal_macros::dec;
use serde_json::{json, Value};

/// Every answer of a booked copy shows the invoice with the booking in it; one booked.
fn as_booked(answers: &[(u16, &Value)]) {
    let fresh = answers
        .iter()
        .filter(|(_, a)| a["duplicate"] == false)
        .count();
    assert_eq!(fresh, 1, "one copy books: {answers:?}");
    for (status, answer) in answers {
        assert_eq!(*status, 200, "{answer}");
        assert_eq!(
            (
                answer["invoice"]["paid"].as_str(),
                answer["invoice"]["version"].as_u64()
            ),
            (Some("30.00"), Some(1)),
            "the invoice as the booking left it: {answer}"
        );
        if answer["duplicate"] == true {
            assert_eq!(
                (answer["applied"].as_str(), answer["first_applied"].as_str()),
                (Some("0.00"), Some("30.00"))
            );
        }
    }
}

#[tokio::test]
async fn twenty_copies_at_once_through_the_webhook_answer_the_invoice_as_booked() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let body = fixtures::standard_body("pay_twenty", inv.id.as_str(), Some("30.00"));
    let req = standard_request(&hook, &body, NOW);
    let answers = futures::future::join_all((0..20).map(|_| deliver(&app, &req))).await;
    as_booked(&answers.iter().map(|(s, a)| (*s, a)).collect::<Vec<_>>());
    assert_eq!(crm.count("payment_event").await, 1);
    assert_eq!(crm.stored_invoice(inv.id.as_str()).await.paid, dec!(30));
}

#[tokio::test]
async fn twenty_copies_at_once_through_the_rest_route_answer_the_invoice_as_booked() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let id = inv.id.as_str();
    let body = json!({"source": "manual", "amount": "30.00"});
    let answers =
        futures::future::join_all((0..20).map(|_| crm.pay(id, "click-twenty", body.clone()))).await;
    as_booked(&answers.iter().map(|(s, a)| (*s, a)).collect::<Vec<_>>());
    assert_eq!(crm.count("payment_event").await, 1);
}

#[tokio::test]
async fn twenty_copies_at_once_through_the_assistant_answer_the_invoice_as_booked() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let call = json!({
        "tool": "register_payment",
        "input": {"invoice_id": inv.id.as_str(), "amount": "30.00"},
        "call_id": "toolu_twenty",
    });
    let answers = futures::future::join_all(
        (0..20).map(|_| crm.call("POST", "/api/assistant/calls", call.clone())),
    )
    .await;
    // Every copy answers: the one that booked it, and the others from its record.
    let answered: Vec<(u16, &Value)> = answers.iter().map(|(s, a)| (*s, &a["result"])).collect();
    let fresh = answers
        .iter()
        .filter(|(s, a)| *s == 200 && a["duplicate"] == false)
        .count();
    assert_eq!(fresh, 1, "{answers:?}");
    for (status, result) in &answered {
        assert_eq!(*status, 200);
        assert_eq!(
            (
                result["invoice"]["paid"].as_str(),
                result["invoice"]["version"].as_u64()
            ),
            (Some("30.00"), Some(1)),
            "{result}"
        );
    }
    let (status, again) = crm.call("POST", "/api/assistant/calls", call).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(again["result"]["invoice"]["version"], 1);
    assert_eq!(crm.count("payment_event").await, 1);
}
