//! `cargo xtask send PROVIDER`: signs a realistic delivery exactly as the provider does and sends
//! it, `--repeat` times, `--concurrent` at once, printing every answer — what `stripe trigger`
//! and the Svix CLI give their users.
//!
//! ```text
//! cargo xtask send standard|stripe|monobank [--to WEBHOOK_URL --secret SECRET]
//!     [--invoice ID] [--amount 40.00] [--currency UAH] [--id PAYMENT_ID] [--status success]
//!     [--repeat N] [--concurrent N]
//! ```
//! Without `--to`, it makes an organisation, an integration of that provider and a 100.00 UAH
//! invoice in the running local stack (`cargo xtask up`) and sends there. monobank deliveries
//! are signed with a fixed demo merchant key (never a real one); `--to` a monobank integration
//! needs that integration to hold `demo_monobank_public_key()`.

use crate::stack::{Coordinates, Stack};
use anyhow::{bail, Context, Result};
use firmspace::signature::{standard, stripe};
use serde_json::{json, Value};
use std::collections::HashMap;

/// One signed delivery: its headers and raw body.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// What to pay.
pub struct Payment {
    pub id: String,
    pub invoice: Option<String>,
    pub amount: String,
    pub currency: String,
    /// monobank's status (`success`, `reversed`, `processing`, ...).
    pub status: String,
}

/// The demo merchant key the monobank deliveries of `send` are signed with.
fn demo_monobank_key() -> firmspace::signature::monobank::StandIn {
    firmspace::signature::monobank::StandIn::from_scalar([7u8; 32]).expect("a valid P-256 scalar")
}

/// Base64 of the demo merchant key's PEM, as monobank hands a public key out.
pub fn demo_monobank_public_key() -> String {
    demo_monobank_key().public_key()
}

fn minor_units(amount: &str) -> Result<i64> {
    let value: rust_decimal::Decimal = amount.parse().context("--amount is not a number")?;
    (value * rust_decimal::Decimal::ONE_HUNDRED)
        .trunc()
        .try_into()
        .context("--amount is too large")
}

/// Signs `payment` for `provider` at unix time `at`.
pub fn delivery(provider: &str, secret: &str, p: &Payment, at: i64) -> Result<Delivery> {
    let header = |k: &str, v: String| (k.to_owned(), v);
    Ok(match provider {
        "standard" => {
            let body = json!({"type": "payment.succeeded", "data": {"payment_id": p.id, "invoice_id": p.invoice, "amount": p.amount, "currency": p.currency}}).to_string();
            let msg_id = format!("msg_{}", p.id);
            let sig = standard::sign(secret, &msg_id, at, body.as_bytes())?;
            let headers = vec![
                header("webhook-id", msg_id),
                header("webhook-timestamp", at.to_string()),
                header("webhook-signature", sig),
            ];
            Delivery { headers, body }
        }
        "stripe" => {
            let body = json!({"id": format!("evt_{}", p.id), "object": "event", "type": "payment_intent.succeeded", "created": at,
                "data": {"object": {"id": p.id, "object": "payment_intent", "amount_received": minor_units(&p.amount)?,
                "currency": p.currency.to_lowercase(), "metadata": {"invoice_id": p.invoice}}}}).to_string();
            let headers = vec![header(
                "stripe-signature",
                stripe::sign(secret, at, body.as_bytes()),
            )];
            Delivery { headers, body }
        }
        "monobank" => {
            let body = json!({"invoiceId": p.id, "status": p.status, "amount": minor_units(&p.amount)?, "ccy": 980,
                "finalAmount": minor_units(&p.amount)?, "reference": p.invoice,
                "createdDate": firmspace::time::format(chrono::Utc::now()), "modifiedDate": firmspace::time::format(chrono::Utc::now())}).to_string();
            let headers = vec![header("x-sign", demo_monobank_key().sign(body.as_bytes()))];
            Delivery { headers, body }
        }
        other => bail!("unknown provider {other:?}: standard, stripe or monobank"),
    })
}

/// Sends `delivery` `repeat` times, `concurrent` at once; the answers in order of sending.
pub async fn send(
    http: &reqwest::Client,
    url: &str,
    d: &Delivery,
    repeat: usize,
    concurrent: usize,
) -> Result<Vec<(u16, Value)>> {
    let mut answers = Vec::new();
    let indices: Vec<usize> = (0..repeat).collect();
    for wave in indices.chunks(concurrent.max(1)) {
        let calls = wave.iter().map(|_| async {
            let mut req = http.post(url).header("content-type", "application/json");
            for (k, v) in &d.headers {
                req = req.header(k, v);
            }
            let res = req.body(d.body.clone()).send().await?;
            let status = res.status().as_u16();
            Ok::<_, anyhow::Error>((status, res.json().await.unwrap_or(Value::Null)))
        });
        for answer in futures::future::join_all(calls).await {
            answers.push(answer?);
        }
    }
    Ok(answers)
}

fn options(args: &[String]) -> Result<(String, HashMap<String, String>)> {
    let provider = args.first().context("usage: cargo xtask send standard|stripe|monobank [--to URL --secret S] [--repeat N] ...")?.clone();
    let mut opts = HashMap::new();
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let name = flag
            .strip_prefix("--")
            .with_context(|| format!("expected --option, got {flag}"))?;
        opts.insert(
            name.to_owned(),
            rest.next()
                .with_context(|| format!("--{name} needs a value"))?
                .clone(),
        );
    }
    Ok((provider, opts))
}

/// `cargo xtask send ...`
pub async fn run(args: &[String]) -> Result<()> {
    let (provider, opts) = options(args)?;
    let http = firmspace::http::client(reqwest::Client::builder());
    let (url, secret, invoice) = match opts.get("to") {
        Some(url) => (
            url.clone(),
            opts.get("secret").cloned().unwrap_or_default(),
            opts.get("invoice").cloned(),
        ),
        None => local_target(&http, &provider).await?,
    };
    let payment = Payment {
        id: opts
            .get("id")
            .cloned()
            .unwrap_or_else(|| format!("pay_{}", hex::encode(firmspace::ids::random_bytes::<4>()))),
        invoice,
        amount: opts
            .get("amount")
            .cloned()
            .unwrap_or_else(|| "40.00".into()),
        currency: opts
            .get("currency")
            .cloned()
            .unwrap_or_else(|| "UAH".into()),
        status: opts
            .get("status")
            .cloned()
            .unwrap_or_else(|| "success".into()),
    };
    let parse = |name: &str, default: usize| {
        opts.get(name).map_or(Ok(default), |v| {
            v.parse().with_context(|| format!("--{name}"))
        })
    };
    let (repeat, concurrent) = (parse("repeat", 1)?, parse("concurrent", 1)?);
    let d = delivery(&provider, &secret, &payment, chrono::Utc::now().timestamp())?;
    println!(
        "POST {url}\n{}\n{}\n",
        d.headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("\n"),
        d.body
    );
    for (i, (status, answer)) in send(&http, &url, &d, repeat, concurrent)
        .await?
        .iter()
        .enumerate()
    {
        println!("delivery {}: {status} {answer}", i + 1);
    }
    Ok(())
}

/// An organisation, an integration of `provider` and an invoice in the running local stack.
async fn local_target(
    http: &reqwest::Client,
    provider: &str,
) -> Result<(String, String, Option<String>)> {
    let coords = Coordinates::read(&Stack::local().coords_file())?;
    let post = |path: &str, token: &str, body: Value| {
        let req = http
            .post(format!("{}{path}", coords.api_url))
            .bearer_auth(token.to_owned())
            .json(&body);
        async move {
            let res = req.send().await?;
            let status = res.status();
            let body: Value = res.json().await?;
            if !status.is_success() {
                bail!("{status}: {body}");
            }
            Ok::<_, anyhow::Error>(body)
        }
    };
    let org = post(
        "/api/orgs",
        &coords.admin_token,
        json!({"name": "xtask send"}),
    )
    .await?;
    let key = org["api_key"].as_str().context("api_key")?.to_owned();
    let spec = match provider {
        "monobank" => {
            json!({"kind": "payments", "provider": "monobank", "public_key": demo_monobank_public_key()})
        }
        other => json!({"kind": "payments", "provider": other}),
    };
    let hook = post("/api/integrations", &key, spec).await?;
    let invoice = post(
        "/api/invoices",
        &key,
        json!({"currency": "UAH", "gross": "100.00"}),
    )
    .await?;
    println!(
        "local stack: organisation {}, integration {}, invoice {}",
        org["org_id"], hook["integration_id"], invoice["id"]
    );
    Ok((
        hook["webhook_url"]
            .as_str()
            .context("webhook_url")?
            .to_owned(),
        hook["secret"].as_str().unwrap_or_default().to_owned(),
        invoice["id"].as_str().map(str::to_owned),
    ))
}
