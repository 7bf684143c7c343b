//! A paused integration's consequences wait. Its deliveries are stored and answered as ever; the
//! fan-out holds each new event of a paused integration (a `HELD#` mark, written only while the
//! pause it read still stands) instead of publishing the event's consequences. Resuming lifts the
//! pause first and then sends what was held, derived again from each stored event (their keys
//! absorb a repeat), so nothing held is lost and nothing is sent twice.

use crate::effects::queue::{Publisher, QueueError};
use crate::ids::{IntegrationId, OrgId};
use crate::integrations::integration_pk;
use crate::store::item::{s, Builder, Read};
use crate::store::{Cond, Item, Step, Store, StoreError, Transacted, Update};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

const PAUSED_AT: &str = "paused_at";
const PAUSED_BY: &str = "paused_by";

/// The integration an event item came through, if a webhook's: what a pause holds back.
pub fn integration_of(item: &Item) -> Option<IntegrationId> {
    let org = OrgId::parse(item.opt_str("org")?).ok()?;
    let id = match item.opt_str("kind")? {
        crate::payments::event::KIND | crate::messages::KIND | crate::leads::KIND => {
            item.opt_str("integration_id")?
        }
        // A call's source is its integration, or the browser softphone.
        crate::calls::KIND => item.opt_str("source").filter(|s| *s != "softphone")?,
        _ => return None,
    };
    Some(IntegrationId {
        org,
        id: id.to_owned(),
    })
}

fn held_list(id: &IntegrationId) -> String {
    id.org.pk(&format!("HELD#{}", id.id))
}

/// The pause an integration's item shows: when, and by whom.
pub fn paused(item: &Item) -> Option<(String, String)> {
    Some((
        item.opt_str(PAUSED_AT)?.to_owned(),
        item.opt_str(PAUSED_BY).unwrap_or_default().to_owned(),
    ))
}

/// What the fan-out does with a new event of an integration.
#[derive(Debug, PartialEq, Eq)]
pub enum Held {
    /// Not paused: publish as ever.
    No,
    /// Paused: held for its resumption, nothing published.
    Yes,
}

/// Holds the event `item` (under `pk`) if its integration is paused: one read of the integration,
/// and for a paused one a transaction that writes the mark only while that pause stands (a
/// resumption meanwhile makes it read again and publish).
pub async fn hold_if_paused(
    store: &Store,
    item: &Item,
    pk: &str,
    now: DateTime<Utc>,
) -> Result<Held, StoreError> {
    let Some(id) = integration_of(item) else {
        return Ok(Held::No);
    };
    for _ in 0..3 {
        let Some(integration) = store.get(&integration_pk(&id)).await? else {
            return Ok(Held::No);
        };
        let Some((since, _)) = paused(&integration) else {
            return Ok(Held::No);
        };
        let mark = Builder::new(&id.org.pk(&format!("HELD#{pk}")), "held", id.org.as_str())
            .str("event_pk", pk)
            .str("integration_id", &id.id)
            .time("at", now)
            .list(&held_list(&id), &format!("{}#{pk}", time::format(now)))
            .build();
        let still = Update::new()
            .set("held_at", s(time::format(now)))
            .when(Cond::Equals(PAUSED_AT.into(), s(&since)));
        let steps = vec![
            Step::Update {
                pk: integration_pk(&id),
                update: still,
            },
            Step::PutNew(mark),
        ];
        match store.transact(steps).await? {
            Transacted::Done => return Ok(Held::Yes),
            // Held before (the stream's retry of this record).
            Transacted::Refused { step: 1, .. } => return Ok(Held::Yes),
            // Resumed (or paused anew) meanwhile: read again.
            _ => continue,
        }
    }
    Err(StoreError::Contended {
        pk: integration_pk(&id),
    })
}

/// Pauses an integration's consequences, once: `false` when it was paused already.
pub async fn pause(
    store: &Store,
    id: &IntegrationId,
    by: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let at = time::format(now);
    let update = Update::new()
        .set(PAUSED_AT, s(&at))
        .set(PAUSED_BY, s(by))
        // On the organisation's list of paused integrations, for the page.
        .set("gsi1pk", s(paused_list(&id.org)))
        .set("gsi1sk", s(format!("{at}#{}", id.id)))
        .when(Cond::All(vec![Cond::Exists, Cond::Lacks(PAUSED_AT.into())]));
    store.update_if(&integration_pk(id), &update).await
}

fn paused_list(org: &OrgId) -> String {
    org.pk("INTEGRATIONS#paused")
}

/// The organisation's paused integrations, longest paused first: `{"integration_id", "kind",
/// "paused_at", "paused_by", "held"}` (`held`: events waiting, up to 1000 counted).
pub async fn paused_of(store: &Store, org: &OrgId) -> Result<Vec<Value>, StoreError> {
    let items = store.list(&paused_list(org), false, 200).await?;
    let mut out = Vec::new();
    for item in &items {
        let id = IntegrationId {
            org: org.clone(),
            id: item.str_of("id")?.to_owned(),
        };
        let held = store.list(&held_list(&id), false, 1000).await?.len();
        let (at, by) = paused(item).unwrap_or_default();
        out.push(json!({
            "integration_id": id.id,
            "kind": item.opt_str("integration_kind"),
            "provider": item.opt_str("provider"),
            "paused_at": at,
            "paused_by": by,
            "held": held,
        }));
    }
    Ok(out)
}

/// How a resumption ended.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error(transparent)]
    Derive(#[from] crate::ops::events::ReplayError),
}

/// Lifts the pause (if any), then sends every held event's consequences and drops its mark:
/// `{"resumed", "sent"}`. Run again after a failure, it sends what is still held.
pub async fn resume(
    store: &Store,
    publisher: &Publisher,
    id: &IntegrationId,
    by: &str,
    now: DateTime<Utc>,
) -> Result<Value, ResumeError> {
    let lift = Update::new()
        .remove(PAUSED_AT)
        .remove(PAUSED_BY)
        .remove("gsi1pk")
        .remove("gsi1sk")
        .set("resumed_at", s(time::format(now)))
        .set("resumed_by", s(by))
        // Only a paused one (a stored time sorts before "9999"; a missing one does not).
        .when(Cond::Before(PAUSED_AT.into(), s("9999")));
    let resumed = store.update_if(&integration_pk(id), &lift).await?;
    let (mut sent, mut events, mut cursor) = (0, 0, None::<String>);
    loop {
        let (marks, next) = store
            .page(&held_list(id), false, 100, cursor.as_deref())
            .await?;
        for mark in &marks {
            let event = mark.str_of("event_pk")?;
            sent += crate::ops::events::replay(store, publisher, event).await?;
            events += 1;
            store.delete(mark.str_of("pk")?).await?;
        }
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    tracing::info!(integration = %id.digest(), events, sent, "integration resumed");
    Ok(json!({"resumed": resumed, "events": events, "sent": sent}))
}
