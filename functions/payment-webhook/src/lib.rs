#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/payments`: the signature is checked before anything in the body
//! is read; a paid status ends in `register_payment`; every repeat is acknowledged with 200.

use anyhow::Context;
use chrono::{DateTime, Utc};
use firmspace::config::Config;
use firmspace::http::{self, body_bytes, header, json_response, ApiError, MAX_BODY};
use firmspace::ids::{ExternalId, IntegrationId};
use firmspace::money;
use firmspace::orgs::{self, Integration, Provider};
use firmspace::payments::providers::{self, Paid, WebhookEvent};
use firmspace::payments::{
    register_payment, reversal_id, Invoice, PaymentInput, Registered, Source,
};
use firmspace::signature::{self, SignatureError};
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use secrecy::ExposeSecret;
use serde_json::json;
use std::convert::Infallible;

mod monobank_keys;
use monobank_keys::MonobankKeys;

pub struct App {
    store: Store,
    monobank: MonobankKeys,
}

impl App {
    pub fn new(store: Store) -> Self {
        Self::with_monobank_api(store, "https://api.monobank.ua")
    }

    /// `monobank_api` is where a rotated merchant key is fetched (a loopback server in tests).
    pub fn with_monobank_api(store: Store, monobank_api: &str) -> Self {
        Self {
            store,
            monobank: MonobankKeys::new(monobank_api),
        }
    }

    pub async fn from_env() -> anyhow::Result<Self> {
        let config = Config::from_env().context("loading configuration")?;
        Ok(Self::with_monobank_api(
            Store::from_config(&config).await,
            &config.monobank_api_url,
        ))
    }

    pub async fn handle(&self, req: Request) -> Result<Response<Body>, Infallible> {
        Ok(self
            .respond(&req, Utc::now())
            .await
            .unwrap_or_else(ApiError::into_response))
    }

    /// The whole decision for one delivery at time `now`.
    pub async fn respond(
        &self,
        req: &Request,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let integration_id = integration_in_path(http::route_path(req))
            .ok_or_else(|| ApiError::not_found("route"))?;
        let body = body_bytes(req);
        if body.len() > MAX_BODY {
            return Err(ApiError::new(
                413,
                "payload_too_large",
                "body exceeds 256 KiB",
            ));
        }
        let id =
            IntegrationId::parse(integration_id).map_err(|_| ApiError::not_found("integration"))?;
        let integration = orgs::get_integration(&self.store, &id)
            .await?
            .filter(|i| i.kind == "payments")
            .ok_or_else(|| ApiError::not_found("integration"))?;
        let provider = integration
            .provider
            .ok_or_else(|| ApiError::not_found("integration"))?;
        let verified = match verify(&integration, provider, req, body, now) {
            Err(SignatureError::Mismatch | SignatureError::BadKey)
                if provider == Provider::Monobank =>
            {
                self.monobank
                    .verify_with_fresh_key(
                        &self.store,
                        &integration,
                        header(req, "x-sign"),
                        body,
                        now,
                    )
                    .await
            }
            other => other,
        };
        verified.map_err(|e| {
            tracing::warn!(integration = %id.id, reason = %e, "refused webhook");
            ApiError::unauthorized("invalid_signature", e.to_string())
        })?;
        let parsed = match provider {
            Provider::Standard => providers::standard(
                body,
                header(req, "webhook-timestamp")
                    .and_then(|t| t.parse().ok())
                    .and_then(|t| DateTime::from_timestamp(t, 0)),
            ),
            Provider::Stripe => providers::stripe(body),
            Provider::Monobank => providers::monobank(body),
        }
        .map_err(|e| ApiError::bad_request("malformed", e.to_string()))?;
        let source = match provider {
            Provider::Standard => Source::Standard,
            Provider::Stripe => Source::Stripe,
            Provider::Monobank => Source::Monobank,
        };
        let (paid, reverses) = match parsed {
            WebhookEvent::Ignored(status) => {
                return Ok(json_response(
                    200,
                    &json!({"status": "ignored", "provider_status": status}),
                ))
            }
            WebhookEvent::Paid(paid) => (paid, None),
            WebhookEvent::Reversed(paid) => {
                let original = paid.external_id.clone();
                let key = reversal_id(&original);
                (
                    Paid {
                        external_id: key,
                        ..paid
                    },
                    Some(original),
                )
            }
        };
        let input = PaymentInput {
            org: integration.org().clone(),
            invoice_ref: paid.invoice_ref,
            source,
            external_id: paid.external_id,
            amount: paid.amount,
            currency: paid.currency,
            at: paid.at.unwrap_or(now),
            actor: format!("integration:{}", id.id),
            fingerprint: ExternalId::of_body(body).as_str().to_owned(),
            reverses,
        };
        let registered = register_payment(&self.store, &input).await?;
        Ok(json_response(200, &webhook_answer(&registered)))
    }
}

/// `{"duplicate":false,"applied":"40.00","invoice":{...}}`; a repeat says `duplicate: true` and
/// `applied: "0"`.
pub fn webhook_answer(registered: &Registered) -> serde_json::Value {
    match registered {
        Registered::Booked { record, invoice } => json!({
            "duplicate": false,
            "applied": money::display(record.applied),
            "outcome": record.outcome,
            "invoice": invoice.as_ref().map(Invoice::to_json),
        }),
        Registered::Duplicate { stored, invoice } => json!({
            "duplicate": true,
            "applied": "0",
            "outcome": stored.outcome,
            "invoice": invoice.as_ref().map(Invoice::to_json),
        }),
    }
}

fn integration_in_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/hooks/")?;
    let (id, tail) = rest.split_once('/')?;
    (tail.trim_end_matches('/') == "payments").then_some(id)
}

fn verify(
    integration: &Integration,
    provider: Provider,
    req: &Request,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), SignatureError> {
    let secret = || {
        integration
            .secret
            .as_ref()
            .map(|s| s.expose_secret())
            .ok_or(SignatureError::BadKey)
    };
    match provider {
        Provider::Standard => signature::standard::verify(
            secret()?,
            &signature::standard::Headers {
                id: header(req, "webhook-id"),
                timestamp: header(req, "webhook-timestamp"),
                signature: header(req, "webhook-signature"),
            },
            body,
            now.timestamp(),
        ),
        Provider::Stripe => signature::stripe::verify(
            secret()?,
            header(req, "stripe-signature"),
            body,
            now.timestamp(),
        ),
        Provider::Monobank => signature::monobank::verify(
            integration
                .public_key
                .as_deref()
                .ok_or(SignatureError::BadKey)?,
            header(req, "x-sign"),
            body,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integration_id_is_read_from_the_route() {
        assert_eq!(integration_in_path("/hooks/abc/payments"), Some("abc"));
        assert_eq!(integration_in_path("/hooks/abc/messages"), None);
        assert_eq!(integration_in_path("/api/abc/payments"), None);
    }
}
