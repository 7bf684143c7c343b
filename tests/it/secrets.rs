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

/// A payment delivery signed with `secret` at `at`, under its own `webhook-id`.
fn signed_at(
    hook: &firmspace::ids::IntegrationId,
    secret: &str,
    webhook_id: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> lambda_http::Request {
    let body = format!(
        r#"{{"type":"payment.succeeded","data":{{"payment_id":"{webhook_id}","amount":"1.00","currency":"UAH"}}}}"#
    );
    fixtures::signed_post(hook, "payments", secret, webhook_id, at.timestamp(), &body)
}

#[tokio::test]
async fn a_rotated_secret_verifies_at_once_and_the_previous_one_only_during_the_overlap() {
    use crate::support::app::{deliver_at, Crm};
    use firmspace::signature::standard::generate_secret;
    use serde_json::json;
    let crm = Crm::new().await;
    let created = crm
        .integration(json!({"kind": "payments", "provider": "standard"}))
        .await;
    let id = created["integration_id"].as_str().unwrap().to_owned();
    let hook = firmspace::ids::IntegrationId::parse(&id).unwrap();
    let first = created["secret"].as_str().unwrap().to_owned();
    let app = payment_webhook::app(crm.store().clone());
    let t = chrono::Utc::now();
    assert_eq!(
        deliver_at(&app, &signed_at(&hook, &first, "p1", t), t)
            .await
            .0,
        200
    );

    let (second, path) = (generate_secret(), format!("/api/integrations/{id}/secrets"));
    let rotate = |key: &str, secret: &str, overlap: Option<u32>| {
        let body = json!({"secrets": {"secret": secret}, "overlap_hours": overlap});
        let key = key.to_owned();
        let path = path.clone();
        let crm = &crm;
        async move {
            crm.call_with("POST", &path, &[("idempotency-key", &key)], body)
                .await
        }
    };
    let (status, rotated) = rotate("rot-1", &second, None).await;
    assert_eq!(status, 200, "{rotated}");
    assert_eq!(rotated["secrets"]["names"], json!(["secret"]));
    assert!(!rotated.to_string().contains(&second), "never shown back");
    // The same request again is the same rotation, not a second one; another body is refused.
    assert_eq!(rotate("rot-1", &second, None).await, (200, rotated.clone()));
    let (status, reused) = rotate("rot-1", &generate_secret(), None).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    // The same secrets under a new key (a client that lost the answer): nothing changes, so the
    // first secret keeps its overlap (checked below), and the answer is the one above.
    let before = crm
        .store()
        .get(&integration_pk(&hook))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        rotate("rot-1-again", &second, None).await,
        (200, rotated.clone())
    );
    let after = crm
        .store()
        .get(&integration_pk(&hook))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before, after, "the item is unchanged");
    assert!(after.contains_key("sealed_digest"));
    let (status, named) = crm
        .call_with(
            "POST",
            &path,
            &[("idempotency-key", "rot-x")],
            json!({"secrets": {"token": "t0k3n"}}),
        )
        .await;
    assert_eq!(
        (status, named["error"].as_str()),
        (400, Some("invalid_secrets"))
    );
    // What is refused writes nothing: an overlap past a week, a signing secret that cannot
    // sign, an integration of no organisation of the key's. A body refused before the
    // rotation is asked keeps nothing under its key, so the next body under it is read anew.
    for (body, (code, status)) in [
        (
            json!({"secrets": {"secret": generate_secret()}, "overlap_hours": 169}),
            ("invalid_field", 400),
        ),
        (
            json!({"secrets": {"secret": "whsec_short"}}),
            ("invalid_secret", 400),
        ),
    ] {
        let (got, refused) = crm
            .call_with("POST", &path, &[("idempotency-key", "rot-bad")], body)
            .await;
        assert_eq!(
            (got, refused["error"].as_str()),
            (status, Some(code)),
            "{refused}"
        );
    }
    // The same integration id under another organisation's id: none of this key's.
    let (_, own) = id.split_once('_').unwrap();
    let elsewhere = format!("/api/integrations/o0123456789ab_{own}/secrets");
    let (status, _) = crm
        .call_with(
            "POST",
            &elsewhere,
            &[("idempotency-key", "rot-none")],
            json!({"secrets": {"secret": generate_secret()}}),
        )
        .await;
    assert_eq!(status, 404);
    let unchanged = crm.store().get(&integration_pk(&hook)).await.unwrap();
    assert_eq!(
        unchanged,
        Some(after.clone()),
        "nothing refused was written"
    );
    let listed = crm.get(&format!("/api/integrations/{id}")).await;
    assert_eq!(listed["secrets"], rotated["secrets"]);
    let until = listed["secrets"]["previous_valid_until"].as_str().unwrap();
    let until = firmspace::time::parse(until).unwrap();
    assert_eq!((until - t).num_hours(), 24, "the default overlap");

    // Within the overlap both verify, through the warm function's cache and a cold one alike.
    let later = t + chrono::Duration::seconds(10);
    for app in [&app, &payment_webhook::app(crm.store().clone())] {
        for (n, secret) in [&second, &first].into_iter().enumerate() {
            let req = signed_at(&hook, secret, &format!("p2{n}"), later);
            assert_eq!(deliver_at(app, &req, later).await.0, 200, "secret {n}");
        }
    }
    // After it, only the new one; the previous one is removed from the item.
    let after = until + chrono::Duration::seconds(1);
    let cold = payment_webhook::app(crm.store().clone());
    let old = signed_at(&hook, &first, "p3", after);
    assert_eq!(deliver_at(&cold, &old, after).await.0, 401);
    let item = crm
        .store()
        .get(&integration_pk(&hook))
        .await
        .unwrap()
        .unwrap();
    assert!(
        !item.contains_key("previous_sealed"),
        "removed after the overlap"
    );
    let new = signed_at(&hook, &second, "p4", after);
    assert_eq!(deliver_at(&cold, &new, after).await.0, 200);

    // An overlap of 0 retires the previous secret at once.
    let third = generate_secret();
    assert_eq!(rotate("rot-2", &third, Some(0)).await.0, 200);
    let now = chrono::Utc::now() + chrono::Duration::seconds(1);
    let cold = payment_webhook::app(crm.store().clone());
    assert_eq!(
        deliver_at(&cold, &signed_at(&hook, &second, "p5", now), now)
            .await
            .0,
        401
    );
    assert_eq!(
        deliver_at(&cold, &signed_at(&hook, &third, "p6", now), now)
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn a_sealing_opened_once_opens_again_with_no_kms_call_and_a_webhook_never_opens_the_api_key()
{
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    // The same table through a store whose KMS calls are logged.
    let kms_calls = firmspace::aws::CallLog::default();
    let config = crate::support::sdk_config().await;
    let vault =
        firmspace::vault::Vault::new(kms_calls.kms(&config), crate::support::secrets_key().await)
            .with_digests(crate::support::digests().await);
    let store =
        Store::new(aws_sdk_dynamodb::Client::new(&config), env.store.table()).with_vault(vault);
    let id = firmspace::ids::IntegrationId::generate(&org.id);
    let stripe = integrations::Integration {
        id: id.clone(),
        settings: Settings::Payments(PaymentSettings::Stripe {
            secret: fixtures::STRIPE_SECRET.to_owned().into(),
            api_key: Some("rk_live_0123456789abcdef".to_owned().into()),
            api_url: None,
            live: true,
        }),
        created_at: chrono::Utc::now(),
    };
    integrations::create(&store, &stripe).await.unwrap();
    kms_calls.clear();
    let decrypts = || {
        kms_calls
            .take()
            .into_iter()
            .filter(|op| op == "Decrypt")
            .count()
    };

    // What a webhook verifies with: its signing secret opened, its API key left sealed.
    let now = chrono::Utc::now();
    let (verifying, _) = integrations::get_verifying(&store, &id, now)
        .await
        .unwrap()
        .unwrap();
    let Settings::Payments(PaymentSettings::Stripe {
        secret, api_key, ..
    }) = verifying.settings
    else {
        panic!("a Stripe integration");
    };
    assert_eq!(secret.expose_secret(), fixtures::STRIPE_SECRET);
    assert!(api_key.is_none(), "the webhook never holds the API key");
    assert_eq!(decrypts(), 1, "its one sealing opened");
    // Read again by a warm function (its cache expired): nothing moved, nothing opened.
    integrations::get_verifying(&store, &id, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(decrypts(), 0, "the sealing opened before");
    // A recovery opens the API key: its own sealing, once.
    let opened = integrations::get(&store, &id).await.unwrap().unwrap();
    let Settings::Payments(PaymentSettings::Stripe { api_key, .. }) = opened.settings else {
        panic!("a Stripe integration");
    };
    assert_eq!(
        api_key.map(|k| k.expose_secret().to_owned()).as_deref(),
        Some("rk_live_0123456789abcdef")
    );
    assert_eq!(decrypts(), 1, "the API key's sealing");
    // Its secrets rotated: the new sealing is opened once.
    let new = std::collections::HashMap::from([(
        "secret".to_owned(),
        secrecy::SecretString::from("whsec_rotated_0123456789abcdef".to_owned()),
    )]);
    integrations::rotation::rotate(&store, &id, new, chrono::Duration::zero(), now)
        .await
        .unwrap();
    kms_calls.clear();
    let (rotated, _) = integrations::get_verifying(&store, &id, now)
        .await
        .unwrap()
        .unwrap();
    let Settings::Payments(PaymentSettings::Stripe { secret, .. }) = rotated.settings else {
        panic!("a Stripe integration");
    };
    assert_eq!(secret.expose_secret(), "whsec_rotated_0123456789abcdef");
    assert_eq!(decrypts(), 1, "the moved secrets opened");
    // The rotation kept the API key apart.
    let raw = store.get(&integration_pk(&id)).await.unwrap().unwrap();
    assert!(raw.contains_key("sealed_apart"));
}

#[tokio::test]
async fn an_old_stripe_integration_keeps_its_api_key_through_a_rotation_of_its_secret() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let id = firmspace::ids::IntegrationId::generate(&org.id);
    let stripe = integrations::Integration {
        id: id.clone(),
        settings: Settings::Payments(PaymentSettings::Stripe {
            secret: fixtures::STRIPE_SECRET.to_owned().into(),
            api_key: Some("rk_live_old0123456789".to_owned().into()),
            api_url: None,
            live: true,
        }),
        created_at: chrono::Utc::now(),
    };
    // Stored as before the API key was sealed apart: both in the one sealing.
    let mut item = stripe.to_item(&env.store).await.unwrap();
    item.remove("sealed_apart");
    let secret = secrecy::SecretString::from(fixtures::STRIPE_SECRET.to_owned());
    let key = secrecy::SecretString::from("rk_live_old0123456789".to_owned());
    let both = std::collections::BTreeMap::from([("api_key", &key), ("secret", &secret)]);
    let pk = integration_pk(&id);
    let sealed = env.store.vault().unwrap().seal(&pk, &both).await.unwrap();
    item.insert(
        "sealed".into(),
        AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(sealed)),
    );
    env.store.put_new(item).await.unwrap();
    let now = chrono::Utc::now();
    let new = |pairs: &[(&str, &str)]| -> std::collections::HashMap<String, secrecy::SecretString> {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    (*k).to_owned(),
                    secrecy::SecretString::from((*v).to_owned()),
                )
            })
            .collect()
    };
    // The secret alone would lose the key sealed with it: refused, naming both.
    let refused = integrations::rotation::rotate(
        &env.store,
        &id,
        new(&[("secret", "whsec_new_0123456789")]),
        chrono::Duration::zero(),
        now,
    )
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("api_key"), "{refused}");
    // Given both, the key moves apart and the recovery's read still finds it.
    integrations::rotation::rotate(
        &env.store,
        &id,
        new(&[
            ("secret", "whsec_new_0123456789"),
            ("api_key", "rk_live_old0123456789"),
        ]),
        chrono::Duration::zero(),
        now,
    )
    .await
    .unwrap();
    let opened = integrations::get(&env.store, &id).await.unwrap().unwrap();
    let Settings::Payments(PaymentSettings::Stripe {
        secret, api_key, ..
    }) = opened.settings
    else {
        panic!("a Stripe integration");
    };
    assert_eq!(secret.expose_secret(), "whsec_new_0123456789");
    assert_eq!(
        api_key.map(|k| k.expose_secret().to_owned()).as_deref(),
        Some("rk_live_old0123456789")
    );
}

#[tokio::test]
async fn an_outbound_targets_calls_are_signed_with_its_previous_secret_too_during_the_overlap() {
    use crate::support::app::Crm;
    use firmspace::integrations::Settings;
    use firmspace::signature::standard::generate_secret;
    use secrecy::ExposeSecret;
    use serde_json::json;
    let crm = Crm::new().await;
    let created = crm
        .integration(json!({"kind": "outbound", "url": "https://hooks.example.com/crm"}))
        .await;
    let id = created["integration_id"].as_str().unwrap().to_owned();
    let first = created["secret"].as_str().unwrap().to_owned();
    let hook = firmspace::ids::IntegrationId::parse(&id).unwrap();
    let signing = |now| firmspace::integrations::get_signing(crm.store(), &hook, now);
    let target = |found: Option<firmspace::integrations::Integration>| match found.unwrap().settings
    {
        Settings::Outbound(target) => target,
        other => panic!("{other:?}"),
    };
    let before = target(signing(chrono::Utc::now()).await.unwrap());
    assert!(before.previous.is_none(), "no rotation, one secret");
    let second = generate_secret();
    let path = format!("/api/integrations/{id}/secrets");
    let body = json!({"secrets": {"secret": second}, "overlap_hours": 1});
    let (status, rotated) = crm
        .call_with("POST", &path, &[("idempotency-key", "rot-out")], body)
        .await;
    assert_eq!(status, 200, "{rotated}");
    let during = target(signing(chrono::Utc::now()).await.unwrap());
    assert_eq!(during.secret.expose_secret(), second);
    assert_eq!(
        during
            .previous
            .as_ref()
            .map(|p| p.expose_secret().to_owned()),
        Some(first),
        "the previous secret signs too while the overlap lasts"
    );
    let after = target(
        signing(chrono::Utc::now() + chrono::Duration::hours(2))
            .await
            .unwrap(),
    );
    assert!(after.previous.is_none(), "after it, one secret again");
}
