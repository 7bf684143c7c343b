//! `cargo xtask bench`: the payment webhook's handler called in-process against ministack, side
//! by side with the Python peer (Powertools idempotency, tests/peer) on the same workload and the
//! same ministack, runs alternated. The mix: 8 concurrent senders, 1,000 signed Standard Webhooks
//! deliveries = 800 new payments (each on its own invoice, seeded first) + 200 repeats of earlier
//! deliveries, interleaved. Prints events/s, median and p99 latency, DynamoDB calls per event,
//! the sender's CPU and the emulator's CPU per event. A measurement, not a test.

use crate::stack::{root, Stack};
use anyhow::{bail, Context, Result};
use firmspace::ids::{IntegrationId, LocalId, OrgId};
use firmspace::integrations::{Integration, Settings};
use firmspace::payments::invoice::Links;
use firmspace::payments::providers::PaymentSettings;
use firmspace::payments::{Invoice, InvoiceStatus};
use firmspace::store::{schema, Store};
use serde_json::{json, Value};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NEW: usize = 800;
const REPEATS: usize = 200;
pub(crate) const SENDERS: usize = 8;
const ROUNDS: usize = 3;
const SIGNED_AT: i64 = 1_800_000_000;
pub(crate) const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One run's figures.
#[derive(Clone, Debug)]
pub(crate) struct Figures {
    pub(crate) events_per_s: f64,
    pub(crate) median_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) calls_per_event: f64,
    pub(crate) cpu_ms_per_event: f64,
    pub(crate) emulator_cpu_ms_per_event: f64,
}

/// CPU seconds (user + system) of a process, from /proc.
pub(crate) fn cpu_seconds(pid: &str) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').context("a /proc stat line")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    Ok(ticks / 100.0)
}

/// The deliveries: 200 repeats, each of the delivery 40 places earlier, spread evenly after the
/// first forty (a provider's retry comes after a timeout, not while the first is in flight).
pub(crate) fn workload(
    org: &OrgId,
    integration: &IntegrationId,
    invoices: &[String],
) -> Result<Vec<Value>> {
    let mut out: Vec<Value> = Vec::with_capacity(NEW + REPEATS);
    let mut fresh = 0;
    while out.len() < NEW + REPEATS {
        let p = out.len();
        // The repeats spread evenly over positions 40..1000: one where (p - 39) * 200 / 960
        // steps up.
        if p >= 40 && (p - 39) * REPEATS / 960 > (p - 40) * REPEATS / 960 {
            let earlier = out[p - 40].clone();
            out.push(earlier);
            continue;
        }
        let body =
            json!({"type": "payment.succeeded", "data": {"payment_id": format!("pay_{fresh}"),
            "invoice_id": invoices[fresh], "amount": "10.00", "currency": "UAH"}})
            .to_string();
        let id = format!("msg_{fresh}");
        let sig = firmspace::signature::standard::sign(SECRET, &id, SIGNED_AT, body.as_bytes())?;
        out.push(json!({"headers": {"webhook-id": id, "webhook-timestamp": SIGNED_AT.to_string(), "webhook-signature": sig},
            "body": body, "path": format!("/hooks/{}/payments", integration.id), "org": org.as_str()}));
        fresh += 1;
    }
    Ok(out)
}

/// A fresh table with the organisation's integration and `NEW` open invoices.
pub(crate) async fn seed(
    store: &Store,
    org: &OrgId,
    integration: &IntegrationId,
) -> Result<Vec<String>> {
    firmspace::integrations::create(
        store,
        &Integration {
            id: integration.clone(),
            settings: Settings::Payments(PaymentSettings::Standard {
                secret: SECRET.to_owned().into(),
            }),
            created_at: chrono::Utc::now(),
        },
    )
    .await?;
    let mut ids = Vec::with_capacity(NEW);
    for chunk in (0..NEW).collect::<Vec<_>>().chunks(50) {
        let puts = chunk.iter().map(|i| {
            let invoice = Invoice {
                org: org.clone(),
                id: LocalId::generate("inv_"),
                number: format!("INV-{:05}", i + 1),
                currency: firmspace::money::Currency::parse("UAH").expect("UAH"),
                gross: rust_decimal::Decimal::new(1000, 2),
                paid: rust_decimal::Decimal::ZERO,
                credited: rust_decimal::Decimal::ZERO,
                status: InvoiceStatus::Open,
                version: 0,
                links: Links::default(),
                created_at: chrono::Utc::now(),
            };
            async move {
                store
                    .put_new(invoice.to_item())
                    .await
                    .map(|_| invoice.id.as_str().to_owned())
            }
        });
        for id in futures::future::join_all(puts).await {
            ids.push(id?);
        }
    }
    Ok(ids)
}

fn request(delivery: &Value) -> lambda_http::Request {
    let mut builder = http::Request::builder().method("POST").uri(format!(
        "https://bench.local{}",
        delivery["path"].as_str().unwrap_or_default()
    ));
    for (k, v) in delivery["headers"].as_object().into_iter().flatten() {
        builder = builder.header(k.as_str(), v.as_str().unwrap_or_default());
    }
    let body = delivery["body"].as_str().unwrap_or_default().to_owned();
    builder
        .body(lambda_http::Body::from(body))
        .expect("a valid request")
}

fn summarise(
    mut latencies: Vec<f64>,
    seconds: f64,
    calls: usize,
    cpu: f64,
    emulator: f64,
) -> Figures {
    latencies.sort_by(f64::total_cmp);
    let n = latencies.len() as f64;
    Figures {
        events_per_s: n / seconds,
        median_ms: latencies[latencies.len() / 2],
        p99_ms: latencies[(latencies.len() * 99) / 100],
        calls_per_event: calls as f64 / n,
        cpu_ms_per_event: cpu * 1000.0 / n,
        emulator_cpu_ms_per_event: emulator * 1000.0 / n,
    }
}

pub(crate) async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new(crate::stack::REGION))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "bench",
        ))
        .load()
        .await
}

/// A store on `table` that seals integration secrets with a fresh KMS key in the emulator, as
/// the deployed functions do.
pub(crate) async fn sealing_store(
    config: &aws_config::SdkConfig,
    client: aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<Store> {
    let kms = aws_sdk_kms::Client::new(config);
    let key = kms.create_key().description("bench").send().await?;
    let key_id = key
        .key_metadata()
        .map(|m| m.key_id().to_owned())
        .context("the emulator's key has no id")?;
    Ok(Store::new(client, table).with_vault(firmspace::vault::Vault::new(kms, key_id)))
}

/// Our handler, in-process, `SENDERS` at a time.
async fn ours(endpoint: &str, emulator_pid: &str, round: usize) -> Result<Figures> {
    let calls = firmspace::aws::CallLog::default();
    let config = sdk_config(endpoint).await;
    let client = calls.dynamodb(&config);
    let table = format!(
        "bench-ours-{round}-{}",
        hex::encode(firmspace::ids::random_bytes::<4>())
    );
    schema::create_table(&client, &table).await?;
    let store = sealing_store(&config, client, &table).await?;
    let org = OrgId::generate();
    let integration = IntegrationId::generate(&org);
    let invoices = seed(&store, &org, &integration).await?;
    let deliveries: Arc<Vec<lambda_http::Request>> = Arc::new(
        workload(&org, &integration, &invoices)?
            .iter()
            .map(request)
            .collect(),
    );
    let app = Arc::new(payment_webhook::app(store));
    let next = Arc::new(AtomicUsize::new(0));
    let now = firmspace::time::from_unix(SIGNED_AT + 10).expect("a time");
    warm_up(&app, &integration, now).await?;
    calls.clear();
    let (cpu0, emu0, started) = (
        cpu_seconds("self")?,
        cpu_seconds(emulator_pid)?,
        Instant::now(),
    );
    let senders = (0..SENDERS).map(|_| {
        let (app, next, deliveries) = (app.clone(), next.clone(), deliveries.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while let Some(req) = deliveries.get(next.fetch_add(1, Ordering::Relaxed)) {
                let t = Instant::now();
                let res = app
                    .respond(req, now)
                    .await
                    .map_err(|e| anyhow::anyhow!("{} {}", e.status, e.detail))?;
                if res.status() != 200 {
                    bail!("a delivery answered {}", res.status());
                }
                latencies.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            Ok(latencies)
        })
    });
    let mut latencies = Vec::new();
    for sender in futures::future::join_all(senders).await {
        latencies.extend(sender??);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (cpu, emu) = (
        cpu_seconds("self")? - cpu0,
        cpu_seconds(emulator_pid)? - emu0,
    );
    let mut by_op = std::collections::BTreeMap::<String, usize>::new();
    for op in calls.take() {
        *by_op.entry(op).or_default() += 1;
    }
    println!("       calls: {by_op:?}");
    let calls = by_op.values().sum::<usize>();
    Ok(summarise(latencies, seconds, calls, cpu, emu))
}

/// One ignored delivery (a payment still processing) before the clock starts: the function is
/// warm, its integration cached, as in a Lambda container past its first request.
async fn warm_up(
    app: &payment_webhook::App,
    integration: &IntegrationId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    let body = r#"{"type":"payment.processing","data":{}}"#;
    let sig = firmspace::signature::standard::sign(SECRET, "msg_warm", SIGNED_AT, body.as_bytes())?;
    let warm = json!({"headers": {"webhook-id": "msg_warm", "webhook-timestamp": SIGNED_AT.to_string(), "webhook-signature": sig},
        "body": body, "path": format!("/hooks/{}/payments", integration.id)});
    let res = app
        .respond(&request(&warm), now)
        .await
        .map_err(|e| anyhow::anyhow!("warm-up: {}", e.detail))?;
    if res.status() != 200 {
        bail!("warm-up answered {}", res.status());
    }
    Ok(())
}

fn print(name: &str, f: &Figures) {
    println!(
        "{name:<6} {:>9.0} ev/s  median {:>6.2} ms  p99 {:>7.2} ms  {:>5.3} calls/event  cpu {:>5.2} ms/event  ministack cpu {:>5.2} ms/event",
        f.events_per_s, f.median_ms, f.p99_ms, f.calls_per_event, f.cpu_ms_per_event, f.emulator_cpu_ms_per_event
    );
}

fn median(runs: &[Figures], pick: fn(&Figures) -> f64) -> f64 {
    let mut v: Vec<f64> = runs.iter().map(pick).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `cargo xtask bench`: builds the xtask optimised (profile `bench-xtask`) and runs the
/// measurement there, so our side is timed as it ships.
pub fn optimised() -> Result<()> {
    crate::stack::run(
        Command::new(crate::stack::cargo())
            .current_dir(root())
            .args([
                "run",
                "--quiet",
                "--profile",
                "bench-xtask",
                "-p",
                "xtask",
                "--",
                "bench-run",
            ]),
    )
}

/// The measurement itself (`cargo xtask bench-run`, in whatever profile it was built).
pub async fn run() -> Result<()> {
    let stack = Stack {
        name: "firmspace-bench",
        port: 4588,
        stage: "bench",
    };
    stack.start().await?;
    let pid = std::fs::read_to_string(stack.pid_file())
        .context("ministack's pid")?
        .trim()
        .to_owned();
    let python = crate::peer::python()?;
    let endpoint = stack.endpoint();
    let (mut our_runs, mut peer_runs) = (Vec::new(), Vec::new());
    println!("== {NEW} new payments + {REPEATS} repeats, {SENDERS} concurrent senders, {ROUNDS} rounds alternated");
    for round in 0..ROUNDS {
        let o = ours(&endpoint, &pid, round).await?;
        print("ours", &o);
        our_runs.push(o);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let p = crate::peer::run(&python, &endpoint, &pid, round).await?;
        print("peer", &p);
        peer_runs.push(p);
    }
    let ev = |r: &Figures| r.events_per_s;
    let ratio = median(&our_runs, ev) / median(&peer_runs, ev);
    println!(
        "\nmedians: ours {:.0} ev/s, peer {:.0} ev/s: {ratio:.2}x",
        median(&our_runs, ev),
        median(&peer_runs, ev)
    );
    let calls = median(&our_runs, |r| r.calls_per_event);
    println!(
        "goal: <= 1.8 DynamoDB calls per event (warm): {calls:.3} {}",
        if calls <= 1.8 { "PASS" } else { "FAIL" }
    );
    println!(
        "goal: >= 2.5x the peer's events/s: {ratio:.2}x {}",
        if ratio >= 2.5 { "PASS" } else { "FAIL" }
    );
    stack.stop()
}
