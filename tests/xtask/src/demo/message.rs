//! A Telegram message, delivered three times as Telegram retries: one message in one
//! conversation from one lead contact, and its consequences once.

use super::{count, Api, TEAM};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub(super) async fn retried(api: &Api, key: &str) -> Result<()> {
    println!("\n== a Telegram message, delivered three times (Telegram retries after a timeout)");
    let rule = json!({"trigger": "message.received", "action": {"type": "create_task", "title": "Answer the customer"}});
    api.call("POST", "/api/rules", key, rule).await?;
    let (_, integration) = api
        .call(
            "POST",
            "/api/integrations",
            key,
            json!({"kind": "messages", "provider": "telegram", "bot_token": "123456:demo-bot-token"}),
        )
        .await?;
    let url = integration["webhook_url"].as_str().context("webhook_url")?;
    let token = integration["secret_token"]
        .as_str()
        .context("secret_token")?;
    let update = json!({"update_id": 500, "message": {"message_id": 17, "date": chrono::Utc::now().timestamp(),
        "from": {"id": 777, "first_name": "Mykola", "last_name": "Shevchuk"},
        "chat": {"id": 777, "type": "private"}, "text": "Hello! Do you deliver to Lviv?"}})
    .to_string();
    let mut conversation = String::new();
    for attempt in 1..=3 {
        let res = api
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("x-telegram-bot-api-secret-token", token)
            .body(update.clone())
            .send()
            .await
            .context("the message webhook")?;
        let status = res.status().as_u16();
        let answer: Value = res.json().await.unwrap_or(Value::Null);
        println!(
            "delivery {attempt}: {status} duplicate={} message={} conversation={}",
            answer["duplicate"], answer["message_id"], answer["conversation_id"]
        );
        conversation = answer["conversation_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    let started = std::time::Instant::now();
    let observe = || async {
        let mut notes = 0;
        for (user_id, _) in TEAM {
            let path = format!("/api/notifications?recipient={user_id}");
            let (_, list) = api.call("GET", &path, key, Value::Null).await?;
            notes += list["items"].as_array().map_or(0, |n| {
                n.iter()
                    .filter(|n| n["key"].as_str().is_some_and(|k| k.starts_with("message:")))
                    .count()
            });
        }
        let (_, tasks) = api.call("GET", "/api/tasks", key, Value::Null).await?;
        let answers = tasks["items"].as_array().map_or(0, |t| {
            t.iter()
                .filter(|t| t["title"] == "Answer the customer")
                .count()
        });
        Ok::<_, anyhow::Error>((notes, answers))
    };
    let expected = (TEAM.len(), 1);
    let mut seen = observe().await?;
    while seen != expected && started.elapsed() < std::time::Duration::from_secs(60) {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        seen = observe().await?;
    }
    let (_, conversations) = api
        .call("GET", "/api/conversations", key, Value::Null)
        .await?;
    let path = format!("/api/conversations/{conversation}/messages");
    let (_, messages) = api.call("GET", &path, key, Value::Null).await?;
    let (_, contacts) = api.call("GET", "/api/contacts", key, Value::Null).await?;
    let leads: Vec<&Value> = contacts["items"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| c["name"] == "Mykola Shevchuk")
                .collect()
        })
        .unwrap_or_default();
    println!(
        "conversations: {}; messages in it: {} ({}); lead: {}; notifications: {} (one per colleague); tasks: {}",
        count(&conversations),
        count(&messages),
        messages["items"][0]["text"],
        leads.first().map_or(Value::Null, |c| c["contact_id"].clone()),
        seen.0,
        seen.1
    );
    println!("message consequences after {:?}", started.elapsed());
    if count(&conversations) != 1 || count(&messages) != 1 || leads.len() != 1 || seen != expected {
        bail!("expected one conversation, one message, one lead, one notification per colleague and one task");
    }
    Ok(())
}
