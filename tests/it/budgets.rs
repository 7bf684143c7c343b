//! What an event costs, measured: DynamoDB's own report of the units every request consumed
//! (`ReturnConsumedCapacity: INDEXES`, the indexes' writes included) and the SQS requests, of an
//! event and all its consequences, each against its budget. A test fails when an event grows
//! past its budget, and prints what each request cost. The second event of each test is the one
//! measured: the first warms the function (its integration read and opened once), as a warm
//! Lambda is for every later event.

use crate::consequences::{stream_event, workers, Workers};
use crate::ops::{drain, org_with_team, Ops};
use crate::support::api::ADMIN;
use crate::support::fixtures::{self, standard_request_with_id};
use chrono::Utc;
use firmspace::aws::{CallLog, Units};
use firmspace::effects::queue::Publisher;
use firmspace::ids::OrgId;
use firmspace::money::Currency;
use firmspace::payments::invoice::{self, Links, NewInvoice};
use firmspace::payments::providers::Provider;
use firmspace::payments::{Invoice, InvoiceStatus};
use firmspace::store::item::Read;
use firmspace::store::Item;
use rust_decimal_macros::dec;
use std::time::Duration;

/// What the budgets are: (write units, read units, SQS requests) an event may cost, its
/// consequences included.
const NEW_PAYMENT: (f64, f64, usize) = (12.0, 3.0, 0);
const DUPLICATE_PAYMENT: (f64, f64, usize) = (0.0, 1.0, 0);
/// Each of ten new payments that reach the fan-out in one batch: what a batch writes once (the
/// hour's counters, and the meter's own flush at most every 10 s) is shared.
const NEW_PAYMENT_IN_A_BATCH: (f64, f64, usize) = (10.4, 3.0, 0);
const NEW_MESSAGE: (f64, f64, usize) = (12.0, 3.5, 0);
const NEW_SMS_DEBIT: (f64, f64, usize) = (14.0, 4.0, 0);

/// What one event cost, and what each request of it cost.
struct Cost {
    units: Units,
    sqs: usize,
    requests: Vec<(String, Units)>,
}

impl Cost {
    /// The requests logged in `log` from `from` on (less the test's own reads from `skip`),
    /// and the SQS requests `sqs` logged.
    fn of(log: &CallLog, from: usize, skip: std::ops::Range<usize>, sqs: &CallLog) -> Self {
        let requests: Vec<(String, Units)> = log
            .metered()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i >= from && !skip.contains(i))
            .map(|(_, r)| r)
            .collect();
        Self {
            units: requests.iter().map(|(_, u)| *u).sum(),
            sqs: sqs.take().len(),
            requests,
        }
    }

    /// Fails, printing every request, when the cost is past `(write, read, sqs)`.
    fn within(&self, what: &str, (write, read, sqs): (f64, f64, usize)) {
        let mut lines = String::new();
        for (op, u) in &self.requests {
            lines.push_str(&format!(
                "\n  {op}: write {} (index {}), read {}",
                u.write, u.index_write, u.read
            ));
        }
        let cost = format!(
            "{what}: write {} (index {}), read {}, SQS {}{lines}",
            self.units.write, self.units.index_write, self.units.read, self.sqs
        );
        println!("{cost}");
        assert!(
            self.units.write <= write && self.units.read <= read && self.sqs <= sqs,
            "past its budget (write {write}, read {read}, SQS {sqs}): {cost}"
        );
    }
}

/// An organisation with one member, the fan-out (its SQS requests logged) and the workers.
struct Stage {
    o: Ops,
    org: OrgId,
    sqs: CallLog,
    fanout: fanout::App,
    workers: Workers,
}

impl Stage {
    async fn new() -> Self {
        let o = Ops::new().await;
        let org = org_with_team(&o).await;
        let sqs = CallLog::default();
        let fanout = fanout::App::new(
            Publisher {
                sqs: sqs.sqs(&crate::support::sdk_config().await),
                queues: o.consequences.clone(),
            },
            o.env.store.clone(),
        );
        let workers = workers(&o.env, Duration::from_secs(2), 5);
        Self {
            o,
            org,
            sqs,
            fanout,
            workers,
        }
    }

    fn log(&self) -> &CallLog {
        &self.o.env.calls
    }

    /// The stored item of `kind` whose `field` is `value` (the test's own read).
    async fn stored(&self, kind: &str, field: &str, value: &str) -> Item {
        self.o
            .env
            .items_of(kind)
            .await
            .into_iter()
            .find(|e| e.opt_str(field) == Some(value))
            .unwrap_or_else(|| panic!("a {kind} with {field} {value}"))
    }

    /// The stream hands `item` to the fan-out, and the workers take every consequence.
    async fn consequences(&self, item: &Item, sequence: &str) {
        let out = self
            .fanout
            .process(stream_event(item, sequence), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty());
        for _ in 0..3 {
            Box::pin(drain(&self.o, &self.workers)).await;
        }
    }

    /// An open UAH invoice of 100.00 owned by the member, for a contact.
    async fn invoice(&self) -> Invoice {
        let new = NewInvoice {
            currency: Currency::parse("UAH").unwrap(),
            gross: dec!(100),
            status: InvoiceStatus::Open,
            links: Links {
                owner: Some("u1".into()),
                contact_id: Some("c1".into()),
                ..Links::default()
            },
        };
        invoice::create(&self.o.env.store, &self.org, new, Utc::now())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_standard_payment_and_its_consequences_cost_within_budget_and_a_duplicate_one_read() {
    let stage = Stage::new().await;
    let hook = fixtures::integration(&stage.o.env, &stage.org, Provider::Standard).await;
    let app = payment_webhook::app(stage.o.env.store.clone());
    let log = stage.log();
    let mut costs = Vec::new();
    for i in 0..2 {
        let inv = stage.invoice().await;
        let id = format!("pay_cost_{i}");
        // Two amounts: the same money on one contact's invoices is a lookalike, not this.
        let amount = ["40.00", "45.00"][i];
        let body = fixtures::standard_body(&id, inv.id.as_str(), Some(amount));
        let from = log.metered().len();
        stage.sqs.clear();
        let now = Utc::now().timestamp();
        let req = standard_request_with_id(&hook, &body, now, &format!("msg_cost_{i}"));
        // As Lambda calls it: what the invocation spent is added up for the summary.
        let res = app.handle(req).await.unwrap();
        let answer = crate::support::json_of(&res);
        assert_eq!(
            (res.status().as_u16(), answer["duplicate"].as_bool()),
            (200, Some(false))
        );
        let ours = log.metered().len();
        let item = stage.stored("payment_event", "external_id", &id).await;
        let theirs = log.metered().len();
        stage.consequences(&item, &i.to_string()).await;
        costs.push(Cost::of(log, from, ours..theirs, &stage.sqs));
        // Every consequence happened: the notification and the activity line.
        assert_eq!(stage.o.env.items_of("notification").await.len(), i + 1);
    }
    costs[1].within("a new standard payment", NEW_PAYMENT);

    // Its duplicate: one read, nothing written, nothing sent.
    let inv_id = stage
        .stored("payment_event", "external_id", "pay_cost_1")
        .await
        .str_of("invoice_id")
        .unwrap()
        .to_owned();
    let body = fixtures::standard_body("pay_cost_1", &inv_id, Some("45.00"));
    let from = log.metered().len();
    let req = standard_request_with_id(&hook, &body, Utc::now().timestamp(), "msg_cost_again");
    let res = app.handle(req).await.unwrap();
    let answer = crate::support::json_of(&res);
    assert_eq!(
        (res.status().as_u16(), answer["duplicate"].as_bool()),
        (200, Some(true))
    );
    Cost::of(log, from, 0..0, &stage.sqs).within("its duplicate", DUPLICATE_PAYMENT);

    // The operator's summary says what a payment cost today, from what the functions spent.
    let (status, summary) = stage
        .o
        .get(&format!("/ops/summary?org={}", stage.org), ADMIN)
        .await;
    assert_eq!(status, 200);
    let payment = &summary["events"]["payment"];
    assert_eq!(payment["today"], 2, "{summary}");
    let units = &payment["units"];
    // Every function wrote its first invocation's share at once (the next waits 10 s): the
    // first payment's delivery and its fan-out (which wrote the notification and the activity
    // line itself and made the lookalike check: no SQS request, no worker).
    assert!(units["write"].as_f64().unwrap() > 0.0, "{summary}");
    assert_eq!(units["sqs"], 0.0, "no request: {summary}");
    assert_eq!(
        units["invocations"], 1.0,
        "two invocations over two payments: {summary}"
    );
}

/// Ten new payments read off the stream in one batch, as a busy hour hands them to the fan-out:
/// each costs what it costs alone, but for the counters the batch writes once.
#[tokio::test]
async fn ten_payments_in_one_fan_out_batch_share_what_a_batch_writes() {
    let stage = Stage::new().await;
    let hook = fixtures::integration(&stage.o.env, &stage.org, Provider::Standard).await;
    let app = payment_webhook::app(stage.o.env.store.clone());
    let log = stage.log();
    let pay = |i: usize, inv: &Invoice| {
        // An amount of its own: the same money on one contact's invoices is a lookalike.
        let amount = format!("{}.00", 40 + i);
        let body = fixtures::standard_body(&format!("pay_ten_{i}"), inv.id.as_str(), Some(&amount));
        standard_request_with_id(
            &hook,
            &body,
            Utc::now().timestamp(),
            &format!("msg_ten_{i}"),
        )
    };
    // A first payment warms the function (its integration read and opened once).
    let warm = stage.invoice().await;
    assert_eq!(app.handle(pay(99, &warm)).await.unwrap().status(), 200);
    let mut invoices = Vec::new();
    for _ in 0..10 {
        invoices.push(stage.invoice().await);
    }
    let from = log.metered().len();
    stage.sqs.clear();
    for (i, inv) in invoices.iter().enumerate() {
        assert_eq!(app.handle(pay(i, inv)).await.unwrap().status(), 200);
    }
    let ours = log.metered().len();
    let mut items = Vec::new();
    for i in 0..10 {
        items.push(
            stage
                .stored("payment_event", "external_id", &format!("pay_ten_{i}"))
                .await,
        );
    }
    let theirs = log.metered().len();
    let seqs: Vec<String> = (0..10).map(|i| format!("{}", 500 + i)).collect();
    let records: Vec<(&str, &Item)> = seqs.iter().map(String::as_str).zip(items.iter()).collect();
    let batch = crate::consequences::stream_batch("shardId-ten", &records);
    let out = stage.fanout.process(batch, Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
    let ten = Cost::of(log, from, ours..theirs, &stage.sqs);
    let each = Cost {
        units: Units {
            write: ten.units.write / 10.0,
            read: ten.units.read / 10.0,
            index_write: ten.units.index_write / 10.0,
        },
        sqs: ten.sqs / 10,
        requests: ten.requests,
    };
    each.within(
        "each of ten new standard payments in one batch",
        NEW_PAYMENT_IN_A_BATCH,
    );
    assert_eq!(
        stage.o.env.items_of("notification").await.len(),
        10,
        "the ten told once each (the warm one was not read off the stream)"
    );
}

#[tokio::test]
async fn a_telegram_text_message_and_its_consequences_cost_within_budget() {
    let stage = Stage::new().await;
    let hook = firmspace::ids::IntegrationId::generate(&stage.org);
    let settings = crate::messages::Setup::telegram("http://127.0.0.1:9".into());
    firmspace::integrations::create(
        &stage.o.env.store,
        &firmspace::integrations::Integration {
            id: hook.clone(),
            settings: firmspace::integrations::Settings::Messages(settings),
            created_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    let (s3, bucket) = crate::support::bucket(&stage.o.env).await;
    let media = firmspace::messages::media::Media::new(
        crate::support::channels::apis(true),
        firmspace::messages::media::Files::new(s3, &bucket),
    );
    let app = message_webhook::app(stage.o.env.store.clone(), media);
    let log = stage.log();
    let mut costs = Vec::new();
    for i in 0..2 {
        let body = crate::messages::telegram_update(i + 1, "Hello, is my order ready?", None);
        let req = crate::support::request(
            "POST",
            &format!("/hooks/{}/messages", hook.id),
            &[
                ("content-type", "application/json"),
                (
                    "x-telegram-bot-api-secret-token",
                    crate::messages::SECRET_TOKEN,
                ),
            ],
            body.into_bytes(),
        );
        let from = log.metered().len();
        stage.sqs.clear();
        let res = app.respond(&req, Utc::now()).await.unwrap();
        assert_eq!(res.status(), 200);
        let ours = log.metered().len();
        let item = stage
            .stored("message", "provider_id", &format!("42:{}", i + 1))
            .await;
        let theirs = log.metered().len();
        stage.consequences(&item, &format!("m{i}")).await;
        costs.push(Cost::of(log, from, ours..theirs, &stage.sqs));
    }
    assert_eq!(stage.o.env.items_of("message").await.len(), 2);
    costs[1].within("a new telegram text message", NEW_MESSAGE);
}

#[tokio::test]
async fn an_sms_debit_costs_within_budget() {
    let carrier = crate::ledger::Carrier::new().await;
    let (status, _) = carrier.top_up("top-cost", "20.00").await;
    assert_eq!(status, 200);
    let env = &carrier.crm.env;
    let log = &env.calls;
    let none = CallLog::default();
    let (_, _, fanout) = crate::consequences::fanout_app(env).await;
    let mut costs = Vec::new();
    for i in 0..2 {
        let from = log.metered().len();
        let body = crate::ledger::event("sent", &format!("MT-cost-{i}"), Some("0.05"));
        let (status, answer) = carrier.send(&format!("evt_cost_{i}"), &body).await;
        assert_eq!(status, 200, "{answer}");
        // The stream hands its acknowledgement to the fan-out, which counts it.
        let reading = log.metered().len();
        let ack = env
            .items_of(firmspace::ledger::ACK_KIND)
            .await
            .into_iter()
            .find(|a| a.opt_str("event_id") == Some(&format!("evt_cost_{i}")))
            .expect("its acknowledgement");
        let test_read = reading..log.metered().len();
        let out = fanout.process(stream_event(&ack, "1"), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
        costs.push(Cost::of(log, from, test_read, &none));
    }
    let wallet = carrier.wallet().await;
    assert_eq!(
        (
            wallet["balance"].as_str(),
            carrier.count("ledger_line").await
        ),
        (Some("19.90"), 3),
        "a top-up and two debits: {wallet}"
    );
    costs[1].within("a new SMS debit", NEW_SMS_DEBIT);
}

/// A person's payment through the api under an `Idempotency-Key`, the key's record a step of the
/// payment's own transaction: what the request costs, its key's check and its rate limit
/// included (the fan-out's share is the webhook payment's, above).
const KEYED_API_PAYMENT: (f64, f64, usize) = (11.0, 4.0, 0);

#[tokio::test]
async fn a_persons_payment_under_a_key_writes_its_record_with_it_within_budget() {
    let crm = crate::support::app::Crm::new().await;
    let log = &crm.env.calls;
    let none = CallLog::default();
    let mut costs = Vec::new();
    for i in 0..2 {
        let invoice = crm
            .invoice(serde_json::json!({"currency": "UAH", "gross": "100.00"}))
            .await;
        let pay = format!("/api/invoices/{}/payments", invoice["id"].as_str().unwrap());
        let body = serde_json::json!({"source": "manual", "amount": "40.00"});
        let from = log.metered().len();
        let key = format!("click-cost-{i}");
        let (status, answer) = crm
            .call_with("POST", &pay, &[("idempotency-key", key.as_str())], body)
            .await;
        assert_eq!(
            (status, answer["duplicate"].as_bool()),
            (200, Some(false)),
            "{answer}"
        );
        costs.push(Cost::of(log, from, 0..0, &none));
    }
    costs[1].within("a person's payment under a key", KEYED_API_PAYMENT);
}
