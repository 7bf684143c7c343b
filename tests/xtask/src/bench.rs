//! `cargo xtask latency`: end-to-end latency in the running local stack, from a signed webhook's
//! 200 to its last consequence (history line, a notification for every colleague, the task),
//! over 20 payments. A measurement, not a test: it prints figures.

use crate::stack::Coordinates;
use anyhow::{bail, Context, Result};
use firmspace::signature::standard;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const RUNS: usize = 20;
const TEAM: [&str; 3] = ["u1", "u2", "u3"];

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Value,
) -> Result<Value> {
    let mut req = http.request(method, url).bearer_auth(token);
    if !body.is_null() {
        req = req.json(&body);
    }
    let res = req.send().await?;
    if !res.status().is_success() {
        bail!("{} answered {}", res.url().clone(), res.status());
    }
    Ok(res.json().await?)
}

fn count(v: &Value) -> usize {
    v["items"].as_array().map_or(0, Vec::len)
}

pub async fn latency(coords: &Coordinates) -> Result<()> {
    let http = firmspace::http::client(reqwest::Client::builder());
    let api = |path: &str| format!("{}{path}", coords.api_url);
    let post = reqwest::Method::POST;
    let get = reqwest::Method::GET;
    let org = call(
        &http,
        post.clone(),
        api("/api/orgs"),
        &coords.admin_token,
        json!({"name": "Latency"}),
    )
    .await?;
    let key = org["api_key"].as_str().context("api_key")?.to_owned();
    for user in TEAM {
        call(
            &http,
            post.clone(),
            api("/api/members"),
            &key,
            json!({"user_id": user, "name": user}),
        )
        .await?;
    }
    call(
        &http,
        post.clone(),
        api("/api/rules"),
        &key,
        json!({"trigger": "invoice.paid", "action": {"type": "create_task", "title": "Ship"}}),
    )
    .await?;
    let hook = call(
        &http,
        post.clone(),
        api("/api/integrations"),
        &key,
        json!({"kind": "payments", "provider": "standard"}),
    )
    .await?;
    let url = hook["webhook_url"]
        .as_str()
        .context("webhook_url")?
        .to_owned();
    let secret = hook["secret"].as_str().context("secret")?.to_owned();

    let mut samples = Vec::new();
    for run in 0..RUNS {
        let contact = format!("lat{run}");
        let inv = call(
            &http,
            post.clone(),
            api("/api/invoices"),
            &key,
            json!({"currency": "UAH", "gross": "10.00", "contact_id": contact}),
        )
        .await?;
        let body = json!({"type": "payment.succeeded", "data": {"payment_id": format!("lat_{run}"), "invoice_id": inv["id"]}}).to_string();
        let ts = chrono::Utc::now().timestamp();
        let sig = standard::sign(&secret, &format!("msg_{run}"), ts, body.as_bytes())?;
        let started = Instant::now();
        let res = http
            .post(&url)
            .header("webhook-id", format!("msg_{run}"))
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig)
            .body(body)
            .send()
            .await?;
        if !res.status().is_success() {
            bail!("webhook answered {}", res.status());
        }
        loop {
            let lines = count(
                &call(
                    &http,
                    get.clone(),
                    api(&format!("/api/activity/contact/{contact}")),
                    &key,
                    Value::Null,
                )
                .await?,
            );
            let tasks =
                count(&call(&http, get.clone(), api("/api/tasks"), &key, Value::Null).await?);
            let mut notes = usize::MAX;
            for user in TEAM {
                let n = count(
                    &call(
                        &http,
                        get.clone(),
                        api(&format!("/api/notifications?recipient={user}")),
                        &key,
                        Value::Null,
                    )
                    .await?,
                );
                notes = notes.min(n);
            }
            if lines == 1 && tasks == run + 1 && notes == run + 1 {
                break;
            }
            if started.elapsed() > Duration::from_secs(60) {
                bail!("run {run}: consequences incomplete after 60 s");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        samples.push(started.elapsed());
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "webhook → last consequence over {RUNS} payments: median {:.0} ms, p90 {:.0} ms, min {:.0} ms, max {:.0} ms",
        ms(samples[RUNS / 2]),
        ms(samples[RUNS * 9 / 10]),
        ms(samples[0]),
        ms(samples[RUNS - 1])
    );
    Ok(())
}
