//! The counters the summary and the chart read stay equal to a full count of what is stored,
//! after a concurrent mixed load: new events with concurrent copies, conflicts filed for a
//! person, resolutions racing each other, and replays.

use super::{ids, Ops, ADMIN};
use crate::support::{api as api_support, fixtures};
use chrono::{DateTime, Duration, DurationRound, Utc};
use firmspace::ids::OrgId;
use firmspace::payments::providers::Provider;
use firmspace::review::{Kind, Reason, ReviewItem};
use firmspace::store::counters;
use firmspace::store::item::Read;
use firmspace::store::lists::{review_pk, EventKind};
use futures::future::join_all;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};

#[tokio::test]
async fn the_counters_equal_a_full_count_after_a_concurrent_mixed_load() {
    let o = Ops::new().await;
    let (key, org) = super::org_by_key(&o).await;
    tokio::join!(
        payments(&o, &org),
        calls(&o, &key),
        bank_rows(&o, &key),
        reviews(&o, &org)
    );
    // The stream read as far as it is written: what the fan-out counts.
    o.streamed().await;
    let (events, open) = full_count(&o, &org).await;
    let stored = |kind| {
        events
            .iter()
            .filter(|((_, k), _)| *k == kind)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    assert_eq!(
        (
            stored(EventKind::Payment),
            stored(EventKind::Call),
            stored(EventKind::BankRow)
        ),
        (16, 8, 10),
        "each event once, whatever its copies"
    );
    assert!(
        open.values().sum::<u64>() >= 12,
        "conflicts and filed items: {open:?}"
    );

    resolutions_and_replays(&o, &key).await;
    let (events, open) = full_count(&o, &org).await;
    let counted = counters::read(&o.env.store, &org, Utc::now(), 60)
        .await
        .unwrap();
    assert_eq!(counted.events, events, "events per hour and kind");
    assert_eq!(counted.open, open, "open review items per reason");
    assert!(open.values().sum::<u64>() > 0, "half are left open");

    // What the operator reads is the counters: the summary and the chart agree with the count.
    let (_, summary) = o.get("/ops/summary", &key).await;
    let by_reason: BTreeMap<String, u64> =
        serde_json::from_value(summary["review"]["by_reason"].clone()).unwrap();
    assert_eq!(by_reason, open);
    let midnight = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    let today = |kind| {
        events
            .iter()
            .filter(|((h, k), _)| *k == kind && *h >= midnight)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    assert_eq!(
        summary["events"]["payment"]["today"].as_u64(),
        Some(today(EventKind::Payment))
    );
    assert_eq!(
        summary["events"]["call"]["today"].as_u64(),
        Some(today(EventKind::Call))
    );
}

/// 16 payments, each delivered three times at once; four of them also under another amount (a
/// conflict for a person).
async fn payments(o: &Ops, org: &OrgId) {
    let hook = fixtures::integration(&o.env, org, Provider::Standard).await;
    let inv = fixtures::invoice(&o.env, org, rust_decimal_macros::dec!(100000), "UAH").await;
    let app = payment_webhook::app(o.env.store.clone());
    let at = Utc::now().timestamp();
    let deliveries = (0..16).flat_map(|i| {
        let copies = if i < 4 { 4 } else { 3 };
        (0..copies).map(move |c| (i, c))
    });
    let answers = join_all(deliveries.map(|(i, c)| {
        let amount = if c == 3 { "2.00" } else { "1.00" };
        let body = fixtures::standard_body(&format!("pay_{i}"), inv.id.as_str(), Some(amount));
        let req =
            fixtures::standard_request_with_id(&hook, &body, at, &format!("msg_{i}_{amount}"));
        let app = &app;
        async move { app.handle(req).await.unwrap().status().as_u16() }
    }))
    .await;
    assert!(answers.iter().all(|s| *s == 200), "{answers:?}");
}

/// Eight calls through the api, each posted twice at once.
async fn calls(o: &Ops, key: &str) {
    let answers = join_all((0..16).map(|i| {
        let body = json!({"call_id": format!("mix-{}", i / 2), "direction": "inbound",
            "peer": format!("+38044123450{}", i / 2), "status": "completed", "duration": 5});
        api_support::call(&o.api, "POST", "/api/calls", key, body)
    }))
    .await;
    assert!(
        answers.iter().all(|(s, _)| *s == 200 || *s == 201),
        "{answers:?}"
    );
}

/// A CSV file of ten rows uploaded twice at once.
async fn bank_rows(o: &Ops, key: &str) {
    let body = json!({"kind": "bank", "provider": "csv"});
    let (_, integration) = api_support::call(&o.api, "POST", "/api/integrations", key, body).await;
    let url = integration["upload_url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    let mut csv = "id,date,amount,currency,description,counterparty,reference\n".to_owned();
    for i in 0..10 {
        csv.push_str(&format!(
            "mix{i},2026-11-{:02},+{i}.50,UAH,Payment {i},Client,\n",
            i + 1
        ));
    }
    let auth = format!("Bearer {key}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "text/csv"),
    ];
    let answers = join_all((0..2).map(|_| {
        let req = crate::support::request("POST", path, &headers, csv.as_bytes().to_vec());
        o.api.handle(req)
    }))
    .await;
    let statuses: Vec<u16> = answers
        .iter()
        .map(|r| r.as_ref().unwrap().status().as_u16())
        .collect();
    assert_eq!(statuses, [200, 200]);
}

/// Eight items filed for a person, each filed twice at once.
async fn reviews(o: &Ops, org: &OrgId) {
    let now = Utc::now();
    join_all((0..16).map(|i| {
        let item = ReviewItem {
            org: org.clone(),
            kind: Kind::Payment,
            reason: if i % 4 < 2 {
                Reason::Overpayment
            } else {
                Reason::UnmatchedBankRow
            },
            key: format!("mix:{}", i / 2),
            at: now,
            detail: json!({}),
        };
        async move { item.put(&o.env.store).await.unwrap() }
    }))
    .await;
}

/// Every other open item resolved twice at once (by the key and by the admin), while four
/// payments are replayed.
async fn resolutions_and_replays(o: &Ops, key: &str) {
    let (_, open) = o.get("/ops/review?state=open&limit=200", key).await;
    let (_, events) = o.get("/ops/events?kind=payment&limit=4", key).await;
    let resolve = ids(&open).into_iter().step_by(2).flat_map(|id| {
        let path = format!("/ops/review/{id}/resolve");
        [(path.clone(), key.to_owned()), (path, ADMIN.to_owned())]
    });
    let replay = ids(&events)
        .into_iter()
        .map(|id| (format!("/ops/events/{id}/replay"), key.to_owned()));
    let all: Vec<(String, String)> = resolve.chain(replay).collect();
    let answers = join_all(all.iter().enumerate().map(|(i, (path, token))| async move {
        let body = match path.ends_with("/resolve") {
            true => json!({"note": "checked"}),
            false => serde_json::Value::Null,
        };
        o.post(path, token, &format!("mix-{i}"), &body).await
    }))
    .await;
    assert!(
        answers.iter().all(|(s, _)| [200, 409].contains(s)),
        "{answers:?}"
    );
}

type Events = HashMap<(DateTime<Utc>, EventKind), u64>;

/// The whole table read and counted: events per hour and kind on their lists, open review items
/// per reason.
async fn full_count(o: &Ops, org: &OrgId) -> (Events, BTreeMap<String, u64>) {
    let (mut events, mut open) = (Events::new(), BTreeMap::new());
    let prefix = org.pk("EVENTS#");
    for item in o.env.items().await {
        let Some(list) = item.opt_str("gsi2pk") else {
            continue;
        };
        if list == review_pk(org, "open") {
            *open
                .entry(item.str_of("reason").unwrap().to_owned())
                .or_default() += 1;
        } else if let Some(kind) = list.strip_prefix(&prefix).and_then(EventKind::parse) {
            let at = item.str_of("gsi2sk").unwrap().split_once('#').unwrap().0;
            let hour = firmspace::time::parse(at)
                .unwrap()
                .duration_trunc(Duration::hours(1))
                .unwrap();
            *events.entry((hour, kind)).or_default() += 1;
        }
    }
    (events, open)
}

/// What the fan-out has counted of `org`'s calls today.
async fn calls_counted(o: &Ops, org: &OrgId) -> u64 {
    let midnight = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    counters::read(&o.env.store, org, Utc::now(), 1)
        .await
        .unwrap()
        .since(EventKind::Call, midnight)
}

/// `n` calls through the api (`{prefix}-{i}`), as stored, oldest first.
async fn stored_calls(o: &Ops, key: &str, prefix: &str, n: usize) -> Vec<firmspace::store::Item> {
    for i in 0..n {
        let body = json!({"call_id": format!("{prefix}-{i}"), "direction": "inbound",
            "peer": format!("+3804412345{i:02}"), "status": "completed", "duration": 5});
        let (status, _) = api_support::call(&o.api, "POST", "/api/calls", key, body).await;
        assert!(status == 200 || status == 201);
    }
    let mut calls: Vec<_> = o
        .env
        .items_of("call")
        .await
        .into_iter()
        .filter(|i| {
            i.opt_str("call_id")
                .is_some_and(|c| c.starts_with(&format!("{prefix}-")))
        })
        .collect();
    calls.sort_by_key(|i| i.opt_str("gsi2sk").map(str::to_owned));
    assert_eq!(calls.len(), n);
    calls
}

/// The stream hands a batch over again after a failure: whole, halved, or from a failed record
/// on with later records. Each event is counted once however it comes; two shards with the same
/// sequence numbers count apart; the same batch counted twice at once counts once.
#[tokio::test]
async fn a_batch_delivered_again_in_any_shape_counts_each_event_once() {
    let o = Ops::new().await;
    let (key, org) = super::org_by_key(&o).await;
    let calls = stored_calls(&o, &key, "a", 8).await;
    let seqs: Vec<String> = (0..8).map(|i| format!("{}", 98 + i)).collect();
    let records = |range: std::ops::Range<usize>| -> Vec<(&str, &firmspace::store::Item)> {
        range.map(|i| (seqs[i].as_str(), &calls[i])).collect()
    };
    let (_, _, fanout) = crate::consequences::fanout_app(&o.env).await;
    let on = |shard: &str, range| crate::consequences::stream_batch(shard, &records(range));
    assert_eq!(
        calls_counted(&o, &org).await,
        0,
        "stored, not yet read off the stream"
    );

    let out = fanout.process(on("shard-a", 0..5), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
    assert_eq!(
        calls_counted(&o, &org).await,
        5,
        "98 to 102 (99 sorts before 100)"
    );
    fanout.process(on("shard-a", 0..5), Utc::now()).await;
    assert_eq!(calls_counted(&o, &org).await, 5, "the same batch again");
    fanout.process(on("shard-a", 0..2), Utc::now()).await;
    assert_eq!(calls_counted(&o, &org).await, 5, "its first half again");
    fanout.process(on("shard-a", 3..8), Utc::now()).await;
    assert_eq!(
        calls_counted(&o, &org).await,
        8,
        "from a failed record on, with three later ones"
    );

    // Another shard's records under the same sequence numbers are its own.
    let more = stored_calls(&o, &key, "b", 3).await;
    let other: Vec<(&str, &firmspace::store::Item)> =
        (0..3).map(|i| (seqs[i].as_str(), &more[i])).collect();
    fanout
        .process(
            crate::consequences::stream_batch("shard-b", &other),
            Utc::now(),
        )
        .await;
    assert_eq!(calls_counted(&o, &org).await, 11);

    // The same batch counted twice at once (a function cut off and its batch handed over).
    let last = stored_calls(&o, &key, "c", 4).await;
    let batch: Vec<(&str, &firmspace::store::Item)> =
        (0..4).map(|i| (seqs[i].as_str(), &last[i])).collect();
    let store = &o.env.store;
    let (one, two) = tokio::join!(
        firmspace::store::stream_counts::count(store, "shard-c", &batch),
        firmspace::store::stream_counts::count(store, "shard-c", &batch)
    );
    assert_eq!(
        one.unwrap() + two.unwrap(),
        2,
        "one write per scope: the organisation's item and the deployment's"
    );
    assert_eq!(calls_counted(&o, &org).await, 15);
    // The deployment's figure is the same (this table holds one organisation).
    let all = counters::read_all(store, Utc::now(), 1).await.unwrap();
    let midnight = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    assert_eq!(all.since(EventKind::Call, midnight), 15);
}

/// A batch that names no shard (a mapping not yet given its window) cannot be held to a
/// checkpoint: on a stream of many shards its events are left out of the figures while their
/// consequences go on; on the emulator's one shard it is the stream's.
#[tokio::test]
async fn a_batch_without_a_shard_is_counted_only_on_a_stream_of_one_shard() {
    let o = Ops::new().await;
    let (key, org) = super::org_by_key(&o).await;
    let calls = stored_calls(&o, &key, "n", 2).await;
    let unnamed = |i: usize| {
        let mut batch = crate::consequences::stream_event(&calls[i], "5");
        batch.shard_id = None;
        batch
    };
    let (_, _, many) = crate::consequences::fanout_app(&o.env).await;
    let out = many.process(unnamed(0), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty(), "its consequences go on");
    assert_eq!(calls_counted(&o, &org).await, 0, "left out of the figures");
    let activity = o.env.count("activity").await;
    assert!(activity >= 1, "what tells people was written: {activity}");

    let (_, _, one) = crate::consequences::fanout_app(&o.env).await;
    let one = one.on_one_shard();
    one.process(unnamed(1), Utc::now()).await;
    assert_eq!(calls_counted(&o, &org).await, 1, "the emulator's one shard");
}
