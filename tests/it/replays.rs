//! An answer given from a stored answer says so (`Idempotent-Replayed: true`, as Stripe marks
//! it; a first answer has no such header), and a caller whose request timed out asks by its key
//! what became of it instead of sending it again.

use crate::support::app::Crm;
use crate::support::{fixtures, json_of, request};
use serde_json::{json, Value};

/// A call to the api: its status, body and `Idempotent-Replayed` header.
async fn sent(
    crm: &Crm,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Value,
) -> (u16, Value, Option<String>) {
    let auth = format!("Bearer {}", crm.key);
    let mut headers = vec![("authorization", auth.as_str())];
    if let Some(key) = key {
        headers.push(("idempotency-key", key));
    }
    let raw = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let res = crm
        .api
        .handle(request(method, path, &headers, raw))
        .await
        .unwrap();
    let replayed = res
        .headers()
        .get("idempotent-replayed")
        .map(|v| v.to_str().unwrap().to_owned());
    (res.status().as_u16(), json_of(&res), replayed)
}

/// An organisation with an open invoice of 100.00 UAH: its payments route, and a person's
/// payment of 40.00 on it.
async fn an_invoice_to_pay() -> (Crm, String, Value) {
    let crm = Crm::new().await;
    let invoice = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00"}))
        .await;
    let pay = format!("/api/invoices/{}/payments", invoice["id"].as_str().unwrap());
    (crm, pay, json!({"source": "manual", "amount": "40.00"}))
}

#[tokio::test]
async fn a_repeat_is_marked_replayed_and_a_request_is_asked_for_by_its_key() {
    let (crm, pay, manual) = an_invoice_to_pay().await;

    // Before it is sent: it never arrived, and asking writes nothing.
    let before = crm.table_snapshot().await;
    let (status, never, _) = sent(&crm, "GET", "/api/requests/click-1", None, Value::Null).await;
    assert_eq!(
        (status, never["error"].as_str()),
        (404, Some("never_arrived"))
    );
    assert_eq!(crm.table_snapshot().await, before);

    let (status, first, replayed) = sent(&crm, "POST", &pay, Some("click-1"), manual.clone()).await;
    assert_eq!(
        (status, replayed),
        (200, None),
        "a first answer has no header"
    );
    let (status, again, replayed) = sent(&crm, "POST", &pay, Some("click-1"), manual).await;
    assert_eq!(
        (status, replayed.as_deref()),
        (200, Some("true")),
        "{again}"
    );

    // The caller whose POST timed out asks instead of sending again.
    let (status, asked, _) = sent(&crm, "GET", "/api/requests/click-1", None, Value::Null).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(
        (asked["state"].as_str(), asked["status"].as_u64()),
        (Some("done"), Some(200))
    );
    assert_eq!(asked["answer"], first, "the first answer, as it was given");
    assert_eq!(crm.count("payment_event").await, 1);

    // A write its request record claims (a rotation) is marked and found the same way.
    let made = crm
        .integration(json!({"kind": "payments", "provider": "standard"}))
        .await;
    let rotate = format!(
        "/api/integrations/{}/secrets",
        made["integration_id"].as_str().unwrap()
    );
    let secrets = json!({"secrets": {"secret": firmspace::signature::standard::generate_secret()}});
    let (status, _, replayed) = sent(&crm, "POST", &rotate, Some("rot-1"), secrets.clone()).await;
    assert_eq!((status, replayed), (200, None));
    let (status, _, replayed) = sent(&crm, "POST", &rotate, Some("rot-1"), secrets).await;
    assert_eq!((status, replayed.as_deref()), (200, Some("true")));
    let (_, asked, _) = sent(&crm, "GET", "/api/requests/rot-1", None, Value::Null).await;
    assert_eq!(
        (
            asked["state"].as_str(),
            asked["answer"]["secrets"]["names"].clone()
        ),
        (Some("done"), json!(["secret"]))
    );
    // Another organisation's key does not see this key's requests.
    let other = crm.another_org().await;
    let (status, _) = crm
        .call_as(&other, "GET", "/api/requests/click-1", Value::Null)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_tool_call_and_a_webhook_again_are_replays() {
    let crm = Crm::new().await;
    let call =
        json!({"tool": "create_task", "call_id": "toolu_1", "input": {"title": "Call back"}});
    let (status, _, replayed) =
        sent(&crm, "POST", "/api/assistant/calls", None, call.clone()).await;
    assert_eq!((status, replayed), (200, None));
    let (status, again, replayed) = sent(&crm, "POST", "/api/assistant/calls", None, call).await;
    // A repeat says when the call was first made.
    let first_at = again["first_at"].as_str().unwrap_or_default();
    assert!(firmspace::time::parse(first_at).is_some(), "{again}");
    assert_eq!(
        (status, replayed.as_deref()),
        (200, Some("true")),
        "{again}"
    );
    let (status, asked, _) = sent(
        &crm,
        "GET",
        "/api/assistant/calls/toolu_1",
        None,
        Value::Null,
    )
    .await;
    // The first answer, as the call was answered: the call's id and its tool's result.
    assert_eq!(
        (
            status,
            asked["state"].as_str(),
            asked["status"].as_u64(),
            asked["answer"]["call_id"].as_str(),
            asked["answer"]["result"]["created"].as_bool()
        ),
        (200, Some("done"), Some(200), Some("toolu_1"), Some(true)),
        "{asked}"
    );
    let (status, _, _) = sent(
        &crm,
        "GET",
        "/api/assistant/calls/toolu_2",
        None,
        Value::Null,
    )
    .await;
    assert_eq!(status, 404);

    // A webhook's duplicate is answered from the stored event.
    let hook = crm
        .hook(firmspace::payments::providers::Provider::Standard)
        .await;
    let app = payment_webhook::app(crm.store().clone());
    let invoice = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00"}))
        .await;
    let body = fixtures::standard_body("pay_r", invoice["id"].as_str().unwrap(), Some("1.00"));
    let replays: Vec<Option<String>> = futures::future::join_all((0..2).map(|_| async {
        let req = fixtures::standard_request_with_id(&hook, &body, fixtures::NOW, "msg_r");
        let res = app.respond(&req, fixtures::now()).await.unwrap();
        assert_eq!(res.status(), 200);
        res.headers()
            .get("idempotent-replayed")
            .map(|v| v.to_str().unwrap().to_owned())
    }))
    .await;
    let mut replays = replays;
    replays.sort();
    assert_eq!(replays, [None, Some("true".to_owned())]);
}

/// A payment under a client's key is written with the key's record in one transaction: no write
/// follows it to remember the answer, and asking by the key finds it. The key, once another
/// request's, books nothing.
#[tokio::test]
async fn a_keyed_payment_is_remembered_in_its_own_transaction_and_another_requests_key_books_nothing(
) {
    let (crm, pay, manual) = an_invoice_to_pay().await;
    let log = &crm.env.calls;
    let from = log.metered().len();
    let (status, first, _) = sent(&crm, "POST", &pay, Some("pay-1"), manual.clone()).await;
    assert_eq!(status, 200, "{first}");
    let ops: Vec<String> = log.metered()[from..]
        .iter()
        .map(|(op, _)| op.clone())
        .collect();
    let writes: Vec<&String> = ops
        .iter()
        .filter(|op| matches!(op.as_str(), "PutItem" | "TransactWriteItems"))
        .collect();
    assert_eq!(writes, ["TransactWriteItems"], "{ops:?}");
    let (_, asked, _) = sent(&crm, "GET", "/api/requests/pay-1", None, Value::Null).await;
    assert_eq!(
        (asked["state"].as_str(), &asked["answer"]),
        (Some("done"), &first)
    );

    // A top-up under the key first: the payment under it is another request, and books nothing.
    let topup = json!({"amount": "20.00", "currency": "USD"});
    let (status, _, _) = sent(&crm, "POST", "/api/wallet/topups", Some("pay-2"), topup).await;
    assert_eq!(status, 200);
    let (status, reused, _) = sent(&crm, "POST", &pay, Some("pay-2"), manual).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (409, Some("idempotency_key_reused")),
        "{reused}"
    );
    assert_eq!(crm.count("payment_event").await, 1);
    let (_, asked, _) = sent(&crm, "GET", "/api/requests/pay-2", None, Value::Null).await;
    assert!(
        asked["answer"]["ledger_id"].is_string(),
        "the top-up's: {asked}"
    );
}
