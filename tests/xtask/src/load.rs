//! `cargo xtask load [RATE [SECONDS]]`: a bounded, self-stopping load through the running local
//! stack's API Gateway URL (loopback only; `cargo xtask up` first). At RATE sends a second
//! (default 20) for SECONDS (default 30) it sends a mix of every event kind (payments, messages,
//! calls, SMS events, bank rows), each kind in turn: 20 % of the sends are repeats of an earlier
//! event, and one new event in 25 is sent as a burst of 20 concurrent copies. Then it prints, per kind, the answers
//! by status and the p50/p99 latency; after the consequences settle, the effects in the table
//! against what was sent (each event exactly once, each consequence exactly once); and the
//! DynamoDB calls per event, from the functions' own `dynamodb_calls` metric in their logs; and
//! what an event of each kind cost (write and read units, SQS requests, invocations and the
//! dollars a million, `prices`), from the product's own meter (`GET /ops/summary`'s `units`).
//! Zero 5xx, zero missing and zero extra effects is the bar: it exits non-zero otherwise.

use crate::stack::{Coordinates, Stack, REGION};
use anyhow::{bail, Context, Result};
use firmspace::signature::standard;
use firmspace::store::item::Read;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KINDS: [&str; 5] = ["payment", "message", "call", "sms", "bank_row"];
/// Of every 10 sends, this many repeat an earlier event.
const REPEATS_PER_10: u64 = 2;
/// One in this many new events is sent as a burst.
const BURST_EVERY: u64 = 25;
const BURST: usize = 20;
/// Sends under way at most; beyond, the schedule waits (the stack is falling behind).
const IN_FLIGHT_MAX: usize = 256;

/// What the load needs from the stack: an organisation with one integration per kind.
pub(crate) struct Target {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) key: String,
    pub(crate) org: String,
    invoice: String,
    pub(crate) payments: (String, String),
    messages: (String, String),
    sms: (String, String),
    csv: String,
}

/// One request of the load: its kind, the event it carries (`n`), and how it is sent.
#[derive(Clone)]
pub(crate) struct Send {
    pub(crate) kind: &'static str,
    pub(crate) n: u64,
}

/// One answer: its kind, status and latency.
pub(crate) type Answer = (&'static str, u16, Duration);

pub async fn run(rate: f64, seconds: u64) -> Result<()> {
    if !(0.5..=500.0).contains(&rate) || !(1..=600).contains(&seconds) {
        bail!("RATE is 0.5 to 500 events a second, SECONDS 1 to 600");
    }
    let coords = loopback_stack()?;
    let target = Arc::new(Target::new(&coords, "Load").await?);
    let started_ms = chrono::Utc::now().timestamp_millis();
    println!(
        "== load: {rate} sends/s for {seconds} s through {}",
        coords.api_url
    );
    let (answers, sent) = drive(&target, rate, seconds, 0).await;
    let bad = report_answers(&answers);
    println!("== settling: waiting for every consequence");
    let effects = settle(&coords, &target, &sent).await?;
    let (by_function, log_bytes) = dynamodb_calls(&coords, started_ms).await?;
    let calls: u64 = by_function.values().sum();
    let events: u64 = sent.values().map(|s| s.len() as u64).sum();
    println!("DynamoDB calls by function: {by_function:?}");
    println!(
        "DynamoDB calls: {calls} for {} requests and {events} events: {:.2} per request, {:.2} per event (every function, consequences included)",
        answers.len(),
        calls as f64 / answers.len().max(1) as f64,
        calls as f64 / events.max(1) as f64
    );
    let log_per_event = log_bytes as f64 / events.max(1) as f64;
    println!("log volume: {log_bytes} bytes, {log_per_event:.0} an event");
    costs(&target, log_per_event).await?;
    if bad > 0 || effects > 0 {
        bail!("the bar is zero 5xx and zero missing or extra effects: {bad} 5xx, {effects} effects off");
    }
    println!("== zero 5xx, every effect exactly once");
    Ok(())
}

/// The local stack's coordinates, refused unless its gateway is on loopback.
pub(crate) fn loopback_stack() -> Result<Coordinates> {
    let coords = Coordinates::read(&Stack::local().coords_file())?;
    let host = reqwest::Url::parse(&coords.api_url)?;
    if !matches!(host.host_str(), Some("127.0.0.1" | "localhost")) {
        bail!(
            "the load runs against a loopback stack only, not {}",
            coords.api_url
        );
    }
    Ok(coords)
}

impl Target {
    pub(crate) async fn new(coords: &Coordinates, name: &str) -> Result<Self> {
        let http = firmspace::http::client(reqwest::Client::builder().pool_max_idle_per_host(64));
        let base = coords.api_url.trim_end_matches('/').to_owned();
        let post =
            |path: String, token: String, body: Value, headers: Vec<(&'static str, String)>| {
                let http = http.clone();
                let url = format!("{base}{path}");
                async move {
                    let mut req = http.post(&url).bearer_auth(token).json(&body);
                    for (name, value) in headers {
                        req = req.header(name, value);
                    }
                    let res = req.send().await.with_context(|| url.clone())?;
                    let status = res.status().as_u16();
                    let answer: Value = res.json().await.unwrap_or(Value::Null);
                    if status >= 400 {
                        bail!("{url} answered {status}: {answer}");
                    }
                    Ok::<Value, anyhow::Error>(answer)
                }
            };
        let made = post(
            "/api/orgs".into(),
            coords.admin_token.clone(),
            json!({"name": name}),
            vec![],
        )
        .await?;
        let key = made["api_key"].as_str().context("api_key")?.to_owned();
        let org = made["org_id"].as_str().context("org_id")?.to_owned();
        post(
            "/api/members".into(),
            key.clone(),
            json!({"user_id": "u1", "name": "Olena"}),
            vec![],
        )
        .await?;
        let integration = |body: Value| post("/api/integrations".into(), key.clone(), body, vec![]);
        let pair = |v: &Value| -> Result<(String, String)> {
            Ok((
                v["integration_id"]
                    .as_str()
                    .context("integration_id")?
                    .to_owned(),
                v["secret"].as_str().context("secret")?.to_owned(),
            ))
        };
        let payments =
            pair(&integration(json!({"kind": "payments", "provider": "standard"})).await?)?;
        let messages =
            pair(&integration(json!({"kind": "messages", "provider": "standard"})).await?)?;
        let sms = pair(&integration(json!({"kind": "sms", "provider": "standard"})).await?)?;
        let csv = integration(json!({"kind": "bank", "provider": "csv"})).await?;
        let csv = csv["integration_id"].as_str().context("csv")?.to_owned();
        let invoice = post(
            "/api/invoices".into(),
            key.clone(),
            json!({"gross": "9999999.00", "currency": "UAH"}),
            vec![],
        )
        .await?;
        let invoice = invoice["id"].as_str().context("invoice id")?.to_owned();
        let top_up = json!({"amount": "100000.00", "currency": "USD"});
        post(
            "/api/wallet/topups".into(),
            key.clone(),
            top_up,
            vec![("idempotency-key", "load-topup".into())],
        )
        .await?;
        Ok(Self {
            http,
            base,
            key,
            org,
            invoice,
            payments,
            messages,
            sms,
            csv,
        })
    }

    /// Sends one copy of `s` (a repeat is the same event, signed again): its answer.
    async fn send(&self, s: &Send) -> Answer {
        let started = Instant::now();
        let status = match self.request(s).send().await {
            Ok(res) => res.status().as_u16(),
            Err(_) => 599,
        };
        (s.kind, status, started.elapsed())
    }

    pub(crate) fn request(&self, s: &Send) -> reqwest::RequestBuilder {
        let n = s.n;
        let signed =
            |(id, secret): &(String, String), hook: &str, event_id: String, body: Value| {
                let raw = body.to_string();
                let at = chrono::Utc::now().timestamp();
                let signature =
                    standard::sign(secret, &event_id, at, raw.as_bytes()).unwrap_or_default();
                self.http
                    .post(format!("{}/hooks/{id}/{hook}", self.base))
                    .header("content-type", "application/json")
                    .header("webhook-id", event_id)
                    .header("webhook-timestamp", at.to_string())
                    .header("webhook-signature", signature)
                    .body(raw)
            };
        match s.kind {
            "payment" => signed(&self.payments, "payments", format!("msg_load_{n}"), json!({
                "type": "payment.succeeded",
                // Amounts of their own (odd cents, never a bank row's whole amount): the same
                // amount again on one invoice is lookalike money, a review item each.
                "data": {"payment_id": format!("pay_load_{n}"), "invoice_id": self.invoice,
                         "amount": format!("{}.{:02}", 1 + n / 99, n % 99 + 1), "currency": "UAH"}})),
            "message" => signed(&self.messages, "messages", format!("msg_load_{n}"), json!({
                "type": "message.received",
                "data": {"message_id": format!("m_load_{n}"), "chat_id": format!("chat-{}", n % 40),
                         "from": {"id": format!("u-{}", n % 40), "name": format!("Customer {}", n % 40)},
                         "text": format!("hello {n}")}})),
            "sms" => signed(&self.sms, "sms", format!("evt_load_{n}"), json!({
                "type": "sms.sent",
                "data": {"message_id": format!("SM_load_{n}"), "from": "+15550001111", "to": "+15550002222",
                         "text": "Your code", "segments": 1, "price": "0.01", "currency": "USD"}})),
            "call" => self
                .http
                .post(format!("{}/api/calls", self.base))
                .bearer_auth(&self.key)
                .json(&json!({"call_id": format!("load-{n}"), "direction": "inbound",
                    "peer": format!("+38044{:07}", n % 1000), "status": "completed", "duration": 5})),
            _ => self
                .http
                .post(format!("{}/api/integrations/{}/csv", self.base, self.csv))
                .bearer_auth(&self.key)
                .header("content-type", "text/csv")
                .body(format!(
                    "id,date,amount,currency,description\nload-{n},2026-12-01,+{}.00,UAH,Load {n}\n",
                    n % 90 + 1
                )),
        }
    }
}

/// The schedule: RATE new events a second for SECONDS, repeats and bursts among them, every
/// send its own task (at most `IN_FLIGHT_MAX` under way), the events numbered from `first`.
/// The answers, and the events sent by kind.
pub(crate) async fn drive(
    target: &Arc<Target>,
    rate: f64,
    seconds: u64,
    first: u64,
) -> (Vec<Answer>, HashMap<&'static str, HashSet<u64>>) {
    let total = (rate * seconds as f64).round() as u64;
    let every = Duration::from_secs_f64(1.0 / rate);
    let mut tick = tokio::time::interval(every);
    let mut tasks = tokio::task::JoinSet::new();
    let mut sent: HashMap<&'static str, HashSet<u64>> = HashMap::new();
    let mut answers = Vec::new();
    let mut history: Vec<Send> = Vec::new();
    // A fixed pseudo-random sequence (an LCG): the same load every run.
    let mut seed: u64 = 0x5eed;
    let mut roll = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let mut fresh_events = 0u64;
    for i in first..first + total {
        tick.tick().await;
        while tasks.len() >= IN_FLIGHT_MAX {
            if let Some(Ok(done)) = tasks.join_next().await {
                answers.extend(done);
            }
        }
        let (send, copies) = match (roll() % 10 < REPEATS_PER_10, history.is_empty()) {
            // A repeat: an earlier event again.
            (true, false) => (history[roll() as usize % history.len()].clone(), 1),
            _ => {
                // A new event, each kind in turn; one in `BURST_EVERY` sent as a burst.
                let kind = KINDS[(fresh_events % 5) as usize];
                let burst = roll() % BURST_EVERY == 0;
                fresh_events += 1;
                (Send { kind, n: i }, if burst { BURST } else { 1 })
            }
        };
        sent.entry(send.kind).or_default().insert(send.n);
        history.push(send.clone());
        let target = target.clone();
        tasks.spawn(async move {
            let copies = (0..copies).map(|_| target.send(&send));
            futures::future::join_all(copies).await
        });
    }
    while let Some(done) = tasks.join_next().await {
        if let Ok(done) = done {
            answers.extend(done);
        }
    }
    (answers, sent)
}

/// The latency at quantile `q` (0.5, 0.99) of these answers.
pub(crate) fn quantile(answers: &[Answer], q: f64) -> Duration {
    let mut times: Vec<Duration> = answers.iter().map(|a| a.2).collect();
    times.sort();
    let at = ((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1));
    times.get(at).copied().unwrap_or_default()
}

/// The answers whose label is `label`: how many of each status, and that count as a line
/// (`200: 54, 429: 3`).
pub(crate) fn by_status(
    answers: &[Answer],
    label: &str,
) -> (Vec<Answer>, BTreeMap<u16, usize>, String) {
    let mine: Vec<Answer> = answers.iter().filter(|a| a.0 == label).copied().collect();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for a in &mine {
        *statuses.entry(a.1).or_default() += 1;
    }
    let shown = statuses
        .iter()
        .map(|(s, n)| format!("{s}: {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    (mine, statuses, shown)
}

/// Per kind: answers by status, p50 and p99. How many were 5xx (or no answer).
pub(crate) fn report_answers(answers: &[Answer]) -> usize {
    let mut bad = 0;
    println!(
        "{:<9} {:>7}  {:<40} {:>9} {:>9}",
        "kind", "sent", "answers by status", "p50", "p99"
    );
    for kind in KINDS {
        let (mine, statuses, by_status) = by_status(answers, kind);
        bad += statuses
            .iter()
            .filter(|(s, _)| **s >= 500)
            .map(|(_, n)| n)
            .sum::<usize>();
        let at = |q: f64| quantile(&mine, q).as_secs_f64() * 1000.0;
        println!(
            "{kind:<9} {:>7}  {by_status:<40} {:>7.1}ms {:>7.1}ms",
            mine.len(),
            at(0.5),
            at(0.99)
        );
    }
    bad
}

/// The organisation's items, read whole from the table.
async fn items_of(coords: &Coordinates, org: &str) -> Result<Vec<firmspace::store::Item>> {
    let sdk = crate::throughput::sdk_config(&coords.aws_endpoint_url).await;
    let store = firmspace::store::Store::new(aws_sdk_dynamodb::Client::new(&sdk), &coords.table);
    Ok(store
        .scan_all()
        .await?
        .into_iter()
        .filter(|i| i.opt_str("org") == Some(org))
        .collect())
}

/// Every kind's events still waiting: the organisation's waiting marks, counted where they
/// are listed.
async fn waiting_counted(
    store: &firmspace::store::Store,
    org: &firmspace::ids::OrgId,
) -> Result<u64> {
    let (low, high) = firmspace::store::counters::waiting_range(org);
    let mut waiting = 0;
    for kind in firmspace::ops::EventKind::ALL {
        let list = firmspace::store::counters::waiting_all(kind);
        waiting += store
            .count_in(firmspace::store::Index::Keys, &list, Some((&low, &high)))
            .await?;
    }
    Ok(waiting)
}

/// Waits (up to two minutes) until every stored event's consequences are there, then counts
/// per kind the events stored against those sent and the consequences against those the events
/// imply. How many are off (missing or extra).
pub(crate) async fn settle(
    coords: &Coordinates,
    target: &Target,
    sent: &HashMap<&'static str, HashSet<u64>>,
) -> Result<u64> {
    let org = firmspace::ids::OrgId::parse(&target.org)?;
    let sdk = crate::throughput::sdk_config(&coords.aws_endpoint_url).await;
    let store = firmspace::store::Store::new(aws_sdk_dynamodb::Client::new(&sdk), &coords.table);
    let deadline = Instant::now() + Duration::from_secs(120);
    let off_by_waiting;
    let (items, states) = loop {
        let items = items_of(coords, &target.org).await?;
        let events: Vec<_> = items
            .iter()
            .filter(|i| i.opt_str("gsi2pk").is_some_and(|l| l.contains("#EVENTS#")))
            .cloned()
            .collect();
        let carriers = firmspace::effects::waiting::carriers(&store, &events).await?;
        let states = firmspace::effects::waiting::states(&store, &org, &carriers).await?;
        let missing = states.iter().flatten().filter(|c| !c.done).count();
        // The waiting counters, settled by the workers after the last consequence of each event.
        let waiting = waiting_counted(&store, &org).await?;
        if (missing == 0 && waiting == 0) || Instant::now() > deadline {
            println!("events still waiting by the counters: {waiting}");
            off_by_waiting = waiting;
            break (items, states);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let mut off = off_by_waiting;
    println!(
        "{:<9} {:>7} {:>7} {:>8} {:>6}",
        "kind", "sent", "stored", "missing", "extra"
    );
    for kind in KINDS {
        let list = format!("#EVENTS#{kind}");
        let stored = items
            .iter()
            .filter(|i| i.opt_str("gsi2pk").is_some_and(|l| l.ends_with(&list)))
            .count() as u64;
        let wanted = sent.get(kind).map_or(0, |s| s.len() as u64);
        let (missing, extra) = (wanted.saturating_sub(stored), stored.saturating_sub(wanted));
        off += missing + extra;
        println!("{kind:<9} {wanted:>7} {stored:>7} {missing:>8} {extra:>6}");
    }
    let implied: Vec<_> = states.iter().flatten().collect();
    let missing = implied.iter().filter(|c| !c.done).count() as u64;
    let keys: HashSet<&str> = implied.iter().map(|c| c.key.as_str()).collect();
    let made = items
        .iter()
        .filter(|i| {
            matches!(
                i.opt_str("kind"),
                Some("notification" | "activity" | "fired")
            )
        })
        .count() as u64;
    let extra = made.saturating_sub(implied.len() as u64 - missing);
    println!(
        "consequences: {} implied ({} distinct keys), {} there, {missing} missing, {extra} extra",
        implied.len(),
        keys.len(),
        implied.len() as u64 - missing
    );
    Ok(off + missing + extra)
}

/// A call of ministack's CloudWatch Logs (its JSON protocol; the local stack checks no
/// signature, so none is made).
async fn logs(http: &reqwest::Client, endpoint: &str, action: &str, body: Value) -> Result<Value> {
    let credential = format!("Credential=test/20260101/{REGION}/logs/aws4_request");
    let res = http
        .post(endpoint)
        .header("content-type", "application/x-amz-json-1.1")
        .header("x-amz-target", format!("Logs_20140328.{action}"))
        .header(
            "authorization",
            format!("AWS4-HMAC-SHA256 {credential}, SignedHeaders=host, Signature=0"),
        )
        .json(&body)
        .send()
        .await
        .with_context(|| format!("logs {action}"))?;
    Ok(res.json().await?)
}

/// What an event of each kind cost, as the product metered it (`GET /ops/summary`'s `units`):
/// after a pause of one flush period, one more event of each kind makes every warm function
/// write what it held. Printed per kind with the dollars a million (`prices`).
async fn costs(target: &Target, log_per_event: f64) -> Result<()> {
    tokio::time::sleep(Duration::from_secs(11)).await;
    for (i, kind) in KINDS.iter().enumerate() {
        target
            .send(&Send {
                kind,
                n: 900_000 + i as u64,
            })
            .await;
    }
    // Their consequences, and the workers' writes of what they held.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let summary: Value = target
        .http
        .get(format!("{}/ops/summary?org={}", target.base, target.org))
        .bearer_auth(&target.key)
        .send()
        .await?
        .json()
        .await?;
    println!(
        "what an event cost, its consequences included (the product's meter, GET /ops/summary):"
    );
    println!("  kind       events  write units  read units  SQS sent  invocations  $ a million");
    for kind in KINDS {
        let figures = &summary["events"][kind];
        let units = &figures["units"];
        let f = |name: &str| units[name].as_f64().unwrap_or(0.0);
        let per = crate::prices::PerEvent {
            write_units: f("write"),
            read_units: f("read"),
            sqs_sent: f("sqs"),
            invocations: f("invocations"),
            http: 1.0,
            log_bytes: log_per_event,
        };
        println!(
            "  {kind:<10} {:>6}  {:>11.2}  {:>10.2}  {:>8.2}  {:>11.2}  {:>11.2}",
            figures["today"].as_u64().unwrap_or(0),
            per.write_units,
            per.read_units,
            per.sqs_sent,
            per.invocations,
            per.dollars_a_million()
        );
    }
    Ok(())
}

/// A line Lambda itself writes about an invocation (`START`, `END`, `REPORT`): ministack writes
/// them whatever the function's logging configuration, and the template's `SystemLogLevel:
/// WARN` keeps them out of CloudWatch, so they cost nothing there and the log volume leaves
/// them out.
fn is_platform_line(message: &str) -> bool {
    ["START RequestId:", "END RequestId:", "REPORT RequestId:"]
        .iter()
        .any(|p| message.starts_with(p))
}

/// The `dynamodb_calls` the stack's functions counted since `since_ms` (each function writes
/// one metric document an invocation into its log group), and the bytes of every line of the
/// window but Lambda's own (`is_platform_line`).
async fn dynamodb_calls(
    coords: &Coordinates,
    since_ms: i64,
) -> Result<(BTreeMap<String, u64>, u64)> {
    let http = firmspace::http::client(reqwest::Client::builder());
    let endpoint = coords.aws_endpoint_url.as_str();
    let prefix = format!("/aws/lambda/{}-", coords.stack_name);
    let groups = logs(
        &http,
        endpoint,
        "DescribeLogGroups",
        json!({"logGroupNamePrefix": prefix}),
    )
    .await?;
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    let mut bytes = 0u64;
    for group in groups["logGroups"].as_array().into_iter().flatten() {
        let Some(name) = group["logGroupName"].as_str() else {
            continue;
        };
        let mut token: Option<String> = None;
        loop {
            let mut ask = json!({"logGroupName": name, "startTime": since_ms});
            if let Some(token) = &token {
                ask["nextToken"] = json!(token);
            }
            let page = logs(&http, endpoint, "FilterLogEvents", ask).await?;
            for event in page["events"].as_array().into_iter().flatten() {
                let message = event["message"].as_str().unwrap_or_default();
                if is_platform_line(message) {
                    continue;
                }
                bytes += message.len() as u64;
                let line: Value = serde_json::from_str(message).unwrap_or(Value::Null);
                let function = line["function"].as_str().unwrap_or("?").to_owned();
                *total.entry(function).or_default() += line["dynamodb_calls"].as_u64().unwrap_or(0);
            }
            token = page["nextToken"].as_str().map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
    }
    Ok((total, bytes))
}

#[cfg(test)]
mod tests {
    use super::is_platform_line;

    #[test]
    fn lambdas_own_lines_are_left_out_of_the_log_volume_and_the_functions_lines_are_not() {
        for platform in [
            "START RequestId: 7ce3 Version: $LATEST",
            "END RequestId: 7ce3",
            "REPORT RequestId: 7ce3\tDuration: 61 ms\tBilled Duration: 61 ms",
        ] {
            assert!(is_platform_line(platform), "{platform}");
        }
        for ours in [
            r#"{"function":"fanout","level":"WARN","message":"records cannot be written"}"#,
            r#"{"_aws":{"CloudWatchMetrics":[]},"dynamodb_calls":6,"function":"api"}"#,
            "a text line naming START RequestId: later",
        ] {
            assert!(!is_platform_line(ours), "{ours}");
        }
    }
}
