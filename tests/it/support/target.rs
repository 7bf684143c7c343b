//! A real HTTP server on loopback standing in for an outbound automation target: it records
//! every request's `Idempotency-Key`, answers after `delay` with `status`, and reports the state
//! of a key at `GET /status/{key}`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<String>>>,
    delay: Duration,
    status: u16,
}

pub struct Target {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Target {
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn status_url(&self) -> String {
        format!("http://{}/status/{{key}}", self.addr)
    }

    /// The `Idempotency-Key` of every request received, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("not poisoned").clone()
    }
}

async fn hook(State(s): State<Shared>, headers: HeaderMap) -> StatusCode {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    s.seen.lock().expect("not poisoned").push(key);
    tokio::time::sleep(s.delay).await;
    StatusCode::from_u16(s.status).expect("valid status")
}

async fn status(State(s): State<Shared>, Path(key): Path<String>) -> StatusCode {
    if s.seen.lock().expect("not poisoned").contains(&key) {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    }
}

pub async fn spawn(delay: Duration, status_code: u16) -> Target {
    spawn_at("127.0.0.1:0", delay, status_code).await
}

/// A target on this address (a port a test reserved, to bring the target up later).
pub async fn spawn_at(addr: &str, delay: Duration, status_code: u16) -> Target {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared {
        seen: seen.clone(),
        delay,
        status: status_code,
    };
    let app = Router::new()
        .route("/hook", post(hook))
        .route("/status/{key}", get(status))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    Target { addr, seen }
}

/// A stand-in for monobank's `GET /api/merchant/pubkey`: answers `{"key": key}` to the right
/// `X-Token` and counts the calls.
pub struct MonobankApi {
    pub addr: SocketAddr,
    hits: Arc<Mutex<usize>>,
    status_hits: Arc<Mutex<usize>>,
}

impl MonobankApi {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Key fetches (`GET /api/merchant/pubkey`).
    pub fn hits(&self) -> usize {
        *self.hits.lock().expect("not poisoned")
    }

    /// Invoice status lookups (`GET /api/merchant/invoice/status`).
    pub fn status_hits(&self) -> usize {
        *self.status_hits.lock().expect("not poisoned")
    }
}

/// A stand-in for monobank's merchant API: `/api/merchant/pubkey` answers `key`, and
/// `/api/merchant/invoice/status?invoiceId=` answers the entry of `invoices` with that
/// `invoiceId` (an entry with `"fail": 500` answers that status), 404 for any other; both only
/// to `X-Token: token`.
pub async fn spawn_monobank_with(
    key: String,
    token: &'static str,
    invoices: Vec<serde_json::Value>,
) -> MonobankApi {
    let hits = Arc::new(Mutex::new(0));
    let status_hits = Arc::new(Mutex::new(0));
    let (counter, status_counter) = (hits.clone(), status_hits.clone());
    let authorised = move |headers: &HeaderMap| {
        headers.get("x-token").and_then(|v| v.to_str().ok()) == Some(token)
    };
    let forbidden = || {
        (
            StatusCode::FORBIDDEN,
            axum::Json(serde_json::json!({"errText": "forbidden"})),
        )
    };
    let app = Router::new()
        .route(
            "/api/merchant/pubkey",
            get(move |headers: HeaderMap| {
                let counter = counter.clone();
                let key = key.clone();
                async move {
                    *counter.lock().expect("not poisoned") += 1;
                    if !authorised(&headers) {
                        return forbidden();
                    }
                    (StatusCode::OK, axum::Json(serde_json::json!({ "key": key })))
                }
            }),
        )
        .route(
            "/api/merchant/invoice/status",
            get(
                move |headers: HeaderMap, uri: axum::http::Uri| {
                    let counter = status_counter.clone();
                    let invoices = invoices.clone();
                    async move {
                        *counter.lock().expect("not poisoned") += 1;
                        if !authorised(&headers) {
                            return forbidden();
                        }
                        let wanted = uri
                            .query()
                            .and_then(|q| q.strip_prefix("invoiceId="))
                            .unwrap_or_default()
                            .to_owned();
                        match invoices.iter().find(|i| i["invoiceId"] == wanted.as_str()) {
                            Some(i) if i["fail"].is_u64() => (
                                StatusCode::from_u16(i["fail"].as_u64().unwrap() as u16).unwrap(),
                                axum::Json(serde_json::json!({"errText": "unavailable"})),
                            ),
                            Some(i) => (StatusCode::OK, axum::Json(i.clone())),
                            None => (
                                StatusCode::NOT_FOUND,
                                axum::Json(serde_json::json!({"errCode": "NOT_FOUND", "errText": "invoice not found"})),
                            ),
                        }
                    }
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    MonobankApi {
        addr,
        hits,
        status_hits,
    }
}

/// A stand-in for Stripe's events list: `GET /v1/events` to `Authorization: Bearer {key}`
/// answers the `events` created in `created[gte]`..`created[lte]` whose type is among
/// `types[]`, newest first, two a page (`starting_after` the last id of the page before).
pub struct StripeApi {
    pub addr: SocketAddr,
    /// Each call's query, as it came.
    pub calls: Arc<Mutex<Vec<String>>>,
}

impl StripeApi {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

pub async fn spawn_stripe(key: &'static str, mut events: Vec<serde_json::Value>) -> StripeApi {
    events.sort_by_key(|e| std::cmp::Reverse(e["created"].as_i64()));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    let app = Router::new().route(
        "/v1/events",
        get(move |headers: HeaderMap, uri: axum::http::Uri| {
            let (events, seen) = (events.clone(), seen.clone());
            async move {
                let query = uri.query().unwrap_or_default().to_owned();
                seen.lock().expect("not poisoned").push(query.clone());
                let bearer = format!("Bearer {key}");
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&bearer) {
                    let refused = serde_json::json!({"error": {"type": "invalid_request_error"}});
                    return (StatusCode::UNAUTHORIZED, axum::Json(refused));
                }
                let pairs: Vec<(String, String)> = url_pairs(&query);
                let one = |name: &str| {
                    pairs
                        .iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.clone())
                };
                let number = |name: &str| one(name).and_then(|v| v.parse::<i64>().ok());
                let types: Vec<&String> = pairs
                    .iter()
                    .filter(|(k, _)| k == "types[]")
                    .map(|(_, v)| v)
                    .collect();
                let listed: Vec<&serde_json::Value> = events
                    .iter()
                    .filter(|e| {
                        number("created[gte]").is_none_or(|t| e["created"].as_i64() >= Some(t))
                    })
                    .filter(|e| {
                        number("created[lte]").is_none_or(|t| e["created"].as_i64() <= Some(t))
                    })
                    .filter(|e| types.is_empty() || types.iter().any(|t| e["type"] == t.as_str()))
                    .collect();
                let start = match one("starting_after") {
                    Some(after) => listed
                        .iter()
                        .position(|e| e["id"] == after.as_str())
                        .map_or(0, |i| i + 1),
                    None => 0,
                };
                let page: Vec<_> = listed
                    .iter()
                    .skip(start)
                    .take(2)
                    .cloned()
                    .cloned()
                    .collect();
                let more = start + page.len() < listed.len();
                let body = serde_json::json!({"object": "list", "data": page, "has_more": more});
                (StatusCode::OK, axum::Json(body))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    StripeApi { addr, calls }
}

/// A query string's pairs, percent-decoded.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let mut out = Vec::new();
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 3 <= bytes.len() {
                if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    out.push(b);
                    i += 3;
                    continue;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}
