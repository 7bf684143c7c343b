#![forbid(unsafe_code)]
//! The table's stream → SQS. Only INSERTs of event items reach this function (the event source
//! mapping filters); every consequence is derived from the stored item alone, so no crash between
//! "stored" and "published" can lose one. A resend after a partial failure is harmless.

use anyhow::Context;
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use firmspace::config::{Config, Queues};
use firmspace::effects::derive;
use firmspace::effects::queue::Publisher;
use firmspace::store::Item;
use lambda_runtime::LambdaEvent;

pub struct App {
    publisher: Publisher,
}

impl App {
    pub fn new(publisher: Publisher) -> Self {
        Self { publisher }
    }

    pub async fn from_env() -> anyhow::Result<Self> {
        let config = Config::from_env().context("loading configuration")?;
        let queues = Queues::from_env().context("loading queue URLs")?;
        let sqs = firmspace::aws::sqs(config.endpoint_url.as_deref()).await;
        Ok(Self::new(Publisher { sqs, queues }))
    }

    pub async fn handle(
        &self,
        event: LambdaEvent<Event>,
    ) -> Result<DynamoDbEventResponse, lambda_runtime::Error> {
        Ok(self.process(event.payload).await)
    }

    /// Publishes the consequences of each record in order; at the first failure the rest of the
    /// batch is reported failed from that record on (the stream retries from there).
    pub async fn process(&self, event: Event) -> DynamoDbEventResponse {
        let mut response = DynamoDbEventResponse::default();
        for record in event.records {
            if record.event_name != "INSERT" {
                continue;
            }
            let item: Item = record.change.new_image.into();
            let consequences = derive::consequences(&item);
            let key = item
                .get("pk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            match self.publisher.publish(&consequences).await {
                Ok(sent) => tracing::info!(item = %key, sent, "consequences published"),
                Err(e) => {
                    tracing::error!(item = %key, error.message = %e, error.cause_chain = ?e, "publish failed");
                    let mut failure = DynamoDbBatchItemFailure::default();
                    failure.item_identifier = record.change.sequence_number.clone();
                    response.batch_item_failures.push(failure);
                    break;
                }
            }
        }
        response
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
