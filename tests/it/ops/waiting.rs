//! What waits, exactly and at any volume: 150 events held by a paused integration are 150
//! waiting (the oldest named), and after the resumption and the consequences the figure is
//! back where it was; the summary reads as many items at 1,000 events as at 10.

use super::{admin_post, drain, org_with_team, Ops};
use crate::consequences::{stream_event, workers};
use crate::support::api::ADMIN;
use crate::support::fixtures::signed_post;
use chrono::Utc;
use firmspace::calls::providers::CallSettings;
use firmspace::effects::queue::Publisher;
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::integrations::{self, Integration, Settings};
use firmspace::signature::standard;
use firmspace::store::item::Read;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

/// A call integration of `org` and its secret.
pub(super) async fn calls_hook(o: &Ops, org: &OrgId) -> (IntegrationId, String) {
    let secret = standard::generate_secret();
    let hook = IntegrationId::generate(org);
    let integration = Integration {
        id: hook.clone(),
        settings: Settings::Calls(CallSettings::Standard {
            secret: secret.clone().into(),
        }),
        created_at: Utc::now(),
    };
    integrations::create(&o.env.store, &integration)
        .await
        .unwrap();
    (hook, secret)
}

/// `n` missed calls (`{prefix}-0` ...) delivered to the webhook, eight at a time.
pub(super) async fn missed_calls(
    o: &Ops,
    (hook, secret): (&IntegrationId, &str),
    prefix: &str,
    n: usize,
) {
    let calls = call_webhook::app(o.env.store.clone(), "https://hooks.test");
    let calls = &calls;
    futures::stream::iter(0..n)
        .map(|i| async move {
            let call_id = format!("{prefix}-{i}");
            let body = json!({"type": "call.completed", "data": {"call_id": call_id,
                "direction": "inbound", "peer": "+380441234567", "status": "no-answer",
                "duration": 0}})
            .to_string();
            let now = Utc::now().timestamp();
            let req = signed_post(hook, "calls", secret, &format!("w-{call_id}"), now, &body);
            let res = calls.respond(&req, Utc::now()).await.unwrap();
            assert_eq!(res.status(), 201);
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

fn calls_of(summary: &Value) -> &Value {
    &summary["events"]["call"]
}

#[tokio::test]
async fn a_pause_of_150_events_is_150_waiting_and_after_the_resumption_none() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let hook = calls_hook(&o, &org).await;
    let summary = format!("/ops/summary?org={org}");
    let (_, before) = o.get(&summary, ADMIN).await;
    assert_eq!(calls_of(&before)["waiting"], 0, "{before}");
    assert_eq!(calls_of(&before)["oldest_waiting_at"], Value::Null);
    let pause = format!("/ops/integrations/{}/pause", hook.0.id);
    assert_eq!(admin_post(&o, &pause, "pause-150").await.0, 200);

    missed_calls(&o, (&hook.0, &hook.1), "held", 150).await;
    let items = o.env.items_of("call").await;
    let fanout = fanout::App::new(
        Publisher {
            sqs: o.sqs.clone(),
            queues: o.consequences.clone(),
        },
        o.env.store.clone(),
    );
    for (i, item) in items.iter().enumerate() {
        let out = fanout
            .process(stream_event(item, &i.to_string()), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty());
    }
    let oldest = items
        .iter()
        .filter_map(|i| i.opt_str("gsi2sk"))
        .map(|position| position.split_once('#').unwrap().0.to_owned())
        .min()
        .unwrap();
    let (_, held) = o.get(&summary, ADMIN).await;
    assert_eq!(calls_of(&held)["waiting"], 150, "{held}");
    assert_eq!(calls_of(&held)["oldest_waiting_at"], json!(oldest));
    // The admin's summary of the deployment (this table holds one organisation) agrees.
    let (_, all) = o.get("/ops/summary", ADMIN).await;
    assert_eq!(calls_of(&all)["waiting"], 150, "{all}");
    assert_eq!(calls_of(&all)["today"], 150, "{all}");

    // Resumed: 150 events' 450 consequences, each applied once; nothing waits then.
    let resume = format!("/ops/integrations/{}/resume", hook.0.id);
    let (status, resumed) = admin_post(&o, &resume, "resume-150").await;
    assert_eq!((status, resumed["events"].as_u64()), (200, Some(150)));
    let w = workers(&o.env, Duration::from_secs(2), 5);
    for _ in 0..200 {
        Box::pin(drain(&o, &w)).await;
        let (_, now) = o.get(&summary, ADMIN).await;
        if calls_of(&now)["waiting"] == 0 {
            break;
        }
    }
    let (_, after) = o.get(&summary, ADMIN).await;
    assert_eq!(calls_of(&after)["waiting"], 0, "{after}");
    assert_eq!(calls_of(&after)["oldest_waiting_at"], Value::Null);
    let (_, all) = o.get("/ops/summary", ADMIN).await;
    assert_eq!(calls_of(&all)["waiting"], 0, "{all}");
    let notes = firmspace::effects::notify::list(&o.env.store, &org, "u1")
        .await
        .unwrap();
    assert_eq!(notes.len(), 150, "one notification per missed call");
}

/// Every stored call handed to a fan-out, as the stream would, eight at a time (a held one
/// again is held once).
async fn fanned_out_all(o: &Ops) {
    let fanout = fanout::App::new(
        Publisher {
            sqs: o.sqs.clone(),
            queues: o.consequences.clone(),
        },
        o.env.store.clone(),
    );
    let fanout = &fanout;
    futures::stream::iter(o.env.items_of("call").await)
        .map(|item| async move {
            let out = fanout.process(stream_event(&item, "1"), Utc::now()).await;
            assert!(out.batch_item_failures.is_empty());
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

/// The DynamoDB calls one summary makes.
async fn summary_calls(o: &Ops, path: &str) -> (Vec<String>, Value) {
    o.env.calls.clear();
    let (status, summary) = o.get(path, ADMIN).await;
    assert_eq!(status, 200, "{summary}");
    (o.env.calls.take(), summary)
}

#[tokio::test]
async fn the_summary_reads_as_much_at_1000_events_as_at_10() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let hook = calls_hook(&o, &org).await;
    let one = format!("/ops/summary?org={org}");
    // Held by a pause, every event waits: 10 marks, then 1,000.
    let pause = format!("/ops/integrations/{}/pause", hook.0.id);
    assert_eq!(admin_post(&o, &pause, "pause-1000").await.0, 200);
    missed_calls(&o, (&hook.0, &hook.1), "a", 10).await;
    fanned_out_all(&o).await;
    let (at_10, summary) = summary_calls(&o, &one).await;
    assert_eq!(calls_of(&summary)["waiting"], 10, "{summary}");
    let (all_at_10, _) = summary_calls(&o, "/ops/summary").await;

    missed_calls(&o, (&hook.0, &hook.1), "b", 990).await;
    fanned_out_all(&o).await;
    let (at_1000, summary) = summary_calls(&o, &one).await;
    assert_eq!(calls_of(&summary)["today"], 1000, "{summary}");
    assert_eq!(calls_of(&summary)["waiting"], 1000, "{summary}");
    let (all_at_1000, all) = summary_calls(&o, "/ops/summary").await;
    assert_eq!(calls_of(&all)["waiting"], 1000, "{all}");
    println!(
        "summary DynamoDB calls: one organisation {} at 10 events, {} at 1,000; the deployment {} and {}",
        at_10.len(),
        at_1000.len(),
        all_at_10.len(),
        all_at_1000.len()
    );
    assert_eq!(at_10, at_1000, "the same calls whatever the volume");
    assert_eq!(all_at_10, all_at_1000);
}

/// The figure `waiting` of payments, and how many notifications there are.
async fn payments_waiting(o: &Ops, org: &OrgId) -> (u64, usize) {
    let (_, summary) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    let waiting = summary["events"]["payment"]["waiting"].as_u64().unwrap();
    (waiting, o.env.items_of("notification").await.len())
}

/// A paid invoice's payment (owned by `owner`, or the team's to hear of), stored with its
/// waiting mark (its `invoice.paid` trigger's), and its fan-out over `o`'s queues.
async fn one_payment(
    o: &Ops,
    org: &OrgId,
    id: &str,
    owner: Option<&str>,
) -> (firmspace::store::Item, fanout::App) {
    let links = firmspace::payments::invoice::Links {
        owner: owner.map(str::to_owned),
        ..Default::default()
    };
    payment_linked(o, org, id, links).await
}

/// A payment closing a new invoice of `links`, and a fan-out over the test's queues.
async fn payment_linked(
    o: &Ops,
    org: &OrgId,
    id: &str,
    links: firmspace::payments::invoice::Links,
) -> (firmspace::store::Item, fanout::App) {
    let item = crate::consequences::closing_payment_linked(&o.env, org, links, id).await;
    let fanout = fanout::App::new(
        Publisher {
            sqs: o.sqs.clone(),
            queues: o.consequences.clone(),
        },
        o.env.store.clone(),
    );
    (item, fanout)
}

/// A payment to the member's invoice of contact `c1`: its first activity line (the contact's)
/// is the one that notes a trigger no rule took.
async fn payment_on_contact(
    o: &Ops,
    org: &OrgId,
    id: &str,
) -> (firmspace::store::Item, fanout::App) {
    let links = firmspace::payments::invoice::Links {
        owner: Some("u1".into()),
        contact_id: Some("c1".into()),
        ..Default::default()
    };
    payment_linked(o, org, id, links).await
}

/// An organisation with one paid invoice's payment, its consequences sent to the queues once:
/// its team's notification (a team of `BIG_TEAM`, too many to be told at once: the notify
/// worker's) and its trigger, which a rule takes.
async fn published_payment(o: &Ops, id: &str) -> OrgId {
    let org = org_with_team(o).await;
    for i in 2..=BIG_TEAM {
        let member = firmspace::orgs::Member {
            user_id: format!("u{i}"),
            name: format!("Member {i}"),
        };
        firmspace::orgs::add_member(&o.env.store, &org, &member, 100, Utc::now())
            .await
            .unwrap();
    }
    crate::consequences::invoice_paid_rule(&o.env.store, &org).await;
    let (item, fanout) = one_payment(o, &org, id, None).await;
    let out = fanout.process(stream_event(&item, "1"), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
    org
}

#[tokio::test]
async fn a_fan_out_batch_delivered_twice_counts_once() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    // A rule takes `invoice.paid`: the trigger goes to its queue, and the event waits on it.
    crate::consequences::invoice_paid_rule(&o.env.store, &org).await;
    let (item, fanout) = one_payment(&o, &org, "pi_twice", Some("u1")).await;
    // Stored: it waits from when the fan-out reads it (its batch), not before.
    assert_eq!(payments_waiting(&o, &org).await, (0, 0));
    // The stream hands the same batch over twice: every consequence is sent twice, the
    // notification written once, and the event waits (on its trigger) once.
    for _ in 0..2 {
        let out = fanout.process(stream_event(&item, "1"), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
        assert_eq!(payments_waiting(&o, &org).await, (1, 1));
    }
    let w = workers(&o.env, Duration::from_secs(2), 5);
    for _ in 0..3 {
        Box::pin(drain(&o, &w)).await;
    }
    assert_eq!(
        payments_waiting(&o, &org).await,
        (0, 1),
        "waiting once, settled once, one notification"
    );
    let (_, summary) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(summary["events"]["payment"]["today"], 1, "{summary}");
    let tasks = firmspace::effects::automation::tasks(&o.env.store, &org)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "the rule ran once: {tasks:?}");
}

#[tokio::test]
async fn a_trigger_no_rule_takes_is_handled_by_the_fan_out_and_sent_nowhere() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let (item, fanout) = payment_on_contact(&o, &org, "pi_no_rule").await;
    for _ in 0..2 {
        let out = fanout.process(stream_event(&item, "1"), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
    }
    assert_eq!(payments_waiting(&o, &org).await, (0, 1));
    let sent = crate::support::queues::receive(&o.sqs, &o.consequences.automation, 0).await;
    assert!(sent.is_empty(), "{sent:?}");
    // No handled mark of its own: the event's activity line notes that no rule took it, and
    // the event list shows the trigger done from it.
    let kinds = o.env.kinds().await;
    assert_eq!(kinds.get("fired"), None, "{kinds:?}");
    let rule_run = super::replay::states;
    let path = format!("/ops/events?kind=payment&org={org}");
    let (_, events) = o.get(&path, ADMIN).await;
    let states = rule_run(&events);
    assert!(
        states.contains(&("rule_run".into(), "done".into())),
        "{events}"
    );
    assert!(states.iter().all(|(_, s)| s == "done"), "{events}");

    // The activity line gone (as if lost), a retry of the record writes the line again noting
    // the trigger: still no mark, the trigger done, and nothing sent.
    let lines = o.env.items_of("activity").await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    o.env.delete(lines[0].str_of("pk").unwrap()).await;
    let (_, lost) = o.get(&path, ADMIN).await;
    assert_eq!(
        rule_run(&lost)
            .iter()
            .filter(|(_, s)| s == "missing")
            .count(),
        2,
        "the line and the trigger it noted: {lost}"
    );
    let out = fanout.process(stream_event(&item, "1"), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
    let (_, back) = o.get(&path, ADMIN).await;
    assert!(rule_run(&back).iter().all(|(_, s)| s == "done"), "{back}");
    assert_eq!(o.env.kinds().await.get("fired"), None);
}

/// A retry that finds the event's activity line written already (by an attempt that sent the
/// trigger to a rule since deleted, or noted nothing) marks the trigger handled itself.
#[tokio::test]
async fn a_trigger_no_rule_takes_on_a_retry_after_its_line_is_marked_handled() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let (item, fanout) = payment_on_contact(&o, &org, "pi_no_rule_retry").await;
    // What an earlier attempt wrote: the activity line, noting nothing.
    let line = firmspace::effects::derive::consequences(&item)
        .unwrap()
        .into_iter()
        .find_map(|c| match c {
            firmspace::effects::Consequence::Activity(line) => Some(line),
            _ => None,
        })
        .expect("an activity line");
    assert!(firmspace::effects::activity::append(&o.env.store, &line)
        .await
        .unwrap());
    let out = fanout.process(stream_event(&item, "1"), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
    assert_eq!(o.env.kinds().await.get("fired"), Some(&1));
    let (_, events) = o
        .get(&format!("/ops/events?kind=payment&org={org}"), ADMIN)
        .await;
    let consequences = events["items"][0]["consequences"].as_array().unwrap();
    assert!(
        consequences.iter().all(|c| c["state"] == "done"),
        "{events}"
    );
    assert!(
        consequences.iter().any(|c| c["kind"] == "rule_run"),
        "{events}"
    );
}

/// A team one larger than a team's notification is written for at once.
const BIG_TEAM: usize = firmspace::effects::told::TEAM_AT_ONCE + 1;

#[tokio::test]
async fn a_worker_cut_off_after_its_effect_and_before_its_settle_is_counted_once() {
    use firmspace::effects::job::Job;
    use firmspace::effects::worker::Worker;
    let o = Ops::new().await;
    let org = published_payment(&o, "pi_cut").await;
    let w = workers(&o.env, Duration::from_secs(2), 5);
    let notes = crate::support::queues::receive(&o.sqs, &o.consequences.notifications, 0).await;
    assert_eq!(notes.len(), 1);
    // The notification is written, and the worker dies before it settles the event's mark.
    let body = notes[0].body().unwrap();
    let job = firmspace::effects::job::Records::read(body).unwrap();
    w.notify.worker.apply(job, Utc::now()).await.unwrap();
    Box::pin(drain_but_notifications(&o, &w)).await;
    assert_eq!(
        payments_waiting(&o, &org).await,
        (1, BIG_TEAM),
        "written, not yet settled: still waiting"
    );
    // SQS hands the message over again: absorbed by its key, and the mark settled now, once;
    // and once more: nothing moves, nothing below zero.
    delivered_again_twice(&o, &w, &notes, &org, (0, BIG_TEAM)).await;
}

/// The stored `item` handed to a fan-out over `o`'s queues, as the stream would.
pub(super) async fn fanned_out(o: &Ops, item: &firmspace::store::Item) {
    let publisher = Publisher {
        sqs: o.sqs.clone(),
        queues: o.consequences.clone(),
    };
    let fanout = fanout::App::new(publisher, o.env.store.clone());
    let out = fanout.process(stream_event(item, "1"), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
}

/// The notify worker handed `notes` again, twice: each time every record absorbed by its key,
/// nothing waiting, `notifications` notifications and `lines` activity lines.
async fn delivered_again_twice(
    o: &Ops,
    w: &crate::consequences::Workers,
    notes: &[aws_sdk_sqs::types::Message],
    org: &OrgId,
    (lines, notifications): (usize, usize),
) {
    for _ in 0..2 {
        let out = w
            .notify
            .process(crate::support::queues::event(notes), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty());
        assert_eq!(payments_waiting(o, org).await, (0, notifications));
        assert_eq!(o.env.items_of("activity").await.len(), lines);
    }
}

/// Every consequence but the notifications and activity lines applied by its worker.
async fn drain_but_notifications(o: &Ops, w: &crate::consequences::Workers) {
    let q = &o.consequences;
    for _ in 0..3 {
        let automation = crate::support::queues::receive(&o.sqs, &q.automation, 0).await;
        if !automation.is_empty() {
            w.automation_all(&automation).await;
            crate::support::queues::delete(&o.sqs, &q.automation, &automation).await;
        }
    }
}

/// A stored payment of 10.00 (`id`) on an invoice owned by `u1` for the contact `contact`.
async fn part_payment(o: &Ops, org: &OrgId, id: &str, contact: String) -> firmspace::store::Item {
    let links = firmspace::payments::invoice::Links {
        owner: Some("u1".into()),
        contact_id: Some(contact),
        ..Default::default()
    };
    let amount = Some(rust_decimal_macros::dec!(10));
    crate::consequences::payment_linked(&o.env, org, links, id, amount).await
}

#[tokio::test]
async fn what_tells_people_of_a_payment_is_written_at_once_and_never_waits() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    // A part payment: no `invoice.paid`, so its event has nothing a queue carries.
    let item = part_payment(&o, &org, "pi_part", "c1".into()).await;
    // Stored: no mark, nothing waits (the figure trails the event by the fan-out's batch).
    assert_eq!(payments_waiting(&o, &org).await, (0, 0));
    assert!(o.env.items_of("waiting").await.is_empty());
    // The stream hands it over twice: the notification and the contact's line written once,
    // no message on the notifications queue, and still nothing waits.
    for _ in 0..2 {
        fanned_out(&o, &item).await;
        assert_eq!(payments_waiting(&o, &org).await, (0, 1));
        assert_eq!(o.env.items_of("activity").await.len(), 1);
    }
    let notes = crate::support::queues::receive(&o.sqs, &o.consequences.notifications, 0).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert!(o.env.items_of("waiting").await.is_empty());
}

#[tokio::test]
async fn a_record_the_table_refuses_waits_on_the_mark_and_goes_to_a_person() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    // A contact id past a key's 2,048 bytes: its activity line can never be written.
    let item = part_payment(&o, &org, "pi_long", "c".repeat(2100)).await;
    // Twice (the stream's retry): the notification written once, one mark, one review item.
    for _ in 0..2 {
        fanned_out(&o, &item).await;
    }
    assert_eq!(payments_waiting(&o, &org).await, (1, 1));
    let marks = o.env.items_of("waiting").await;
    let pending = marks[0]
        .get(firmspace::store::counters::PENDING)
        .and_then(|p| p.as_ss().ok())
        .cloned()
        .unwrap_or_default();
    assert_eq!((marks.len(), pending.len()), (1, 1), "{marks:?}");
    assert!(pending[0].starts_with("activity:contact:"), "{pending:?}");
    let review = firmspace::review::list(&o.env.store, &org, 10)
        .await
        .unwrap();
    assert_eq!(review.len(), 1, "{review:?}");
    assert_eq!(
        review[0].reason.as_deref(),
        Some("store_refused"),
        "{review:?}"
    );
    assert_eq!(review[0].key.as_deref(), item.opt_str("pk"));
}

#[tokio::test]
async fn a_replay_of_an_event_whose_consequences_all_happened_settles_a_mark_left_waiting() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let item = part_payment(&o, &org, "pi_old", "c1".into()).await;
    fanned_out(&o, &item).await;
    // The mark an earlier release put with the event, naming the records the fan-out wrote.
    let records: Vec<String> = firmspace::effects::derive::consequences(&item)
        .unwrap()
        .iter()
        .filter(|c| c.is_written_at_once())
        .map(firmspace::effects::Consequence::key)
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    let mark = firmspace::store::counters::wait_on(&item, &records).unwrap();
    o.env.store.commit(vec![mark]).await.unwrap();
    assert_eq!(payments_waiting(&o, &org).await, (1, 1));
    let id = firmspace::ops::ids::encode(item.str_of("pk").unwrap());
    let path = format!("/ops/events/{id}/replay?org={org}");
    let (status, replayed) = admin_post(&o, &path, "replay-settles").await;
    assert_eq!(
        (status, replayed["sent"].as_u64()),
        (200, Some(0)),
        "{replayed}"
    );
    assert_eq!(payments_waiting(&o, &org).await, (0, 1));
    assert!(o.env.items_of("waiting").await.is_empty());
}

#[tokio::test]
async fn a_resumption_settles_what_a_held_event_had_done_before_its_hold() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let hook = calls_hook(&o, &org).await;
    missed_calls(&o, (&hook.0, &hook.1), "before", 1).await;
    let item = o.env.items_of("call").await.remove(0);
    // Read once: its notification and line written, its trigger (no rule) handled.
    fanned_out(&o, &item).await;
    let (_, summary) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(calls_of(&summary)["waiting"], 0, "{summary}");
    // Paused, and the stream hands the record over again: held, waiting on every tracked key.
    let pause = format!("/ops/integrations/{}/pause", hook.0.id);
    assert_eq!(admin_post(&o, &pause, "pause-done").await.0, 200);
    fanned_out(&o, &item).await;
    let (_, held) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(calls_of(&held)["waiting"], 1, "{held}");
    // Resumed: nothing is missing, nothing is sent, and the mark is settled of what happened.
    let resume = format!("/ops/integrations/{}/resume", hook.0.id);
    let (status, resumed) = admin_post(&o, &resume, "resume-done").await;
    assert_eq!(
        (status, resumed["events"].as_u64(), resumed["sent"].as_u64()),
        (200, Some(1), Some(0)),
        "{resumed}"
    );
    let (_, after) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(calls_of(&after)["waiting"], 0, "{after}");
    assert!(o.env.items_of("waiting").await.is_empty());
    assert_eq!(o.env.items_of("notification").await.len(), 1);
}

#[tokio::test]
async fn every_record_a_worker_cannot_write_is_parked_and_waits_on_its_own() {
    let o = Ops::new().await;
    // No member: neither team notification reaches anybody.
    let org = crate::support::fixtures::org(&o.env).await.id;
    let note = |key: &str| {
        json!({"type": "notification", "org": org.as_str(), "key": key, "recipient": null,
               "text": "paid", "at": "2026-12-02T10:00:00.000Z"})
    };
    let line = json!({"type": "activity", "org": org.as_str(), "entity_kind": "contact",
                      "entity_id": "c1", "key": "k3", "kind": "payment", "text": "paid",
                      "at": "2026-12-02T10:00:00.000Z"});
    let body = json!({"source": "PK", "records": [note("k1"), note("k2"), line]}).to_string();
    let w = workers(&o.env, Duration::from_secs(2), 5);
    let out = w
        .notify
        .process(crate::support::queues::event_of("m1", &body), Utc::now())
        .await;
    assert!(out.batch_item_failures.is_empty(), "acknowledged: parked");
    assert_eq!(o.env.items_of("activity").await.len(), 1);
    let review = firmspace::review::list(&o.env.store, &org, 10)
        .await
        .unwrap();
    let mut keys: Vec<&str> = review.iter().filter_map(|r| r.key.as_deref()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["notification:k1", "notification:k2"], "{review:?}");
    assert!(review
        .iter()
        .all(|r| r.reason.as_deref() == Some("no_recipients")));
}

#[tokio::test]
async fn a_mark_is_deleted_only_while_its_set_is_empty() {
    let o = Ops::new().await;
    let store = &o.env.store;
    let mut mark =
        firmspace::store::item::Builder::new("ORG#o1#X#WAITING", "waiting", "o1").build();
    mark.insert(
        firmspace::store::counters::PENDING.into(),
        aws_sdk_dynamodb::types::AttributeValue::Ss(vec!["k".into()]),
    );
    store.put_new(mark.clone()).await.unwrap();
    let pending = firmspace::store::counters::PENDING;
    assert!(!store
        .delete_if_empty("ORG#o1#X#WAITING", pending)
        .await
        .unwrap());
    assert!(store.get("ORG#o1#X#WAITING").await.unwrap().is_some());
    let take = firmspace::store::Update::new().take_from_set(pending, vec!["k".into()]);
    assert!(store.update_if("ORG#o1#X#WAITING", &take).await.unwrap());
    assert!(store
        .delete_if_empty("ORG#o1#X#WAITING", pending)
        .await
        .unwrap());
    assert!(!store
        .delete_if_empty("ORG#o1#X#WAITING", pending)
        .await
        .unwrap());
}

#[tokio::test]
async fn a_paused_integrations_payment_waits_on_what_would_have_been_written_at_once() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let hook = calls_hook(&o, &org).await;
    let pause = format!("/ops/integrations/{}/pause", hook.0.id);
    assert_eq!(admin_post(&o, &pause, "pause-one").await.0, 200);
    missed_calls(&o, (&hook.0, &hook.1), "one", 1).await;
    let item = o.env.items_of("call").await.remove(0);
    // Held twice (the stream's retry): one mark, holding the records' keys.
    for _ in 0..2 {
        fanned_out(&o, &item).await;
    }
    let marks = o.env.items_of("waiting").await;
    assert_eq!(marks.len(), 1, "{marks:?}");
    let pending = marks[0]
        .get(firmspace::store::counters::PENDING)
        .and_then(|p| p.as_ss().ok())
        .cloned()
        .unwrap_or_default();
    assert!(!pending.is_empty(), "{marks:?}");
    assert!(o.env.items_of("notification").await.is_empty());
    let (_, summary) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(calls_of(&summary)["waiting"], 1, "{summary}");
}

#[tokio::test]
async fn a_record_that_fails_for_good_waits_alone_and_its_replay_settles_the_event() {
    let o = Ops::new().await;
    // No member and no owner: the payment's team notification reaches nobody.
    let org = crate::support::fixtures::org(&o.env).await.id;
    let links = firmspace::payments::invoice::Links {
        contact_id: Some("c1".into()),
        ..Default::default()
    };
    let amount = Some(rust_decimal_macros::dec!(10));
    let item = crate::consequences::payment_linked(&o.env, &org, links, "pi_none", amount).await;
    fanned_out(&o, &item).await;
    let w = workers(&o.env, Duration::from_secs(2), 5);
    Box::pin(drain(&o, &w)).await;
    // The activity line is written; the notification is a review item of the event naming
    // it, and the event waits on it alone.
    assert_eq!(o.env.items_of("activity").await.len(), 1);
    assert_eq!(payments_waiting(&o, &org).await, (1, 0));
    let review = firmspace::review::list(&o.env.store, &org, 10)
        .await
        .unwrap();
    assert_eq!(review.len(), 1, "{review:?}");
    assert_eq!(review[0].reason.as_deref(), Some("no_recipients"));
    assert_eq!(review[0].key.as_deref(), item.opt_str("pk"));
    let parked = review[0].detail["refused"][0]["consequence"]
        .as_str()
        .unwrap_or_default();
    assert!(parked.starts_with("notification:"), "{review:?}");
    let mark = o
        .env
        .store
        .get(&firmspace::store::counters::waiting_pk(
            item.str_of("pk").unwrap(),
        ))
        .await
        .unwrap()
        .expect("the mark stays");
    let pending: Vec<String> = mark
        .get(firmspace::store::counters::PENDING)
        .and_then(|p| p.as_ss().ok())
        .cloned()
        .unwrap_or_default();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert!(pending[0].starts_with("notification:"), "{pending:?}");
    // A member now, and the event replayed: its notification, missing, is sent and settles it.
    let member = firmspace::orgs::Member {
        user_id: "u1".into(),
        name: "Olena".into(),
    };
    firmspace::orgs::add_member(&o.env.store, &org, &member, 10, Utc::now())
        .await
        .unwrap();
    let id = firmspace::ops::ids::encode(item.str_of("pk").unwrap());
    let path = format!("/ops/events/{id}/replay?org={org}");
    let (status, replayed) = admin_post(&o, &path, "replay-none").await;
    assert_eq!(
        (status, replayed["sent"].as_u64()),
        (200, Some(1)),
        "{replayed}"
    );
    Box::pin(drain(&o, &w)).await;
    assert_eq!(payments_waiting(&o, &org).await, (0, 1));
}

#[tokio::test]
async fn two_workers_taking_the_same_consequences_at_once_count_once() {
    let o = Ops::new().await;
    let org = published_payment(&o, "pi_two").await;
    // Two instances of every worker, each handed the same messages at the same moment.
    let (a, b) = (
        workers(&o.env, Duration::from_secs(2), 5),
        workers(&o.env, Duration::from_secs(2), 5),
    );
    let q = &o.consequences;
    for url in [&q.notifications, &q.automation] {
        let messages = crate::support::queues::receive(&o.sqs, url, 0).await;
        let batch = || crate::support::queues::event(&messages);
        let (x, y) = match url {
            u if u == &q.notifications => futures::join!(
                a.notify.process(batch(), Utc::now()),
                b.notify.process(batch(), Utc::now())
            ),
            _ => futures::join!(
                a.automation.process(batch(), Utc::now()),
                b.automation.process(batch(), Utc::now())
            ),
        };
        assert!(x.batch_item_failures.is_empty() && y.batch_item_failures.is_empty());
    }
    assert_eq!(payments_waiting(&o, &org).await, (0, BIG_TEAM));
    let marks = o.env.items_of("waiting").await;
    assert!(marks.is_empty(), "the mark deleted: {marks:?}");
    let tasks = firmspace::effects::automation::tasks(&o.env.store, &org)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
}
