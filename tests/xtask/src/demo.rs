//! The main job, shown: a demo organisation with a payment integration and an invoice; one signed
//! Standard Webhooks delivery sent three times; one payment booked.

use crate::stack::Coordinates;
use anyhow::{bail, Context, Result};
use firmspace::signature::standard;
use serde_json::{json, Value};

struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Value,
    ) -> Result<(u16, Value)> {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.http.get(&url),
            _ => self.http.post(&url).json(&body),
        };
        let res = req
            .bearer_auth(token)
            .send()
            .await
            .with_context(|| format!("{method} {url}"))?;
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        if status >= 400 {
            bail!("{method} {path} answered {status}: {body}");
        }
        Ok((status, body))
    }
}

pub async fn run(coords: &Coordinates) -> Result<()> {
    let api = Api {
        http: reqwest::Client::new(),
        base: coords.api_url.clone(),
    };
    println!("\n== demo: seeding an organisation, a payment integration and an invoice");
    let (_, org) = api
        .call(
            "POST",
            "/api/orgs",
            &coords.admin_token,
            json!({"name": "Acme Demo"}),
        )
        .await?;
    let key = org["api_key"].as_str().context("api_key")?.to_owned();
    println!(
        "organisation {} (api key {key})",
        org["org_id"].as_str().unwrap_or_default()
    );
    let (_, integration) = api
        .call(
            "POST",
            "/api/integrations",
            &key,
            json!({"kind": "payments", "provider": "standard"}),
        )
        .await?;
    let webhook_url = integration["webhook_url"]
        .as_str()
        .context("webhook_url")?
        .to_owned();
    let secret = integration["secret"].as_str().context("secret")?.to_owned();
    let (_, invoice) = api
        .call(
            "POST",
            "/api/invoices",
            &key,
            json!({"currency": "UAH", "gross": "100.00"}),
        )
        .await?;
    let invoice_id = invoice["id"].as_str().context("id")?.to_owned();
    println!("invoice {invoice_id} {invoice}");

    let body = json!({
        "type": "payment.succeeded",
        "data": {"payment_id": "pay_demo_1", "invoice_id": invoice_id, "amount": "40.00", "currency": "UAH"}
    })
    .to_string();
    let timestamp = chrono::Utc::now().timestamp();
    let signature = standard::sign(&secret, "msg_demo_1", timestamp, body.as_bytes())?;
    println!("\n== the provider delivers the same signed webhook three times");
    for attempt in 1..=3 {
        let res = api
            .http
            .post(&webhook_url)
            .header("webhook-id", "msg_demo_1")
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", &signature)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await?;
        let status = res.status().as_u16();
        let answer: Value = res.json().await?;
        println!(
            "delivery {attempt}: {status} duplicate={} applied={} invoice paid={}",
            answer["duplicate"], answer["applied"], answer["invoice"]["paid"]
        );
    }
    let (_, after) = api
        .call(
            "GET",
            &format!("/api/invoices/{invoice_id}"),
            &key,
            Value::Null,
        )
        .await?;
    let payments = after["payments"].as_array().map_or(0, Vec::len);
    println!(
        "\n== result: {payments} payment booked; invoice paid {} of {}, open {}, status {}",
        after["paid"], after["gross"], after["open"], after["status"]
    );
    if payments != 1 || after["paid"] != "40.00" {
        bail!("expected exactly one payment of 40.00, found {after}");
    }
    Ok(())
}
