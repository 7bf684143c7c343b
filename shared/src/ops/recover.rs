//! Recovering what a provider sent while we were down: a person asks (`POST
//! /ops/integrations/{id}/recover`), the ops function, which opens no secret, hands the ask to
//! the import function (which opens the provider's key and calls providers anyway), and that
//! one asks the provider: a Stripe integration's events list through the webhook's own path, a
//! monobank bank integration's statement for the window. The ask and the answer travel as JSON.

use crate::bank::import::{self, Limits};
use crate::egress::Apis;
use crate::ids::IntegrationId;
use crate::integrations::bank::BankSettings;
use crate::integrations::payments::PaymentSettings;
use crate::integrations::{self, Settings};
use crate::payments::recover::{self, RecoverError};
use crate::store::Store;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Instant;

/// The longest window one recovery asks for: monobank's statement range, a month.
pub const WINDOW_MAX: Duration = Duration::days(31);

/// One recovery asked for: an integration, a window, and (a monobank statement read page by
/// page) where the next page ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    /// The organisation the asker acts for: the integration must be one of its own.
    pub org: String,
    pub integration_id: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub cursor: Option<i64>,
}

impl Ask {
    /// The event the import function takes it as.
    pub fn event(&self) -> Value {
        json!({ "recover": self })
    }

    /// The ask an event carries, if it is one.
    pub fn of(event: &Value) -> Option<Self> {
        serde_json::from_value(event.get("recover")?.clone()).ok()
    }
}

/// The answer as it travels back: its HTTP status and body.
pub fn answer(status: u16, body: Value) -> Value {
    json!({"status": status, "answer": body})
}

fn refused(status: u16, error: &'static str, detail: impl Into<String>) -> Value {
    answer(status, json!({"error": error, "detail": detail.into()}))
}

/// Every code a recovery's refusal names (`refused`, and the ops function's own `unavailable`).
pub const CODES: [&str; 8] = [
    "not_found",
    "no_api_key",
    "provider_refused_key",
    "not_recoverable",
    "provider_unavailable",
    "unavailable",
    "statement_busy",
    "internal",
];

/// Runs one recovery in the function that opens secrets, within `deadline`: the answer.
pub async fn run(
    store: &Store,
    (apis, limits): (&Apis, &Limits),
    ask: &Ask,
    now: DateTime<Utc>,
    deadline: Instant,
) -> Result<Value, crate::store::StoreError> {
    // The import function checks what it is given as the ops function did: an integration of
    // the organisation the asker acts for, of a kind it recovers, stored.
    let id = IntegrationId::parse(&ask.integration_id)
        .ok()
        .filter(|id| id.org.as_str() == ask.org);
    let Some(id) = id else {
        return Ok(refused(404, "not_found", "integration not found"));
    };
    let Some(integration) = integrations::get(store, &id).await? else {
        return Ok(refused(404, "not_found", "integration not found"));
    };
    let window = (ask.from, ask.to);
    Ok(match &integration.settings {
        Settings::Bank(BankSettings::Monobank { .. }) => {
            let page_to = ask.cursor.unwrap_or(ask.to.timestamp());
            let range = (ask.from.timestamp(), ask.to.timestamp(), page_to);
            let read = import::window_page(store, apis, &integration, limits, range, now)
                .await
                .map_err(|e| match e {
                    import::ImportError::Store(e) => e,
                    other => crate::store::StoreError::Malformed {
                        pk: integration.pk(),
                        detail: other.to_string(),
                    },
                })?;
            statement_answer(&read)
        }
        Settings::Payments(PaymentSettings::Stripe { .. }) => {
            let target = (&integration, apis.allow_loopback);
            // A call that ran out of time goes on from the last event it booked.
            let to = ask
                .cursor
                .and_then(crate::time::from_unix)
                .unwrap_or(ask.to);
            let window = (window.0, to.min(ask.to));
            match recover::stripe(store, &apis.http, target, window, deadline).await {
                Ok(done) => answer(200, json!(done)),
                Err(e) => stripe_refused(e),
            }
        }
        // Nothing else is recovered from a provider: nothing is asked.
        _ => stripe_refused(RecoverError::NotRecoverable),
    })
}

/// Why a Stripe recovery did not happen, as its answer.
fn stripe_refused(e: RecoverError) -> Value {
    match e {
        RecoverError::NoApiKey => refused(
            409,
            "no_api_key",
            "this Stripe integration holds no api_key: set one (POST .../secrets)",
        ),
        RecoverError::NotRecoverable => refused(
            400,
            "not_recoverable",
            RecoverError::NotRecoverable.to_string(),
        ),
        RecoverError::Provider(why) => refused(503, "provider_unavailable", why),
        RecoverError::KeyRefused(status) => refused(
            409,
            "provider_refused_key",
            format!("Stripe refused this integration's api_key ({status}): set a valid one (POST .../secrets)"),
        ),
        RecoverError::Payment(e) if e.is_retryable() => {
            refused(503, "unavailable", "temporarily unavailable; retry later")
        }
        // Its text names items by their keys: in the log line, never in the answer.
        RecoverError::Payment(e) => {
            tracing::error!(error.message = %e, "a recovery's payment failed");
            refused(500, "internal", "internal error")
        }
    }
}

/// A statement page's answer: its rows as listed, the new ones, and where the next page ends.
fn statement_answer(read: &import::WindowRead) -> Value {
    if read.busy {
        return refused(
            503,
            "statement_busy",
            "monobank's statement was read less than a minute ago: recover again in a minute",
        );
    }
    if let Some(why) = &read.stopped {
        return refused(503, "provider_unavailable", why.clone());
    }
    let done = crate::payments::recover::Recovered {
        asked: read.rows as u64,
        new: read.imported as u64,
        duplicates: read.rows.saturating_sub(read.imported) as u64,
        ignored: 0,
        more: read.next.is_some(),
        cursor: read.next,
    };
    answer(200, json!(done))
}

/// Where the ops function hands a recovery: the import function, invoked and waited for (the
/// cloud), or its entry point in the same process (tests and local runs).
pub enum Recovery {
    Lambda {
        lambda: aws_sdk_lambda::Client,
        function: String,
    },
    Local(Box<dyn Fn(Value) -> futures::future::BoxFuture<'static, Value> + Send + Sync>),
}

impl Recovery {
    /// The recovery's answer: its status and body (503 when the import function cannot answer).
    pub async fn ask(&self, ask: &Ask) -> (u16, Value) {
        let answered = match self {
            Self::Local(run) => Ok(run(ask.event()).await),
            Self::Lambda { lambda, function } => invoke(lambda, function, &ask.event()).await,
        };
        match answered {
            Ok(v) => match (v["status"].as_u64(), v.get("answer")) {
                (Some(status), Some(body)) => (status as u16, body.clone()),
                _ => unavailable("the import function's answer is not one"),
            },
            Err(why) => unavailable(&why),
        }
    }
}

fn unavailable(why: &str) -> (u16, Value) {
    tracing::error!(why, "the recovery did not answer");
    (
        503,
        json!({"error": "unavailable", "detail": "the recovery did not answer; retry later"}),
    )
}

async fn invoke(
    lambda: &aws_sdk_lambda::Client,
    function: &str,
    event: &Value,
) -> Result<Value, String> {
    let out = lambda
        .invoke()
        .function_name(function)
        .payload(aws_sdk_lambda::primitives::Blob::new(event.to_string()))
        .send()
        .await
        .map_err(|e| aws_sdk_lambda::error::DisplayErrorContext(&e).to_string())?;
    if let Some(error) = out.function_error() {
        return Err(format!("the import function failed: {error}"));
    }
    let payload = out
        .payload()
        .map(|p| p.as_ref().to_vec())
        .unwrap_or_default();
    serde_json::from_slice(&payload).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code this module refuses with is one the edge keeps as it is (`http::recovery`).
    #[test]
    fn every_refusal_code_of_a_recovery_is_kept_by_name() {
        let text = include_str!("recover.rs");
        let named: Vec<&str> = text
            .split("refused(")
            .skip(1)
            .filter(|call| call.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .filter_map(|call| call.split('"').nth(1))
            .filter(|code| code.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect();
        assert!(named.len() >= 6, "{named:?}");
        for code in named {
            assert!(CODES.contains(&code), "{code} is not in CODES");
        }
    }
}
