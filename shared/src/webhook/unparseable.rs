//! A verified delivery whose body cannot be read is kept, raw and with the reason, and a person
//! is asked to look: retrying cannot help the sender, and nothing that arrived is lost. The same
//! body again is a duplicate of the kept one.

use crate::ids::ExternalId;
use crate::integrations::Integration;
use crate::review::{Kind, Reason, ReviewItem};
use crate::signature::Verified;
use crate::store::item::Builder;
use crate::store::{Step, Store, StoreError, Transacted};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use serde_json::json;

/// The review item's reason.
pub const REASON: Reason = Reason::UnparseablePayload;

/// Keeps the body; `Ok(false)` when the same body from the same integration was kept before.
pub async fn keep(
    store: &Store,
    integration: &Integration,
    verified: &Verified,
    body: &[u8],
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let digest = ExternalId::of_body(body);
    // The integration by its digest: a bank webhook's id is its credential.
    let named = integration.id.digest();
    let key = format!("unparseable:{named}:{digest}");
    let org = integration.org();
    let item = Builder::new(
        &org.pk(&format!("UNPARSEABLE#{named}#{digest}")),
        "unparseable_delivery",
        org.as_str(),
    )
    .str("integration", &named)
    .opt_str("webhook_id", verified.id.as_deref())
    .str("reason", reason)
    .set("body", AttributeValue::B(Blob::new(redacted(body))))
    .time("at", now)
    .num(
        "expires_at",
        (now + crate::store::RAW_BODY_KEPT).timestamp(),
    )
    .build();
    let review = ReviewItem {
        org: org.clone(),
        kind: Kind::Webhook,
        reason: REASON,
        key,
        at: now,
        detail: json!({"integration": named, "reason": reason, "bytes": body.len()}),
    };
    match store
        .transact(vec![Step::PutNew(item), Step::PutNew(review.to_item())])
        .await?
    {
        Transacted::Done => Ok(true),
        Transacted::Refused { .. } => Ok(false),
        Transacted::Contended => Err(StoreError::Contended { pk: review.pk() }),
    }
}

/// The fields a provider's body may carry that are a secret of someone's, never kept: Stripe's
/// PaymentIntent `client_secret` (which Stripe says not to store), and any token or password.
const SECRET_FIELDS: [&str; 5] = [
    "client_secret",
    "access_token",
    "password",
    "secret",
    "token",
];

/// `body` as it came, but a JSON body's secret fields (`SECRET_FIELDS`, at any depth) written
/// `[redacted]`; a body that is not JSON, or holds none, is kept byte for byte.
fn redacted(body: &[u8]) -> Vec<u8> {
    fn hide(value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(fields) => {
                let mut hid = false;
                for (name, field) in fields.iter_mut() {
                    if SECRET_FIELDS.contains(&name.to_ascii_lowercase().as_str()) {
                        *field = serde_json::Value::from("[redacted]");
                        hid = true;
                    } else {
                        hid |= hide(field);
                    }
                }
                hid
            }
            serde_json::Value::Array(items) => items.iter_mut().fold(false, |h, i| hide(i) | h),
            _ => false,
        }
    }
    let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return body.to_vec();
    };
    match hide(&mut json) {
        true => serde_json::to_vec(&json).unwrap_or_default(),
        false => body.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_body_holds_no_secret_field_and_is_otherwise_as_it_came() {
        let stripe =
            br#"{"data":{"object":{"id":"pi_1","client_secret":"pi_1_secret_x","amount":12}}}"#;
        let kept = String::from_utf8(redacted(stripe)).unwrap();
        assert!(!kept.contains("pi_1_secret_x"), "{kept}");
        assert!(kept.contains(r#""client_secret":"[redacted]""#), "{kept}");
        assert!(kept.contains(r#""amount":12"#), "{kept}");
        let nested = br#"[{"auth":{"Token":"t-1"}}]"#;
        assert!(!String::from_utf8(redacted(nested)).unwrap().contains("t-1"));
        let plain = br#"{ "type": "x",  "amount": 12 }"#;
        assert_eq!(redacted(plain), plain.to_vec(), "byte for byte");
        assert_eq!(redacted(b"not json"), b"not json".to_vec());
    }
}
