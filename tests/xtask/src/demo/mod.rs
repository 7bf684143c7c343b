//! The main job, shown: a demo organisation with a payment integration and an invoice; one signed
//! Standard Webhooks delivery sent three times; one payment booked; its consequences once each:
//! one history line, one notification per colleague, one task. Then a missed call, posted three
//! times as Twilio signs it: one call, one lead contact, one notification per colleague, one
//! call-back task. Before it, a Telegram message delivered three times: one message in one
//! conversation from one lead, its line, a notification per colleague and one task. Last, a
//! prepaid SMS delivered three times and re-pushed: one debit line, one inbox line.

mod call;
mod message;
mod ops;
mod sms;

use crate::stack::Coordinates;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub(crate) struct Api {
    pub(crate) http: reqwest::Client,
    base: String,
}

impl Api {
    pub(crate) async fn call(
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

/// What the demo seeded.
struct Seeded {
    key: String,
    webhook_url: String,
    secret: String,
    invoice_id: String,
}

pub async fn run(coords: &Coordinates) -> Result<()> {
    let api = Api {
        http: firmspace::http::client(reqwest::Client::builder()),
        base: coords.api_url.clone(),
    };
    let seeded = seed(&api, &coords.admin_token).await?;
    deliver_three_times(&api, &seeded).await?;
    show_consequences(&api, &seeded.key).await?;
    message::retried(&api, &seeded.key).await?;
    call::missed(&api, &seeded.key).await?;
    sms::prepaid(&api, &seeded.key).await?;
    let admin = &coords.admin_token;
    ops::view(
        &api,
        &seeded.key,
        admin,
        &seeded.webhook_url,
        &seeded.secret,
    )
    .await
}

/// An organisation, a team of three, an `invoice.paid` rule, a Standard Webhooks integration
/// and a 40.00 UAH invoice.
async fn seed(api: &Api, admin_token: &str) -> Result<Seeded> {
    println!("\n== demo: seeding an organisation, a payment integration and an invoice");
    let (_, org) = api
        .call(
            "POST",
            "/api/orgs",
            admin_token,
            json!({"name": "Acme Demo"}),
        )
        .await?;
    let key = org["api_key"].as_str().context("api_key")?.to_owned();
    println!(
        "organisation {} (api key {key})",
        org["org_id"].as_str().unwrap_or_default()
    );
    for (user_id, name) in TEAM {
        api.call(
            "POST",
            "/api/members",
            &key,
            json!({"user_id": user_id, "name": name}),
        )
        .await?;
    }
    let rule = json!({"trigger": "invoice.paid", "action": {"type": "create_task", "title": "Ship the order"}});
    api.call("POST", "/api/rules", &key, rule).await?;
    println!(
        "team of {} and an invoice.paid rule that creates a task",
        TEAM.len()
    );
    let (_, integration) = api
        .call(
            "POST",
            "/api/integrations",
            &key,
            json!({"kind": "payments", "provider": "standard"}),
        )
        .await?;
    let (_, invoice) = api
        .call(
            "POST",
            "/api/invoices",
            &key,
            json!({"currency": "UAH", "gross": "40.00", "contact_id": "c1"}),
        )
        .await?;
    let invoice_id = invoice["id"].as_str().context("id")?.to_owned();
    println!(
        "invoice {} {invoice_id}: {} {} for contact c1",
        invoice["number"].as_str().unwrap_or_default(),
        invoice["gross"].as_str().unwrap_or_default(),
        invoice["currency"].as_str().unwrap_or_default()
    );
    Ok(Seeded {
        key,
        webhook_url: integration["webhook_url"]
            .as_str()
            .context("webhook_url")?
            .to_owned(),
        secret: integration["secret"].as_str().context("secret")?.to_owned(),
        invoice_id,
    })
}

/// The same signed delivery three times; exactly one payment of 40.00 booked.
async fn deliver_three_times(api: &Api, seeded: &Seeded) -> Result<()> {
    let payment = crate::send::Payment {
        id: "pay_demo_1".into(),
        invoice: Some(seeded.invoice_id.clone()),
        amount: "40.00".into(),
        currency: "UAH".into(),
        status: "success".into(),
    };
    let delivery = crate::send::delivery(
        crate::send::Kind::Standard,
        &seeded.secret,
        &seeded.webhook_url,
        &payment,
        chrono::Utc::now().timestamp(),
    )?;
    println!("\n== the provider delivers the same signed webhook three times (cargo xtask send)");
    let answers = crate::send::send(&api.http, &seeded.webhook_url, &delivery, 3, 1).await?;
    for (attempt, (status, answer)) in answers.iter().enumerate() {
        println!(
            "delivery {}: {status} duplicate={} applied={} invoice paid={}",
            attempt + 1,
            answer["duplicate"],
            answer["applied"],
            answer["invoice"]["paid"]
        );
    }
    let path = format!("/api/invoices/{}", seeded.invoice_id);
    let (_, after) = api.call("GET", &path, &seeded.key, Value::Null).await?;
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

/// (activity lines of c1, notifications of the team, tasks) as the API shows them now.
pub(crate) async fn counts(api: &Api, key: &str) -> Result<(Value, usize, Value)> {
    let (_, activity) = api
        .call("GET", "/api/activity/contact/c1", key, Value::Null)
        .await?;
    let mut notifications = 0;
    for (user_id, _) in TEAM {
        let path = format!("/api/notifications?recipient={user_id}");
        notifications += count(&api.call("GET", &path, key, Value::Null).await?.1);
    }
    let (_, tasks) = api.call("GET", "/api/tasks", key, Value::Null).await?;
    Ok((activity, notifications, tasks))
}

/// Waits (at most a minute) for one history line, one notification per colleague, one task.
async fn show_consequences(api: &Api, key: &str) -> Result<()> {
    println!("\n== consequences (stream -> fanout -> SQS -> workers)");
    let started = std::time::Instant::now();
    let (activity, notifications, tasks) = loop {
        let (activity, notifications, tasks) = counts(api, key).await?;
        let done = (count(&activity), notifications, count(&tasks)) == (1, TEAM.len(), 1);
        if done || started.elapsed() > std::time::Duration::from_secs(60) {
            break (activity, notifications, tasks);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    println!(
        "activity of contact c1: {} line(s): {}",
        count(&activity),
        activity["items"][0]["text"]
    );
    println!(
        "notifications: {notifications} (one per colleague: {})",
        TEAM.map(|t| t.1).join(", ")
    );
    println!("tasks: {} ({})", count(&tasks), tasks["items"][0]["title"]);
    println!("all consequences after {:?}", started.elapsed());
    if (count(&activity), notifications, count(&tasks)) != (1, TEAM.len(), 1) {
        bail!("expected one history line, one notification per colleague and one task");
    }
    Ok(())
}

pub(crate) const TEAM: [(&str, &str); 3] = [("u1", "Olena"), ("u2", "Taras"), ("u3", "Iryna")];

pub(crate) fn count(list: &Value) -> usize {
    list["items"].as_array().map_or(0, Vec::len)
}
