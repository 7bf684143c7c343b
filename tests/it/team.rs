//! A team at its cap: 1,000 members (one more is 409 `limit_reached`), and a batch of ten team
//! notifications written within an invocation's time, each copy once; a batch that runs short
//! of time hands back the messages it did not start.

use crate::support::app::Crm;
use chrono::Utc;
use firmspace::orgs::{self, Member, MEMBERS_MAX};
use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};

/// `count` SQS records, each a team notification of its own key.
fn notifications(
    org: &firmspace::ids::OrgId,
    count: usize,
) -> aws_lambda_events::event::sqs::SqsEvent {
    let records: Vec<_> = (0..count)
        .map(|i| {
            let body = json!({"type": "notification", "org": org.as_str(),
                "key": format!("payment:stripe:pi_team_{i}"), "recipient": null,
                "text": "Payment received", "at": "2026-12-06T10:00:00.000Z"});
            json!({"messageId": format!("m{i}"), "receiptHandle": "h", "body": body.to_string(),
                "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
                "eventSource": "aws:sqs"})
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

#[tokio::test]
async fn a_team_of_1000_gets_each_copy_of_ten_notifications_once_within_the_time() {
    let crm = Crm::new().await;
    let store = crm.store().clone();
    let org = crm.org.clone();
    let added: Vec<bool> = futures::stream::iter(0..MEMBERS_MAX)
        .map(|i| {
            let (store, org) = (store.clone(), org.clone());
            async move {
                let member = Member {
                    user_id: format!("u{i:04}"),
                    name: format!("Member {i}"),
                };
                orgs::add_member(&store, &org, &member, MEMBERS_MAX, Utc::now())
                    .await
                    .unwrap()
                    .is_new()
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(added.iter().all(|new| *new), "every member added new");
    // One more is refused; one already there is still a duplicate.
    let (status, refused) = crm
        .call(
            "POST",
            "/api/members",
            json!({"user_id": "u_extra", "name": "One more"}),
        )
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("limit_reached")),
        "{refused}"
    );
    let (status, again) = crm
        .call(
            "POST",
            "/api/members",
            json!({"user_id": "u0001", "name": "Another name"}),
        )
        .await;
    // The duplicate answers the member as it was added, not the name it was sent with.
    assert_eq!(
        (status, &again["duplicate"], &again["name"]),
        (200, &json!(true), &json!("Member 1"))
    );

    // Ten team notifications in one batch, with the time a 15 s invocation has.
    let notify = notify_worker::app(store.clone(), 5);
    let started = Instant::now();
    let out = notify
        .process_until(
            notifications(&org, 10),
            Utc::now(),
            started + Duration::from_secs(15),
        )
        .await;
    let failed = out.batch_item_failures.len();
    println!(
        "ten notifications to 1,000 members: {:?}, {failed} handed back",
        started.elapsed()
    );
    // What was handed back comes again: done again, nothing twice.
    let again = notify
        .process_until(
            notifications(&org, 10),
            Utc::now(),
            Instant::now() + Duration::from_secs(60),
        )
        .await;
    assert!(again.batch_item_failures.is_empty());
    assert_eq!(
        crm.count("notification").await,
        10 * MEMBERS_MAX as usize,
        "each copy once"
    );
}

#[tokio::test]
async fn a_batch_short_of_time_hands_back_what_it_did_not_start() {
    let crm = Crm::new().await;
    let member = Member {
        user_id: "u1".into(),
        name: "Olena".into(),
    };
    orgs::add_member(crm.store(), &crm.org, &member, MEMBERS_MAX, Utc::now())
        .await
        .unwrap();
    let notify = notify_worker::app(crm.store().clone(), 5);
    // Two seconds left: less than one message needs. Nothing is started; all come back.
    let out = notify
        .process_until(
            notifications(&crm.org, 3),
            Utc::now(),
            Instant::now() + Duration::from_secs(2),
        )
        .await;
    assert_eq!(out.batch_item_failures.len(), 3);
    assert_eq!(crm.count("notification").await, 0);
}

/// A message handed back for lack of time on its last receive is filed `dead_letter` before its
/// queue moves it to the DLQ, as one retried after a failure is: no dead letter goes unseen.
#[tokio::test]
async fn a_message_out_of_time_on_its_last_receive_is_filed_as_a_dead_letter() {
    let crm = Crm::new().await;
    let notify = notify_worker::app(crm.store().clone(), 3);
    let mut last = notifications(&crm.org, 2);
    for (record, receives) in last.records.iter_mut().zip(["2", "3"]) {
        record
            .attributes
            .insert("ApproximateReceiveCount".into(), receives.into());
    }
    // No time left: both come back untouched.
    let out = notify.process_until(last, Utc::now(), Instant::now()).await;
    assert_eq!(out.batch_item_failures.len(), 2);
    assert_eq!(crm.count("notification").await, 0);
    let dead: Vec<_> = crm
        .reasons()
        .await
        .into_iter()
        .filter(|r| r == "dead_letter")
        .collect();
    assert_eq!(dead.len(), 1, "its third and last receive only");
}
