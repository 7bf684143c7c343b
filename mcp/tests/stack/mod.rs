//! The stack `cargo xtask test` deploys, as the MCP tests reach it: its API, and a fresh
//! organisation's key. Each test binary takes what it uses of it.
#![allow(dead_code)]

use serde_json::{json, Value};

/// The deployed API and a new organisation on it.
pub struct Org {
    pub http: reqwest::Client,
    pub api_url: String,
    pub key: String,
    pub org_id: String,
    /// The deployed table and where ministack answers, for what only a model files.
    table: String,
    endpoint: String,
}

impl Org {
    /// A new organisation, `name`, made with the admin token on the deployed stack.
    pub async fn new(name: &str) -> Self {
        let path = std::env::var("FIRMSPACE_TEST_STACK").unwrap_or_else(|_| {
            panic!("FIRMSPACE_TEST_STACK is not set: run `cargo xtask test`, which deploys the stack into ministack")
        });
        let coords: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let api_url = coords["api_url"].as_str().unwrap().trim_end_matches('/');
        let http = firmspace::http::client(reqwest::Client::builder());
        let admin = coords["admin_token"].as_str().unwrap();
        let url = format!("{api_url}/api/orgs");
        let org = post(&http, &url, admin, json!({"name": name})).await;
        Self {
            key: org["api_key"].as_str().expect("an API key").to_owned(),
            org_id: org["org_id"].as_str().expect("an org id").to_owned(),
            api_url: api_url.to_owned(),
            http,
            table: coords["table"].as_str().unwrap().to_owned(),
            endpoint: coords["aws_endpoint_url"].as_str().unwrap().to_owned(),
        }
    }

    /// A model's proposal to book `amount` on `invoice` (a `payment_proposed` review item, put
    /// into the deployed table as the AI step files it): its review key.
    pub async fn proposal(&self, invoice: &Value, amount: &str) -> String {
        let store = firmspace::store::Store::connect(&self.table, Some(&self.endpoint)).await;
        let item = firmspace::review::ReviewItem {
            org: firmspace::ids::OrgId::parse(&self.org_id).unwrap(),
            kind: firmspace::review::Kind::Payment,
            reason: firmspace::review::Reason::PaymentProposed,
            key: "rule_mcp:call_1".into(),
            at: chrono::Utc::now(),
            detail: json!({"invoice_id": invoice["id"], "invoice_number": invoice["number"],
                "amount": amount, "currency": invoice["currency"], "rule_id": "rule_mcp",
                "event_key": "message:mcp:1", "open_now": amount}),
        };
        assert!(item.put(&store).await.unwrap());
        item.key
    }

    /// A `POST` of `body` to `path` as the organisation's key: its JSON.
    pub async fn post(&self, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.api_url);
        post(&self.http, &url, &self.key, body).await
    }

    /// A `GET` of `path` as the organisation's key: its JSON.
    pub async fn get(&self, path: &str) -> Value {
        let url = format!("{}{path}", self.api_url);
        let res = self
            .http
            .get(url)
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        res.json().await.unwrap()
    }
}

async fn post(http: &reqwest::Client, url: &str, token: &str, body: Value) -> Value {
    let res = http
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    res.json().await.unwrap()
}
