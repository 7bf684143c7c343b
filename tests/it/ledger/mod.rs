//! The prepaid ledger in-process against ministack: a carrier's signed SMS events through
//! sms-webhook, the wallet, top-ups, the export and the inbox through the api.

mod api;
mod corrections;
mod edges;
mod property;
mod sms;

use crate::support::app::Crm;
use crate::support::{json_of, request};
use chrono::Utc;
use firmspace::signature::standard;
use serde_json::{json, Value};

/// The test application with an SMS integration made through the api, and the sms webhook.
pub struct Carrier {
    pub crm: Crm,
    pub hook: sms_webhook::App,
    pub integration_id: String,
    secret: String,
}

impl std::ops::Deref for Carrier {
    type Target = Crm;
    fn deref(&self) -> &Crm {
        &self.crm
    }
}

impl Carrier {
    pub async fn new() -> Self {
        let crm = Crm::new().await;
        let made = crm
            .integration(json!({"kind": "sms", "provider": "standard"}))
            .await;
        let integration_id = made["integration_id"].as_str().unwrap().to_owned();
        assert_eq!(
            made["webhook_url"],
            format!("https://hooks.test/hooks/{integration_id}/sms")
        );
        let hook = sms_webhook::app(crm.store().clone());
        Self {
            secret: made["secret"].as_str().unwrap().to_owned(),
            crm,
            hook,
            integration_id,
        }
    }

    /// A delivery of `body` as event `event_id`, signed now.
    pub fn delivery(&self, event_id: &str, body: &Value) -> lambda_http::Request {
        self.delivery_at(event_id, body, Utc::now().timestamp())
    }

    /// A delivery signed at unix time `at`.
    pub fn delivery_at(&self, event_id: &str, body: &Value, at: i64) -> lambda_http::Request {
        let raw = body.to_string();
        let signature = standard::sign(&self.secret, event_id, at, raw.as_bytes()).unwrap();
        request(
            "POST",
            &format!("/hooks/{}/sms", self.integration_id),
            &[
                ("content-type", "application/json"),
                ("webhook-id", event_id),
                ("webhook-timestamp", &at.to_string()),
                ("webhook-signature", &signature),
            ],
            raw.into_bytes(),
        )
    }

    pub async fn answer(&self, req: lambda_http::Request) -> (u16, Value) {
        let res = self.hook.handle(req).await.unwrap();
        (res.status().as_u16(), json_of(&res))
    }

    /// Delivers `body` as `event_id`, signed now.
    pub async fn send(&self, event_id: &str, body: &Value) -> (u16, Value) {
        self.answer(self.delivery(event_id, body)).await
    }

    pub async fn top_up(&self, key: &str, amount: &str) -> (u16, Value) {
        let body = json!({"amount": amount, "currency": "USD"});
        let headers = [("idempotency-key", key)];
        self.call_with("POST", "/api/wallet/topups", &headers, body)
            .await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, Value::Null).await
    }

    pub async fn wallet(&self) -> Value {
        let (status, wallet) = self.get("/api/wallet").await;
        assert_eq!(status, 200, "{wallet}");
        wallet
    }

    pub async fn inbox(&self) -> Vec<Value> {
        let (status, inbox) = self.get("/api/inbox?limit=200").await;
        assert_eq!(status, 200, "{inbox}");
        inbox["items"].as_array().unwrap().clone()
    }
}

/// A carrier event body: `kind` is `sent`, `received`, `delivered` or `failed`.
pub fn event(kind: &str, message_id: &str, price: Option<&str>) -> Value {
    let mut data = json!({"message_id": message_id, "from": "+15550001111", "to": "+15550002222",
        "text": "Your code is 1234", "segments": 1});
    if kind == "received" {
        data["from"] = json!("+15550003333");
        data["to"] = json!("+15550001111");
        data["text"] = json!("STOP");
    }
    if let Some(price) = price {
        data["price"] = json!(price);
        data["currency"] = json!("USD");
    }
    json!({"type": format!("sms.{kind}"), "data": data})
}
