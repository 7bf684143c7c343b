//! The operator's view in-process against ministack: real queues with real DLQs, the workers,
//! and the ops function's JSON routes as the page and a person call them.

mod consumers;
mod counters;
mod decisions;
mod kept;
mod pauses;
mod recover;
mod redrive;
mod replay;
mod rows;
mod views;
mod waiting;

use crate::consequences::Workers;
use crate::support::api::{self as api_support, ADMIN};
use crate::support::queues::{self, queue};
use crate::support::queues::{delete, event, receive};
use crate::support::{fixtures, json_of, request, TestEnv};
use chrono::Utc;
use firmspace::effects::automation::{self, Action};
use firmspace::effects::queue::{Publisher, Queues as Consequences};
use firmspace::effects::Trigger;
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::ops::queues::{Pair, Queues};
use firmspace::orgs::{self, Member};
use serde_json::json;
use serde_json::Value;

/// A table, three queues each with a DLQ (a message dies after 2 receives; visible again after
/// 1 s), the api, and the ops function.
pub struct Ops {
    pub env: TestEnv,
    pub api: ::api::App,
    pub app: ops::App,
    pub sqs: aws_sdk_sqs::Client,
    pub consequences: Consequences,
    /// The events `streamed` has fanned out.
    streamed: tokio::sync::Mutex<std::collections::HashSet<String>>,
}

impl Ops {
    pub async fn new() -> Self {
        let env = TestEnv::new().await;
        let sqs = queues::client().await;
        let mut pairs = Vec::new();
        for name in ["notifications", "automation", "matching"] {
            let (url, dlq) = queue(&sqs, name, 1, Some(2)).await;
            pairs.push(Pair {
                name,
                url,
                dlq: dlq.expect("a DLQ"),
            });
        }
        let url = |i: usize| pairs[i].url.clone();
        let consequences = Consequences {
            notifications: url(0),
            automation: url(1),
            matching: url(2),
        };
        let queues = Queues {
            sqs: sqs.clone(),
            pairs,
        };
        let app = ops::App::new(
            env.store.clone(),
            (
                ADMIN.to_owned().into(),
                firmspace::admin::Names::new(crate::support::digests().await),
            ),
            queues,
            Publisher {
                sqs: sqs.clone(),
                queues: consequences.clone(),
            },
        );
        Self {
            api: api_support::app(&env),
            env,
            app,
            sqs,
            consequences,
            streamed: Default::default(),
        }
    }

    /// The same, pausing and resuming these workers.
    pub fn with_consumers(self, consumers: firmspace::ops::consumers::Consumers) -> Self {
        Self {
            app: self.app.with_consumers(consumers),
            ..self
        }
    }

    /// The fan-out over this table's stream as far as it is written: every stored event not
    /// streamed yet (all of them on the first call) goes through the fan-out on one stream
    /// shard, in batches of 100, in the order of their places on their lists. What it counts
    /// is what the operator's figures read; what it sends goes to these queues.
    pub async fn streamed(&self) {
        use firmspace::store::item::Read;
        let fanout = fanout::App::new(
            Publisher {
                sqs: self.sqs.clone(),
                queues: self.consequences.clone(),
            },
            self.env.store.clone(),
        );
        let mut events: Vec<firmspace::store::Item> = self
            .env
            .items()
            .await
            .into_iter()
            .filter(|i| i.opt_str("gsi2pk").is_some_and(|l| l.contains("#EVENTS#")))
            .collect();
        events.sort_by_key(|i| i.opt_str("gsi2sk").map(str::to_owned));
        let mut streamed = self.streamed.lock().await;
        events.retain(|i| !streamed.contains(i.opt_str("pk").unwrap_or_default()));
        for chunk in events.chunks(100) {
            let records: Vec<(String, &firmspace::store::Item)> = chunk
                .iter()
                .map(|i| {
                    streamed.insert(i.opt_str("pk").unwrap_or_default().to_owned());
                    (format!("{}", 1000 + streamed.len()), i)
                })
                .collect();
            let records: Vec<(&str, &firmspace::store::Item)> =
                records.iter().map(|(seq, i)| (seq.as_str(), *i)).collect();
            let batch = crate::consequences::stream_batch("shardId-ops", &records);
            let out = Box::pin(fanout.process(batch, chrono::Utc::now())).await;
            assert!(out.batch_item_failures.is_empty(), "{out:?}");
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        let auth = format!("Bearer {token}");
        let res = self
            .app
            .handle(request(
                "GET",
                path,
                &[("authorization", &auth)],
                Vec::new(),
            ))
            .await
            .unwrap();
        (res.status().as_u16(), json_of(&res))
    }

    /// A `POST` with this `Idempotency-Key`.
    pub async fn post(&self, path: &str, token: &str, key: &str, body: &Value) -> (u16, Value) {
        let auth = format!("Bearer {token}");
        let raw = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let headers = [("authorization", auth.as_str()), ("idempotency-key", key)];
        let res = Box::pin(self.app.handle(request("POST", path, &headers, raw)))
            .await
            .unwrap();
        (res.status().as_u16(), json_of(&res))
    }
}

/// The ids of a list's items.
pub fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["id"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs every visible message of each queue through its worker, as Lambda's event source
/// mapping would: what succeeded is deleted, what failed stays.
pub(super) async fn drain(o: &Ops, w: &Workers) {
    let q = &o.consequences;
    let queues = [(&q.notifications, 0), (&q.automation, 2), (&q.matching, 3)];
    for (url, which) in queues {
        let messages = receive(&o.sqs, url, 0).await;
        if messages.is_empty() {
            continue;
        }
        let response = match which {
            0 => Box::pin(w.notify.process(event(&messages), Utc::now())).await,
            2 => Box::pin(w.automation.process(event(&messages), Utc::now())).await,
            _ => Box::pin(w.matching.process(event(&messages), Utc::now())).await,
        };
        let failed: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        let done: Vec<_> = messages
            .into_iter()
            .filter(|m| !failed.contains(&m.message_id().unwrap_or_default()))
            .collect();
        delete(&o.sqs, url, &done).await;
    }
}

/// A Standard Webhooks payment integration of `org`, an open invoice of 1,000.00 UAH and the
/// payment webhook over `o`'s table.
pub(super) async fn payment_hook(
    o: &Ops,
    org: &OrgId,
) -> (
    IntegrationId,
    firmspace::payments::Invoice,
    payment_webhook::App,
) {
    let hook = fixtures::integration(
        &o.env,
        org,
        firmspace::payments::providers::Provider::Standard,
    )
    .await;
    let inv = fixtures::invoice(&o.env, org, rust_decimal_macros::dec!(1000), "UAH").await;
    (hook, inv, payment_webhook::app(o.env.store.clone()))
}

pub(super) async fn org_with_team(o: &Ops) -> OrgId {
    let org = fixtures::org(&o.env).await.id;
    let member = Member {
        user_id: "u1".into(),
        name: "Olena".into(),
    };
    orgs::add_member(
        &o.env.store,
        &org,
        &member,
        firmspace::orgs::MEMBERS_MAX,
        Utc::now(),
    )
    .await
    .unwrap();
    org
}

pub(super) fn trigger_body(org: &OrgId, event_key: &str) -> String {
    json!({"type": "trigger", "org": org.as_str(), "trigger": "invoice.paid", "event_key": event_key,
           "at": "2026-12-03T10:00:00.000Z", "context": {"invoice_id": "inv_1"}})
    .to_string()
}

/// A rule of `org` that thanks through an outbound integration to `url` when an invoice is paid.
pub(super) async fn thanks_rule(o: &Ops, org: &OrgId, url: String) -> automation::Rule {
    let hook = crate::automation::outbound(&o.env, org, url, None).await;
    let action = Action::SendMessage {
        integration_id: hook,
        text: "Thanks!".into(),
    };
    automation::create_rule(&o.env.store, org, Trigger::InvoicePaid, action, Utc::now())
        .await
        .unwrap()
}

/// `POST path` as the admin with this key and no body.
pub(super) async fn admin_post(o: &Ops, path: &str, key: &str) -> (u16, Value) {
    o.post(path, ADMIN, key, &Value::Null).await
}

/// A new organisation made through the api: its key, and the organisation the key stands for.
pub(super) async fn org_by_key(o: &Ops) -> (String, OrgId) {
    let key = crate::support::api::new_org(&o.api).await;
    let found = firmspace::orgs::authenticate(&o.env.store, &key)
        .await
        .unwrap()
        .unwrap();
    (key, found.org)
}
