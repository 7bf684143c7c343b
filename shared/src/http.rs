//! The request/response edge: one error type mapped to HTTP once, JSON bodies, header access.

use lambda_http::{Body, Request, Response};
use serde_json::{json, Value};
use std::error::Error as StdError;

pub use crate::egress::client;
pub use crate::fields::plain;

/// Largest body we read; bigger ones answer 413.
pub const MAX_BODY: usize = 256 * 1024;

/// A 4xx says what was wrong; a 5xx says nothing internal (the cause chain goes to the log).
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub detail: String,
    /// The request field that was refused, for a 400 about one field.
    pub field: Option<&'static str>,
    /// Seconds the caller should wait (`Retry-After`, and `retry_after` in the body).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            field: None,
            retry_after: None,
        }
    }

    /// 429 `rate_limited`: the key read more than its limit this minute.
    pub fn rate_limited(limit: u64, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                429,
                "rate_limited",
                format!("at most {limit} requests a minute here; retry in {retry_after} s"),
            )
        }
    }

    /// A request's count before its work: on, or 429 over its limit.
    pub fn counted((read, limit): (crate::orgs::rate::Read, u64)) -> Result<(), Self> {
        match read {
            crate::orgs::rate::Read::Allowed => Ok(()),
            crate::orgs::rate::Read::Limited { retry_after } => {
                Err(Self::rate_limited(limit, retry_after))
            }
        }
    }

    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(400, code, detail)
    }

    pub fn unauthorized(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(401, code, detail)
    }

    /// 405, naming the methods the path takes.
    pub fn method_not_allowed(methods: &[&str]) -> Self {
        Self::new(
            405,
            "method_not_allowed",
            format!("this path takes {}", methods.join(", ")),
        )
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(404, "not_found", format!("{what} not found"))
    }

    /// Logs the whole cause chain and answers a bare 500 (or 503 when a retry can help).
    pub fn internal(err: &(dyn StdError + 'static), retryable: bool) -> Self {
        let mut chain = Vec::new();
        let mut cause = err.source();
        while let Some(c) = cause {
            chain.push(c.to_string());
            cause = c.source();
        }
        tracing::error!(error.message = %err, error.cause_chain = ?chain, "request failed");
        if retryable {
            Self::new(503, "unavailable", "temporarily unavailable; retry later")
        } else {
            Self::new(500, "internal", "internal error")
        }
    }

    pub fn into_response(self) -> Response<Body> {
        let mut body = json!({"error": self.code, "detail": self.detail});
        if let Some(field) = self.field {
            body["field"] = json!(field);
        }
        if let Some(seconds) = self.retry_after {
            body["retry_after"] = json!(seconds);
        }
        let mut response = json_response(self.status, &body);
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert("retry-after", lambda_http::http::HeaderValue::from(seconds));
        }
        response
    }
}

/// A refused field is a 400 that names it.
impl From<crate::fields::FieldError> for ApiError {
    fn from(err: crate::fields::FieldError) -> Self {
        Self {
            field: Some(err.field),
            ..Self::bad_request("invalid_field", err.to_string())
        }
    }
}

/// A store failure is 503 when a retry can help (throttling, a conflict, a timeout) and 500
/// when it cannot (a malformed stored item, a request DynamoDB refuses): our own defect.
impl From<crate::store::StoreError> for ApiError {
    fn from(err: crate::store::StoreError) -> Self {
        let retryable = err.is_retryable();
        Self::internal(&err, retryable)
    }
}

impl From<crate::payments::PaymentError> for ApiError {
    fn from(err: crate::payments::PaymentError) -> Self {
        let retryable = err.is_retryable();
        Self::internal(&err, retryable)
    }
}

impl From<crate::ledger::LedgerError> for ApiError {
    fn from(e: crate::ledger::LedgerError) -> Self {
        use crate::ledger::LedgerError;
        match e {
            LedgerError::Store(e) => e.into(),
            LedgerError::CurrencyMismatch { .. } => {
                Self::bad_request("currency_mismatch", e.to_string())
            }
            LedgerError::NotHeld => Self::new(409, "not_held", e.to_string()),
        }
    }
}

pub fn json_response(status: u16, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::Text(body.to_string()))
        .expect("status and header are valid")
}

/// The raw body exactly as it arrived (API Gateway's base64 is already undone).
pub fn body_bytes(req: &Request) -> &[u8] {
    match req.body() {
        Body::Empty => &[],
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    }
}

pub fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The route part of the path (`/hooks/...`, `/api/...`), whatever stage or gateway prefix the
/// request came through.
pub fn route_path(req: &Request) -> &str {
    let path = req.uri().path();
    ["/api/", "/hooks/", "/ops/"]
        .iter()
        .filter_map(|p| path.find(p))
        .min()
        .map_or(path, |i| &path[i..])
}

/// The query parameter `name`, percent-decoded.
pub fn query(req: &Request, name: &str) -> Option<String> {
    url::form_urlencoded::parse(req.uri().query()?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Parses a JSON body into `T`, answering 400 `malformed` with serde's explanation in the
/// caller's terms: no Rust type names, and never more than 300 characters of it.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("malformed", plain(&e.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct NewThing {
        name: String,
    }

    #[test]
    fn json_errors_name_no_rust_type_and_stay_short() {
        for body in [&b"[]"[..], b"5", b"\"x\"", b"null"] {
            let err = parse_json::<NewThing>(body).unwrap_err();
            assert_eq!(err.status, 400);
            assert!(!err.detail.contains("NewThing"), "{}", err.detail);
        }
        let long = format!(r#"{{"name": 5, "{}": 1}}"#, "x".repeat(5000));
        let err = parse_json::<NewThing>(long.as_bytes()).unwrap_err();
        assert!(err.detail.chars().count() <= 301, "{}", err.detail.len());
    }

    #[tokio::test]
    async fn the_outgoing_client_builds_tls_on_the_sdk_crypto_provider() {
        let http = client(reqwest::Client::builder());
        let err = http
            .get("https://127.0.0.1:9/")
            .send()
            .await
            .expect_err("nothing listens on port 9");
        assert!(err.is_connect(), "{err:?}");
    }
}
