//! Bank rows in-process against ministack: monobank's personal webhook and CSV uploads, each row
//! stored once however often and however concurrently it arrives; and matching.

mod import;
pub mod matching;

use crate::support::api::{self, call};
use crate::support::{json_of, request, statement, TestEnv};
use chrono::Utc;
use serde_json::{json, Value};

/// An organisation (through the api) with one bank integration of `body`.
async fn with_integration(env: &TestEnv, body: Value) -> (::api::App, String, Value) {
    let app = api::app(env);
    let key = api::new_org(&app).await;
    let (status, integration) = call(&app, "POST", "/api/integrations", &key, body).await;
    assert_eq!(status, 201, "{integration}");
    (app, key, integration)
}

fn push(account: &str, row_id: &str, amount: i64, comment: &str) -> String {
    json!({"type": "StatementItem", "data": {"account": account, "statementItem": {
        "id": row_id, "time": Utc::now().timestamp() - 60, "description": "Transfer", "mcc": 4829,
        "amount": amount, "operationAmount": amount, "currencyCode": 980, "comment": comment,
        "balance": 100000, "counterName": "Olena K"}}})
    .to_string()
}

async fn hook(app: &bank_webhook::App, method: &str, path: &str, body: &str) -> (u16, Value) {
    let req = request(method, path, &[], body.as_bytes().to_vec());
    let res = app
        .respond(&req, Utc::now())
        .await
        .unwrap_or_else(firmspace::http::ApiError::into_response);
    let status = res.status().as_u16();
    let text = crate::support::body_text(&res);
    (status, serde_json::from_str(&text).unwrap_or(json!(text)))
}

fn upload(path: &str, key: &str, csv: &str) -> lambda_http::Request {
    request(
        "POST",
        path,
        &[
            ("authorization", &format!("Bearer {key}")),
            ("content-type", "text/csv"),
        ],
        csv.as_bytes().to_vec(),
    )
}

async fn answer(app: &::api::App, req: lambda_http::Request) -> (u16, Value) {
    let res = app
        .respond(&req, Utc::now())
        .await
        .unwrap_or_else(firmspace::http::ApiError::into_response);
    (res.status().as_u16(), json_of(&res))
}

/// The test table through a store that cannot open a secret (no KMS key), as the deployed bank
/// webhook's role.
async fn sealed_store(env: &TestEnv) -> firmspace::store::Store {
    let client = aws_sdk_dynamodb::Client::new(&crate::support::sdk_config().await);
    firmspace::store::Store::new(client, env.store.table())
}

#[tokio::test]
async fn a_monobank_token_the_bank_refuses_makes_no_integration() {
    let env = TestEnv::new().await;
    let stand_in = statement::spawn(0, std::time::Duration::ZERO).await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let wrong = json!({"kind": "bank", "provider": "monobank", "token": "not-the-token", "api_url": stand_in.url()});
    let (status, refused) = call(&app, "POST", "/api/integrations", &key, wrong).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_token")),
        "{refused}"
    );
    assert_eq!(env.count("integration").await, 0);
    // A named account does not spare the token its check: refused the same.
    let named = json!({"kind": "bank", "provider": "monobank", "token": "not-the-token", "account": "acc-x", "api_url": stand_in.url()});
    let (status, refused) = call(&app, "POST", "/api/integrations", &key, named).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_token")),
        "{refused}"
    );
    // The right token with an account that is not its own.
    let foreign = json!({"kind": "bank", "provider": "monobank", "token": statement::TOKEN, "account": "acc-x", "api_url": stand_in.url()});
    let (status, refused) = call(&app, "POST", "/api/integrations", &key, foreign).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("unknown_account")),
        "{refused}"
    );
    // One of its own, named: taken as named.
    let [_, other] = statement::ACCOUNTS;
    let own = json!({"kind": "bank", "provider": "monobank", "token": statement::TOKEN, "account": other, "api_url": stand_in.url()});
    let (status, made) = call(&app, "POST", "/api/integrations", &key, own).await;
    assert_eq!(
        (status, made["account"].as_str()),
        (201, Some(other)),
        "{made}"
    );
    assert_eq!(env.count("integration").await, 1);
}

#[tokio::test]
async fn an_organisation_holds_at_most_20_monobank_imports_and_one_per_account() {
    use firmspace::bank::providers::BankSettings;
    use firmspace::ids::IntegrationId;
    use firmspace::integrations::{self, Integration, Settings};
    let env = TestEnv::new().await;
    let stand_in = statement::spawn(0, std::time::Duration::ZERO).await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let org = firmspace::orgs::keys::named_org(&key).unwrap();
    let [default, other] = statement::ACCOUNTS;
    let body = |account: &str| {
        json!({"kind": "bank", "provider": "monobank", "token": statement::TOKEN,
            "account": account, "api_url": stand_in.url()})
    };
    let (status, made) = call(&app, "POST", "/api/integrations", &key, body(default)).await;
    assert_eq!(status, 201, "{made}");
    // The same account of the same token again, named or as `0`: every row would be stored and
    // matched twice.
    for again in [default, "0"] {
        let (status, refused) = call(&app, "POST", "/api/integrations", &key, body(again)).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (409, Some("account_taken")),
            "{refused}"
        );
    }
    let (status, made) = call(&app, "POST", "/api/integrations", &key, body(other)).await;
    assert_eq!(status, 201, "the token's other account: {made}");
    // Eighteen more of other tokens reach the cap of 20; one more is refused.
    for i in 0..18 {
        let integration = Integration {
            id: IntegrationId::generate(&org),
            settings: Settings::Bank(BankSettings::Monobank {
                token: format!("{}-{i}", statement::TOKEN).into(),
                account: default.into(),
                api_url: Some(stand_in.url()),
            }),
            created_at: Utc::now(),
        };
        let mut counting = integrations::counting(&env.store, &integration, "t", 20)
            .await
            .unwrap();
        env.store.write(&mut counting, Utc::now()).await.unwrap();
    }
    let (status, refused) = call(&app, "POST", "/api/integrations", &key, body(other)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("limit_reached")),
        "{refused}"
    );
    assert_eq!(env.count("integration").await, 20);
    let csv = json!({"kind": "bank", "provider": "csv"});
    assert_eq!(
        call(&app, "POST", "/api/integrations", &key, csv).await.0,
        201,
        "a CSV import is no statement import: not counted"
    );
}

#[tokio::test]
async fn a_pushed_row_is_stored_once_and_a_wrong_id_is_404_writing_nothing() {
    let env = TestEnv::new().await;
    let stand_in = statement::spawn(0, std::time::Duration::ZERO).await;
    let (app, key, integration) = with_integration(
        &env,
        json!({"kind": "bank", "provider": "monobank", "token": statement::TOKEN, "api_url": stand_in.url()}),
    )
    .await;
    let [default, other] = statement::ACCOUNTS;
    assert_eq!(
        integration["account"], default,
        "`0` resolved to the default's id"
    );
    let url = integration["webhook_url"].as_str().unwrap();
    let path = &url[url.find("/hooks/").unwrap()..];
    let id = integration["integration_id"].as_str().unwrap();
    assert_eq!(id.len() - id.find('_').unwrap() - 1, 32, "128 random bits");
    let webhook = bank_webhook::app(sealed_store(&env).await);
    assert_eq!(hook(&webhook, "GET", path, "").await.0, 200);
    // Another account of the same token is not this integration's: ignored, nothing written.
    let elsewhere = push(other, "ZuHWzqkKGVo=", 4000, "INV-00001");
    let (status, ignored) = hook(&webhook, "POST", path, &elsewhere).await;
    assert_eq!(
        (status, ignored["status"].as_str()),
        (200, Some("ignored")),
        "{ignored}"
    );
    assert_eq!(env.count("bank_tx").await, 0);
    let body = push(default, "ZuHWzqkKGVo=", 4000, "INV-00001");
    let answers =
        futures::future::join_all((0..10).map(|_| hook(&webhook, "POST", path, &body))).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    assert_eq!(
        answers
            .iter()
            .filter(|(_, a)| a["duplicate"] == false)
            .count(),
        1
    );
    assert_eq!(env.count("bank_tx").await, 1);

    let before = env.items().await.len();
    let wrong = path.replace(&id[id.len() - 4..], "0000");
    for method in ["GET", "POST"] {
        assert_eq!(
            hook(&webhook, method, &wrong, &body).await.0,
            404,
            "{method}"
        );
    }
    assert_eq!(env.items().await.len(), before);
    // A CSV integration's id names no webhook: 404 as well.
    let (_, _, csv) = with_integration(&env, json!({"kind": "bank", "provider": "csv"})).await;
    let csv_hook = format!("/hooks/{}/bank", csv["integration_id"].as_str().unwrap());
    for method in ["GET", "POST"] {
        assert_eq!(
            hook(&webhook, method, &csv_hook, &body).await.0,
            404,
            "{method}"
        );
    }

    let list = format!("/api/bank/transactions?integration_id={id}");
    let (status, rows) = call(&app, "GET", &list, &key, Value::Null).await;
    assert_eq!(status, 200, "{rows}");
    let row = &rows["items"][0];
    assert_eq!(
        (
            row["amount"].as_str(),
            row["currency"].as_str(),
            row["reference"].as_str()
        ),
        (Some("40.00"), Some("UAH"), Some("INV-00001"))
    );
    assert!(row["match"].is_null());
}

const HEAD: &str = "id,date,amount,currency,description,counterparty,reference\n";

fn file(rows: std::ops::Range<usize>) -> String {
    let mut csv = HEAD.to_owned();
    for i in rows {
        csv.push_str(&format!(
            "r{i},2026-11-{:02},+{}.50,UAH,Payment {i},Client {i},\n",
            i % 28 + 1,
            i + 1
        ));
    }
    csv
}

#[tokio::test]
async fn the_same_file_uploaded_twice_and_concurrently_stores_each_row_once() {
    let env = TestEnv::new().await;
    let (app, key, integration) = with_integration(
        &env,
        json!({"kind": "bank", "provider": "csv", "name": "PrivatBank export"}),
    )
    .await;
    let url = integration["upload_url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    let csv = file(0..120);
    let uploads =
        futures::future::join_all((0..3).map(|_| answer(&app, upload(path, &key, &csv)))).await;
    assert!(uploads.iter().all(|(s, _)| *s == 200), "{uploads:?}");
    let imported: u64 = uploads
        .iter()
        .map(|(_, a)| a["imported"].as_u64().unwrap())
        .sum();
    assert_eq!(
        imported, 120,
        "each row imported by exactly one upload: {uploads:?}"
    );
    let (status, again) = answer(&app, upload(path, &key, &csv)).await;
    assert_eq!(
        (
            status,
            again["rows"].as_u64(),
            again["imported"].as_u64(),
            again["duplicates"].as_u64()
        ),
        (200, Some(120), Some(0), Some(120))
    );
    assert_eq!(env.count("bank_tx").await, 120);

    // Pages of 50, newest first, until no cursor.
    let id = integration["integration_id"].as_str().unwrap();
    let (mut seen, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let mut list = format!("/api/bank/transactions?integration_id={id}&limit=50");
        if let Some(c) = &cursor {
            list.push_str(&format!("&cursor={c}"));
        }
        let (status, page) = call(&app, "GET", &list, &key, Value::Null).await;
        assert_eq!(status, 200, "{page}");
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_owned()),
        );
        match page["cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 120, "no row on two pages, none left out");
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 120);
}

#[tokio::test]
async fn a_bad_row_refuses_the_file_naming_its_line_and_writes_nothing() {
    let env = TestEnv::new().await;
    let (app, key, integration) =
        with_integration(&env, json!({"kind": "bank", "provider": "csv"})).await;
    let url = integration["upload_url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    let csv = format!("{HEAD}a1,2026-12-01,40.00,UAH,ok,,\na2,2026-12-01,4o.00,UAH,typo,,\na1,2026-12-02,1,UAH,twice,,\n");
    let (status, refused) = answer(&app, upload(path, &key, &csv)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_csv")),
        "{refused}"
    );
    assert_eq!(
        refused["rows"],
        json!([{"line": 3, "error": "amount: not a number"}, {"line": 4, "error": "id: a1 is also on line 2"}])
    );
    assert_eq!(env.count("bank_tx").await, 0);
    // The reader's line count holds after a quoted field over two lines.
    let quoted =
        format!("{HEAD}q1,2026-12-01,40.00,UAH,\"two\nlines\",,\nq2,2026-12-01,x,UAH,bad,,\n");
    let (status, refused) = answer(&app, upload(path, &key, &quoted)).await;
    assert_eq!(
        (status, refused["rows"][0]["line"].as_u64()),
        (400, Some(4)),
        "{refused}"
    );
    let big = "x".repeat(5 * 1024 * 1024 + 1);
    assert_eq!(answer(&app, upload(path, &key, &big)).await.0, 413);
}

#[tokio::test]
async fn another_row_under_a_taken_bank_id_is_a_conflict_kept_for_a_person_not_a_duplicate() {
    let env = TestEnv::new().await;
    let (app, key, integration) =
        with_integration(&env, json!({"kind": "bank", "provider": "csv"})).await;
    let url = integration["upload_url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    // Two exports of different accounts whose id columns both start at 1.
    let first = file(0..3);
    let other = format!("{HEAD}r0,2026-11-05,+9.00,UAH,Rent,Landlord,\nr1,2026-11-02,+2.50,UAH,Payment 1,Client 1,\nr9,2026-11-09,+1.00,UAH,New,,\n");
    let (status, stored) = answer(&app, upload(path, &key, &first)).await;
    assert_eq!((status, stored["imported"].as_u64()), (200, Some(3)));
    let (status, second) = answer(&app, upload(path, &key, &other)).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        (
            second["imported"].as_u64(),
            second["duplicates"].as_u64(),
            second["conflicts"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "r9 new, r1 the same row, r0 another row: {second}"
    );
    assert_eq!(env.count("bank_tx").await, 4);
    let (_, review) = call(&app, "GET", "/api/review", &key, Value::Null).await;
    let mismatches: Vec<_> = review["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["reason"] == "payload_mismatch")
        .collect();
    assert_eq!(mismatches.len(), 1, "{review:?}");
    let detail = &mismatches[0]["detail"];
    assert_eq!(
        detail["fields"],
        json!(["time", "amount", "description", "counterparty"]),
        "{detail}"
    );
    assert_ne!(detail["fingerprint"], detail["stored_fingerprint"]);
    // The first row is kept as it was.
    let id = integration["integration_id"].as_str().unwrap();
    let list = format!("/api/bank/transactions?integration_id={id}&limit=50");
    let (_, page) = call(&app, "GET", &list, &key, Value::Null).await;
    let r0 = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "r0")
        .cloned()
        .unwrap();
    assert_eq!(r0["amount"], "1.50");
    // The same second file again: the conflict is filed once.
    let (_, again) = answer(&app, upload(path, &key, &other)).await;
    assert_eq!(again["conflicts"].as_u64(), Some(1));
    let (_, review) = call(&app, "GET", "/api/review", &key, Value::Null).await;
    assert_eq!(
        review["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["reason"] == "payload_mismatch")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_monobank_webhooks_id_is_kept_only_by_its_integration() {
    let env = TestEnv::new().await;
    let stand_in = statement::spawn(0, std::time::Duration::ZERO).await;
    let (_, _, integration) = with_integration(
        &env,
        json!({"kind": "bank", "provider": "monobank", "token": statement::TOKEN, "api_url": stand_in.url()}),
    )
    .await;
    let id = integration["integration_id"].as_str().unwrap();
    let path = format!("/hooks/{id}/bank");
    let webhook = bank_webhook::app(env.store.clone());
    let [account, _] = statement::ACCOUNTS;
    for body in [
        push(account, "r-digest", 4000, "INV-00001"),
        "{not json".to_owned(),
    ] {
        assert_eq!(hook(&webhook, "POST", &path, &body).await.0, 200);
    }
    let kinds: Vec<String> = env
        .items()
        .await
        .iter()
        .filter_map(|i| i.get("kind")?.as_s().ok().cloned())
        .collect();
    assert!(
        kinds.contains(&"bank_tx".to_owned()) && kinds.contains(&"unparseable_delivery".to_owned()),
        "{kinds:?}"
    );
    // The id is the webhook's credential: only the integration's own item holds it.
    let holders: Vec<String> = env
        .items()
        .await
        .iter()
        .filter(|item| {
            item.values()
                .any(|v| v.as_s().is_ok_and(|s| s.contains(id)))
        })
        .map(|item| {
            item.get("kind")
                .and_then(|k| k.as_s().ok())
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(holders, ["integration"]);
}

/// The import worker takes every request on the queue, each its file's next steps (the same
/// file queued twice is absorbed), until none is left: how many it took.
async fn take_all(worker: &bank_import::App, sqs: &aws_sdk_sqs::Client, url: &str) -> usize {
    let mut taken = 0;
    loop {
        let queued = crate::support::queues::receive(sqs, url, 1).await;
        if queued.is_empty() {
            return taken;
        }
        taken += queued.len();
        let event = serde_json::to_value(crate::support::queues::event(&queued)).unwrap();
        let out = worker.process(&event).await.unwrap();
        assert_eq!(out["batchItemFailures"], json!([]));
        crate::support::queues::delete(sqs, url, &queued).await;
    }
}

#[tokio::test]
async fn a_file_of_6000_rows_is_stored_by_the_worker_and_followed_by_its_import() {
    let env = TestEnv::new().await;
    let (s3, name) = crate::support::bucket(&env).await;
    let sqs = crate::support::queues::client().await;
    let (queue_url, _) = crate::support::queues::queue(&sqs, "imports", 30, None).await;
    let (files_url, _) = crate::support::queues::queue(&sqs, "files", 30, None).await;
    let fan_out = || firmspace::bank::import::Requests {
        sqs: sqs.clone(),
        queue_url: queue_url.clone(),
        files_queue_url: files_url.clone(),
    };
    let bucket = firmspace::bank::files::Bucket { s3, name };
    let mut settings = api::settings();
    settings.uploads = Some(bucket.clone());
    settings.imports = Some(fan_out());
    let app = ::api::App::new(env.store.clone(), settings);
    let key = api::new_org(&app).await;
    let body = json!({"kind": "bank", "provider": "csv"});
    let (_, integration) = call(&app, "POST", "/api/integrations", &key, body).await;
    let url = integration["upload_url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    let csv = file(0..6000);
    let (status, started) = answer(&app, upload(path, &key, &csv)).await;
    assert_eq!(
        (status, started["state"].as_str(), started["rows"].as_u64()),
        (202, Some("queued"), Some(6000)),
        "{started}"
    );
    assert_eq!(
        env.count("bank_tx").await,
        0,
        "nothing stored inside the upload"
    );
    let (status, again) = answer(&app, upload(path, &key, &csv)).await;
    assert_eq!(
        (status, &again["import_id"], again["duplicate"].as_bool()),
        (202, &started["import_id"], Some(true))
    );

    let worker = bank_import::App::new(
        env.store.clone(),
        crate::support::channels::apis(true),
        firmspace::bank::import::Limits::default(),
        fan_out(),
        Some(bucket),
    );
    // The steps are on the files' queue, and none on the statements' one.
    assert!(take_all(&worker, &sqs, &files_url).await >= 1);
    assert_eq!(take_all(&worker, &sqs, &queue_url).await, 0);
    let status_url = started["status_url"].as_str().unwrap();
    let (status, done) = call(&app, "GET", status_url, &key, Value::Null).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            done["state"].as_str(),
            done["stored"].as_u64(),
            done["imported"].as_u64()
        ),
        (Some("done"), Some(6000), Some(6000)),
        "{done}"
    );
    assert_eq!(env.count("bank_tx").await, 6000);
    let (status, _) = call(
        &app,
        "GET",
        "/api/imports/imp_000000000000000000000000",
        &key,
        Value::Null,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_row_the_statement_has_not_shown_is_matched_by_hand_only_when_a_person_says_so() {
    let env = TestEnv::new().await;
    let stand_in = statement::spawn(0, std::time::Duration::ZERO).await;
    let (app, key, integration) = with_integration(
        &env,
        json!({"kind": "bank", "provider": "monobank", "token": statement::TOKEN, "api_url": stand_in.url()}),
    )
    .await;
    let id = integration["integration_id"].as_str().unwrap();
    let webhook = bank_webhook::app(env.store.clone());
    let [account, _] = statement::ACCOUNTS;
    let pushed = push(account, "r-unconfirmed", 4000, "no invoice named");
    assert_eq!(
        hook(&webhook, "POST", &format!("/hooks/{id}/bank"), &pushed)
            .await
            .0,
        200
    );
    let tx_id = env.items_of("bank_tx").await[0]["tx_id"]
        .as_s()
        .unwrap()
        .clone();
    let (_, inv) = call(
        &app,
        "POST",
        "/api/invoices",
        &key,
        json!({"currency": "UAH", "gross": "40.00"}),
    )
    .await;
    let path = format!("/api/bank/transactions/{tx_id}/match");
    let invoice_id = inv["id"].as_str().unwrap();
    let (status, refused) =
        call(&app, "POST", &path, &key, json!({"invoice_id": invoice_id})).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("row_unconfirmed")),
        "{refused}"
    );
    assert_eq!(env.count("payment_event").await, 0);
    let sure = json!({"invoice_id": invoice_id, "confirm_unconfirmed": true});
    let (status, matched) = call(&app, "POST", &path, &key, sure).await;
    assert_eq!(status, 200, "{matched}");
    assert!(
        matched["by"].as_str().unwrap().starts_with("key_"),
        "{matched}"
    );
    assert!(matched["at"].is_string());
    assert_eq!(matched["applied"], "40.00");
}
