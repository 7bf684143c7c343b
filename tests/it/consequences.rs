//! Consequences in-process against ministack: fan-out, the three workers, redelivery, worker
//! restart, timeout after success, poison messages.

use crate::support::queues::{self, event, event_of, receive};
use crate::support::{fixtures, TestEnv};
use aws_sdk_sqs::types::Message;
use chrono::Utc;
use firmspace::effects::automation::{self, Action};
use firmspace::effects::outbound::Outbound;
use firmspace::effects::queue::{Publisher, Queues};
use firmspace::effects::{activity, notify, EntityKind, Trigger};
use firmspace::ids::{ExternalId, OrgId};
use firmspace::money::Currency;
use firmspace::orgs::{self, Member};
use firmspace::payments::invoice::{self, Links};
use firmspace::payments::{register_payment, InvoiceStatus, NewInvoice, PaymentInput, Source};
use firmspace::store::item::Read;
use firmspace::store::Item;
use rust_decimal_macros::dec;
use serde_json::json;
use std::time::Duration;

async fn team(env: &TestEnv, org: &OrgId, size: usize) {
    for i in 1..=size {
        let member = Member {
            user_id: format!("u{i}"),
            name: format!("Colleague {i}"),
        };
        orgs::add_member(
            &env.store,
            org,
            &member,
            firmspace::orgs::MEMBERS_MAX,
            Utc::now(),
        )
        .await
        .unwrap();
    }
}

/// Books a payment that closes an invoice linked to contact c1 and deal d1; returns the stored
/// payment event item.
async fn closing_payment(env: &TestEnv, org: &OrgId, owner: Option<&str>) -> Item {
    let links = Links {
        owner: owner.map(str::to_owned),
        contact_id: Some("c1".into()),
        deal_id: Some("d1".into()),
        company_id: None,
    };
    closing_payment_linked(env, org, links, "pay_c1").await
}

/// Books the payment `payment_id` that closes a new invoice with these links.
pub(crate) async fn closing_payment_linked(
    env: &TestEnv,
    org: &OrgId,
    links: Links,
    payment_id: &str,
) -> Item {
    payment_linked(env, org, links, payment_id, None).await
}

/// Books the payment `payment_id` of `amount` (all that is open when `None`) on a new invoice
/// of 40.00 UAH with these links.
pub(crate) async fn payment_linked(
    env: &TestEnv,
    org: &OrgId,
    links: Links,
    payment_id: &str,
    amount: Option<rust_decimal::Decimal>,
) -> Item {
    let inv = invoice::create(
        &env.store,
        org,
        NewInvoice {
            currency: Currency::parse("UAH").unwrap(),
            gross: dec!(40),
            status: InvoiceStatus::Open,
            links,
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let input = PaymentInput {
        org: org.clone(),
        invoice_ref: Some(inv.id.as_str().to_owned()),
        source: Source::Stripe,
        external_id: ExternalId::parse("id", payment_id).unwrap(),
        amount,
        currency: amount.map(|_| Currency::parse("UAH").unwrap()),
        at: Utc::now(),
        actor: "test".into(),
        reverses: None,
        reversible: false,
        via: None,
    };
    register_payment(&env.store, &input).await.unwrap();
    env.store
        .get(&input.pk())
        .await
        .unwrap()
        .expect("event stored")
}

/// A stream batch of one record, `item`'s INSERT at `sequence`, on a shard of its own item (a
/// record comes again on its shard under its sequence number; the records of two items are
/// counted apart, whatever sequence numbers a test gives them).
pub fn stream_event(item: &Item, sequence: &str) -> fanout::Batch {
    let shard = format!("shardId-{}", item.opt_str("pk").unwrap_or_default());
    stream_batch(&shard, &[(sequence, item)])
}

/// A stream batch of `shard`: each item's INSERT at its sequence number, in order.
pub fn stream_batch(shard: &str, records: &[(&str, &Item)]) -> fanout::Batch {
    let records: Vec<serde_json::Value> = records
        .iter()
        .map(|(sequence, item)| {
            let image: serde_dynamo::Item = (*item).clone().into();
            json!({
                "eventID": sequence, "eventName": "INSERT", "eventVersion": "1.1",
                "eventSource": "aws:dynamodb", "awsRegion": "eu-central-1",
                "dynamodb": {"ApproximateCreationDateTime": 1764680000.0, "Keys": {},
                    "NewImage": image, "SequenceNumber": sequence, "SizeBytes": 100,
                    "StreamViewType": "NEW_IMAGE"}
            })
        })
        .collect();
    serde_json::from_value(json!({"shardId": shard, "Records": records})).expect("a stream batch")
}

/// The fan-out over three fresh queues in ministack: the SQS client, the queues, the app.
pub async fn fanout_app(env: &TestEnv) -> (aws_sdk_sqs::Client, Queues, fanout::App) {
    let sqs = queues::client().await;
    let q = queues::three_queues(&sqs).await;
    let fanout = fanout::App::new(
        Publisher {
            sqs: sqs.clone(),
            queues: q.clone(),
        },
        env.store.clone(),
    );
    (sqs, q, fanout)
}

pub struct Workers {
    pub notify: notify_worker::App,
    pub automation: automation_worker::App,
    pub matching: match_worker::App,
}

impl Workers {
    /// The notify worker takes these messages (notifications and activity lines); none comes
    /// back.
    pub async fn notify_all(&self, messages: &[Message]) {
        let out = self.notify.process(event(messages), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty(), "notify: {out:?}");
    }

    /// The automation worker takes these messages; none comes back.
    pub async fn automation_all(&self, messages: &[Message]) {
        let out = self.automation.process(event(messages), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty(), "automation: {out:?}");
    }
}

/// A rule of `org` that `invoice.paid` takes (a task to make): the trigger goes to its queue.
pub async fn invoice_paid_rule(store: &firmspace::store::Store, org: &OrgId) -> automation::Rule {
    automation::create_rule(
        store,
        org,
        Trigger::InvoicePaid,
        Action::CreateTask {
            title: "Ship".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap()
}

pub fn workers(env: &TestEnv, timeout: Duration, max_receives: u32) -> Workers {
    Workers {
        notify: notify_worker::app(env.store.clone(), max_receives),
        automation: automation_worker::app(
            env.store.clone(),
            Outbound::new(timeout, true),
            crate::support::channels::apis(true),
            max_receives,
        ),
        matching: match_worker::app(env.store.clone(), max_receives),
    }
}

#[tokio::test]
async fn the_same_stream_record_and_the_same_messages_twice_give_one_effect_each() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    team(&env, &org, 3).await;
    let rule = invoice_paid_rule(&env.store, &org).await;
    let item = closing_payment(&env, &org, None).await;
    // `invoice.paid` is keyed by the invoice, not by the payment that closed it.
    let paid_key = format!("invoice:{}:paid", item["invoice_id"].as_s().unwrap());
    let (sqs, q, fanout) = fanout_app(&env).await;
    for _ in 0..2 {
        let response = fanout.process(stream_event(&item, "100"), Utc::now()).await;
        assert!(response.batch_item_failures.is_empty());
    }
    // The activity lines (contact, deal) the fan-out wrote itself, once.
    assert_eq!(env.count("activity").await, 2);
    let notes = receive(&sqs, &q.notifications, 1).await;
    let triggers = receive(&sqs, &q.automation, 1).await;
    // The team's notification too (a team of three, written a copy a member); the trigger,
    // which a rule takes, sent twice.
    assert_eq!(env.count("notification").await, 3);
    assert_eq!((notes.len(), triggers.len()), (0, 2));
    let w = workers(&env, Duration::from_secs(2), 5);
    for _ in 0..2 {
        w.notify_all(&notes).await;
        w.automation_all(&triggers).await;
    }
    for user in ["u1", "u2", "u3"] {
        let mine = notify::list(&env.store, &org, user).await.unwrap();
        assert_eq!(mine.len(), 1, "{user}: {mine:?}");
        assert_eq!(mine[0]["key"], format!("payment:stripe:pay_c1#{user}"));
    }
    assert_eq!(env.count("notification").await, 3);
    let contact = activity::list(&env.store, &org, EntityKind::Contact, "c1")
        .await
        .unwrap();
    assert_eq!(contact.len(), 1);
    assert_eq!(contact[0].key, "invoice:stripe:pay_c1");
    assert_eq!(
        activity::list(&env.store, &org, EntityKind::Deal, "d1")
            .await
            .unwrap()
            .len(),
        1
    );
    let tasks = automation::tasks(&env.store, &org).await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        (
            Some(tasks[0].rule_id.as_str()),
            Some(tasks[0].event_key.as_str())
        ),
        (Some(rule.rule_id.as_str()), Some(paid_key.as_str()))
    );
}

#[tokio::test]
async fn a_consequence_sqs_refuses_is_parked_and_the_stream_moves_on() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    // U+FFFF is outside SQS's character set: past the API's limits, only SQS can refuse it.
    let links = Links {
        owner: Some("u1".into()),
        contact_id: Some("c\u{FFFF}".into()),
        deal_id: Some("d1".into()),
        company_id: None,
    };
    // A rule takes `invoice.paid`, so its trigger (naming the contact) goes to its queue.
    invoice_paid_rule(&env.store, &org).await;
    let item = closing_payment_linked(&env, &org, links, "pay_poison").await;
    let (sqs, q, fanout) = fanout_app(&env).await;
    let response = fanout.process(stream_event(&item, "300"), Utc::now()).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "the record is not retried"
    );
    let (told, triggers) = (
        receive(&sqs, &q.notifications, 1).await,
        receive(&sqs, &q.automation, 1).await,
    );
    // The notification and both lines the fan-out wrote itself (DynamoDB takes the
    // character) and the lookalike check it made; the trigger (naming the contact) is parked,
    // and the event waits on it.
    assert_eq!((told.len(), triggers.len()), (0, 0));
    assert_eq!(
        (env.count("notification").await, env.count("activity").await),
        (1, 2)
    );
    let review = firmspace::review::list(&env.store, &org, 10).await.unwrap();
    assert_eq!(review.len(), 1, "{review:?}");
    assert_eq!(
        review[0].reason.as_deref(),
        Some("unpublishable_consequence")
    );
    let parked: Vec<&str> = review[0].detail["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["consequence"].as_str().unwrap())
        .collect();
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert!(parked[0].starts_with("trigger:invoice.paid:"), "{parked:?}");
    assert_eq!(
        env.count("waiting").await,
        1,
        "the event waits on the parked trigger"
    );
}

#[tokio::test]
async fn an_owner_gets_the_one_notification_and_a_team_of_three_gets_three() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    team(&env, &org, 3).await;
    let w = workers(&env, Duration::from_secs(1), 5);
    let owned = json!({"type": "notification", "org": org.as_str(), "key": "payment:x:1", "recipient": "u2", "text": "paid", "at": "2026-12-02T10:00:00.000Z"});
    let team_wide = json!({"type": "notification", "org": org.as_str(), "key": "payment:x:2", "recipient": null, "text": "paid", "at": "2026-12-02T10:00:01.000Z"});
    for _ in 0..3 {
        w.notify
            .process(event_of("m1", &owned.to_string()), Utc::now())
            .await;
        w.notify
            .process(event_of("m2", &team_wide.to_string()), Utc::now())
            .await;
    }
    assert_eq!(env.count("notification").await, 4);
    let u2 = notify::list(&env.store, &org, "u2").await.unwrap();
    assert_eq!(u2.len(), 2);
    assert_eq!(u2[0]["key"], "payment:x:2#u2", "newest first");
    assert!(notify::mark_read(&env.store, &org, "payment:x:1")
        .await
        .unwrap());
    assert_eq!(
        notify::list(&env.store, &org, "u2").await.unwrap()[1]["read"],
        true
    );
}

#[tokio::test]
async fn a_worker_that_dies_before_deleting_the_message_adds_no_second_effect_on_redelivery() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let sqs = queues::client().await;
    let (url, _) = queues::queue(&sqs, "notifications", 1, None).await;
    let body = json!({"type": "activity", "org": org.as_str(), "entity_kind": "contact", "entity_id": "c9",
                      "key": "invoice:standard:p9", "kind": "payment", "text": "paid", "at": "2026-12-02T10:00:00.000Z"});
    sqs.send_message()
        .queue_url(&url)
        .message_body(body.to_string())
        .send()
        .await
        .unwrap();
    let w = workers(&env, Duration::from_secs(1), 5);
    let first = receive(&sqs, &url, 2).await;
    assert_eq!(first.len(), 1);
    w.notify.process(event(&first), Utc::now()).await;
    // The worker dies here: the message is never deleted. After the visibility timeout SQS
    // delivers it again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let second = receive(&sqs, &url, 3).await;
    assert_eq!(second.len(), 1, "redelivered");
    assert_eq!(second[0].message_id(), first[0].message_id());
    let response = w.notify.process(event(&second), Utc::now()).await;
    assert!(response.batch_item_failures.is_empty());
    queues::delete(&sqs, &url, &second).await;
    assert_eq!(
        activity::list(&env.store, &org, EntityKind::Contact, "c9")
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(env.count("activity").await, 1);
}

#[tokio::test]
async fn a_chosen_key_cannot_stand_for_another_notifications_team_copy() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    team(&env, &org, 1).await;
    let note = |key: &str, recipient: Option<&str>| firmspace::effects::Notification {
        org: org.clone(),
        key: firmspace::ids::EventKey::new("payment", key),
        recipient: recipient.map(str::to_owned),
        text: format!("about {key}"),
        at: Utc::now(),
    };
    // The team copy of `k1` for u1, and a direct notification whose key is `k1#u1`.
    let team_copy = notify::deliver(&env.store, &note("k1", None), None)
        .await
        .unwrap()
        .unwrap();
    let chosen = notify::deliver(&env.store, &note("k1#u1", Some("u9")), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (team_copy.written, chosen.written),
        (1, 1),
        "neither absorbed the other"
    );
    assert_eq!(env.count("notification").await, 2);
    // Each is marked read by the key its list shows.
    for recipient in ["u1", "u9"] {
        let listed = notify::list(&env.store, &org, recipient).await.unwrap();
        assert_eq!(listed.len(), 1, "{recipient}");
        let key = listed[0]["key"].as_str().unwrap();
        assert!(
            notify::mark_read(&env.store, &org, key).await.unwrap(),
            "{key}"
        );
    }
    // The same for activity: entity `c1#x` with key `k` is not entity `c1` with key `x#k`.
    let line = |entity: &str, key: &str| firmspace::effects::ActivityLine {
        org: org.clone(),
        entity_kind: EntityKind::Contact,
        entity_id: entity.into(),
        key: key.into(),
        kind: "note".into(),
        text: "hello".into(),
        at: Utc::now(),
        money: None,
    };
    assert!(activity::append(&env.store, &line("c1#x", "k"))
        .await
        .unwrap());
    assert!(activity::append(&env.store, &line("c1", "x#k"))
        .await
        .unwrap());
}
