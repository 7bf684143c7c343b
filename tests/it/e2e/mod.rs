//! End-to-end through the stack `cargo xtask test` deployed into ministack: real API Gateway
//! routes, real Lambda processes, the real table.

mod channels;
mod contract;
mod ledger;
mod ops;

use firmspace::signature::standard;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Each test's answers go to a file of their own.
static ANSWERS: AtomicUsize = AtomicUsize::new(0);

pub struct Stack {
    pub api_url: String,
    pub admin_token: String,
    pub http: reqwest::Client,
    /// Every answer the test received, for `answers_follow_the_document`.
    seen: std::sync::Mutex<Vec<Value>>,
}

pub fn stack() -> Stack {
    let path = std::env::var("FIRMSPACE_TEST_STACK").unwrap_or_else(|_| {
        panic!("FIRMSPACE_TEST_STACK is not set: run `cargo xtask test`, which deploys the stack into ministack")
    });
    let raw = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let coords: Value = serde_json::from_str(&raw).expect("stack coordinates JSON");
    Stack {
        api_url: coords["api_url"].as_str().expect("api_url").to_owned(),
        admin_token: coords["admin_token"]
            .as_str()
            .expect("admin_token")
            .to_owned(),
        http: firmspace::http::client(reqwest::Client::builder()),
        seen: std::sync::Mutex::new(Vec::new()),
    }
}

impl Stack {
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Value,
    ) -> (u16, Value) {
        let asked = method.to_string();
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.api_url))
            .bearer_auth(token);
        if !body.is_null() {
            req = req.json(&body);
        }
        let res = req.send().await.expect("API reachable");
        self.answered(&asked, res).await
    }

    /// The status and JSON body of an answer, kept to be held against the document.
    pub(crate) async fn answered(&self, method: &str, res: reqwest::Response) -> (u16, Value) {
        let status = res.status().as_u16();
        let url = res.url().clone();
        let content_type = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().trim().to_owned());
        let headers: serde_json::Map<String, Value> = res
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), json!(v.to_str().ok()?))))
            .collect();
        let text = res.text().await.unwrap_or_default();
        let base = self.api_url.trim_end_matches('/');
        if let (Some(path), Some(content_type)) = (url.as_str().strip_prefix(base), content_type) {
            self.seen.lock().unwrap().push(json!({
                "method": method, "path": path.split('?').next().unwrap_or_default(),
                "query": url.query(), "status": status, "content_type": content_type,
                "body": text, "headers": headers,
            }));
        }
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// The OpenAPI document the deployed API serves, as text.
    pub async fn served_document(&self) -> String {
        let api = self.api_url.trim_end_matches('/');
        let res = self.http.get(format!("{api}/api/openapi.json")).send();
        res.await.unwrap().text().await.unwrap()
    }

    /// Every JSON answer this test received, held against the served document by openapi-core
    /// (`validate_answers.py`, with `application/problem+json` read as JSON): none may be one
    /// the document does not declare.
    pub async fn answers_follow_the_document(&self) {
        let seen = std::mem::take(&mut *self.seen.lock().unwrap());
        let served = self.served_document().await;
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "answers-{}",
            ANSWERS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("openapi.json"), served).unwrap();
        std::fs::write(dir.join("answers.json"), Value::from(seen).to_string()).unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = std::process::Command::new(root.join(".venv/bin/python"))
            .arg(root.join("tests/it/e2e/validate_answers.py"))
            .arg(dir.join("openapi.json"))
            .arg(dir.join("answers.json"))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "answers the document does not declare: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let checked: Value = serde_json::from_str(&said).unwrap();
        assert!(checked["validated"].as_u64() > Some(0), "{said}");
    }

    /// `POST path` with `token` and this `Idempotency-Key`: the status and the JSON body.
    pub async fn api_with_key(
        &self,
        path: &str,
        token: &str,
        key: &str,
        body: Value,
    ) -> (u16, Value) {
        let res = self
            .http
            .post(format!("{}{path}", self.api_url))
            .bearer_auth(token)
            .header("idempotency-key", key)
            .json(&body)
            .send()
            .await
            .expect("API reachable");
        self.answered("POST", res).await
    }

    /// `GET path` with `token`: the JSON body, whatever the status.
    pub async fn get(&self, path: &str, token: &str) -> Value {
        self.api(reqwest::Method::GET, path, token, Value::Null)
            .await
            .1
    }

    /// `POST path` with `token`, which must answer `status`; the JSON body.
    pub async fn post(&self, path: &str, token: &str, body: Value, status: u16) -> Value {
        let (got, answer) = self.api(reqwest::Method::POST, path, token, body).await;
        assert_eq!(got, status, "POST {path}: {answer}");
        answer
    }

    /// An organisation with a Standard Webhooks integration; returns (api key, webhook url, secret).
    pub async fn org_with_integration(&self) -> (String, String, String) {
        let (status, org) = self
            .api(
                reqwest::Method::POST,
                "/api/orgs",
                &self.admin_token,
                json!({"name": "E2E"}),
            )
            .await;
        assert_eq!(status, 201, "{org}");
        let key = org["api_key"].as_str().unwrap().to_owned();
        let (status, hook) = self
            .api(
                reqwest::Method::POST,
                "/api/integrations",
                &key,
                json!({"kind": "payments", "provider": "standard"}),
            )
            .await;
        assert_eq!(status, 201, "{hook}");
        (
            key,
            hook["webhook_url"].as_str().unwrap().to_owned(),
            hook["secret"].as_str().unwrap().to_owned(),
        )
    }

    pub async fn deliver(&self, url: &str, secret: &str, msg_id: &str, body: &str) -> (u16, Value) {
        let ts = chrono::Utc::now().timestamp();
        let sig = standard::sign(secret, msg_id, ts, body.as_bytes()).unwrap();
        let res = self
            .http
            .post(url)
            .header("webhook-id", msg_id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig)
            .body(body.to_owned())
            .send()
            .await
            .expect("webhook reachable");
        self.answered("POST", res).await
    }
}

#[tokio::test]
async fn a_signed_webhook_posted_three_times_through_the_gateway_books_one_payment() {
    let stack = stack();
    let (key, url, secret) = stack.org_with_integration().await;
    let (_, inv) = stack
        .api(
            reqwest::Method::POST,
            "/api/invoices",
            &key,
            json!({"currency": "UAH", "gross": "100.00"}),
        )
        .await;
    let id = inv["id"].as_str().unwrap();
    let body = json!({"type": "payment.succeeded", "data": {"payment_id": "e2e_pay_1", "invoice_id": id, "amount": "40.00", "currency": "UAH"}}).to_string();
    let mut duplicates = Vec::new();
    for _ in 0..3 {
        let (status, answer) = stack.deliver(&url, &secret, "msg_e2e_1", &body).await;
        assert_eq!(status, 200, "{answer}");
        duplicates.push(answer["duplicate"].as_bool().unwrap());
    }
    assert_eq!(duplicates, [false, true, true]);
    let (_, after) = stack
        .api(
            reqwest::Method::GET,
            &format!("/api/invoices/{id}"),
            &key,
            Value::Null,
        )
        .await;
    assert_eq!(
        (after["paid"].as_str(), after["version"].as_u64()),
        (Some("40.00"), Some(1))
    );
    assert_eq!(after["payments"].as_array().unwrap().len(), 1);

    let (status, refused) = stack
        .deliver(&url, &standard::generate_secret(), "msg_e2e_2", &body)
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (401, Some("invalid_signature"))
    );
    stack.answers_follow_the_document().await;
}

/// Polls `observe` every 250 ms until it gives `expected`, for at most `patience`; what it
/// gave last.
pub async fn settle<T: PartialEq, F: std::future::Future<Output = T>>(
    expected: &T,
    patience: std::time::Duration,
    observe: impl Fn() -> F,
) -> T {
    let started = std::time::Instant::now();
    let mut seen = observe().await;
    while seen != *expected && started.elapsed() < patience {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        seen = observe().await;
    }
    seen
}

pub fn count(list: &Value) -> usize {
    list["items"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn through_the_stack_a_payment_delivered_three_and_twenty_times_has_each_consequence_once() {
    let stack = stack();
    let (key, url, secret) = stack.org_with_integration().await;
    for user in ["u1", "u2", "u3"] {
        let member = json!({"user_id": user, "name": user});
        stack.post("/api/members", &key, member, 201).await;
    }
    let ship = json!({"trigger": "invoice.paid", "action": {"type": "create_task", "title": "Ship the order"}});
    stack.post("/api/rules", &key, ship, 201).await;
    let mut bodies = Vec::new();
    for contact in ["cA", "cB"] {
        let forty = json!({"currency": "UAH", "gross": "40.00", "contact_id": contact});
        let (_, inv) = stack
            .api(reqwest::Method::POST, "/api/invoices", &key, forty)
            .await;
        let id = inv["id"].as_str().unwrap().to_owned();
        bodies.push(json!({"type": "payment.succeeded", "data": {"payment_id": format!("pay_{contact}"), "invoice_id": id}}).to_string());
    }
    for _ in 0..3 {
        assert_eq!(
            stack.deliver(&url, &secret, "msg_a", &bodies[0]).await.0,
            200
        );
    }
    let concurrent = futures::future::join_all(
        (0..20).map(|_| stack.deliver(&url, &secret, "msg_b", &bodies[1])),
    )
    .await;
    assert!(
        concurrent.iter().all(|(status, _)| *status == 200),
        "{concurrent:?}"
    );
    let firsts = concurrent.iter().filter(|(_, a)| a["duplicate"] == false);
    assert_eq!(firsts.count(), 1);
    let observe = || async {
        let a = count(&stack.get("/api/activity/contact/cA", &key).await);
        let b = count(&stack.get("/api/activity/contact/cB", &key).await);
        let mut notes = Vec::new();
        for user in ["u1", "u2", "u3"] {
            let path = format!("/api/notifications?recipient={user}");
            notes.push(count(&stack.get(&path, &key).await));
        }
        let tasks = count(&stack.get("/api/tasks", &key).await);
        (a, b, notes, tasks)
    };
    let expected = (1, 1, vec![2, 2, 2], 2);
    let seen = settle(&expected, std::time::Duration::from_secs(60), observe).await;
    assert_eq!(seen, expected, "one line per invoice, one notification per member per payment, one task per closed invoice");
    // Late redeliveries must not add anything either.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(observe().await, expected);
    stack.answers_follow_the_document().await;
}

/// Through the gateway, what no route serves is still answered by us: the `$default` route.
#[tokio::test]
async fn unrouted_requests_through_the_gateway_get_our_json() {
    let stack = stack();
    let (key, url, _) = stack.org_with_integration().await;
    let hook_path = url
        .find("/hooks/")
        .map(|i| url[i..].to_owned())
        .expect("webhook url");
    for (method, path, status, allow) in [
        (reqwest::Method::GET, hook_path.as_str(), 405, Some("POST")),
        (reqwest::Method::PUT, hook_path.as_str(), 405, Some("POST")),
        (reqwest::Method::GET, "/nowhere", 404, None),
        (
            reqwest::Method::DELETE,
            "/api/invoices",
            405,
            Some("GET, POST"),
        ),
    ] {
        let res = stack
            .http
            .request(method.clone(), format!("{}{path}", stack.api_url))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        let headers = res.headers().clone();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let got = res.status().as_u16();
        let body: Value = res.json().await.unwrap();
        assert_eq!(got, status, "{method} {path}: {body}");
        // An RFC 9457 problem, with our code, joined to the function's logs by the request id.
        assert_eq!(
            header("content-type").as_deref(),
            Some("application/problem+json")
        );
        assert!(
            body["error"].is_string() && body["detail"].is_string(),
            "{body}"
        );
        assert_eq!(body["status"].as_u64(), Some(u64::from(status)));
        let id = header("x-request-id").expect("x-request-id");
        assert_eq!(body["instance"], format!("urn:request:{id}"), "{body}");
        assert_eq!(header("allow").as_deref(), allow, "{method} {path}");
    }
    stack.answers_follow_the_document().await;
}
