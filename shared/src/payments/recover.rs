//! What Stripe sent while we were down, asked of Stripe (its events list, with the integration's
//! API key) and booked through the webhook's own path and key (`providers::input_of`,
//! `register_payment`): what already arrived is a duplicate, a type the webhook does not book
//! is ignored, what is new is booked now.

use super::providers::{self, stripe, PaymentSettings, Provider};
use super::register::{on_its_payments_invoice, register_payment, PaymentError};
use crate::integrations::{Integration, Settings};
use crate::store::{Store, Written};
use chrono::{DateTime, Utc};
use secrecy::ExposeSecret;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Stripe's API.
pub const STRIPE_API: &str = "https://api.stripe.com";
/// The payment event types asked for: what the webhook books, and the payment intents' other
/// outcomes (acknowledged and ignored, as the webhook does).
pub const STRIPE_TYPES: [&str; 3] = [
    "payment_intent.succeeded",
    "payment_intent.payment_failed",
    "payment_intent.canceled",
];
/// Each call to Stripe.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(8);

/// What one recovery asked and booked.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
pub struct Recovered {
    /// The events the provider listed.
    pub asked: u64,
    /// Booked now: they had not arrived.
    pub new: u64,
    /// Already stored: they had arrived.
    pub duplicates: u64,
    /// Of a type (or a shape) the webhook does not book.
    pub ignored: u64,
    /// The time ran out before the list's end: recover the window again with `cursor`.
    pub more: bool,
    /// With `more`: the creation time (unix seconds) of the last event booked; the next call
    /// asks up to it (an event of that second seen again is a duplicate).
    pub cursor: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error("this Stripe integration holds no api_key")]
    NoApiKey,
    #[error("only a Stripe payments integration or a monobank bank integration is recovered")]
    NotRecoverable,
    #[error("the provider: {0}")]
    Provider(String),
    /// The provider refused the integration's key (401, 403): asking again cannot help.
    #[error("the provider refused the integration's key ({0})")]
    KeyRefused(u16),
    #[error(transparent)]
    Payment(#[from] PaymentError),
}

/// The Stripe integration's key and API base URL (its own on the local and test stages).
fn stripe_of(
    integration: &Integration,
    allow_loopback: bool,
) -> Result<(&str, String), RecoverError> {
    let Settings::Payments(PaymentSettings::Stripe {
        api_key, api_url, ..
    }) = &integration.settings
    else {
        return Err(RecoverError::NotRecoverable);
    };
    let key = api_key
        .as_ref()
        .map(|k| k.expose_secret())
        .filter(|k| !k.is_empty())
        .ok_or(RecoverError::NoApiKey)?;
    let base = match api_url {
        Some(own) if allow_loopback => own.trim_end_matches('/').to_owned(),
        _ => STRIPE_API.to_owned(),
    };
    Ok((key, base))
}

/// Pages Stripe's events created in `[from, to]` (newest first, `starting_after` the last one
/// seen) and books each through the webhook's path, until the list ends or `deadline`.
pub async fn stripe(
    store: &Store,
    http: &reqwest::Client,
    (integration, allow_loopback): (&Integration, bool),
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    deadline: Instant,
) -> Result<Recovered, RecoverError> {
    let (key, base) = stripe_of(integration, allow_loopback)?;
    let mut recovered = Recovered::default();
    let mut after: Option<String> = None;
    let mut last_created: Option<i64> = None;
    loop {
        if Instant::now() + CALL_TIMEOUT > deadline {
            recovered.more = true;
            recovered.cursor = last_created;
            return Ok(recovered);
        }
        let mut query = vec![
            ("limit".to_owned(), "100".to_owned()),
            ("created[gte]".to_owned(), from.timestamp().to_string()),
            ("created[lte]".to_owned(), to.timestamp().to_string()),
        ];
        query.extend(STRIPE_TYPES.map(|t| ("types[]".to_owned(), t.to_owned())));
        query.extend(
            after
                .iter()
                .map(|a| ("starting_after".to_owned(), a.clone())),
        );
        let answer = http
            .get(format!("{base}/v1/events"))
            .bearer_auth(key)
            .query(&query)
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| RecoverError::Provider(format!("unreachable: {}", e.without_url())))?;
        match answer.status().as_u16() {
            200..=299 => {}
            status @ (401 | 403) => return Err(RecoverError::KeyRefused(status)),
            status => return Err(RecoverError::Provider(format!("Stripe answered {status}"))),
        }
        let page: Value = answer
            .json()
            .await
            .map_err(|e| RecoverError::Provider(format!("unreadable: {}", e.without_url())))?;
        let events = page["data"].as_array().cloned().unwrap_or_default();
        for event in &events {
            book(store, integration, event, &mut recovered).await?;
            last_created = event["created"].as_i64().or(last_created);
        }
        after = events
            .last()
            .and_then(|e| e["id"].as_str())
            .map(str::to_owned);
        if page["has_more"] != Value::Bool(true) || after.is_none() {
            return Ok(recovered);
        }
    }
}

/// One listed event, as its webhook would have booked it.
async fn book(
    store: &Store,
    integration: &Integration,
    event: &Value,
    recovered: &mut Recovered,
) -> Result<(), RecoverError> {
    recovered.asked += 1;
    let body = serde_json::to_vec(event).unwrap_or_default();
    let live = matches!(
        &integration.settings,
        Settings::Payments(PaymentSettings::Stripe { live: true, .. })
    );
    let parsed = stripe::parse(&body, live).ok();
    let Some(input) =
        parsed.and_then(|e| providers::input_of(integration, Provider::Stripe, e, Utc::now()))
    else {
        recovered.ignored += 1;
        return Ok(());
    };
    let input = on_its_payments_invoice(store, input)
        .await
        .map_err(PaymentError::from)?;
    match register_payment(store, &input).await? {
        Written::New(_) => recovered.new += 1,
        Written::Repeat { .. } | Written::Conflict { .. } => recovered.duplicates += 1,
    }
    Ok(())
}
