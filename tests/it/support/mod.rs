//! Per-test environment: a uniquely named table in ministack, SDK clients that log every call,
//! request builders and signed fixtures.

pub mod api;
pub mod app;
pub mod channels;
pub mod fixtures;
pub mod queues;
pub mod statement;
pub mod target;
pub mod webdriver;

use aws_sdk_dynamodb::types::AttributeValue;
use firmspace::aws::CallLog;
use firmspace::store::{schema, Item, Store};
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use std::collections::HashMap;

pub const REGION: &str = "eu-central-1";

/// ministack's address, set by `cargo xtask test`. Without it the test fails loudly.
pub fn endpoint() -> String {
    std::env::var("FIRMSPACE_TEST_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "FIRMSPACE_TEST_ENDPOINT is not set: these tests need ministack. Run `cargo xtask test`, \
             or start it with `cargo xtask up` and set FIRMSPACE_TEST_ENDPOINT=http://127.0.0.1:4566"
        )
    })
}

pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .region(aws_config::Region::new(REGION))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}

pub struct TestEnv {
    pub store: Store,
    pub calls: CallLog,
}

impl TestEnv {
    /// A fresh table of the production shape.
    pub async fn new() -> Self {
        let calls = CallLog::default();
        let client = calls.dynamodb(&sdk_config().await);
        let table = format!("it-{}", uuid_like());
        schema::create_table(&client, &table)
            .await
            .expect("ministack creates the test table");
        calls.clear();
        let vault = firmspace::vault::Vault::new(
            aws_sdk_kms::Client::new(&sdk_config().await),
            secrets_key().await,
        )
        .with_digests(digests().await);
        Self {
            store: Store::new(client, table).with_vault(vault),
            calls,
        }
    }

    /// Every item in the table (consistent scan).
    pub async fn items(&self) -> Vec<Item> {
        self.store.scan_all().await.expect("scan")
    }

    /// How many items of each `kind`.
    pub async fn kinds(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for item in self.items().await {
            if let Some(AttributeValue::S(kind)) = item.get("kind") {
                *counts.entry(kind.clone()).or_default() += 1;
            }
        }
        counts
    }

    /// Deletes the item `pk`, as if it had been lost.
    pub async fn delete(&self, pk: &str) {
        let dynamo = aws_sdk_dynamodb::Client::new(&sdk_config().await);
        dynamo
            .delete_item()
            .table_name(self.store.table())
            .key("pk", AttributeValue::S(pk.into()))
            .key("sk", AttributeValue::S("item".into()))
            .send()
            .await
            .expect("delete");
    }

    pub async fn count(&self, kind: &str) -> usize {
        self.kinds().await.get(kind).copied().unwrap_or(0)
    }

    /// The stored items of one kind.
    pub async fn items_of(&self, kind: &str) -> Vec<firmspace::store::Item> {
        self.items()
            .await
            .into_iter()
            .filter(|i| {
                i.get("kind")
                    .and_then(|k| k.as_s().ok())
                    .is_some_and(|k| k == kind)
            })
            .collect()
    }
}

/// One KMS key in ministack for every test of this run: what seals integration secrets.
pub async fn secrets_key() -> String {
    static KEY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    KEY.get_or_init(|| async {
        let kms = aws_sdk_kms::Client::new(&sdk_config().await);
        let created = kms
            .create_key()
            .description("firmspace-tests: seals integration secrets")
            .send()
            .await
            .expect("ministack creates a KMS key");
        created
            .key_metadata()
            .map(|m| m.key_id().to_owned())
            .expect("the key has an id")
    })
    .await
    .clone()
}

/// The keyed digests under one KMS HMAC key made once per run (the deployed stack's
/// `DigestKey`).
pub async fn digests() -> firmspace::vault::Digests {
    static KEY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    let kms = aws_sdk_kms::Client::new(&sdk_config().await);
    let key = KEY
        .get_or_init(|| async {
            let created = kms
                .create_key()
                .description("firmspace-tests: keyed digests")
                .key_spec(aws_sdk_kms::types::KeySpec::Hmac256)
                .key_usage(aws_sdk_kms::types::KeyUsageType::GenerateVerifyMac)
                .send()
                .await
                .expect("ministack creates an HMAC key");
            created
                .key_metadata()
                .map(|m| m.key_id().to_owned())
                .expect("the key has an id")
        })
        .await;
    firmspace::vault::Digests::new(kms, key.clone())
}

pub fn uuid_like() -> String {
    hex(&firmspace::ids::random_bytes::<8>())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Vec<u8>>,
) -> Request {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(format!("https://api.test{path}"));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Body::from(body.into()))
        .expect("valid request")
}

pub fn json_of(response: &Response<Body>) -> Value {
    let bytes: &[u8] = match response.body() {
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => b"null",
    };
    serde_json::from_slice(bytes).expect("JSON body")
}

pub fn body_text(response: &Response<Body>) -> String {
    match response.body() {
        Body::Text(t) => t.clone(),
        Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

/// A list's cursor with one part of its position replaced: what a caller who decoded it could
/// send back.
pub fn forged_cursor(cursor: &str, part: &str, value: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut position: Value = serde_json::from_slice(&b64.decode(cursor).unwrap()).unwrap();
    position[part] = Value::String(value.to_owned());
    b64.encode(position.to_string())
}

/// A fresh bucket on ministack, and an S3 client whose requests are logged with the store's
/// calls (`S3 PUT`, ...).
pub async fn bucket(env: &TestEnv) -> (aws_sdk_s3::Client, String) {
    let s3 = env.calls.s3(&sdk_config().await);
    let bucket = format!("it-{}", uuid_like());
    let here = aws_sdk_s3::types::CreateBucketConfiguration::builder()
        .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(REGION))
        .build();
    s3.create_bucket()
        .bucket(&bucket)
        .create_bucket_configuration(here)
        .send()
        .await
        .unwrap();
    (s3, bucket)
}
