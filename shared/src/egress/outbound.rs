//! Outgoing calls of automation runs: signed, carrying the run's `Idempotency-Key`, with a short
//! timeout. What happened is classified, so an unclear outcome is checked, never resent blindly.

use crate::signature::standard;
use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use std::time::Duration;

/// An outbound integration: where automation sends messages, and how it signs them.
#[derive(Clone, Debug)]
pub struct OutboundTarget {
    pub url: String,
    /// Where the target reports the state of an idempotency key (`{key}` is replaced).
    pub status_url: Option<String>,
    /// Signs outgoing calls (Standard Webhooks headers).
    pub secret: SecretString,
    /// While a rotation's overlap lasts, the secret before it: a call is signed with both (the
    /// standard's space-separated signatures), so a receiver that holds either verifies it.
    pub previous: Option<SecretString>,
    /// A port other than 443 and 80 the integrator named for `url` and `status_url`.
    pub port: Option<u16>,
}

impl OutboundTarget {
    /// The fields kept in clear; the signing secret is sealed apart.
    pub(crate) fn write(&self, builder: Builder) -> Builder {
        builder
            .str("url", &self.url)
            .opt_str("status_url", self.status_url.as_deref())
            .opt_num("port", self.port)
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut std::collections::HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            url: item.str_of("url")?.to_owned(),
            status_url: item.opt_str("status_url").map(str::to_owned),
            secret: crate::vault::take_secret(secrets, "secret")?,
            previous: None,
            port: item.u64_of("port").ok().and_then(|p| u16::try_from(p).ok()),
        })
    }
}

/// What an attempt tells us.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// Certainly not delivered (connection refused or never made, 408, 425, 429, 503): safe to
    /// send again.
    NotDelivered(String),
    /// The target refused the request (another 4xx): sending again cannot help.
    Rejected(u16),
    /// Timeout, broken connection, another 5xx or 409 (the key's first request may still be
    /// at work there): it may or may not have happened.
    Unclear(String),
}

/// What the target says about a key, where it offers a status URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Delivered,
    NotDelivered,
    Unknown,
}

#[derive(Clone, Debug)]
pub struct Outbound {
    pub http: reqwest::Client,
    pub timeout: Duration,
    pub allow_loopback: bool,
}

impl Outbound {
    /// `allow_loopback` only on the local stack and in tests: everywhere else every connection
    /// goes to a public address (see `targets`).
    pub fn new(timeout: Duration, allow_loopback: bool) -> Self {
        Self {
            http: super::guarded(allow_loopback),
            timeout,
            allow_loopback,
        }
    }

    pub async fn send(&self, target: &OutboundTarget, key: &str, body: &Value, now: i64) -> Sent {
        let url = target.url.as_str();
        if let Err(why) = super::targets::check_url_on(url, self.allow_loopback, target.port) {
            tracing::warn!(%why, "outbound target refused");
            return Sent::Rejected(0);
        }
        let raw = body.to_string();
        let mut req = self
            .http
            .post(url)
            .timeout(self.timeout)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .header("webhook-id", key)
            .header("webhook-timestamp", now.to_string());
        let signatures: Vec<String> = std::iter::once(&target.secret)
            .chain(target.previous.as_ref())
            .filter_map(|secret| {
                standard::sign(secret.expose_secret(), key, now, raw.as_bytes()).ok()
            })
            .collect();
        if !signatures.is_empty() {
            req = req.header("webhook-signature", signatures.join(" "));
        }
        match req.body(raw).send().await {
            Ok(res) => match res.status().as_u16() {
                200..=299 => Sent::Delivered,
                408 | 425 | 429 | 503 => {
                    Sent::NotDelivered(format!("target answered {}", res.status()))
                }
                // The same key still at work there (the Idempotency-Key draft's answer): ask.
                409 => Sent::Unclear("target answered 409 Conflict".into()),
                code @ 400..=499 => Sent::Rejected(code),
                code => Sent::Unclear(format!("target answered {code}")),
            },
            // Without the URL: a target's URL may carry a token in its path or query.
            Err(e) if e.is_connect() => {
                Sent::NotDelivered(format!("connection failed: {}", e.without_url()))
            }
            Err(e) if e.is_timeout() => Sent::Unclear("timed out waiting for the answer".into()),
            Err(e) => Sent::Unclear(format!("request failed: {}", e.without_url())),
        }
    }

    /// Asks the target for the state of `key`: 2xx delivered, 404 not delivered.
    pub async fn check(&self, target: &OutboundTarget, key: &str) -> State {
        let Some(template) = target.status_url.as_deref() else {
            return State::Unknown;
        };
        // Checked again at call time, like `url`: a stored status URL is held to today's rules.
        if let Err(why) = super::targets::check_url_on(template, self.allow_loopback, target.port) {
            tracing::warn!(%why, "status target refused");
            return State::Unknown;
        }
        let url = template.replace("{key}", key);
        // A status lookup is cheap and its answer decides whether a person must look: give it
        // at least two seconds even when sends are held to less.
        let timeout = self.timeout.max(Duration::from_secs(2));
        match self.http.get(url).timeout(timeout).send().await {
            Ok(res) if res.status().is_success() => State::Delivered,
            Ok(res) if res.status().as_u16() == 404 => State::NotDelivered,
            _ => State::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback target that answers every request 200 and counts them.
    async fn always_ok() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                let _ = conn
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            }
        });
        (port, hits)
    }

    #[tokio::test]
    async fn a_stored_status_url_is_checked_again_at_call_time() {
        let (port, hits) = always_ok().await;
        let target = OutboundTarget {
            url: "https://hooks.example.com/x".into(),
            status_url: Some(format!("http://127.0.0.1:{port}/status/{{key}}")),
            secret: SecretString::from(standard::generate_secret()),
            previous: None,
            port: None,
        };
        let strict = Outbound::new(Duration::from_secs(2), false);
        assert_eq!(strict.check(&target, "k1").await, State::Unknown);
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
        let local = Outbound::new(Duration::from_secs(2), true);
        assert_eq!(local.check(&target, "k1").await, State::Delivered);
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// A loopback target that answers every request with `status`.
    async fn answering(status: u16) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = conn.write_all(head.as_bytes()).await;
            }
        });
        port
    }

    #[tokio::test]
    async fn an_answer_that_a_later_attempt_may_get_past_is_no_rejection() {
        let outbound = Outbound::new(Duration::from_secs(2), true);
        for (status, expected) in [
            (408, "not delivered"),
            (425, "not delivered"),
            (409, "unclear"),
            (400, "rejected"),
        ] {
            let port = answering(status).await;
            let target = OutboundTarget {
                url: format!("http://127.0.0.1:{port}/hook"),
                status_url: None,
                secret: SecretString::from(standard::generate_secret()),
                previous: None,
                port: None,
            };
            let sent = outbound
                .send(&target, "k1", &serde_json::json!({}), 0)
                .await;
            let told = match sent {
                Sent::NotDelivered(_) => "not delivered",
                Sent::Unclear(_) => "unclear",
                Sent::Rejected(_) => "rejected",
                Sent::Delivered => "delivered",
            };
            assert_eq!(told, expected, "{status}");
        }
    }

    #[tokio::test]
    async fn during_a_rotations_overlap_a_call_is_signed_with_both_secrets() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, heard) = tokio::sync::oneshot::channel::<String>();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 8192];
            let n = conn.read(&mut buf).await.unwrap();
            let _ = seen.send(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        });
        let (new, old) = (standard::generate_secret(), standard::generate_secret());
        let target = OutboundTarget {
            url: format!("http://127.0.0.1:{port}/hook"),
            status_url: None,
            secret: SecretString::from(new.clone()),
            previous: Some(SecretString::from(old.clone())),
            port: None,
        };
        let body = serde_json::json!({"text": "hi"});
        let sent = Outbound::new(Duration::from_secs(2), true)
            .send(&target, "k1", &body, 1_796_205_600)
            .await;
        assert_eq!(sent, Sent::Delivered);
        let request = heard.await.unwrap();
        let raw = body.to_string();
        let both = [&new, &old]
            .map(|secret| standard::sign(secret, "k1", 1_796_205_600, raw.as_bytes()).unwrap())
            .join(" ");
        assert!(
            request.contains(&format!("webhook-signature: {both}")),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_failed_call_is_told_without_its_url() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let target = OutboundTarget {
            url: format!("http://127.0.0.1:{port}/hook?token=s3cr3t"),
            status_url: None,
            secret: SecretString::from(standard::generate_secret()),
            previous: None,
            port: None,
        };
        let sent = Outbound::new(Duration::from_secs(2), true)
            .send(&target, "k1", &serde_json::json!({}), 0)
            .await;
        let Sent::NotDelivered(why) = sent else {
            panic!("expected not delivered, got {sent:?}");
        };
        assert!(!why.contains("s3cr3t") && !why.contains("/hook"), "{why}");
    }
}
