//! Organisations, integrations and invoices made through the real store code, and deliveries
//! signed exactly as each provider signs them.

use super::{request, TestEnv};
use chrono::Utc;
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::integrations::{self, Integration, Settings};
use firmspace::money::Currency;
use firmspace::orgs;
use firmspace::payments::invoice::{self, Links};
use firmspace::payments::providers::monobank::Merchant;
use firmspace::payments::providers::{PaymentSettings, Provider};
use firmspace::payments::{Invoice, InvoiceStatus, NewInvoice};
use firmspace::signature::{standard, stripe};
use lambda_http::Request;
use rust_decimal::Decimal;
use secrecy::SecretString;

/// The fixed "now" of signed deliveries, so replay-window checks are exact.
pub const NOW: i64 = 1_800_000_000;

pub fn now() -> chrono::DateTime<Utc> {
    use chrono::TimeZone;
    Utc.timestamp_opt(NOW, 0).unwrap()
}

pub const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const STRIPE_SECRET: &str = "whsec_stripe_test_secret_0001";

pub struct Org {
    pub id: OrgId,
}

pub async fn org(env: &TestEnv) -> Org {
    let (id, _key) = orgs::create_org(&env.store, "Test Org", Utc::now())
        .await
        .expect("org created");
    Org { id }
}

/// A deterministic monobank merchant key pair for signing test deliveries.
pub fn monobank_key() -> firmspace::signature::monobank::StandIn {
    firmspace::signature::monobank::StandIn::from_scalar([7u8; 32]).expect("valid P-256 scalar")
}

pub fn monobank_public_key_b64() -> String {
    monobank_key().public_key()
}

pub async fn integration(env: &TestEnv, org: &OrgId, provider: Provider) -> IntegrationId {
    let settings = match provider {
        Provider::Standard => PaymentSettings::Standard {
            secret: SecretString::from(STANDARD_SECRET),
        },
        Provider::Stripe => PaymentSettings::Stripe {
            secret: SecretString::from(STRIPE_SECRET),
            api_key: None,
            api_url: None,
            live: false,
        },
        Provider::Monobank => PaymentSettings::Monobank(Merchant {
            public_key: monobank_public_key_b64(),
            token: None,
            key_fetched_at: None,
        }),
    };
    payments_integration(env, org, settings).await
}

/// A payments integration with exactly these settings.
pub async fn payments_integration(
    env: &TestEnv,
    org: &OrgId,
    settings: PaymentSettings,
) -> IntegrationId {
    any_integration(env, org, Settings::Payments(settings)).await
}

/// An integration of any kind with exactly these settings, made through the store.
pub async fn any_integration(env: &TestEnv, org: &OrgId, settings: Settings) -> IntegrationId {
    let id = IntegrationId::generate(org);
    let integration = Integration {
        id: id.clone(),
        settings,
        created_at: Utc::now(),
    };
    integrations::create(&env.store, &integration)
        .await
        .expect("integration created");
    id
}

pub async fn invoice(env: &TestEnv, org: &OrgId, gross: Decimal, currency: &str) -> Invoice {
    invoice::create(
        &env.store,
        org,
        NewInvoice {
            currency: Currency::parse(currency).expect("currency"),
            gross,
            status: InvoiceStatus::Open,
            links: Links::default(),
        },
        Utc::now(),
    )
    .await
    .expect("invoice created")
}

pub fn standard_body(payment_id: &str, invoice_id: &str, amount: Option<&str>) -> String {
    serde_json::json!({
        "type": "payment.succeeded",
        "data": {"payment_id": payment_id, "invoice_id": invoice_id, "amount": amount, "currency": "UAH"}
    })
    .to_string()
}

/// A Stripe `payment_intent.succeeded` event `evt` for `intent`: `cents` for `invoice_id`.
pub fn stripe_body(evt: &str, intent: &str, cents: u32, invoice_id: &str) -> String {
    serde_json::json!({"id": evt, "type": "payment_intent.succeeded", "created": NOW,
        "data": {"object": {"id": intent, "amount_received": cents, "currency": "uah",
                            "metadata": {"invoice_id": invoice_id}}}})
    .to_string()
}

/// A Standard Webhooks delivery signed at unix time `at`.
/// `body` posted to `/hooks/{id}/{route}`, signed with `secret` under `webhook_id` at unix time
/// `at` (Standard Webhooks): any source that takes them.
pub fn signed_post(
    hook: &IntegrationId,
    route: &str,
    secret: &str,
    webhook_id: &str,
    at: i64,
    body: &str,
) -> Request {
    let signature = standard::sign(secret, webhook_id, at, body.as_bytes()).expect("signable");
    request(
        "POST",
        &format!("/hooks/{}/{route}", hook.id),
        &[
            ("webhook-id", webhook_id),
            ("webhook-timestamp", &at.to_string()),
            ("webhook-signature", &signature),
        ],
        body.as_bytes().to_vec(),
    )
}

pub fn standard_request(integration: &IntegrationId, body: &str, at: i64) -> Request {
    standard_request_with_id(integration, body, at, "msg_1")
}

/// A Standard Webhooks delivery with this `webhook-id`.
pub fn standard_request_with_id(
    integration: &IntegrationId,
    body: &str,
    at: i64,
    webhook_id: &str,
) -> Request {
    let signature =
        standard::sign(STANDARD_SECRET, webhook_id, at, body.as_bytes()).expect("signable");
    request(
        "POST",
        &format!("/hooks/{}/payments", integration.id),
        &[
            ("webhook-id", webhook_id),
            ("webhook-timestamp", &at.to_string()),
            ("webhook-signature", &signature),
        ],
        body.as_bytes().to_vec(),
    )
}

pub fn stripe_request(integration: &IntegrationId, body: &str, at: i64) -> Request {
    let header = stripe::sign(STRIPE_SECRET, at, body.as_bytes());
    request(
        "POST",
        &format!("/hooks/{}/payments", integration.id),
        &[("stripe-signature", &header)],
        body.as_bytes().to_vec(),
    )
}

pub fn monobank_request(integration: &IntegrationId, body: &str) -> Request {
    let x_sign = monobank_key().sign(body.as_bytes());
    request(
        "POST",
        &format!("/hooks/{}/payments", integration.id),
        &[("x-sign", &x_sign)],
        body.as_bytes().to_vec(),
    )
}
