//! The test application: one organisation of the CRM, with its API key, in a fresh table, and the
//! product's words for what a test does with it: call a route, make an invoice, pay it, connect an
//! integration, deliver a webhook, read the review list, count what was written.

use super::api::{self as api_support, ADMIN};
use super::{fixtures, json_of, request, TestEnv};
use chrono::{DateTime, Utc};
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::payments::providers::Provider;
use firmspace::payments::Invoice;
use firmspace::store::{Item, Store};
use firmspace::webhook::{Edge, Source};
use lambda_http::Request;
use rust_decimal::Decimal;
use serde_json::{json, Value};

pub struct Crm {
    pub env: TestEnv,
    pub api: api::App,
    pub org: OrgId,
    pub key: String,
}

impl Crm {
    /// A fresh table, the `api` function over it and one organisation made by the admin.
    pub async fn new() -> Self {
        let env = TestEnv::new().await;
        let api = api_support::app(&env);
        let (org, key) = new_org(&api).await;
        Self { env, api, org, key }
    }

    /// A fresh organisation with a payments integration of `provider`, and the payment webhook.
    pub async fn with_payments(provider: Provider) -> (Self, IntegrationId, payment_webhook::App) {
        let crm = Self::new().await;
        let hook = crm.hook(provider).await;
        let app = payment_webhook::app(crm.store().clone());
        (crm, hook, app)
    }

    pub fn store(&self) -> &Store {
        &self.env.store
    }

    /// Another organisation on the same table; returns its API key.
    pub async fn another_org(&self) -> String {
        new_org(&self.api).await.1
    }

    /// A route called with this organisation's key.
    pub async fn call(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        self.call_as(&self.key, method, path, body).await
    }

    /// A route called with `token` as the bearer.
    pub async fn call_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Value,
    ) -> (u16, Value) {
        api_support::call(&self.api, method, path, token, body).await
    }

    /// A route called with this organisation's key and more headers.
    pub async fn call_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Value,
    ) -> (u16, Value) {
        let auth = format!("Bearer {}", self.key);
        let mut all = vec![("authorization", auth.as_str())];
        all.extend_from_slice(headers);
        api_support::call_with(&self.api, method, path, &all, body).await
    }

    /// A route that must answer `status`; its JSON body.
    pub async fn expect_status(&self, method: &str, path: &str, body: Value, status: u16) -> Value {
        let (got, answer) = self.call(method, path, body).await;
        assert_eq!(got, status, "{method} {path}: {answer}");
        answer
    }

    /// `GET path`, which must answer 200.
    pub async fn get(&self, path: &str) -> Value {
        self.expect_status("GET", path, Value::Null, 200).await
    }

    /// A route that must refuse with `status` and this error code; its JSON body.
    pub async fn expect_error(
        &self,
        method: &str,
        path: &str,
        body: Value,
        status: u16,
        code: &str,
    ) -> Value {
        let (got, answer) = self.call(method, path, body).await;
        assert_eq!(
            (got, answer["error"].as_str()),
            (status, Some(code)),
            "{method} {path}: {answer}"
        );
        answer
    }

    /// An invoice made through `POST /api/invoices` from these fields; its JSON.
    pub async fn invoice(&self, fields: Value) -> Value {
        self.expect_status("POST", "/api/invoices", fields, 201)
            .await
    }

    /// An open invoice made through the store.
    pub async fn open_invoice(&self, gross: Decimal, currency: &str) -> Invoice {
        fixtures::invoice(&self.env, &self.org, gross, currency).await
    }

    /// The invoice as stored now.
    pub async fn stored_invoice(&self, id: &str) -> Invoice {
        firmspace::payments::invoice::get(self.store(), &self.org, id)
            .await
            .expect("read")
            .expect("the invoice exists")
    }

    /// The manual payment route for `invoice_id` with this `Idempotency-Key`.
    pub async fn pay(&self, invoice_id: &str, idempotency_key: &str, body: Value) -> (u16, Value) {
        self.pay_as(&self.key, invoice_id, idempotency_key, body)
            .await
    }

    /// The manual payment route called with `token`.
    pub async fn pay_as(
        &self,
        token: &str,
        invoice_id: &str,
        idempotency_key: &str,
        body: Value,
    ) -> (u16, Value) {
        let path = format!("/api/invoices/{invoice_id}/payments");
        let auth = format!("Bearer {token}");
        let headers = [
            ("authorization", auth.as_str()),
            ("idempotency-key", idempotency_key),
        ];
        api_support::call_with(&self.api, "POST", &path, &headers, body).await
    }

    /// `POST /api/integrations`, which must answer 201; its JSON.
    pub async fn integration(&self, body: Value) -> Value {
        self.expect_status("POST", "/api/integrations", body, 201)
            .await
    }

    /// A payments integration of `provider` made through the store, with the fixtures' secrets.
    pub async fn hook(&self, provider: Provider) -> IntegrationId {
        fixtures::integration(&self.env, &self.org, provider).await
    }

    /// The organisation's review items, newest first.
    pub async fn review(&self) -> Vec<Value> {
        review(&self.env, &self.org).await
    }

    /// The reasons of the organisation's review items, newest first.
    pub async fn reasons(&self) -> Vec<String> {
        reasons(&self.env, &self.org).await
    }

    /// How many items of `kind` the table holds.
    pub async fn count(&self, kind: &str) -> usize {
        self.env.count(kind).await
    }

    /// Every item of the table, to compare before and after: "nothing was written".
    pub async fn table_snapshot(&self) -> Vec<Item> {
        table_snapshot(&self.env).await
    }
}

/// An organisation made through `POST /api/orgs`: its id and API key.
pub async fn new_org(api: &api::App) -> (OrgId, String) {
    let (status, body) =
        api_support::call(api, "POST", "/api/orgs", ADMIN, json!({"name": "Acme"})).await;
    assert_eq!(status, 201, "{body}");
    let org = OrgId::parse(body["org_id"].as_str().expect("org_id")).expect("an org id");
    (org, body["api_key"].as_str().expect("api_key").to_owned())
}

/// A delivery to a webhook edge at the fixtures' "now": its status and JSON answer, refusals
/// included.
pub async fn deliver<S: Source>(edge: &Edge<S>, req: &Request) -> (u16, Value) {
    deliver_at(edge, req, fixtures::now()).await
}

/// A delivery to a webhook edge at `now`.
pub async fn deliver_at<S: Source>(
    edge: &Edge<S>,
    req: &Request,
    now: DateTime<Utc>,
) -> (u16, Value) {
    let res = edge
        .respond(req, now)
        .await
        .unwrap_or_else(firmspace::http::ApiError::into_response);
    (res.status().as_u16(), json_of(&res))
}

/// A POST of `body` to `path` with these headers, as a provider sends it.
pub fn post(path: &str, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Request {
    request("POST", path, headers, body)
}

/// An organisation's review items, newest first (the first ten).
pub async fn review(env: &TestEnv, org: &OrgId) -> Vec<Value> {
    let items = firmspace::review::list(&env.store, org, 10).await;
    let items = items.expect("review list");
    items
        .iter()
        .map(|i| serde_json::to_value(i).unwrap())
        .collect()
}

/// The reasons of an organisation's review items, newest first.
pub async fn reasons(env: &TestEnv, org: &OrgId) -> Vec<String> {
    review(env, org)
        .await
        .iter()
        .map(|r| r["reason"].as_str().expect("a reason").to_owned())
        .collect()
}

/// Every item of the table, sorted by key, to compare before and after.
/// Every item of the table but the keys' counts of the minute (`kind: rate`): a request is
/// counted before its work, so a refused one moves its key's count and writes nothing else.
pub async fn table_snapshot(env: &TestEnv) -> Vec<Item> {
    let mut items: Vec<Item> = env
        .items()
        .await
        .into_iter()
        .filter(|i| {
            i.get("kind")
                .and_then(|k| k.as_s().ok())
                .map(String::as_str)
                != Some("rate")
        })
        .collect();
    items.sort_by_key(|i| format!("{:?}{:?}", i.get("pk"), i.get("sk")));
    items
}
