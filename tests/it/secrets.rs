//! Integration secrets at rest: sealed with a KMS key in ministack, never in clear in the table,
//! bound to their integration, and unreadable without the key.

use crate::support::{fixtures, TestEnv};
use aws_sdk_dynamodb::types::AttributeValue;
use firmspace::integrations::{self, integration_pk, Settings};
use firmspace::payments::providers::{PaymentSettings, Provider};
use firmspace::store::Store;
use secrecy::ExposeSecret;

/// Every string anywhere in an item, nested ones included.
fn strings(value: &AttributeValue, out: &mut Vec<String>) {
    match value {
        AttributeValue::S(s) => out.push(s.clone()),
        AttributeValue::M(m) => m.values().for_each(|v| strings(v, out)),
        AttributeValue::L(l) => l.iter().for_each(|v| strings(v, out)),
        AttributeValue::B(b) => out.push(String::from_utf8_lossy(b.as_ref()).into_owned()),
        _ => {}
    }
}

#[tokio::test]
async fn a_secret_is_sealed_in_the_table_and_opens_only_for_its_own_integration() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let standard = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let stripe = fixtures::integration(&env, &org.id, Provider::Stripe).await;

    let raw = env
        .store
        .get(&integration_pk(&standard))
        .await
        .unwrap()
        .unwrap();
    let mut all = Vec::new();
    raw.values().for_each(|v| strings(v, &mut all));
    assert!(
        all.iter().all(|s| !s.contains(fixtures::STANDARD_SECRET)
            && !s.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")),
        "the secret is in the table in clear"
    );
    assert!(matches!(raw.get("sealed"), Some(AttributeValue::B(_))));
    assert!(!raw.contains_key("secret"));

    let opened = integrations::get(&env.store, &standard)
        .await
        .unwrap()
        .unwrap();
    let Settings::Payments(PaymentSettings::Standard { secret }) = opened.settings else {
        panic!("a standard integration");
    };
    assert_eq!(secret.expose_secret(), fixtures::STANDARD_SECRET);

    // The sealed blob of one integration copied onto another does not open there.
    let mut stolen = env
        .store
        .get(&integration_pk(&stripe))
        .await
        .unwrap()
        .unwrap();
    stolen.insert("sealed".into(), raw["sealed"].clone());
    env.store.replace(stolen).await.unwrap();
    let err = integrations::get(&env.store, &stripe).await.unwrap_err();
    assert!(!err.is_retryable(), "{err}");
}

#[tokio::test]
async fn without_a_key_no_secret_is_written_or_read() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Stripe).await;
    let keyless = Store::new(
        aws_sdk_dynamodb::Client::new(&crate::support::sdk_config().await),
        env.store.table(),
    );
    assert!(integrations::get(&keyless, &hook).await.is_err());
    let found = integrations::get(&env.store, &hook).await.unwrap().unwrap();
    let other = integrations::Integration {
        id: firmspace::ids::IntegrationId::generate(&org.id),
        ..found
    };
    assert!(integrations::create(&keyless, &other).await.is_err());
    assert!(env
        .store
        .get(&integration_pk(&other.id))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn an_integration_stored_with_a_secret_in_clear_is_refused_not_read_without_it() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    // As an integration stored before sealing looked: the token in clear, nothing sealed.
    let mut legacy = env
        .store
        .get(&integration_pk(&hook))
        .await
        .unwrap()
        .unwrap();
    legacy.remove("sealed");
    legacy.insert("token".into(), AttributeValue::S("merchant-token".into()));
    env.store.replace(legacy).await.unwrap();
    let err = integrations::get(&env.store, &hook).await.unwrap_err();
    assert!(
        !err.is_retryable() && err.to_string().contains("malformed"),
        "{err}"
    );
}
