//! `cargo xtask coldstart [--profile NAME]`: each function's release bootstrap cold start on this
//! machine, no AWS.
//! Builds the one release bootstrap for the host, serves a loopback stand-in of the Lambda Runtime
//! API (one event per process; a second `/next` never answers) and runs every function 10 times
//! with one representative event. Init is spawn to the first `/next`; first invocation is that
//! answer to the response or error post; peak RSS is `VmHWM` read right after it, before the kill.
//! AWS endpoints point at a closed port and `AWS_MAX_ATTEMPTS=1` turns off the SDK's retry
//! backoff, so store calls fail fast and handlers answer with an error, which still ends the
//! invocation. A measurement, not a test: it prints figures, exits 0.

use crate::stack::{cargo, root, run as run_cmd, REGION};
use anyhow::{bail, Context, Result};
use axum::{
    body::Bytes, extract::State, http::StatusCode, response::IntoResponse, routing, Router,
};
use serde_json::{json, Value};
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FUNCTIONS: &str =
    "payment-webhook call-webhook message-webhook bank-webhook sms-webhook lead-webhook api ops fanout notify-worker automation-worker match-worker bank-import";
const RUNS: usize = 10;
const NOWHERE: &str = "http://127.0.0.1:9";
const PATIENCE: Duration = Duration::from_secs(20);
const GOAL_INIT_MS: f64 = 10.0;
/// Peak memory a function may reach: Lambda bills the memory configured (256 MB here), not what
/// is resident, so the goal keeps every function a tenth of it; the binary is a position-
/// independent executable (its load address randomised) and pays about 1.4 MiB for it.
const GOAL_RSS_MIB: f64 = 24.0;
const ORG: &str = "o0123456789ab";
const ANSWER: &str = "/2018-06-01/runtime/invocation/{id}/{answer}";
const ARN: &str = "arn:aws:lambda:eu-central-1:000000000000:function:coldstart";
const TRACE: &str = "Root=1-00000000-000000000000000000000000;Sampled=0";

/// What the stand-in knows about the one process being measured.
#[derive(Default)]
struct Current {
    event: Option<Value>,
    next_at: Option<Instant>,
    answered: Option<(Instant, String)>,
}

type Api = Arc<Mutex<Current>>;

struct Sample {
    init_ms: f64,
    invoke_ms: f64,
    rss_mib: f64,
    answer: String,
}

/// `--profile NAME` measures another build profile (e.g. `bench-xtask`: no LTO, 16 codegen
/// units, not stripped), to see what the release profile's settings buy.
pub async fn run(profile: &str) -> Result<()> {
    let mut build = Command::new(cargo());
    build
        .current_dir(root())
        .args(["build", "--profile", profile]);
    build.args(["-p", "firmspace-lambda", "--bin", "bootstrap"]);
    run_cmd(&mut build)?;
    // Where cargo put it: `CARGO_TARGET_DIR` when set (a clean build measured elsewhere).
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), Into::into);
    let bin = target.join(profile).join("bootstrap");
    println!(
        "\n{:<18} {:>7} {:>22} {:>11} {:>9}  {:<6} answer",
        "function", "MiB", "init ms med (min-max)", "1st inv ms", "RSS MiB", "goal"
    );
    for name in FUNCTIONS.split(' ') {
        let size = std::fs::metadata(&bin)
            .with_context(|| bin.display().to_string())?
            .len();
        let mut samples = Vec::new();
        for _ in 0..RUNS {
            match once(&bin, name).await {
                Ok(s) => samples.push(s),
                Err(e) => {
                    println!("{name:<18} {:>7.2}  did not finish a run: {e:#}", mib(size));
                    break;
                }
            }
        }
        if samples.len() == RUNS {
            print_row(name, size, &samples);
        }
    }
    println!(
        "\ngoal: init < {GOAL_INIT_MS} ms and peak RSS < {GOAL_RSS_MIB} MiB for every function"
    );
    println!("({RUNS} runs each; binary size is bytes / 2^20; RSS is VmHWM)");
    Ok(())
}

fn router(api: Api) -> Router {
    Router::new()
        .route("/2018-06-01/runtime/invocation/next", routing::get(next))
        .route(ANSWER, routing::post(answer))
        .route("/2018-06-01/runtime/init/error", routing::post(answer))
        .with_state(api)
}

/// The one event of this process; any later `/next` waits until the process is killed.
async fn next(State(api): State<Api>) -> impl IntoResponse {
    let event = {
        let mut current = api.lock().expect("not poisoned");
        current.next_at = current.next_at.or(Some(Instant::now()));
        current.event.take()
    };
    let Some(event) = event else {
        loop {
            std::future::pending::<()>().await;
        }
    };
    let deadline = chrono::Utc::now().timestamp_millis() + 30_000;
    let headers = [
        ("lambda-runtime-aws-request-id", "coldstart-1".to_owned()),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        ("lambda-runtime-invoked-function-arn", ARN.to_owned()),
        ("lambda-runtime-trace-id", TRACE.to_owned()),
    ];
    (headers, axum::Json(event))
}

/// A response, invocation error or init error: when it came, and a word on what it said.
async fn answer(State(api): State<Api>, body: Bytes) -> StatusCode {
    let at = Instant::now();
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    let failed = v["batchItemFailures"].as_array().map(Vec::len);
    let said = match (&v["statusCode"], failed, v["errorType"].as_str()) {
        (Value::Number(code), ..) => format!("HTTP {code}"),
        (_, Some(n), _) => format!("{n} of 1 failed"),
        (.., Some(error)) => format!("error {error}"),
        _ => "ok".to_owned(),
    };
    let mut current = api.lock().expect("not poisoned");
    current.answered = current.answered.take().or(Some((at, said)));
    StatusCode::ACCEPTED
}

/// One cold start: spawn, wait for the answer, read the peak RSS, kill. Each run has its own
/// stand-in on a fresh port, so a killed process's late second `/next` cannot take the event.
async fn once(bin: &Path, name: &str) -> Result<Sample> {
    let api = Arc::new(Mutex::new(Current {
        event: Some(event(name)),
        ..Current::default()
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(axum::serve(listener, router(api.clone())).into_future());
    let spawned = Instant::now();
    let mut child = command(bin, name, addr).spawn().context("spawn")?;
    let outcome = wait_answer(&api, &mut child).await;
    let rss_kib = peak_rss_kib(child.id());
    let _ = child.kill();
    child.wait()?;
    server.abort();
    let next_at = api.lock().expect("not poisoned").next_at;
    let reached = if next_at.is_some() {
        "reached /next"
    } else {
        "never reached /next"
    };
    let (answered_at, answer) = outcome.context(reached)?;
    let next_at = next_at.with_context(|| format!("never reached /next, answered {answer}"))?;
    Ok(Sample {
        init_ms: ms(next_at - spawned),
        invoke_ms: ms(answered_at - next_at),
        rss_mib: rss_kib.context("no VmHWM")? as f64 / 1024.0,
        answer,
    })
}

/// Polls for the answer (its instant is taken by the handler) or the child's early exit.
async fn wait_answer(api: &Api, child: &mut Child) -> Result<(Instant, String)> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(answer) = api.lock().expect("not poisoned").answered.take() {
            return Ok(answer);
        }
        if let Some(status) = child.try_wait()? {
            bail!("exited with {status} without an answer");
        }
        if Instant::now() > deadline {
            bail!("no answer within {PATIENCE:?}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn command(bin: &Path, name: &str, addr: SocketAddr) -> Command {
    let queue = format!("{NOWHERE}/000000000000/q");
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .env("_HANDLER", name)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
        .env("AWS_REGION", REGION)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("TABLE_NAME", "coldstart")
        .env("AWS_ENDPOINT_URL", NOWHERE)
        .env("AWS_MAX_ATTEMPTS", "1")
        .env("ADMIN_TOKEN", "coldstart-admin-token")
        .env("DIGEST_KEY_ID", "coldstart-digests")
        .env("PUBLIC_URL", "https://api.example.com")
        .env("ATTACHMENTS_BUCKET", "coldstart")
        .env("NOTIFICATIONS_QUEUE_URL", &queue)
        .env("AUTOMATION_QUEUE_URL", &queue)
        .env("MATCHING_QUEUE_URL", &queue)
        .env("NOTIFICATIONS_DLQ_URL", &queue)
        .env("AUTOMATION_DLQ_URL", &queue)
        .env("MATCHING_DLQ_URL", &queue)
        .env("IMPORT_QUEUE_URL", &queue)
        .env("FILE_QUEUE_URL", &queue)
        .env("STAGE", "test")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn print_row(name: &str, size: u64, samples: &[Sample]) {
    let (init, init_min, init_max) = stats(samples, |s| s.init_ms);
    let invoke = stats(samples, |s| s.invoke_ms).0;
    let rss = stats(samples, |s| s.rss_mib).0;
    let pass = init < GOAL_INIT_MS && rss < GOAL_RSS_MIB;
    let verdict = if pass { "PASS" } else { "FAIL" };
    let init_text = format!("{init:.2} ({init_min:.2}-{init_max:.2})");
    let said = &samples[samples.len() - 1].answer;
    println!(
        "{name:<18} {:>7.2} {init_text:>22} {invoke:>11.2} {rss:>9.2}  {verdict:<6} {said}",
        mib(size)
    );
}

/// Median, min and max; the median of an even count is the mean of the middle two.
fn stats(samples: &[Sample], f: fn(&Sample) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = samples.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    ((v[(n - 1) / 2] + v[n / 2]) / 2.0, v[0], v[n - 1])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// One representative event per function, as its trigger delivers it.
fn event(name: &str) -> Value {
    let (at, key) = ("2026-12-02T10:00:00.000Z", "payment:stripe:pi_1");
    match name {
        "payment-webhook" => webhook_event(),
        "call-webhook" => call_event(),
        "message-webhook" => message_event(),
        "bank-webhook" => bank_event(),
        "sms-webhook" => sms_event(),
        "lead-webhook" => lead_event(),
        "api" => http_event(
            json!({"routeKey": "ANY /api/{proxy+}", "rawPath": "/api/invoices",
            "pathParameters": {"proxy": "invoices"},
            "headers": {"authorization": format!("Bearer fsk_{ORG}_x")}}),
        ),
        "ops" => http_event(
            json!({"routeKey": "ANY /ops/{proxy+}", "rawPath": "/ops/summary",
            "pathParameters": {"proxy": "summary"},
            "headers": {"authorization": format!("Bearer fsk_{ORG}_x")}}),
        ),
        "fanout" => stream_event(),
        "notify-worker" => sqs_event(json!({"records": [
            {"type": "notification", "org": ORG, "key": key, "recipient": "u1",
            "text": "Invoice paid", "at": at},
            {"type": "activity", "org": ORG, "entity_kind": "contact", "entity_id": "c1",
            "key": "k1", "kind": "note", "text": "hello", "at": at}]})),
        "bank-import" => {
            json!({"version": "0", "id": "coldstart", "detail-type": "Scheduled Event",
            "source": "aws.events", "account": "000000000000", "time": at, "region": "eu-central-1",
            "resources": [], "detail": {}})
        }
        "match-worker" => sqs_event(json!({"type": "bank_credit", "org": ORG,
            "tx_id": "btx_0123456789abcdef01234567", "at": at})),
        _ => sqs_event(
            json!({"type": "trigger", "org": ORG, "trigger": "invoice.paid",
            "event_key": key, "at": at, "context": {}}),
        ),
    }
}

/// A Standard Webhooks delivery; the signature is not valid, and need not be.
fn webhook_event() -> Value {
    let id = format!("{ORG}_0123456789abcdef");
    let body = json!({"type": "payment.succeeded",
        "data": {"id": "pi_1", "amount": "40.00", "currency": "UAH", "invoice": "INV-00001"}});
    http_event(json!({"routeKey": "POST /hooks/{integration_id}/payments",
        "rawPath": format!("/hooks/{id}/payments"), "pathParameters": {"integration_id": id},
        "headers": {"content-type": "application/json", "webhook-id": "msg_coldstart",
            "webhook-timestamp": chrono::Utc::now().timestamp().to_string(),
            "webhook-signature": "v1,bm90IGEgcmVhbCBzaWduYXR1cmU="},
        "body": body.to_string()}))
}

/// A Twilio status callback; the signature is not valid, and need not be.
fn call_event() -> Value {
    let id = format!("{ORG}_0123456789abcdef");
    http_event(json!({"routeKey": "POST /hooks/{integration_id}/calls",
        "rawPath": format!("/hooks/{id}/calls"), "pathParameters": {"integration_id": id},
        "headers": {"content-type": "application/x-www-form-urlencoded",
            "x-twilio-signature": "bm90IGEgcmVhbCBzaWduYXR1cmU="},
        "body": "CallSid=CA1&Direction=inbound&From=%2B14158675310&To=%2B18005551212&CallStatus=no-answer"}))
}

/// A Telegram update; the secret token is not the integration's, and need not be.
fn message_event() -> Value {
    let id = format!("{ORG}_0123456789abcdef");
    let body = json!({"update_id": 1, "message": {"message_id": 7, "date": 1796205600,
        "from": {"id": 42, "first_name": "Olena"}, "chat": {"id": 42, "type": "private"},
        "text": "hello"}});
    http_event(json!({"routeKey": "POST /hooks/{integration_id}/messages",
        "rawPath": format!("/hooks/{id}/messages"), "pathParameters": {"integration_id": id},
        "headers": {"content-type": "application/json",
            "x-telegram-bot-api-secret-token": "not-the-token"},
        "body": body.to_string()}))
}

/// A carrier's `sms.sent`, Standard Webhooks signed; the signature is not valid, and need not be.
fn sms_event() -> Value {
    let id = format!("{ORG}_0123456789abcdef");
    let body = json!({"type": "sms.sent", "data": {"message_id": "SM1", "from": "+15550001111",
        "to": "+15550002222", "text": "hello", "segments": 1, "price": "0.05", "currency": "USD"}});
    http_event(json!({"routeKey": "POST /hooks/{integration_id}/sms",
        "rawPath": format!("/hooks/{id}/sms"), "pathParameters": {"integration_id": id},
        "headers": {"content-type": "application/json", "webhook-id": "evt_coldstart",
            "webhook-timestamp": "1796205600", "webhook-signature": "v1,bm90IGEgcmVhbCBzaWduYXR1cmU="},
        "body": body.to_string()}))
}

/// A website form's submission, as the lead webhook gets it.
fn lead_event() -> Value {
    let id = format!("{ORG}_0123456789abcdef");
    let body = json!({"type": "lead.submitted", "data": {"submission_id": "s-1", "name": "Olena",
        "email": "olena@example.com", "phone": "+380441234567", "message": "Call me"}});
    http_event(json!({"routeKey": "POST /hooks/{integration_id}/leads",
        "rawPath": format!("/hooks/{id}/leads"), "pathParameters": {"integration_id": id},
        "headers": {"content-type": "application/json", "webhook-id": "msg_coldstart",
            "webhook-timestamp": "1796205600", "webhook-signature": "v1,bm90IGEgcmVhbCBzaWduYXR1cmU="},
        "body": body.to_string()}))
}

/// monobank's push of a statement row to an integration that does not exist.
fn bank_event() -> Value {
    let id = format!("{ORG}_0123456789abcdef0123456789abcdef");
    let body = json!({"type": "StatementItem", "data": {"account": "0", "statementItem": {
        "id": "ZuHWzqkKGVo=", "time": 1796205600, "description": "INV-00001", "amount": 4000,
        "currencyCode": 980}}});
    http_event(json!({"routeKey": "POST /hooks/{integration_id}/bank",
        "rawPath": format!("/hooks/{id}/bank"), "pathParameters": {"integration_id": id},
        "headers": {"content-type": "application/json"}, "body": body.to_string()}))
}

/// API Gateway HTTP API payload format 2.0, as `lambda_http` reads it; `request` holds the
/// `routeKey` ("METHOD /route"), `rawPath`, headers, path parameters and body.
fn http_event(request: Value) -> Value {
    let (route, path) = (request["routeKey"].clone(), request["rawPath"].clone());
    let method = route
        .as_str()
        .and_then(|r| r.split(' ').next())
        .unwrap_or("GET");
    let method = if method == "ANY" { "GET" } else { method };
    let mut event = json!({"version": "2.0", "rawQueryString": "", "isBase64Encoded": false,
        "requestContext": {"accountId": "000000000000", "apiId": "coldstart",
            "domainName": "coldstart.execute-api.eu-central-1.amazonaws.com",
            "domainPrefix": "coldstart", "requestId": "coldstart-1", "routeKey": route,
            "stage": "$default", "time": "02/Dec/2026:10:00:00 +0000", "timeEpoch": 1796205600000u64,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7", "userAgent": "coldstart"}}});
    if let (Some(event), Value::Object(request)) = (event.as_object_mut(), request) {
        event.extend(request);
    }
    event
}

/// One INSERT of a payment event item; the function may find it unreadable, which is fine here.
fn stream_event() -> Value {
    let s = |v: &str| json!({ "S": v });
    let image = json!({"pk": s(&format!("ORG#{ORG}")), "sk": s("EVENT#payment:stripe:pi_1"),
        "kind": s("payment_event"), "org": s(ORG), "amount": s("40.00"), "currency": s("UAH")});
    json!({"Records": [{"eventID": "1", "eventName": "INSERT", "eventVersion": "1.1",
        "eventSource": "aws:dynamodb", "awsRegion": REGION,
        "dynamodb": {"ApproximateCreationDateTime": 1796205600.0, "Keys": {}, "NewImage": image,
            "SequenceNumber": "100", "SizeBytes": 100, "StreamViewType": "NEW_IMAGE"}}]})
}

fn sqs_event(body: Value) -> Value {
    json!({"Records": [{"messageId": "m1", "receiptHandle": "h1", "body": body.to_string(),
        "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
        "eventSource": "aws:sqs", "awsRegion": REGION}]})
}
