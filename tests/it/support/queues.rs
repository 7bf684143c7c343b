//! Per-test SQS queues in ministack, and the bridge from received messages to Lambda SQS events.

use super::sdk_config;
use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName, QueueAttributeName};
use firmspace::effects::queue::Queues;
use serde_json::json;

pub async fn client() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config().await)
}

/// A queue with `visibility` seconds of visibility timeout, and optionally a DLQ after
/// `max_receives`. Returns (queue url, dlq url).
pub async fn queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    visibility: u32,
    max_receives: Option<u32>,
) -> (String, Option<String>) {
    let suffix = super::uuid_like();
    let mut dlq = None;
    let mut create = sqs
        .create_queue()
        .queue_name(format!("{name}-{suffix}"))
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility.to_string(),
        );
    if let Some(max) = max_receives {
        let dlq_url = sqs
            .create_queue()
            .queue_name(format!("{name}-dlq-{suffix}"))
            .send()
            .await
            .expect("DLQ created")
            .queue_url
            .expect("url");
        let arn = sqs
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("DLQ attributes")
            .attributes
            .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
            .expect("DLQ arn");
        create = create.attributes(
            QueueAttributeName::RedrivePolicy,
            json!({"deadLetterTargetArn": arn, "maxReceiveCount": max.to_string()}).to_string(),
        );
        dlq = Some(dlq_url);
    }
    let url = create
        .send()
        .await
        .expect("queue created")
        .queue_url
        .expect("url");
    (url, dlq)
}

pub async fn three_queues(sqs: &aws_sdk_sqs::Client) -> Queues {
    Queues {
        notifications: queue(sqs, "notifications", 30, None).await.0,
        automation: queue(sqs, "automation", 30, None).await.0,
        matching: queue(sqs, "matching", 30, None).await.0,
    }
}

/// Everything currently visible (waits up to `wait` seconds for the first message).
pub async fn receive(sqs: &aws_sdk_sqs::Client, url: &str, wait: i32) -> Vec<Message> {
    let mut all = Vec::new();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(if all.is_empty() { wait } else { 0 })
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive");
        let got = out.messages.unwrap_or_default();
        if got.is_empty() {
            return all;
        }
        all.extend(got);
    }
}

pub async fn delete(sqs: &aws_sdk_sqs::Client, url: &str, messages: &[Message]) {
    for m in messages {
        sqs.delete_message()
            .queue_url(url)
            .receipt_handle(m.receipt_handle().expect("handle"))
            .send()
            .await
            .expect("delete");
    }
}

/// The event Lambda's SQS event source mapping would hand the worker for these messages.
pub fn event(messages: &[Message]) -> SqsEvent {
    let records: Vec<_> = messages
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<String, serde_json::Value> = m
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), json!(v)))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "awsRegion": super::REGION,
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("an SQS event")
}

/// An SQS event carrying one body, as if received once.
pub fn event_of(id: &str, body: &str) -> SqsEvent {
    serde_json::from_value(json!({"Records": [{
        "messageId": id, "receiptHandle": "h", "body": body,
        "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}, "eventSource": "aws:sqs"
    }]}))
    .expect("an SQS event")
}
