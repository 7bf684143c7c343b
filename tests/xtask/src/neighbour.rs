//! `cargo xtask load --neighbour [RATE [SECONDS]]`: a noisy neighbour, measured, through the
//! running local stack (loopback only; `cargo xtask up` first).
//!
//! Organisation A sends the load's steady mix of every kind (RATE new events a second, default
//! 8, repeats and bursts among them) for SECONDS (default 30) alone, then as long again while
//! organisation B floods as fast as `FLOOD_IN_FLIGHT` requests under way allow: unsigned junk at
//! its webhook URLs and at an integration that does not exist, valid events, duplicates, bursts,
//! "import now" on its monobank integration, writes and reads past its key's limits. It prints
//! A's answers alone and beside B, B's answers by what it sent, and A's effects against what A
//! sent. The bar: A has zero 5xx, zero missing or extra effects, and a p99 beside B within 2× of
//! A alone; B gets 429. It exits non-zero otherwise.
//!
//! The local stage deploys every per-caller limit at 100,000 a minute, so that scripted set-ups
//! never meet one. For its run the load sets them to [`LIMITS`] on every function of the stack
//! (`UpdateFunctionConfiguration`, which starts fresh function processes) and puts the deployed
//! values back afterwards, whatever the outcome.

use crate::load::{self, Answer, Target};
use crate::stack::Coordinates;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The per-caller limits for the run, a minute: reads and writes per key, deliveries per
/// integration (and warm function). A's steady mix at the default rate stays under each: about
/// 170 deliveries a minute at its busiest integration, 300 writes, no reads.
const LIMITS: [(&str, u64); 3] = [
    ("READS_PER_MINUTE", 120),
    ("WRITES_PER_MINUTE", 480),
    ("DELIVERIES_PER_MINUTE", 240),
];
/// B's requests under way at once.
const FLOOD_IN_FLIGHT: usize = 24;
/// What B sends, in turn.
const FLOOD: [&str; 12] = [
    "junk",
    "payment",
    "duplicate",
    "burst",
    "sms",
    "import",
    "read",
    "call",
    "unknown",
    "junk",
    "read",
    "junk",
];
/// Copies of one event in B's bursts.
const FLOOD_BURST: usize = 5;
/// The monobank stand-in's token and account.
const TOKEN: &str = "uNeighbourToken-stand-in";
const ACCOUNT: &str = "acc-neighbour-uah";

pub async fn run(rate: f64, seconds: u64) -> Result<()> {
    if !(0.5..=100.0).contains(&rate) || !(5..=300).contains(&seconds) {
        bail!("RATE is 0.5 to 100 events a second, SECONDS 5 to 300");
    }
    let coords = load::loopback_stack()?;
    let lambda =
        aws_sdk_lambda::Client::new(&crate::throughput::sdk_config(&coords.aws_endpoint_url).await);
    let deployed = set_limits(&lambda, &coords, None).await?;
    println!(
        "== per-caller limits for the run on {} functions: {LIMITS:?} a minute",
        deployed.len()
    );
    let outcome = measure(&coords, rate, seconds).await;
    set_limits(&lambda, &coords, Some(&deployed)).await?;
    println!("== the deployed limits are back");
    outcome
}

/// The run itself, between setting the limits and putting them back.
async fn measure(coords: &Coordinates, rate: f64, seconds: u64) -> Result<()> {
    let a = Arc::new(Target::new(coords, "Neighbour A").await?);
    let b = Arc::new(Flooder::new(coords).await?);
    println!("== A alone: {rate} sends/s for {seconds} s");
    let (alone, mut sent) = load::drive(&a, rate, seconds, 0).await;
    println!("== A beside B: {rate} sends/s for {seconds} s, B as fast as it can");
    let first = (rate * seconds as f64).round() as u64 + 1;
    let flood = tokio::spawn({
        let b = b.clone();
        async move { b.flood(Duration::from_secs(seconds)).await }
    });
    let (beside, sent_beside) = load::drive(&a, rate, seconds, first).await;
    let flooded = flood.await?;
    for (kind, events) in sent_beside {
        sent.entry(kind).or_default().extend(events);
    }
    println!("-- A alone");
    let bad_alone = load::report_answers(&alone);
    println!("-- A beside B");
    let bad_beside = load::report_answers(&beside);
    let ratio = p99_ms(&beside) / p99_ms(&alone).max(0.001);
    println!(
        "A p99: {:.1} ms alone, {:.1} ms beside B ({ratio:.2}×); p50 {:.1} ms and {:.1} ms",
        p99_ms(&alone),
        p99_ms(&beside),
        load::quantile(&alone, 0.5).as_secs_f64() * 1000.0,
        load::quantile(&beside, 0.5).as_secs_f64() * 1000.0
    );
    let refused = report_flood(&flooded, seconds);
    println!("== settling: A's consequences");
    let off = load::settle(coords, &a, &sent).await?;
    let bad = bad_alone + bad_beside;
    if bad > 0 || off > 0 || ratio > 2.0 || refused == 0 {
        bail!("the bar is A: zero 5xx, zero effects off, p99 within 2× alone; B: 429s. Got {bad} 5xx, {off} effects off, {ratio:.2}×, {refused} 429s for B");
    }
    println!("== A: zero 5xx, every effect once, p99 {ratio:.2}× alone; B: {refused} answers 429");
    Ok(())
}

fn p99_ms(answers: &[Answer]) -> f64 {
    load::quantile(answers, 0.99).as_secs_f64() * 1000.0
}

/// B's answers by what it sent: count, statuses, p50. How many were 429.
fn report_flood(answers: &[Answer], seconds: u64) -> usize {
    println!(
        "-- B: {} requests in {seconds} s ({:.0}/s)",
        answers.len(),
        answers.len() as f64 / seconds as f64
    );
    println!(
        "{:<10} {:>7}  {:<44} {:>9}",
        "B sent", "count", "answers by status", "p50"
    );
    let mut refused = 0;
    for what in FLOOD.iter().collect::<std::collections::BTreeSet<_>>() {
        let (mine, statuses, by_status) = load::by_status(answers, what);
        refused += statuses.get(&429).copied().unwrap_or(0);
        println!(
            "{what:<10} {:>7}  {by_status:<44} {:>7.1}ms",
            mine.len(),
            load::quantile(&mine, 0.5).as_secs_f64() * 1000.0
        );
    }
    refused
}

/// Sets every per-caller limit of the stack's functions to [`LIMITS`] (`restore` `None`), and
/// answers what each function had; or puts those back. Waits until each update is done.
async fn set_limits(
    lambda: &aws_sdk_lambda::Client,
    coords: &Coordinates,
    restore: Option<&HashMap<String, HashMap<String, String>>>,
) -> Result<HashMap<String, HashMap<String, String>>> {
    let mut had = HashMap::new();
    let mut marker: Option<String> = None;
    let mut names = Vec::new();
    loop {
        let page = lambda
            .list_functions()
            .set_marker(marker.clone())
            .send()
            .await
            .context("ListFunctions")?;
        for f in page.functions() {
            let name = f.function_name().unwrap_or_default();
            if name.starts_with(&coords.stack_name) {
                names.push(name.to_owned());
            }
        }
        marker = page.next_marker().map(str::to_owned);
        if marker.is_none() {
            break;
        }
    }
    for name in names {
        let config = lambda
            .get_function_configuration()
            .function_name(&name)
            .send()
            .await
            .with_context(|| format!("GetFunctionConfiguration {name}"))?;
        let mut vars = config
            .environment()
            .and_then(|e| e.variables())
            .cloned()
            .unwrap_or_default();
        if !LIMITS.iter().any(|(l, _)| vars.contains_key(*l)) {
            continue;
        }
        had.insert(name.clone(), vars.clone());
        match restore {
            Some(deployed) => match deployed.get(&name) {
                Some(before) => vars = before.clone(),
                None => continue,
            },
            None => {
                for (limit, value) in LIMITS {
                    if vars.contains_key(limit) {
                        vars.insert(limit.to_owned(), value.to_string());
                    }
                }
            }
        }
        let environment = aws_sdk_lambda::types::Environment::builder()
            .set_variables(Some(vars))
            .build();
        lambda
            .update_function_configuration()
            .function_name(&name)
            .environment(environment)
            .send()
            .await
            .with_context(|| format!("UpdateFunctionConfiguration {name}"))?;
        settled(lambda, &name).await?;
    }
    Ok(had)
}

/// Waits (up to 30 s) until the function's last update is done.
async fn settled(lambda: &aws_sdk_lambda::Client, name: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let config = lambda
            .get_function_configuration()
            .function_name(name)
            .send()
            .await?;
        let status = config.last_update_status().map(|s| s.as_str().to_owned());
        if status.as_deref() != Some("InProgress") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{name} is still updating after 30 s");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Organisation B: the load's organisation, a monobank integration on a loopback stand-in,
/// and the counter of its events.
struct Flooder {
    target: Target,
    monobank: String,
    next: AtomicU64,
}

impl Flooder {
    async fn new(coords: &Coordinates) -> Result<Self> {
        let target = Target::new(coords, "Neighbour B").await?;
        let api_url = stand_in().await?;
        let body = json!({"kind": "bank", "provider": "monobank", "token": TOKEN,
            "api_url": api_url});
        let res = target
            .http
            .post(format!("{}/api/integrations", target.base))
            .bearer_auth(&target.key)
            .json(&body)
            .send()
            .await?;
        let status = res.status().as_u16();
        let made: Value = res.json().await.unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            bail!("B's monobank integration: {status} {made}");
        }
        let monobank = made["integration_id"]
            .as_str()
            .context("integration_id")?
            .to_owned();
        Ok(Self {
            target,
            monobank,
            // Far from A's numbers, so no id of B's is one of A's.
            next: AtomicU64::new(1_000_000),
        })
    }

    /// B's requests for `how_long`, `FLOOD_IN_FLIGHT` under way: every answer.
    async fn flood(self: Arc<Self>, how_long: Duration) -> Vec<Answer> {
        let until = Instant::now() + how_long;
        let turn = Arc::new(AtomicU64::new(0));
        let workers = (0..FLOOD_IN_FLIGHT).map(|_| {
            let (me, turn) = (self.clone(), turn.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while Instant::now() < until {
                    let what = FLOOD[turn.fetch_add(1, Ordering::Relaxed) as usize % FLOOD.len()];
                    answers.extend(me.one(what).await);
                }
                answers
            })
        });
        let mut answers = Vec::new();
        for worker in futures::future::join_all(workers).await {
            answers.extend(worker.unwrap_or_default());
        }
        answers
    }

    /// One of B's requests (a burst is several): each answer.
    async fn one(&self, what: &'static str) -> Vec<Answer> {
        let t = &self.target;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let event = |kind: &'static str, n: u64| load::Send { kind, n };
        let requests: Vec<reqwest::RequestBuilder> = match what {
            "junk" => vec![t
                .http
                .post(format!("{}/hooks/{}/payments", t.base, t.payments.0))
                .header("content-type", "application/json")
                .body(r#"{"type":"payment.succeeded","data":{"amount":"1000000.00"}}"#)],
            "unknown" => vec![t
                .http
                .post(format!("{}/hooks/{}_{:032}/payments", t.base, t.org, 0))
                .body("junk")],
            "payment" => vec![t.request(&event("payment", n))],
            // An event B sent already: a number behind the counter.
            "duplicate" => vec![t.request(&event("payment", n.saturating_sub(7)))],
            "burst" => (0..FLOOD_BURST)
                .map(|_| t.request(&event("message", n)))
                .collect(),
            "sms" => vec![t.request(&event("sms", n))],
            "call" => vec![t.request(&event("call", n))],
            "import" => vec![t
                .http
                .post(format!(
                    "{}/api/integrations/{}/import",
                    t.base, self.monobank
                ))
                .bearer_auth(&t.key)],
            _ => vec![t
                .http
                .get(format!("{}/api/invoices", t.base))
                .bearer_auth(&t.key)],
        };
        let sends = requests.into_iter().map(|req| async move {
            let started = Instant::now();
            let status = match req.send().await {
                Ok(res) => res.status().as_u16(),
                Err(_) => 599,
            };
            (what, status, started.elapsed())
        });
        futures::future::join_all(sends).await
    }
}

/// monobank's personal API on loopback for B's token: its client (one account) and an empty
/// statement. The address.
async fn stand_in() -> Result<String> {
    use axum::http::HeaderMap;
    use axum::routing::get;
    let known =
        |headers: &HeaderMap| headers.get("x-token").and_then(|v| v.to_str().ok()) == Some(TOKEN);
    let client = move |headers: HeaderMap| async move {
        match known(&headers) {
            true => Ok(axum::Json(json!({"clientId": "neighbour", "name": "B",
                "accounts": [{"id": ACCOUNT, "currencyCode": 980, "type": "black", "balance": 0}]}))),
            false => Err(axum::http::StatusCode::FORBIDDEN),
        }
    };
    let statement = move |headers: HeaderMap| async move {
        match known(&headers) {
            true => Ok(axum::Json(json!([]))),
            false => Err(axum::http::StatusCode::FORBIDDEN),
        }
    };
    let app = axum::Router::new()
        .route("/personal/client-info", get(client))
        .route("/personal/statement/{account}/{from}/{to}", get(statement));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}"))
}
