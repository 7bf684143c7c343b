//! Pausing a worker: its SQS event source mapping disabled in ministack's Lambda, its messages
//! waiting in the queue, and taken again once it is resumed; who did it is on the page.

use super::Ops;
use crate::support::api::ADMIN;
use crate::support::queues::queue;
use aws_sdk_sqs::types::QueueAttributeName;
use firmspace::ops::consumers::{Consumer, Consumers};
use std::time::{Duration, Instant};

/// The queue's waiting and in-flight messages.
async fn counts(sqs: &aws_sdk_sqs::Client, url: &str) -> (u64, u64) {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .unwrap();
    let of = |name: QueueAttributeName| {
        out.attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (
        of(QueueAttributeName::ApproximateNumberOfMessages),
        of(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    )
}

#[tokio::test]
async fn a_paused_workers_messages_wait_in_its_queue_and_are_taken_once_it_is_resumed() {
    let ops = Ops::new().await;
    let lambda = aws_sdk_lambda::Client::new(&crate::support::sdk_config().await);
    // A worker of the deployed stack, fed by a queue of this test's own.
    let functions = lambda.list_functions().send().await.unwrap();
    let worker = functions
        .functions()
        .iter()
        .filter_map(|f| f.function_name())
        .find(|n| n.contains("NotifyWorker"))
        .expect("the deployed notify worker")
        .to_owned();
    let (url, _) = queue(&ops.sqs, "paused", 60, None).await;
    let arn = ops
        .sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .unwrap();
    let mapping = lambda
        .create_event_source_mapping()
        .function_name(&worker)
        .event_source_arn(&arn)
        .batch_size(1)
        .enabled(true)
        .send()
        .await
        .unwrap()
        .uuid()
        .unwrap()
        .to_owned();
    let consumers = Consumers {
        lambda: lambda.clone(),
        list: vec![Consumer {
            name: "notify-worker".into(),
            mapping: mapping.clone(),
        }],
    };
    let ops = ops.with_consumers(consumers);
    let path = "/ops/consumers/notify-worker";
    let (status, paused) = ops
        .post(
            &format!("{path}/pause"),
            ADMIN,
            "p-1",
            &serde_json::Value::Null,
        )
        .await;
    assert_eq!(
        (status, paused["paused"].as_bool()),
        (200, Some(true)),
        "{paused}"
    );
    let (status, again) = ops
        .post(
            &format!("{path}/pause"),
            ADMIN,
            "p-1",
            &serde_json::Value::Null,
        )
        .await;
    assert_eq!(
        (status, again),
        (200, paused.clone()),
        "the same key: the stored answer"
    );
    let (_, listed) = ops.get("/ops/consumers", ADMIN).await;
    assert_eq!(listed["items"][0]["action"], "paused");
    assert!(listed["items"][0]["by"]
        .as_str()
        .unwrap()
        .starts_with("admin"));
    let key = crate::support::api::new_org(&ops.api).await;
    let (status, _) = ops.get("/ops/consumers", &key).await;
    assert_eq!(
        status, 403,
        "an organisation's key does not pause the deployment's workers"
    );

    // While paused, a message waits: not received, no receive spent.
    ops.sqs
        .send_message()
        .queue_url(&url)
        .message_body("{}")
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        counts(&ops.sqs, &url).await,
        (1, 0),
        "it waits in the queue"
    );

    let (status, resumed) = ops
        .post(
            &format!("{path}/resume"),
            ADMIN,
            "r-1",
            &serde_json::Value::Null,
        )
        .await;
    assert_eq!(
        (status, resumed["paused"].as_bool()),
        (200, Some(false)),
        "{resumed}"
    );
    let started = Instant::now();
    while counts(&ops.sqs, &url).await.0 != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the resumed worker takes it"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    lambda
        .delete_event_source_mapping()
        .uuid(&mapping)
        .send()
        .await
        .unwrap();
}
