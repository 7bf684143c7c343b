//! Money is shown with its currency's digits, wherever it is shown: JPY `"1000"`, BHD
//! `"10.250"`, UAH `"40.00"`; input accepts what it always did.

use crate::support::app::Crm;
use crate::support::fixtures;
use serde_json::{json, Value};

#[tokio::test]
async fn an_invoice_and_its_payments_are_shown_in_their_currencys_digits() {
    let crm = Crm::new().await;
    let yen = crm
        .invoice(json!({"currency": "JPY", "gross": "1000"}))
        .await;
    assert_eq!(
        (
            yen["gross"].as_str(),
            yen["open"].as_str(),
            yen["paid"].as_str()
        ),
        (Some("1000"), Some("1000"), Some("0")),
        "{yen}"
    );
    let id = yen["id"].as_str().unwrap();
    // "400.00" is accepted as it always was, and shown as yen are.
    let (status, paid) = crm
        .pay(id, "yen-1", json!({"source": "manual", "amount": "400.00"}))
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(
        (paid["applied"].as_str(), paid["invoice"]["open"].as_str()),
        (Some("400"), Some("600"))
    );
    let (_, again) = crm
        .pay(id, "yen-1", json!({"source": "manual", "amount": "400.00"}))
        .await;
    assert_eq!(
        (again["applied"].as_str(), again["first_applied"].as_str()),
        (Some("0"), Some("400"))
    );

    let dinar = crm
        .invoice(json!({"currency": "BHD", "gross": "10.25"}))
        .await;
    assert_eq!(dinar["gross"], "10.250", "{dinar}");
    // A provider's payment in dinars: Standard Webhooks, the amount as the sender wrote it.
    let hook = crm
        .hook(firmspace::payments::providers::Provider::Standard)
        .await;
    let app = payment_webhook::app(crm.store().clone());
    let body = json!({"type": "payment.succeeded", "data": {"payment_id": "pay_bhd",
        "invoice_id": dinar["id"], "amount": "10.25", "currency": "BHD"}})
    .to_string();
    let req = fixtures::standard_request_with_id(&hook, &body, fixtures::NOW, "msg_bhd");
    let res = app.respond(&req, fixtures::now()).await.unwrap();
    let answer: Value = serde_json::from_slice(res.body().as_ref()).unwrap();
    assert_eq!(
        (
            answer["applied"].as_str(),
            answer["invoice"]["paid"].as_str()
        ),
        (Some("10.250"), Some("10.250")),
        "{answer}"
    );
    let uah = crm.invoice(json!({"currency": "UAH", "gross": "40"})).await;
    assert_eq!(uah["gross"], "40.00");
}
