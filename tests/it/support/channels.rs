//! A real HTTP server on loopback standing in for Telegram's Bot API and WhatsApp's Graph API:
//! `getFile` and file downloads, Graph media lookups and downloads, and the two send endpoints.
//! It counts what it was asked, and can hold a send past the caller's timeout after receiving it.

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use firmspace::messages::media::{Apis, TELEGRAM_API, WHATSAPP_API};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The bytes every file is.
pub const FILE: &[u8] = &[
    0x89, b'P', b'N', b'G', 13, 10, 26, 10, 1, 2, 3, 4, 5, 6, 7, 8,
];
/// A Telegram `file_id` / WhatsApp media id whose file is 25 MB.
pub const BIG: &str = "BIG";
/// A Telegram `file_id` whose size is not told in advance: 21 MB streamed without a length.
pub const STREAMED: &str = "STREAMED";
/// The only bot token the Bot API stand-in accepts (`/bot{token}/...`); others answer 401.
pub const BOT_TOKEN: &str = "123456:bot-token";
/// The only bearer token the Graph API stand-in accepts; others answer 401.
pub const ACCESS_TOKEN: &str = "whatsapp-access-token";

#[derive(Default)]
pub struct Counts {
    pub lookups: AtomicUsize,
    pub downloads: AtomicUsize,
    pub sends: AtomicUsize,
    /// Whether the customer blocked the bot: every Telegram send is refused 403.
    blocked: std::sync::atomic::AtomicBool,
}

#[derive(Clone)]
struct Shared {
    addr: SocketAddr,
    counts: Arc<Counts>,
    send_delay: Duration,
    sent: Arc<std::sync::Mutex<Vec<Value>>>,
}

pub struct Channels {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    sent: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Channels {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn downloads(&self) -> usize {
        self.counts.downloads.load(Ordering::SeqCst)
    }

    pub fn sends(&self) -> usize {
        self.counts.sends.load(Ordering::SeqCst)
    }

    /// The customer blocks the bot: Telegram refuses every send from now on, as it does.
    pub fn block(&self) {
        self.counts.blocked.store(true, Ordering::SeqCst);
    }

    /// The JSON body of every send received.
    pub fn sent(&self) -> Vec<Value> {
        self.sent.lock().expect("not poisoned").clone()
    }
}

async fn route(State(s): State<Shared>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let post = req.method() == axum::http::Method::POST;
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let body: Bytes = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    // Telegram's token is in the path, WhatsApp's in the Authorization header: a wrong or missing
    // one is refused as the real APIs refuse it.
    let bot = format!("bot{BOT_TOKEN}");
    let telegram = parts.first() == Some(&bot.as_str()) || parts.get(1) == Some(&bot.as_str());
    if !telegram && bearer.as_deref() != Some(ACCESS_TOKEN) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let file_id = query
        .split('&')
        .find_map(|p| p.strip_prefix("file_id="))
        .unwrap_or("")
        .to_owned();
    match (post, parts.as_slice()) {
        // Telegram: getFile, the file, sendMessage.
        (false, [bot, "getFile"]) if bot.starts_with("bot") => {
            s.counts.lookups.fetch_add(1, Ordering::SeqCst);
            let mut result =
                json!({"file_id": file_id, "file_path": format!("photos/{file_id}.jpg")});
            if file_id != STREAMED {
                result["file_size"] = json!(if file_id == BIG { 25 << 20 } else { FILE.len() });
            }
            axum::Json(json!({"ok": true, "result": result})).into_response()
        }
        (false, ["file", bot, "photos", name]) if bot.starts_with("bot") => {
            s.counts.downloads.fetch_add(1, Ordering::SeqCst);
            if name.starts_with(STREAMED) {
                // 21 chunks of 1 MiB, no length: only the cap while reading can stop it.
                let chunks =
                    (0..21).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 1 << 20])));
                return axum::body::Body::from_stream(futures::stream::iter(chunks))
                    .into_response();
            }
            FILE.into_response()
        }
        (true, [bot, "sendMessage"]) if bot.starts_with("bot") => telegram_send(&s, &body).await,
        // WhatsApp: a media lookup, the media, a send.
        (false, ["media", _]) => {
            s.counts.downloads.fetch_add(1, Ordering::SeqCst);
            FILE.into_response()
        }
        (true, [_, "messages"]) => {
            let n = s.counts.sends.fetch_add(1, Ordering::SeqCst) + 1;
            s.sent
                .lock()
                .expect("not poisoned")
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            tokio::time::sleep(s.send_delay).await;
            axum::Json(json!({"messaging_product": "whatsapp", "messages": [{"id": format!("wamid.OUT{n}")}]})).into_response()
        }
        (false, [media_id]) => {
            s.counts.lookups.fetch_add(1, Ordering::SeqCst);
            let size = if *media_id == BIG {
                25 << 20
            } else {
                FILE.len()
            };
            axum::Json(json!({"url": format!("http://{}/media/{media_id}", s.addr), "mime_type": "image/jpeg", "file_size": size, "id": media_id})).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Telegram's sendMessage: counted, kept, answered after the delay with the next message id.
async fn telegram_send(s: &Shared, body: &[u8]) -> Response {
    if s.counts.blocked.load(Ordering::SeqCst) {
        let refused = json!({"ok": false, "error_code": 403, "description": "Forbidden: bot was blocked by the user"});
        return (StatusCode::FORBIDDEN, axum::Json(refused)).into_response();
    }
    let n = s.counts.sends.fetch_add(1, Ordering::SeqCst) + 1;
    let sent: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    s.sent.lock().expect("not poisoned").push(sent.clone());
    tokio::time::sleep(s.send_delay).await;
    let chat = sent["chat_id"].as_str().and_then(|c| c.parse::<i64>().ok());
    axum::Json(json!({"ok": true, "result": {"message_id": 9000 + n, "chat": {"id": chat}}}))
        .into_response()
}

/// Starts the stand-in; every send is answered after `send_delay`.
pub async fn spawn(send_delay: Duration) -> Channels {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    let counts = Arc::new(Counts::default());
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let shared = Shared {
        addr,
        counts: counts.clone(),
        send_delay,
        sent: sent.clone(),
    };
    let app = Router::new().fallback(route).with_state(shared);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Channels { addr, counts, sent }
}

/// The messengers' public APIs as configured in production; tests point integrations at the
/// stand-in with their own `api_url`.
pub fn apis(allow_loopback: bool) -> Apis {
    Apis::new(
        TELEGRAM_API,
        WHATSAPP_API,
        allow_loopback,
        Duration::from_secs(2),
    )
}
