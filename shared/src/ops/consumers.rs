//! Pausing a worker: its SQS event source mapping disabled, and enabled again. While it is
//! paused its messages wait in the queue (Lambda stops receiving them: nothing is lost, and no
//! receive is spent towards the dead-letter queue); who paused or resumed it, and when, is kept
//! beside it for the page. Both are idempotent: pausing a paused worker changes nothing.

use super::answers::ConsumerState;
use crate::store::item::{Builder, Read};
use crate::store::{Store, StoreError};
use crate::time;
use chrono::{DateTime, Utc};

/// One worker and the event source mapping that feeds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    pub name: String,
    pub mapping: String,
}

/// The workers an operator may pause, and the Lambda API that pauses them.
pub struct Consumers {
    pub lambda: aws_sdk_lambda::Client,
    pub list: Vec<Consumer>,
}

/// `name=UUID,name=UUID` (`WORKER_MAPPINGS`): the workers and their mappings' ids.
pub fn parse(raw: &str) -> Vec<Consumer> {
    raw.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, mapping)| Consumer {
            name: name.trim().to_owned(),
            mapping: mapping.trim().to_owned(),
        })
        .filter(|c| !c.name.is_empty() && !c.mapping.is_empty())
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the Lambda API could not be asked: {0}")]
    Lambda(String),
}

fn record_pk(name: &str) -> String {
    format!("ADMIN#CONSUMER#{}", crate::ids::key_part(name))
}

impl Consumers {
    pub fn find(&self, name: &str) -> Option<&Consumer> {
        self.list.iter().find(|c| c.name == name)
    }

    /// Each worker as the page shows it: whether its mapping takes messages now, and who
    /// paused or resumed it last, when.
    pub async fn states(&self, store: &Store) -> Result<Vec<ConsumerState>, ConsumerError> {
        let mut out = Vec::new();
        for consumer in &self.list {
            out.push(self.state(store, consumer).await?);
        }
        Ok(out)
    }

    async fn state(
        &self,
        store: &Store,
        consumer: &Consumer,
    ) -> Result<ConsumerState, ConsumerError> {
        let mapping = self
            .lambda
            .get_event_source_mapping()
            .uuid(&consumer.mapping)
            .send()
            .await
            .map_err(|e| {
                ConsumerError::Lambda(aws_sdk_lambda::error::DisplayErrorContext(&e).to_string())
            })?;
        let record = store.get(&record_pk(&consumer.name)).await?;
        let field = |name: &str| {
            record
                .as_ref()
                .and_then(|r| r.opt_str(name).map(str::to_owned))
        };
        let state = mapping.state().unwrap_or("Unknown");
        Ok(ConsumerState {
            name: consumer.name.clone(),
            paused: matches!(state, "Disabled" | "Disabling"),
            mapping_state: state.to_owned(),
            by: field("by"),
            at: field("at"),
            action: field("action"),
        })
    }

    /// Pauses (`paused`) or resumes the worker: its mapping disabled or enabled, and who did it.
    pub async fn set(
        &self,
        store: &Store,
        consumer: &Consumer,
        paused: bool,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<ConsumerState, ConsumerError> {
        self.lambda
            .update_event_source_mapping()
            .uuid(&consumer.mapping)
            .enabled(!paused)
            .send()
            .await
            .map_err(|e| {
                ConsumerError::Lambda(aws_sdk_lambda::error::DisplayErrorContext(&e).to_string())
            })?;
        record(store, &consumer.name, paused, by, now).await?;
        self.state(store, consumer).await
    }
}

/// Keeps who paused or resumed the worker `name`, and when, beside its mapping.
pub async fn record(
    store: &Store,
    name: &str,
    paused: bool,
    by: &str,
    now: DateTime<Utc>,
) -> Result<(), crate::store::StoreError> {
    let action = if paused { "paused" } else { "resumed" };
    let record = Builder::new(&record_pk(name), "consumer", "admin")
        .str("name", name)
        .str("action", action)
        .str("by", by)
        .str("at", time::format(now))
        .build();
    store.replace(record).await?;
    tracing::info!(consumer = %name, action, "consumer {action} by a person");
    Ok(())
}

/// Whether a person paused the worker `name` last (and has not resumed it since): what a
/// schedule that feeds it reads before it queues work the worker would not take.
pub async fn is_paused(store: &Store, name: &str) -> Result<bool, crate::store::StoreError> {
    let record = store.get(&record_pk(name)).await?;
    Ok(record.and_then(|r| r.opt_str("action").map(|a| a == "paused")) == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mappings_are_named_pairs() {
        let parsed = parse("notify-worker=a1, match-worker = b2,broken,=x");
        assert_eq!(
            parsed,
            [
                Consumer {
                    name: "notify-worker".into(),
                    mapping: "a1".into()
                },
                Consumer {
                    name: "match-worker".into(),
                    mapping: "b2".into()
                }
            ]
        );
    }
}
