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
    .set("body", AttributeValue::B(Blob::new(body)))
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
