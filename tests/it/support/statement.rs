//! A real HTTP server on loopback standing in for monobank's personal API: a statement of
//! `rows` rows, 500 a page newest first, and monobank's rule of one call per window per token,
//! which it enforces (a second call inside the window gets 429) and counts.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "uPersonalToken-stand-in";
/// The stand-in client's accounts, its default first (what `0` resolves to).
pub const ACCOUNTS: [&str; 2] = ["acc-black-uah", "acc-white-usd"];

#[derive(Clone)]
struct Shared {
    rows: Arc<Vec<Value>>,
    window: Duration,
    last: Arc<Mutex<Option<Instant>>>,
    calls: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

pub struct Statement {
    pub addr: SocketAddr,
    calls: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    pub rows: Arc<Vec<Value>>,
}

impl Statement {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Statement calls answered with rows.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Calls refused with 429 for coming inside the window.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

async fn statement(
    State(s): State<Shared>,
    Path((_account, from, to)): Path<(String, i64, i64)>,
    headers: HeaderMap,
) -> Response {
    if headers.get("x-token").and_then(|v| v.to_str().ok()) != Some(TOKEN) {
        return (StatusCode::FORBIDDEN, "unknown token").into_response();
    }
    {
        let mut last = s.last.lock().expect("not poisoned");
        if last.is_some_and(|at| at.elapsed() < s.window) {
            s.refused.fetch_add(1, Ordering::SeqCst);
            return (
                StatusCode::TOO_MANY_REQUESTS,
                r#"{"errorDescription":"Too many requests"}"#,
            )
                .into_response();
        }
        *last = Some(Instant::now());
    }
    s.calls.fetch_add(1, Ordering::SeqCst);
    let page: Vec<&Value> = s
        .rows
        .iter()
        .filter(|r| (from..=to).contains(&r["time"].as_i64().unwrap_or(0)))
        .take(500)
        .collect();
    axum::Json(page).into_response()
}

/// `GET /personal/client-info`: the client and its accounts.
async fn client_info(headers: HeaderMap) -> Response {
    if headers.get("x-token").and_then(|v| v.to_str().ok()) != Some(TOKEN) {
        return (
            StatusCode::FORBIDDEN,
            r#"{"errorDescription":"Unknown 'X-Token'"}"#,
        )
            .into_response();
    }
    let accounts: Vec<Value> = ACCOUNTS
        .iter()
        .zip([980, 840])
        .map(|(id, code)| json!({"id": id, "currencyCode": code, "type": "black", "balance": 0}))
        .collect();
    axum::Json(json!({"clientId": "stand-in", "name": "Stand-in", "accounts": accounts}))
        .into_response()
}

/// `rows` rows over the last 20 days, newest first; every third a debit.
pub fn rows(count: usize) -> Vec<Value> {
    let now = chrono::Utc::now().timestamp() - 60;
    (0..count)
        .map(|i| {
            let amount = if i % 3 == 2 { -1500 } else { 4000 + i as i64 };
            json!({"id": format!("row-{i:05}"), "time": now - (i as i64) * 1300, "description": format!("Transfer {i}"),
                "mcc": 4829, "hold": false, "amount": amount, "operationAmount": amount, "currencyCode": 980,
                "commissionRate": 0, "cashbackAmount": 0, "balance": 1000000, "comment": ""})
        })
        .collect()
}

pub async fn spawn(count: usize, window: Duration) -> Statement {
    spawn_rows(rows(count), window).await
}

/// A stand-in that answers with exactly these rows.
pub async fn spawn_rows(rows: Vec<Value>, window: Duration) -> Statement {
    let rows = Arc::new(rows);
    let calls = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let shared = Shared {
        rows: rows.clone(),
        window,
        last: Arc::new(Mutex::new(None)),
        calls: calls.clone(),
        refused: refused.clone(),
    };
    let app = Router::new()
        .route("/personal/statement/{account}/{from}/{to}", get(statement))
        .route("/personal/client-info", get(client_info))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    Statement {
        addr,
        calls,
        refused,
        rows,
    }
}
