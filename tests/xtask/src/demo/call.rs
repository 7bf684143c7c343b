//! A missed call, posted three times as Twilio signs it.

use super::{count, counts, Api, TEAM};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// A Twilio-signed missed call posted three times: one call, and its consequences once.
pub(super) async fn missed(api: &Api, key: &str) -> Result<()> {
    const TOKEN: &str = "demo-twilio-auth-token";
    println!("\n== a missed call, posted three times by a SIP provider (Twilio-signed)");
    let rule =
        json!({"trigger": "call.missed", "action": {"type": "create_task", "title": "Call back"}});
    api.call("POST", "/api/rules", key, rule).await?;
    let (_, integration) = api
        .call(
            "POST",
            "/api/integrations",
            key,
            json!({"kind": "calls", "provider": "twilio", "auth_token": TOKEN}),
        )
        .await?;
    let url = integration["webhook_url"].as_str().context("webhook_url")?;
    let form = "CallSid=CAdemo1&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus=no-answer&CallDuration=0";
    let signature = firmspace::signature::twilio::sign(TOKEN, url, form.as_bytes());
    for attempt in 1..=3 {
        let res = api
            .http
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-twilio-signature", &signature)
            .body(form)
            .send()
            .await
            .context("the call webhook")?;
        let status = res.status().as_u16();
        let answer: Value = res.json().await.unwrap_or(Value::Null);
        println!(
            "callback {attempt}: {status} duplicate={} key={} missed={} contact={}",
            answer["duplicate"],
            answer["call"]["key"],
            answer["call"]["missed"],
            answer["call"]["contact_id"]
        );
    }
    let started = std::time::Instant::now();
    let done = |tasks: &Value, notifications: usize| {
        let call_backs = tasks["items"].as_array().map_or(0, |t| {
            t.iter().filter(|t| t["title"] == "Call back").count()
        });
        // The payment's, the message's and the call's: one per colleague each.
        (call_backs, notifications) == (1, 3 * TEAM.len())
    };
    let (tasks, notifications) = loop {
        let (_, notifications, tasks) = counts(api, key).await?;
        if done(&tasks, notifications) || started.elapsed() > std::time::Duration::from_secs(60) {
            break (tasks, notifications);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let (_, calls) = api.call("GET", "/api/calls", key, Value::Null).await?;
    let (_, contacts) = api.call("GET", "/api/contacts", key, Value::Null).await?;
    let callers: Vec<&Value> = contacts["items"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| c["phones"][0] == "+380441234567")
                .collect()
        })
        .unwrap_or_default();
    println!(
        "calls: {}; the caller's contacts: {} ({} lead); notifications now {notifications}; tasks {}",
        count(&calls),
        callers.len(),
        callers.first().map_or(Value::Null, |c| c["name"].clone()),
        count(&tasks)
    );
    println!("missed-call consequences after {:?}", started.elapsed());
    if count(&calls) != 1 || callers.len() != 1 || !done(&tasks, notifications) {
        bail!("expected one call, one lead, one more notification per colleague and one call-back task");
    }
    Ok(())
}
