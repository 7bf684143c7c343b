//! The operator's view of the demo organisation, with one item in each state: the duplicates
//! the deliveries above were answered with, a review item (a payment for an invoice that does
//! not exist), a run that needs a check (a target that answers after the worker stopped
//! waiting, with no status URL to ask), and a dead letter (a target that is down).

use super::Api;
use anyhow::{bail, Context, Result};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A target on loopback that answers 200 after `delay` (longer than the worker waits).
async fn slow_target(delay: Duration) -> Result<String> {
    let app = Router::new().route(
        "/hook",
        post(move || async move {
            tokio::time::sleep(delay).await;
            "ok"
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}/hook"))
}

async fn outbound_rule(api: &Api, key: &str, url: &str, text: &str) -> Result<()> {
    let (_, target) = api
        .call(
            "POST",
            "/api/integrations",
            key,
            json!({"kind": "outbound", "url": url}),
        )
        .await?;
    let rule = json!({"trigger": "invoice.paid", "action": {"type": "send_message",
        "integration_id": target["integration_id"], "text": text}});
    api.call("POST", "/api/rules", key, rule).await?;
    Ok(())
}

pub(super) async fn view(
    api: &Api,
    key: &str,
    admin: &str,
    webhook_url: &str,
    secret: &str,
) -> Result<()> {
    println!("\n== the operator's view: a review item, a run that needs a check, a dead letter");
    let org = key
        .split('_')
        .nth(1)
        .context("the key names its organisation")?;
    let slow = slow_target(Duration::from_secs(8)).await?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    outbound_rule(api, key, &slow, "Your order has shipped").await?;
    outbound_rule(
        api,
        key,
        &format!("http://127.0.0.1:{port}/hook"),
        "Thanks!",
    )
    .await?;
    let (_, invoice) = api
        .call(
            "POST",
            "/api/invoices",
            key,
            json!({"currency": "UAH", "gross": "15.00"}),
        )
        .await?;
    let pay = |id: &str, invoice: &Value| crate::send::Payment {
        id: id.into(),
        invoice: invoice.as_str().map(str::to_owned),
        amount: "15.00".into(),
        currency: "UAH".into(),
        status: "success".into(),
    };
    let now = chrono::Utc::now().timestamp();
    for (id, invoice) in [
        ("pay_demo_2", invoice["id"].clone()),
        ("pay_demo_lost", json!("inv_0000000000000000")),
    ] {
        let delivery = crate::send::delivery(
            crate::send::Kind::Standard,
            secret,
            webhook_url,
            &pay(id, &invoice),
            now,
        )?;
        crate::send::send(&api.http, webhook_url, &delivery, 1, 1).await?;
    }
    println!("a payment for an invoice that does not exist; a paid invoice whose two rules call a slow target and one that is down");
    println!("waiting for the dead letter (two failed receives 30 s apart, about a minute)...");
    let started = Instant::now();
    let summary = loop {
        let (_, summary) = api
            .call(
                "GET",
                &format!("/ops/summary?org={org}"),
                admin,
                Value::Null,
            )
            .await?;
        let (_, dead) = api
            .call("GET", "/ops/dlq/automation?limit=200", admin, Value::Null)
            .await?;
        let has_dead = dead["items"]
            .as_array()
            .is_some_and(|d| d.iter().any(|m| m["body"]["org"] == org));
        if (has_dead && summary["runs"]["needs_check"] == 1)
            || started.elapsed() > Duration::from_secs(150)
        {
            break summary;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let (_, chart) = api
        .call("GET", &format!("/ops/chart?org={org}"), admin, Value::Null)
        .await?;
    let duplicates: u64 = chart["hours"].as_array().map_or(0, |h| {
        h.iter().filter_map(|h| h["duplicates"].as_u64()).sum()
    });
    println!(
        "duplicates acknowledged this day: {duplicates}; open review items: {} {}; runs needing a check: {}; dead letters (automation): {}",
        summary["review"]["open"], summary["review"]["by_reason"], summary["runs"]["needs_check"], summary["queues"]["automation"]["dead"]
    );
    println!("\n== the operator's page: {}/ops/", api.base);
    println!("   sign in with the admin token ({admin}) or the demo organisation's key ({key})");
    if duplicates == 0 || summary["review"]["open"] == 0 || summary["runs"]["needs_check"] != 1 {
        bail!("expected a duplicate, a review item and a run that needs a check: {summary}");
    }
    Ok(())
}
