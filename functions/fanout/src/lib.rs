#![forbid(unsafe_code)]
//! The table's stream → what an event implies. Only INSERTs of event items reach this function
//! (the event source mapping filters); every consequence is derived from the stored item alone,
//! so no crash between "stored" and "done" can lose one. What is cheap and bounded it does at
//! once, each under its own key (what tells people, a trigger no rule takes, a payment's
//! lookalike check); what calls out or may be large goes to its queue, with the event's waiting
//! mark holding its keys. A retry after a partial failure is harmless. It also counts the
//! stored events of each batch for the operator's figures, once per stream shard
//! (`store::stream_counts`).

use aws_lambda_events::event::dynamodb::EventRecord;
use aws_lambda_events::event::streams::DynamoDbBatchItemFailure;
use chrono::{DateTime, Utc};
use firmspace::config::{Config, ConfigError};
use firmspace::effects::queue::{Publisher, Queues, Refused};
use firmspace::effects::worker::{operator_org, WorkError};
use firmspace::effects::{activity, automation, derive, lookalike, told, tracked_keys, waiting};
use firmspace::effects::{ActivityLine, Consequence, Fired, Told, Trigger};
use firmspace::ids::OrgId;
use firmspace::ops::hold::{self, Held};
use firmspace::review::{Kind, Reason, ReviewItem};
use firmspace::store::item::Read;
use firmspace::store::lists::EventKind;
use firmspace::store::spent::{self, Spent};
use firmspace::store::stream_counts;
use firmspace::store::{Item, Store, StoreError};
use lambda_runtime::LambdaEvent;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A consequence the fan-out could not decide at once: to its worker's queue (`to`) when what
/// it reads cannot be read as it is (the worker parks it for a person); a failure a retry can
/// help fails the record.
fn undecided(
    pk: &str,
    c: Consequence,
    e: &StoreError,
    to: &mut Vec<Consequence>,
) -> Result<(), ()> {
    if e.is_retryable() {
        tracing::error!(item = %pk, key = %c.key(), error.message = %e, "could not decide at once");
        return Err(());
    }
    tracing::warn!(item = %pk, key = %c.key(), error.message = %e, "cannot be decided here; sent to its worker");
    to.push(c);
    Ok(())
}

/// The organisation and kind of event a stream record is, for what its batch cost.
fn spent_on(record: &EventRecord) -> Option<(OrgId, EventKind)> {
    let pk = match record.change.new_image.get("pk") {
        Some(serde_dynamo::AttributeValue::S(pk)) => pk.as_str(),
        _ => return None,
    };
    Some((spent::org_of_pk(pk)?, spent::kind_of_pk(pk)?))
}

/// A batch of one stream shard, as the event source mapping hands it over. Its tumbling window
/// (the template's) is what names the shard; the state it carries is not used, and a window's
/// last invocation may hold no records.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Batch {
    #[serde(default, rename = "Records")]
    pub records: Vec<EventRecord>,
    #[serde(default, rename = "shardId")]
    pub shard_id: Option<String>,
}

/// The records to retry (from the first failed on), and the window's state (none is kept; an
/// answer without it is a failed invocation when the mapping has a window).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Response {
    #[serde(rename = "batchItemFailures")]
    pub batch_item_failures: Vec<DynamoDbBatchItemFailure>,
    pub state: HashMap<String, String>,
}

pub struct App {
    publisher: Publisher,
    store: Store,
    /// What the batches cost, per organisation and kind (`store::spent`).
    spent: Spent,
    /// SQS requests of the batch under way.
    requests: AtomicUsize,
    /// The stream is the local emulator's one shard: a batch without a shard id is its.
    one_shard: bool,
}

impl App {
    pub fn new(publisher: Publisher, store: Store) -> Self {
        Self {
            publisher,
            store,
            spent: Spent::default(),
            requests: AtomicUsize::new(0),
            one_shard: false,
        }
    }

    /// The same, on a stream of one shard that names none (the local emulator's).
    pub fn on_one_shard(self) -> Self {
        Self {
            one_shard: true,
            ..self
        }
    }

    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        let queues = Queues::from_env()?;
        let sqs = firmspace::aws::sqs(config.endpoint_url.as_deref()).await;
        let app = Self::new(Publisher { sqs, queues }, config.store().await);
        Ok(match config.stage.has_one_stream_shard() {
            true => app.on_one_shard(),
            false => app,
        })
    }

    pub async fn handle(
        &self,
        event: LambdaEvent<Batch>,
    ) -> Result<Response, lambda_runtime::Error> {
        let response = self.process(event.payload, Utc::now()).await;
        firmspace::telemetry::flush_metrics();
        Ok(response)
    }

    /// Counts the batch's stored events, then publishes the consequences of each record in
    /// order; at the first failure the rest of the batch is reported failed from that record on
    /// (the stream retries from there; a count that failed, from the first).
    pub async fn process(&self, batch: Batch, now: DateTime<Utc>) -> Response {
        let mut response = Response::default();
        if let Err(first) = self.count(&batch).await {
            response.batch_item_failures.extend(first);
            return response;
        }
        let mut about = Vec::new();
        for record in batch.records {
            if record.event_name != "INSERT" {
                continue;
            }
            about.extend(spent_on(&record));
            if self.one(&record, now).await.is_err() {
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = record.change.sequence_number.clone();
                response.batch_item_failures.push(failure);
                break;
            }
        }
        // What the batch cost is its events' (what a consequence costs, its worker adds).
        let sqs = self.requests.swap(0, Ordering::Relaxed);
        self.spent.invocation(&self.store, sqs, &about, now);
        self.spent.flush_due(&self.store).await;
        response
    }

    /// Adds the batch's stored events to the operator's counts, once per stream shard; when it
    /// cannot, the whole batch is to be retried (its first record failed).
    async fn count(&self, batch: &Batch) -> Result<(), Option<DynamoDbBatchItemFailure>> {
        let failed = || {
            batch.records.first().map(|r| {
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = r.change.sequence_number.clone();
                failure
            })
        };
        // Without its shard's name a batch cannot be held to the shard's checkpoint (a mapping
        // without its window: the seconds of the update that gives it one). Its consequences go
        // on; its events are left out of the figures, and the log and a metric say how many.
        let Some(shard) = self.shard_of(batch) else {
            let uncounted = batch.records.len();
            metrics::counter!("events_uncounted").increment(uncounted as u64);
            tracing::error!(uncounted, "a stream batch without a shard id: its events are not counted (the mapping needs its tumbling window)");
            return Ok(());
        };
        let items: Vec<(&str, Item)> = batch
            .records
            .iter()
            .filter(|r| r.event_name == "INSERT")
            .map(|r| {
                let item: Item = r.change.new_image.clone().into();
                (
                    r.change.sequence_number.as_deref().unwrap_or_default(),
                    item,
                )
            })
            .collect();
        let records: Vec<(&str, &Item)> = items.iter().map(|(seq, item)| (*seq, item)).collect();
        match stream_counts::count(&self.store, &shard, &records).await {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::error!(error.message = %e, "could not count the batch's events");
                Err(failed())
            }
        }
    }

    /// The stream shard the batch is of: its window's `shardId`, or on the emulator's stream of
    /// one shard, the stream.
    fn shard_of(&self, batch: &Batch) -> Option<String> {
        if batch.shard_id.is_some() || !self.one_shard {
            return batch.shard_id.clone();
        }
        let stream = batch
            .records
            .iter()
            .find_map(|r| r.event_source_arn.clone());
        Some(stream.unwrap_or_else(|| "stream".into()))
    }

    async fn one(&self, record: &EventRecord, now: DateTime<Utc>) -> Result<(), ()> {
        let item: Item = record.change.new_image.clone().into();
        let pk = item.opt_str("pk").unwrap_or_default().to_owned();
        self.conversation_moved(&item, &pk).await?;
        let consequences = match derive::consequences(&item) {
            Ok(c) => c,
            Err(e) => return self.unreadable(&item, &pk, &e, now).await,
        };
        // Counted (above) and nothing to derive (an SMS acknowledgement: an incoming one's are
        // its message's): no pause to look at.
        if consequences.is_empty() {
            return Ok(());
        }
        // A paused integration's consequences wait for its resumption, and the event on them.
        let waits_on = tracked_keys(&consequences);
        match hold::hold_if_paused(&self.store, &item, &pk, &waits_on, now).await {
            Ok(Held::Yes) => {
                metrics::counter!("consequences_held").increment(1);
                tracing::info!(item = %pk, "held: its integration is paused");
                return Ok(());
            }
            Ok(Held::No) => {}
            Err(e) => {
                tracing::error!(item = %pk, error.message = %e, "could not read the integration's pause");
                return Err(());
            }
        }
        let (at_once, queued, team) = self.split(&pk, consequences).await?;
        // A trigger no rule takes is handled here: noted on the activity line told now, or (a
        // retry that finds the line written) by its handled mark.
        let (untaken, queued) = self.untaken_triggers(&pk, queued).await?;
        let noted = self
            .tell(&item, &pk, (at_once, team.as_deref()), &untaken, now)
            .await?;
        self.mark_handled(&pk, &untaken, noted, now).await?;
        let queued = self.lookalikes_checked(&pk, queued).await?;
        // The event waits on what a queue carries from before it is sent until it happened.
        self.wait_on(&item, &pk, &tracked_keys(&queued)).await?;
        match self.publisher.publish_from(Some(&pk), &queued).await {
            Ok(published) => {
                self.requests
                    .fetch_add(published.requests, Ordering::Relaxed);
                let sent = published.sent;
                metrics::counter!("consequences_published").increment(sent as u64);
                // A line where something went to a queue; what was written at once is in the
                // invocation's metrics (`records_written`), not a line an event.
                if sent > 0 {
                    tracing::info!(item = %pk, sent, "consequences published");
                }
                self.park(&item, &pk, &published.refused, now).await
            }
            Err(e) => {
                tracing::error!(item = %pk, error.message = %e, error.cause_chain = ?e, "publish failed");
                Err(())
            }
        }
    }

    /// A message stored into a conversation that was there moves it forward (its time and its
    /// place on the list): part of storing the message, so before any pause is looked at. A
    /// refusal is a later message there first.
    async fn conversation_moved(&self, item: &Item, pk: &str) -> Result<(), ()> {
        let Some((conversation, update)) = firmspace::messages::conversation::moved_by(item) else {
            return Ok(());
        };
        match self.store.update_if(&conversation, &update).await {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::error!(item = %pk, error.message = %e, "could not move the conversation forward");
                Err(())
            }
        }
    }

    /// Writes what tells people of the event (its notifications and activity lines) at once,
    /// each under its own key, so a retried batch writes nothing twice; the first activity line
    /// notes the `untaken` triggers, and `true` says the stored line notes them. A record the
    /// table refuses for good goes on the event's waiting mark and, with the event, to a person
    /// (one review item), and the others are written; a failure a retry can help fails the
    /// record.
    async fn tell(
        &self,
        item: &Item,
        pk: &str,
        (at_once, team): (Vec<Consequence>, Option<&[String]>),
        untaken: &[Fired],
        now: DateTime<Utc>,
    ) -> Result<bool, ()> {
        let noting = match untaken {
            [] => None,
            _ => waiting::noting_line(&at_once).cloned(),
        };
        let mut told: Vec<Told> = at_once
            .into_iter()
            .filter_map(|c| Told::try_from(c).ok())
            .filter(|t| !matches!((t, &noting), (Told::Line(l), Some(n)) if l == n))
            .collect();
        let noted = match noting {
            Some(line) => self.noted(pk, line, untaken, &mut told).await?,
            None => false,
        };
        let refused = match told::tell_all(&self.store, told, team).await {
            Ok((applied, refused)) => {
                metrics::counter!("records_written").increment(applied.written as u64);
                refused
            }
            Err(e) => {
                tracing::error!(item = %pk, error.message = %e, "could not write what tells people");
                return Err(());
            }
        };
        if refused.is_empty() {
            return Ok(noted);
        }
        let keys: Vec<String> = refused.iter().map(|(key, _)| key.clone()).collect();
        tracing::warn!(item = %pk, refused = keys.len(), "records cannot be written; parked for review");
        metrics::counter!("records_refused").increment(keys.len() as u64);
        let parts = match WorkError::of_parts(refused) {
            Some(WorkError::PermanentParts(parts)) => parts,
            None => return Ok(noted),
            // One a retry can help: the record is retried (what was written is absorbed).
            Some(e) => {
                tracing::error!(item = %pk, error.message = %e, "could not write what tells people");
                return Err(());
            }
        };
        let detail: Vec<_> = parts
            .iter()
            .map(|p| json!({"consequence": p.key, "reason": p.reason, "error": p.detail}))
            .collect();
        // The person's item first, then the mark: a record written on a retry meanwhile
        // leaves no key waiting that no item names.
        self.review(item, pk, parts[0].reason, json!({ "refused": detail }), now)
            .await?;
        self.wait_on(item, pk, &keys).await.map(|_| noted)
    }

    /// Writes the event's first activity line noting the `untaken` triggers: `true` when the
    /// stored line notes them (written now, or by an earlier attempt that read the rules so).
    /// A line the table refuses for good goes back among `told`, to be refused with the rest.
    async fn noted(
        &self,
        pk: &str,
        line: ActivityLine,
        untaken: &[Fired],
        told: &mut Vec<Told>,
    ) -> Result<bool, ()> {
        let triggers: Vec<Trigger> = untaken.iter().map(|f| f.trigger).collect();
        match activity::append_noting(&self.store, &line, &triggers).await {
            Ok(appended) => {
                metrics::counter!("records_written").increment(u64::from(appended.written));
                Ok(appended.noted)
            }
            Err(e) if e.is_retryable() => {
                tracing::error!(item = %pk, error.message = %e, "could not write what tells people");
                Err(())
            }
            Err(_) => {
                told.insert(0, Told::Line(line));
                Ok(false)
            }
        }
    }

    /// Marks each of `untaken` handled (`automation::mark_handled`) unless the event's activity
    /// line notes them (`noted`).
    async fn mark_handled(
        &self,
        pk: &str,
        untaken: &[Fired],
        noted: bool,
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        if noted {
            return Ok(());
        }
        for fired in untaken {
            if let Err(e) = automation::mark_handled(&self.store, fired, now).await {
                tracing::error!(item = %pk, error.message = %e, "could not mark a trigger handled");
                return Err(());
            }
        }
        Ok(())
    }

    /// What the fan-out writes itself (what tells people: a team's too, when it is small, and
    /// then its members), and what goes to a queue.
    async fn split(
        &self,
        pk: &str,
        consequences: Vec<Consequence>,
    ) -> Result<(Vec<Consequence>, Vec<Consequence>, Option<Vec<String>>), ()> {
        let team = self.small_team(pk, &consequences).await?;
        let (at_once, queued) = consequences
            .into_iter()
            .partition(|c| c.is_written_at_once() || (c.is_for_team() && team.is_some()));
        Ok((at_once, queued, team))
    }

    /// The event's organisation's members, read once when a team's notification is among
    /// `consequences` and the team is small enough to be told at once (`told::small_team`).
    async fn small_team(
        &self,
        pk: &str,
        consequences: &[Consequence],
    ) -> Result<Option<Vec<String>>, ()> {
        let Some(team) = consequences.iter().find(|c| c.is_for_team()) else {
            return Ok(None);
        };
        match told::small_team(&self.store, team.org()).await {
            Ok(team) => Ok(team),
            // A team that cannot be read as it is (a malformed member) is the notify worker's
            // to park: the notification goes to its queue.
            Err(e) if !e.is_retryable() => {
                tracing::warn!(item = %pk, error.message = %e, "the team cannot be read; sent to its worker");
                Ok(None)
            }
            Err(e) => {
                tracing::error!(item = %pk, error.message = %e, "could not read the team");
                Err(())
            }
        }
    }

    /// The triggers among `queued` that no rule takes (their rules read; a rule made meanwhile
    /// takes the events the fan-out reads after it), and the rest. The fan-out handles those
    /// itself: neither sent nor waited on. A trigger whose rules cannot be read as they are (a
    /// malformed rule) goes to its worker, which parks it for a person.
    async fn untaken_triggers(
        &self,
        pk: &str,
        queued: Vec<Consequence>,
    ) -> Result<(Vec<Fired>, Vec<Consequence>), ()> {
        let (mut untaken, mut rest) = (Vec::new(), Vec::with_capacity(queued.len()));
        for c in queued {
            let Consequence::Trigger(fired) = &c else {
                rest.push(c);
                continue;
            };
            match automation::rules_for(&self.store, &fired.org, fired.trigger).await {
                Ok(rules) if rules.is_empty() => untaken.push(fired.clone()),
                Ok(_) => rest.push(c),
                Err(e) => undecided(pk, c, &e, &mut rest)?,
            }
        }
        Ok((untaken, rest))
    }

    /// What the fan-out decides at once, as the worker would, rather than send: a booked
    /// payment is held against its lookalikes (two reads of one window each,
    /// `lookalike::check`, and its review item when it has some), neither sent nor waited on.
    /// The rest go to their queues, and so does this when what it reads cannot be read as it is
    /// (a malformed payment): its worker parks it for a person.
    async fn lookalikes_checked(
        &self,
        pk: &str,
        queued: Vec<Consequence>,
    ) -> Result<Vec<Consequence>, ()> {
        let mut sent = Vec::with_capacity(queued.len());
        for c in queued {
            let Consequence::Lookalike(payment) = &c else {
                sent.push(c);
                continue;
            };
            if let Err(e) = lookalike::check(&self.store, payment).await {
                undecided(pk, c, &e, &mut sent)?;
            }
        }
        Ok(sent)
    }

    /// Puts `keys` on the event's waiting mark (made when there is none; nothing when `keys`
    /// is empty).
    async fn wait_on(&self, item: &Item, pk: &str, keys: &[String]) -> Result<(), ()> {
        if keys.is_empty() {
            return Ok(());
        }
        let Some(waits) = firmspace::store::counters::wait_on(item, keys) else {
            return Ok(());
        };
        self.store
            .commit(vec![waits])
            .await
            .map(|_| ())
            .map_err(|e| {
                tracing::error!(item = %pk, error.message = %e, "could not mark what waits");
            })
    }

    /// Consequences SQS refuses for good are parked as one review item, and the stream moves on:
    /// retrying the record would block every organisation's consequences behind it.
    async fn park(
        &self,
        item: &Item,
        pk: &str,
        refused: &[Refused],
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        if refused.is_empty() {
            return Ok(());
        }
        tracing::error!(item = %pk, refused = refused.len(), "SQS refused consequences; parked for review");
        metrics::counter!("consequences_refused").increment(refused.len() as u64);
        let detail: Vec<_> = refused
            .iter()
            .map(|r| json!({"consequence": r.key, "reason": r.reason}))
            .collect();
        self.review(
            item,
            pk,
            Reason::UnpublishableConsequence,
            json!({ "refused": detail }),
            now,
        )
        .await
    }

    async fn review(
        &self,
        item: &Item,
        pk: &str,
        reason: Reason,
        detail: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        let org = item
            .opt_str("org")
            .and_then(|o| OrgId::parse(o).ok())
            .unwrap_or_else(operator_org);
        let review = ReviewItem {
            org,
            kind: Kind::Fanout,
            reason,
            key: pk.to_owned(),
            at: now,
            detail,
        };
        review.put(&self.store).await.map(|_| ()).map_err(|e| {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not file the review item");
        })
    }

    /// A stored event that cannot be read is our defect: it reaches the logs and a review item,
    /// and the stream moves on (retrying the same bytes cannot help).
    async fn unreadable(
        &self,
        item: &Item,
        pk: &str,
        err: &StoreError,
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        tracing::error!(item = %pk, error.message = %err, error.cause_chain = ?err, "stored event is unreadable; no consequences derived");
        metrics::counter!("events_unreadable").increment(1);
        let detail = json!({"error": err.to_string(), "kind": item.opt_str("kind")});
        self.review(item, pk, Reason::MalformedEvent, detail, now)
            .await
    }
}

#[cfg(test)]
mod tests {
    use firmspace::effects::derive::EVENT_KINDS;

    #[test]
    fn the_templates_stream_filter_lets_exactly_the_event_kinds_through() {
        let template = include_str!("../../../infra/template.yaml");
        let pattern = template
            .lines()
            .find(|l| l.contains("- Pattern:") && l.contains("NewImage"))
            .expect("the fan-out's stream filter");
        let json = pattern
            .split_once('\'')
            .map(|(_, rest)| rest.trim_end_matches('\''))
            .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(json).expect("the filter is JSON");
        assert_eq!(parsed["eventName"], serde_json::json!(["INSERT"]));
        let kinds: Vec<&str> = parsed["dynamodb"]["NewImage"]["kind"]["S"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(kinds, EVENT_KINDS);
    }
}
