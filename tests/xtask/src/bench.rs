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

/// An organisation with a team, an `invoice.paid` rule and a Standard Webhooks integration:
/// (api key, webhook url, secret).
async fn setup(http: &reqwest::Client, coords: &Coordinates) -> Result<(String, String, String)> {
    let api = |path: &str| format!("{}{path}", coords.api_url);
    let post = reqwest::Method::POST;
    let org = call(
        http,
        post.clone(),
        api("/api/orgs"),
        &coords.admin_token,
        json!({"name": "Latency"}),
    )
    .await?;
    let key = org["api_key"].as_str().context("api_key")?.to_owned();
    for user in TEAM {
        call(
            http,
            post.clone(),
            api("/api/members"),
            &key,
            json!({"user_id": user, "name": user}),
        )
        .await?;
    }
    let rule =
        json!({"trigger": "invoice.paid", "action": {"type": "create_task", "title": "Ship"}});
    call(http, post.clone(), api("/api/rules"), &key, rule).await?;
    let hook = call(
        http,
        post,
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
    Ok((key, url, secret))
}

/// Whether run `run`'s consequences are all there: one history line, `run + 1` tasks and
/// notifications per colleague.
async fn complete(
    http: &reqwest::Client,
    coords: &Coordinates,
    key: &str,
    run: usize,
) -> Result<bool> {
    let get = |path: String| {
        call(
            http,
            reqwest::Method::GET,
            format!("{}{path}", coords.api_url),
            key,
            Value::Null,
        )
    };
    let lines = count(&get(format!("/api/activity/contact/lat{run}")).await?);
    let tasks = count(&get("/api/tasks".into()).await?);
    let mut notes = usize::MAX;
    for user in TEAM {
        notes = notes.min(count(
            &get(format!("/api/notifications?recipient={user}")).await?,
        ));
    }
    Ok(lines == 1 && tasks == run + 1 && notes == run + 1)
}

/// One payment: webhook sent, then polled until its last consequence; the time between.
async fn one(
    http: &reqwest::Client,
    coords: &Coordinates,
    (key, url, secret): &(String, String, String),
    run: usize,
) -> Result<Duration> {
    let inv = call(
        http,
        reqwest::Method::POST,
        format!("{}/api/invoices", coords.api_url),
        key,
        json!({"currency": "UAH", "gross": "10.00", "contact_id": format!("lat{run}")}),
    )
    .await?;
    let body = json!({"type": "payment.succeeded", "data": {"payment_id": format!("lat_{run}"), "invoice_id": inv["id"]}}).to_string();
    let ts = chrono::Utc::now().timestamp();
    let sig = standard::sign(secret, &format!("msg_{run}"), ts, body.as_bytes())?;
    let started = Instant::now();
    let res = http
        .post(url)
        .header("webhook-id", format!("msg_{run}"))
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", sig)
        .body(body)
        .send()
        .await?;
    if !res.status().is_success() {
        bail!("webhook answered {}", res.status());
    }
    while !complete(http, coords, key, run).await? {
        if started.elapsed() > Duration::from_secs(60) {
            bail!("run {run}: consequences incomplete after 60 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(started.elapsed())
}

pub async fn latency(coords: &Coordinates) -> Result<()> {
    let http = firmspace::http::client(reqwest::Client::builder());
    let target = setup(&http, coords).await?;
    let mut samples = Vec::new();
    for run in 0..RUNS {
        samples.push(one(&http, coords, &target, run).await?);
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
