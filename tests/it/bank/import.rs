//! The statement import against a loopback stand-in for monobank's personal API that enforces
//! one call per window: 1,234 rows over three pages, stored once however often and however
//! concurrently the import runs, resumed after a run that stopped halfway.

use crate::support::statement::{self, TOKEN};
use crate::support::{request, TestEnv};
use chrono::Utc;
use firmspace::bank::import::{self, Limits, Request};
use firmspace::bank::providers::BankSettings;
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self, Integration, Settings};
use std::time::Duration;

const WINDOW: Duration = Duration::from_millis(300);

async fn setup(rows: usize) -> (TestEnv, Integration, statement::Statement) {
    let env = TestEnv::new().await;
    let org = crate::support::fixtures::org(&env).await.id;
    let stand_in = statement::spawn(rows, WINDOW).await;
    let integration = monobank_integration(&env, &org, &stand_in).await;
    (env, integration, stand_in)
}

/// A monobank bank integration of `org` reading its statement from `stand_in`.
async fn monobank_integration(
    env: &TestEnv,
    org: &firmspace::ids::OrgId,
    stand_in: &statement::Statement,
) -> Integration {
    let integration = Integration {
        id: IntegrationId::generate(org),
        settings: Settings::Bank(BankSettings::Monobank {
            token: TOKEN.to_owned().into(),
            account: "0".into(),
            api_url: Some(stand_in.url()),
        }),
        created_at: Utc::now(),
    };
    integrations::create(&env.store, &integration)
        .await
        .unwrap();
    integrations::get(&env.store, &integration.id)
        .await
        .unwrap()
        .unwrap()
}

/// Another account (`usd`) of `first`'s token, an integration of the same organisation.
async fn second_account(
    env: &TestEnv,
    first: &Integration,
    stand_in: &statement::Statement,
) -> Integration {
    let second = Integration {
        id: IntegrationId::generate(first.org()),
        settings: Settings::Bank(BankSettings::Monobank {
            token: TOKEN.to_owned().into(),
            account: "usd".into(),
            api_url: Some(stand_in.url()),
        }),
        created_at: Utc::now(),
    };
    integrations::create(&env.store, &second).await.unwrap();
    integrations::get(&env.store, &second.id)
        .await
        .unwrap()
        .unwrap()
}

fn limits(max_pages: usize) -> Limits {
    Limits {
        interval: WINDOW,
        max_wait: Duration::from_secs(2),
        max_pages,
    }
}

fn apis() -> firmspace::messages::media::Apis {
    crate::support::channels::apis(true)
}

#[tokio::test]
async fn an_import_run_twice_stores_1234_rows_once_in_three_calls() {
    let (env, integration, stand_in) = setup(1234).await;
    let first = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    // Each next page starts at the time of the page before's last row, read again: harmless.
    assert_eq!(
        (first.calls, first.imported, first.caught_up),
        (3, 1234, true),
        "{first:?}"
    );
    tokio::time::sleep(WINDOW).await;
    let second = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (second.calls, second.imported),
        (1, 0),
        "only the overlap is read again: {second:?}"
    );
    assert_eq!(env.count("bank_tx").await, 1234);
    assert_eq!(
        stand_in.refused(),
        0,
        "never two calls inside monobank's window"
    );
}

#[tokio::test]
async fn a_run_stopped_after_two_pages_is_resumed_from_its_cursor() {
    let (env, integration, stand_in) = setup(1234).await;
    let stopped = import::run(&env.store, &apis(), &integration, &limits(2), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (stopped.calls, stopped.caught_up),
        (2, false),
        "{stopped:?}"
    );
    assert_eq!(env.count("bank_tx").await, stopped.imported);
    tokio::time::sleep(WINDOW).await;
    let resumed = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert!(resumed.caught_up, "{resumed:?}");
    assert_eq!(resumed.calls, 1, "the third page only");
    assert_eq!(env.count("bank_tx").await, 1234);
    assert_eq!(stand_in.calls(), 3);
}

#[tokio::test]
async fn two_runs_at_once_make_one_call_per_window_and_the_webhooks_row_is_the_imports() {
    let (env, integration, stand_in) = setup(1234).await;
    // monobank pushed one of the rows before the import reads it.
    let pushed = serde_json::json!({"type": "StatementItem", "data": {"account": "0", "statementItem": stand_in.rows[5]}});
    let webhook = bank_webhook::app(env.store.clone());
    let req = request(
        "POST",
        &format!("/hooks/{}/bank", integration.id.id),
        &[],
        pushed.to_string().into_bytes(),
    );
    let res = webhook.respond(&req, Utc::now()).await.unwrap();
    assert_eq!(res.status(), 200);
    let (apis, limits) = (apis(), limits(20));
    let (a, b) = tokio::join!(
        import::run(&env.store, &apis, &integration, &limits, Utc::now()),
        import::run(&env.store, &apis, &integration, &limits, Utc::now()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(stand_in.refused(), 0, "{a:?} {b:?}");
    assert!(
        a.running || b.running || a.calls + b.calls >= 3,
        "{a:?} {b:?}"
    );
    // Whatever the two runs left undone, a third finishes.
    tokio::time::sleep(WINDOW).await;
    import::run(&env.store, &apis, &integration, &limits, Utc::now())
        .await
        .unwrap();
    assert_eq!(
        env.count("bank_tx").await,
        1234,
        "the pushed row is one of them, stored once"
    );
    assert_eq!(a.imported + b.imported, 1233);
}

#[tokio::test]
async fn a_429_or_an_outage_leaves_the_cursor_unmoved() {
    let (env, integration, stand_in) = setup(600).await;
    // Someone else (another tool with the same token) just called: the stand-in refuses us.
    let _ = firmspace::http::client(reqwest::Client::builder())
        .get(format!("{}/personal/statement/0/0/1", stand_in.url()))
        .header("X-Token", TOKEN)
        .send()
        .await
        .unwrap();
    let refused = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert_eq!(refused.stopped.as_deref(), Some("monobank answered 429"));
    assert_eq!(env.count("bank_tx").await, 0);
    tokio::time::sleep(WINDOW).await;
    let later = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert!(later.caught_up);
    assert_eq!(env.count("bank_tx").await, 600);
}

#[tokio::test]
async fn import_now_through_the_api_queues_a_run_that_the_import_function_takes() {
    let env = TestEnv::new().await;
    let stand_in = statement::spawn(40, WINDOW).await;
    let sqs = crate::support::queues::client().await;
    let (queue_url, _) = crate::support::queues::queue(&sqs, "imports", 30, None).await;
    let mut settings = crate::support::api::settings();
    settings.imports = Some(import::Requests {
        sqs: sqs.clone(),
        queue_url: queue_url.clone(),
        files_queue_url: queue_url.clone(),
    });
    let app = ::api::App::new(env.store.clone(), settings);
    let key = crate::support::api::new_org(&app).await;
    let body = serde_json::json!({"kind": "bank", "provider": "monobank", "token": TOKEN, "api_url": stand_in.url()});
    let (status, made) =
        crate::support::api::call(&app, "POST", "/api/integrations", &key, body).await;
    assert_eq!(status, 201, "{made}");
    let path = format!(
        "/api/integrations/{}/import",
        made["integration_id"].as_str().unwrap()
    );
    let (status, started) =
        crate::support::api::call(&app, "POST", &path, &key, serde_json::Value::Null).await;
    assert_eq!(
        (status, started["started"].as_bool()),
        (202, Some(true)),
        "{started}"
    );

    let requests = crate::support::queues::receive(&sqs, &queue_url, 2).await;
    assert_eq!(requests.len(), 1);
    // A window of 5 s, so the request below certainly comes inside it.
    let wide = Limits {
        interval: Duration::from_secs(5),
        max_wait: Duration::ZERO,
        max_pages: 20,
    };
    let fan_out = import::Requests {
        sqs: sqs.clone(),
        queue_url: queue_url.clone(),
        files_queue_url: queue_url.clone(),
    };
    let function = bank_import::App::new(env.store.clone(), apis(), wide, fan_out, None);
    let event = serde_json::to_value(crate::support::queues::event(&requests)).unwrap();
    let out = function.process(&event).await.unwrap();
    assert_eq!(out["batchItemFailures"], serde_json::json!([]));
    assert_eq!(env.count("bank_tx").await, 40);
    // Inside the window the next request is told a run holds it.
    let (status, running) =
        crate::support::api::call(&app, "POST", &path, &key, serde_json::Value::Null).await;
    assert_eq!(
        (
            status,
            running["started"].as_bool(),
            running["reason"].as_str()
        ),
        (202, Some(false), Some("running"))
    );
}

#[tokio::test]
async fn two_accounts_of_one_token_share_its_window() {
    let (env, first, stand_in) = setup(300).await;
    let second = second_account(&env, &first, &stand_in).await;
    let (apis, limits) = (apis(), limits(20));
    let (a, b) = tokio::join!(
        import::run(&env.store, &apis, &first, &limits, Utc::now()),
        import::run(&env.store, &apis, &second, &limits, Utc::now()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        stand_in.refused(),
        0,
        "one call per window for the token: {a:?} {b:?}"
    );
    assert!(
        a.running || b.running || a.calls + b.calls == 2,
        "{a:?} {b:?}"
    );
}

/// A statement row of monobank's shape: `minor` units of UAH at `time`.
fn statement_row(id: &str, time: i64, minor: i64, description: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "time": time, "description": description, "mcc": 4829,
        "hold": false, "amount": minor, "operationAmount": minor, "currencyCode": 980,
        "commissionRate": 0, "cashbackAmount": 0, "balance": 1000000, "comment": ""})
}

#[tokio::test]
async fn a_pushed_credit_pays_only_once_the_statement_shows_it_and_a_forged_one_goes_to_a_person() {
    use firmspace::bank::matching::{auto_match, Auto};
    use rust_decimal_macros::dec;
    let env = TestEnv::new().await;
    let org = crate::support::fixtures::org(&env).await.id;
    let inv = crate::support::fixtures::invoice(&env, &org, dec!(40.00), "UAH").await;
    let at = Utc::now().timestamp() - 7200;
    let naming = format!("Payment {}", inv.number);
    let genuine = statement_row("real-1", at, 4000, &naming);
    // Whoever read the webhook URL in a log: a credit naming the invoice, no bank behind it.
    let forged = statement_row("forged-1", at + 60, 4000, &naming);
    let stand_in = statement::spawn_rows(vec![genuine.clone()], WINDOW).await;
    let integration = monobank_integration(&env, &org, &stand_in).await;
    let webhook = bank_webhook::app(env.store.clone());
    for row in [&genuine, &forged] {
        let body = serde_json::json!({"type": "StatementItem", "data": {"account": "0", "statementItem": row}});
        let path = format!("/hooks/{}/bank", integration.id.id);
        let req = request("POST", &path, &[], body.to_string().into_bytes());
        assert_eq!(
            webhook.respond(&req, Utc::now()).await.unwrap().status(),
            200
        );
    }
    let tx_id = |row: &str| firmspace::bank::tx_id(&org, &integration.id.id, "0", row);
    let matched = |row: &'static str| {
        let (store, org, id) = (env.store.clone(), org.clone(), tx_id(row));
        async move { auto_match(&store, &org, &id, Utc::now()).await.unwrap() }
    };
    // Stored and shown, but a pushed row alone moves no money.
    assert_eq!(env.count("bank_tx").await, 2);
    assert_eq!(
        (matched("real-1").await, matched("forged-1").await),
        (Auto::Nothing, Auto::Nothing)
    );
    let paid = |env: &TestEnv| {
        let (store, org, id) = (env.store.clone(), org.clone(), inv.id.as_str().to_owned());
        async move {
            firmspace::payments::invoice::get(&store, &org, &id)
                .await
                .unwrap()
                .unwrap()
                .paid
        }
    };
    assert_eq!(paid(&env).await, dec!(0));

    let report = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert_eq!((report.imported, report.unconfirmed), (0, 1), "{report:?}");
    // The statement showed the genuine row: its confirmation is an insert the fan-out turns
    // into its match, and the match pays the invoice once.
    let confirmations = env.items_of("bank_confirmation").await;
    assert_eq!(confirmations.len(), 1);
    let derived = firmspace::effects::derive::consequences(&confirmations[0]).unwrap();
    assert_eq!(derived.len(), 1, "{derived:?}");
    assert!(matches!(matched("real-1").await, Auto::Matched { .. }));
    assert_eq!(matched("forged-1").await, Auto::Nothing);
    assert_eq!(paid(&env).await, dec!(40.00));
    let reasons = crate::support::app::reasons(&env, &org).await;
    assert_eq!(
        reasons,
        ["unconfirmed_bank_row"],
        "the forged row, for a person"
    );
}

#[tokio::test]
async fn the_schedule_queues_one_import_per_integration_and_counts_the_overdue() {
    let env = TestEnv::new().await;
    let org = crate::support::fixtures::org(&env).await.id;
    let stand_in = statement::spawn(5, Duration::ZERO).await;
    let mut made = Vec::new();
    for (i, age) in [0, 0, 3600].into_iter().enumerate() {
        let integration = Integration {
            id: IntegrationId::generate(&org),
            settings: Settings::Bank(BankSettings::Monobank {
                token: format!("{TOKEN}-{i}").into(),
                account: "0".into(),
                api_url: Some(stand_in.url()),
            }),
            created_at: Utc::now() - chrono::Duration::seconds(age),
        };
        integrations::create(&env.store, &integration)
            .await
            .unwrap();
        made.push(integration.id);
    }
    let sqs = crate::support::queues::client().await;
    let (queue_url, _) = crate::support::queues::queue(&sqs, "imports", 30, None).await;
    let requests = import::Requests {
        sqs: sqs.clone(),
        queue_url: queue_url.clone(),
        files_queue_url: queue_url.clone(),
    };
    let function = bank_import::App::new(env.store.clone(), apis(), limits(20), requests, None);
    let schedule =
        serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}});
    let out = function.process(&schedule).await.unwrap();
    assert_eq!(
        (out["queued"].as_u64(), out["overdue"].as_u64()),
        (Some(3), Some(1)),
        "three integrations queued; the one made an hour ago was never imported: {out}"
    );
    let queued = crate::support::queues::receive(&sqs, &queue_url, 3).await;
    let turns: Vec<Request> = queued
        .iter()
        .map(|m| Request::from_body(m.body().unwrap()).unwrap())
        .collect();
    assert_eq!(
        turns,
        [Request::Turn { org: org.clone() }],
        "one turn for the organisation, whatever its integrations"
    );
    assert_eq!(
        env.count("bank_tx").await,
        0,
        "the schedule imported nothing itself"
    );
    // The turn imports each of them, one after another.
    let turn = crate::support::queues::event_of("t1", queued[0].body().unwrap());
    let value = serde_json::to_value(&turn).unwrap();
    let answered = function.process(&value).await.unwrap();
    assert_eq!(
        answered["batchItemFailures"],
        serde_json::json!([]),
        "{answered}"
    );
    // Each asked its statement (the stand-in knows none of these tokens): three leases taken.
    assert_eq!(env.count("bank_lease").await, 3, "each imported: {made:?}");

    // A person paused the import worker: the schedule queues nothing, still counts the overdue.
    firmspace::ops::consumers::record(&env.store, "bank-import", true, "admin:test", Utc::now())
        .await
        .unwrap();
    let out = function.process(&schedule).await.unwrap();
    assert_eq!(
        (
            out["queued"].as_u64(),
            out["overdue"].as_u64(),
            out["worker_paused"].as_bool()
        ),
        (Some(0), Some(1), Some(true)),
        "{out}"
    );
    assert!(crate::support::queues::receive(&sqs, &queue_url, 1)
        .await
        .is_empty());
    firmspace::ops::consumers::record(&env.store, "bank-import", false, "admin:test", Utc::now())
        .await
        .unwrap();
    let out = function.process(&schedule).await.unwrap();
    assert_eq!(out["queued"], 3, "resumed: queued again");
}

#[tokio::test]
async fn an_organisation_with_2000_integrations_delays_nobody_elses_import() {
    let env = TestEnv::new().await;
    let (big, small) = (
        crate::support::fixtures::org(&env).await.id,
        crate::support::fixtures::org(&env).await.id,
    );
    let stand_in = statement::spawn(3, Duration::ZERO).await;
    let integration = |org: &firmspace::ids::OrgId| Integration {
        id: IntegrationId::generate(org),
        settings: Settings::Bank(BankSettings::Monobank {
            token: TOKEN.to_owned().into(),
            account: "0".into(),
            api_url: Some(stand_in.url()),
        }),
        created_at: Utc::now(),
    };
    let store = env.store.clone();
    use futures::StreamExt;
    futures::stream::iter(0..2000)
        .map(|_| {
            let (store, made) = (store.clone(), integration(&big));
            async move { integrations::create(&store, &made).await.unwrap() }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
    let lone = integration(&small);
    integrations::create(&env.store, &lone).await.unwrap();
    let sqs = crate::support::queues::client().await;
    let (queue_url, _) = crate::support::queues::queue(&sqs, "fair", 30, None).await;
    let requests = import::Requests {
        sqs: sqs.clone(),
        queue_url: queue_url.clone(),
        files_queue_url: queue_url.clone(),
    };
    let function = bank_import::App::new(env.store.clone(), apis(), limits(20), requests, None);
    let schedule =
        serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}});
    let out = function.process(&schedule).await.unwrap();
    assert_eq!(out["queued"], 2001, "{out}");
    // Two turns in the queue, one per organisation: the lone integration's is not behind 2,000.
    let queued = crate::support::queues::receive(&sqs, &queue_url, 10).await;
    let turns: Vec<Request> = queued
        .iter()
        .map(|m| Request::from_body(m.body().unwrap()).unwrap())
        .collect();
    assert_eq!(turns.len(), 2, "{turns:?}");
    let small_turn = queued
        .iter()
        .find(|m| {
            Request::from_body(m.body().unwrap()) == Some(Request::Turn { org: small.clone() })
        })
        .unwrap();
    let started = std::time::Instant::now();
    let event = crate::support::queues::event_of("small", small_turn.body().unwrap());
    let answered = function
        .process(&serde_json::to_value(&event).unwrap())
        .await
        .unwrap();
    assert_eq!(answered["batchItemFailures"], serde_json::json!([]));
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "within one period"
    );
    let rows: Vec<_> = env
        .items_of("bank_tx")
        .await
        .into_iter()
        .filter(|i| i["org"].as_s().unwrap() == small.as_str())
        .collect();
    assert_eq!(rows.len(), 3, "the lone integration's statement imported");
}

#[tokio::test]
async fn a_malformed_statement_row_goes_to_a_person_and_the_import_moves_on() {
    let env = TestEnv::new().await;
    let org = crate::support::fixtures::org(&env).await.id;
    let at = Utc::now().timestamp() - 3600;
    let mut broken = statement_row("broken-1", at - 60, 1000, "Transfer");
    broken["amount"] = serde_json::json!("a lot");
    let rows = vec![statement_row("fine-1", at, 2500, "Transfer"), broken];
    let stand_in = statement::spawn_rows(rows, WINDOW).await;
    let integration = monobank_integration(&env, &org, &stand_in).await;
    let report = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (
            report.rows,
            report.imported,
            report.caught_up,
            report.stopped.clone()
        ),
        (1, 1, true, None),
        "{report:?}"
    );
    assert_eq!(env.count("bank_tx").await, 1);
    let review = crate::support::app::review(&env, &org).await;
    assert_eq!(review.len(), 1, "{review:?}");
    assert_eq!(review[0]["reason"], "unreadable_bank_row");
    assert_eq!(review[0]["detail"]["row_id"], "broken-1");
    tokio::time::sleep(WINDOW).await;
    let again = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (again.imported, again.stopped),
        (0, None),
        "the cursor moved past it"
    );
    assert_eq!(
        crate::support::app::review(&env, &org).await.len(),
        1,
        "filed once"
    );
}

#[tokio::test]
async fn a_pushed_row_dated_where_no_statement_looks_is_filed_by_when_it_arrived() {
    let env = TestEnv::new().await;
    let org = crate::support::fixtures::org(&env).await.id;
    let stand_in = statement::spawn_rows(Vec::new(), WINDOW).await;
    let integration = monobank_integration(&env, &org, &stand_in).await;
    // Dated 40 days back: before the first import's 31 days, so no window will ever read it.
    let old = statement_row(
        "forged-old",
        Utc::now().timestamp() - 40 * 86_400,
        4000,
        "Payment",
    );
    let body = serde_json::json!({"type": "StatementItem", "data": {"account": "0", "statementItem": old}});
    let webhook = bank_webhook::app(env.store.clone());
    let req = request(
        "POST",
        &format!("/hooks/{}/bank", integration.id.id),
        &[],
        body.to_string().into_bytes(),
    );
    assert_eq!(
        webhook.respond(&req, Utc::now()).await.unwrap().status(),
        200
    );
    let report = import::run(&env.store, &apis(), &integration, &limits(20), Utc::now())
        .await
        .unwrap();
    assert_eq!(report.unconfirmed, 1, "{report:?}");
    let reasons = crate::support::app::reasons(&env, &org).await;
    assert_eq!(reasons, ["unconfirmed_bank_row"]);
}

/// Two accounts of one token, imported by the organisation's turns: the token's one call a
/// minute is one account's each turn, and the next turn begins with the account that waited,
/// so neither is left behind the other for good.
#[tokio::test]
async fn the_turns_import_both_accounts_of_one_token() {
    let (env, first, stand_in) = setup(5).await;
    let org = first.org().clone();
    second_account(&env, &first, &stand_in).await;
    let sqs = crate::support::queues::client().await;
    let (queue_url, _) = crate::support::queues::queue(&sqs, "turns", 30, None).await;
    let requests = import::Requests {
        sqs: sqs.clone(),
        queue_url: queue_url.clone(),
        files_queue_url: queue_url,
    };
    // One page a run, no waiting for the token's next minute inside one.
    let limits = Limits {
        interval: Duration::from_secs(2),
        max_wait: Duration::ZERO,
        max_pages: 1,
    };
    let function = bank_import::App::new(env.store.clone(), apis(), limits, requests, None);
    let turn = Request::Turn { org: org.clone() }.to_body();
    for round in 0..2 {
        let event = crate::support::queues::event_of(&format!("t{round}"), &turn);
        let out = function
            .process(&serde_json::to_value(&event).unwrap())
            .await
            .unwrap();
        assert_eq!(out["batchItemFailures"], serde_json::json!([]), "{out}");
        // The token's next call is allowed again.
        tokio::time::sleep(Duration::from_millis(2100)).await;
    }
    // Each account's statement read in one of the two turns: a cursor each, and its rows.
    assert_eq!(
        (env.count("bank_cursor").await, env.count("bank_tx").await),
        (2, 10),
        "two accounts of one token"
    );
    assert_eq!(stand_in.refused(), 0, "one call a window for the token");
}

/// A rotated monobank token names its own call a minute: the integration's clear digest, what
/// "import now" and the worker take the statement lease by, is the new token's.
#[tokio::test]
async fn a_rotated_token_names_its_own_statement_minute() {
    use firmspace::integrations::bank::token_digest;
    use firmspace::store::item::Read;
    let (env, first, _stand_in) = setup(0).await;
    let digest = |item: &firmspace::store::Item| item.opt_str("token_digest").map(str::to_owned);
    let pk = integrations::integration_pk(&first.id);
    let before = env.store.get(&pk).await.unwrap().unwrap();
    let token = secrecy::SecretString::from("u-rotated-token".to_owned());
    let new = std::collections::HashMap::from([("token".to_owned(), token.clone())]);
    integrations::rotation::rotate(
        &env.store,
        &first.id,
        new,
        chrono::Duration::zero(),
        Utc::now(),
    )
    .await
    .unwrap();
    let after = env.store.get(&pk).await.unwrap().unwrap();
    assert_eq!(digest(&after), Some(token_digest(&token)));
    assert_ne!(digest(&before), digest(&after));
}
