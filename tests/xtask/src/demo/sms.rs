//! A prepaid SMS: a top-up, then one signed `sms.sent` delivered three times and re-pushed under a
//! new event id; one debit line, one inbox line, the balance moved once.

use super::{count, Api};
use anyhow::{bail, Context, Result};
use firmspace::signature::standard;
use serde_json::{json, Value};

async fn deliver(
    api: &Api,
    url: &str,
    secret: &str,
    event_id: &str,
    body: &str,
) -> Result<(u16, Value)> {
    let ts = chrono::Utc::now().timestamp();
    let res = api
        .http
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", event_id)
        .header("webhook-timestamp", ts.to_string())
        .header(
            "webhook-signature",
            standard::sign(secret, event_id, ts, body.as_bytes())?,
        )
        .body(body.to_owned())
        .send()
        .await
        .context("the sms webhook")?;
    Ok((
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    ))
}

pub(super) async fn prepaid(api: &Api, key: &str) -> Result<()> {
    println!("\n== a prepaid SMS: a top-up, then sms.sent three times and a re-push under a new event id");
    let top_up = api
        .http
        .post(format!("{}/api/wallet/topups", api.base))
        .bearer_auth(key)
        .header("idempotency-key", "demo-topup-1")
        .json(&json!({"amount": "20.00", "currency": "USD"}))
        .send()
        .await
        .context("top-up")?;
    let top_up: Value = top_up.json().await.unwrap_or(Value::Null);
    println!("top-up: wallet {}", top_up["wallet"]);
    let (_, integration) = api
        .call(
            "POST",
            "/api/integrations",
            key,
            json!({"kind": "sms", "provider": "standard"}),
        )
        .await?;
    let url = integration["webhook_url"].as_str().context("webhook_url")?;
    let secret = integration["secret"].as_str().context("secret")?;
    let body = json!({"type": "sms.sent", "data": {"message_id": "SMdemo1", "from": "+15550001111",
        "to": "+15550002222", "text": "Your order has shipped", "segments": 1, "price": "0.05", "currency": "USD"}})
    .to_string();
    for (attempt, event_id) in [
        "evt_demo_1",
        "evt_demo_1",
        "evt_demo_1",
        "evt_demo_1_repush",
    ]
    .iter()
    .enumerate()
    {
        let (status, answer) = deliver(api, url, secret, event_id, &body).await?;
        println!(
            "event {} ({event_id}): {status} duplicate={} ledger_id={} inbox_id={} balance={}",
            attempt + 1,
            answer["duplicate"],
            answer["ledger_id"],
            answer["inbox_id"],
            answer["balance"]
        );
    }
    let (_, wallet) = api.call("GET", "/api/wallet", key, Value::Null).await?;
    let (_, inbox) = api.call("GET", "/api/inbox", key, Value::Null).await?;
    let from = (chrono::Utc::now() - chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ");
    let to = (chrono::Utc::now() + chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ");
    let (_, ledger) = api
        .call(
            "GET",
            &format!("/api/ledger?from={from}&to={to}"),
            key,
            Value::Null,
        )
        .await?;
    let debits = ledger["items"]
        .as_array()
        .map_or(0, |l| l.iter().filter(|l| l["kind"] == "debit").count());
    println!(
        "wallet: {} {} (version {}); inbox lines: {}; ledger lines: {} ({debits} debit); export: {}/api/ledger.csv?from={from}&to={to}",
        wallet["balance"], wallet["currency"], wallet["version"], count(&inbox), count(&ledger), api.base
    );
    if (debits, count(&inbox), wallet["balance"].as_str()) != (1, 1, Some("19.95")) {
        bail!("expected one debit, one inbox line and a balance of 19.95, found {wallet} {inbox}");
    }
    Ok(())
}
