//! `cargo xtask send KIND`: signs a realistic delivery of any kind we accept exactly as its
//! sender does and sends it, `--repeat` times, `--concurrent` at once, printing every answer —
//! what `stripe trigger` and the Svix CLI give their users.
//!
//! Without `--to`, it makes an organisation and an integration of that kind in the running
//! local stack (`cargo xtask up`), with an invoice for a payment and a wallet top-up for an SMS,
//! and sends there. monobank payments are signed with a fixed demo merchant key (never a real
//! one): `--to` a monobank integration needs it to hold `demo_monobank_public_key()`. A bank row
//! `--to` a monobank bank integration's URL is monobank's personal webhook (the URL is its only
//! credential); without `--to` it is one row uploaded to a CSV bank integration with its key.

use crate::stack::{Coordinates, Stack};
use anyhow::{bail, Context, Result};
use firmspace::money::Currency;
use firmspace::signature::{standard, stripe, twilio, whatsapp};
use serde_json::{json, Value};

/// What `cargo xtask send` sends.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A payment, Standard Webhooks signed (`payment.succeeded`).
    Standard,
    /// A Stripe `payment_intent.succeeded`, `Stripe-Signature` signed, in minor units.
    Stripe,
    /// A monobank acquiring status (`X-Sign`, ECDSA P-256), `ccy` the currency's numeric code.
    Monobank,
    /// A generic message (`message.received`), Standard Webhooks signed.
    Message,
    /// A Telegram update (`X-Telegram-Bot-Api-Secret-Token`).
    Telegram,
    /// A WhatsApp Cloud API message (`X-Hub-Signature-256`).
    Whatsapp,
    /// A generic call result (`call.completed`), Standard Webhooks signed.
    Call,
    /// A Twilio call status callback (form-encoded, `X-Twilio-Signature`).
    Twilio,
    /// A prepaid SMS carrier's `sms.sent`, Standard Webhooks signed.
    Sms,
    /// A website form's `lead.submitted`, Standard Webhooks signed.
    Lead,
    /// A bank row: monobank's personal webhook with `--to`, else a one-row CSV upload.
    BankRow,
}

/// `cargo xtask send KIND [OPTIONS]`.
#[derive(clap::Args)]
pub struct Args {
    /// What to send.
    #[arg(value_enum)]
    kind: Kind,
    /// The webhook URL to send to; without it, an integration in the local stack.
    #[arg(long)]
    to: Option<String>,
    /// The integration's secret, as its sender holds it: a `whsec_…` signing secret, a Twilio
    /// auth token, a Telegram secret token, a WhatsApp app secret.
    #[arg(long, default_value = "")]
    secret: String,
    /// The invoice a payment or a bank row names.
    #[arg(long)]
    invoice: Option<String>,
    /// The amount in major units (a payment's or a bank row's; an SMS's price).
    #[arg(long)]
    amount: Option<String>,
    /// The currency (ISO 4217): minor units and monobank's numeric code follow it.
    #[arg(long, default_value = "UAH")]
    currency: String,
    /// The event's own id (a payment id, a message id, a call id, ...); random by default.
    #[arg(long)]
    id: Option<String>,
    /// A monobank payment's status (`success`, `reversed`, ...) or a call's (`completed`,
    /// `no-answer`, `busy`).
    #[arg(long)]
    status: Option<String>,
    /// A bank row's account (monobank's account id).
    #[arg(long, default_value = "0")]
    account: String,
    /// How many times to send it.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// How many copies at once.
    #[arg(long, default_value_t = 1)]
    concurrent: usize,
}

/// One signed delivery: its headers and raw body.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// What is sent: its id, the invoice it names, amount and currency, a status.
pub struct Payment {
    pub id: String,
    pub invoice: Option<String>,
    pub amount: String,
    pub currency: String,
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

/// `major` whole units written with `currency`'s digits (`40.00` UAH, `40` JPY, `40.000` BHD).
fn whole(major: u32, currency: &str) -> Result<String> {
    let digits = Currency::parse(currency).context("--currency")?.exponent() as usize;
    Ok(match digits {
        0 => major.to_string(),
        n => format!("{major}.{}", "0".repeat(n)),
    })
}

/// `amount` in `currency`'s minor units (4000 for 40.00 UAH, 1000 for 1000 JPY).
fn minor_units(amount: &str, currency: &str) -> Result<i64> {
    let currency = Currency::parse(currency).context("--currency")?;
    let value: rust_decimal::Decimal = amount.parse().context("--amount is not a number")?;
    let scaled = value * rust_decimal::Decimal::from(10i64.pow(currency.exponent()));
    if scaled.fract() != rust_decimal::Decimal::ZERO {
        bail!("--amount has more digits than {} has", currency.as_str());
    }
    i64::try_from(scaled).context("--amount is too large")
}

/// Signs `p` as `kind`'s sender does, for `url`, at unix time `at`.
pub fn delivery(kind: Kind, secret: &str, url: &str, p: &Payment, at: i64) -> Result<Delivery> {
    let header = |k: &str, v: String| (k.to_owned(), v);
    let standard = |body: Value| -> Result<Delivery> {
        let body = body.to_string();
        let msg_id = format!("msg_{}", p.id);
        let sig = standard::sign(secret, &msg_id, at, body.as_bytes())?;
        Ok(Delivery {
            headers: vec![
                header("content-type", "application/json".into()),
                header("webhook-id", msg_id),
                header("webhook-timestamp", at.to_string()),
                header("webhook-signature", sig),
            ],
            body,
        })
    };
    let json_with = |body: Value, name: &str, value: String| Delivery {
        headers: vec![
            header("content-type", "application/json".into()),
            header(name, value),
        ],
        body: body.to_string(),
    };
    Ok(match kind {
        Kind::Standard => standard(
            json!({"type": "payment.succeeded", "data": {"payment_id": p.id,
            "invoice_id": p.invoice, "amount": p.amount, "currency": p.currency}}),
        )?,
        Kind::Stripe => {
            let body = json!({"id": format!("evt_{}", p.id), "object": "event", "type": "payment_intent.succeeded", "created": at,
                "data": {"object": {"id": p.id, "object": "payment_intent", "amount_received": minor_units(&p.amount, &p.currency)?,
                "currency": p.currency.to_lowercase(), "metadata": {"invoice_id": p.invoice}}}});
            let signature = stripe::sign(secret, at, body.to_string().as_bytes());
            json_with(body, "stripe-signature", signature)
        }
        Kind::Monobank => {
            let ccy = Currency::parse(&p.currency)
                .context("--currency")?
                .numeric();
            let minor = minor_units(&p.amount, &p.currency)?;
            let now = firmspace::time::format(chrono::Utc::now());
            let body = json!({"invoiceId": p.id, "status": p.status, "amount": minor, "ccy": ccy,
                "finalAmount": minor, "reference": p.invoice, "createdDate": now, "modifiedDate": now});
            let signature = demo_monobank_key().sign(body.to_string().as_bytes());
            json_with(body, "x-sign", signature)
        }
        Kind::Message => standard(
            json!({"type": "message.received", "data": {"message_id": p.id,
            "chat_id": "chat-xtask", "from": {"id": "customer-1", "name": "Olena Koval"},
            "text": "Hello! Is the order ready?"}}),
        )?,
        Kind::Telegram => {
            let update_id = firmspace::ids::random_bytes::<3>()
                .iter()
                .fold(0u64, |n, b| n * 256 + u64::from(*b));
            let body = json!({"update_id": update_id, "message": {"message_id": update_id % 100_000, "date": at,
                "from": {"id": 777, "first_name": "Mykola"}, "chat": {"id": 777, "type": "private"},
                "text": "Hello! Do you deliver to Lviv?"}});
            json_with(body, "x-telegram-bot-api-secret-token", secret.to_owned())
        }
        Kind::Whatsapp => {
            let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages",
                "value": {"messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550001111", "phone_number_id": "PN1"},
                "contacts": [{"profile": {"name": "Taras"}, "wa_id": "380501234567"}],
                "messages": [{"from": "380501234567", "id": format!("wamid.{}", p.id), "timestamp": at.to_string(),
                    "type": "text", "text": {"body": "Hello! Is the order ready?"}}]}}]}]});
            let signature = whatsapp::sign(secret, body.to_string().as_bytes());
            json_with(body, whatsapp::SIGNATURE, signature)
        }
        Kind::Call => standard(
            json!({"type": "call.completed", "data": {"call_id": p.id, "direction": "inbound",
            "peer": "+380441234567", "status": p.status, "duration": 30}}),
        )?,
        Kind::Twilio => {
            let form = format!("CallSid={}&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus={}&CallDuration=30", p.id, p.status);
            let signature = twilio::sign(secret, url, form.as_bytes());
            Delivery {
                headers: vec![
                    header("content-type", "application/x-www-form-urlencoded".into()),
                    header("x-twilio-signature", signature),
                ],
                body: form,
            }
        }
        Kind::Sms => standard(
            json!({"type": "sms.sent", "data": {"message_id": p.id, "from": "+15550001111",
            "to": "+380501234567", "text": "Your order is ready", "segments": 1, "price": p.amount, "currency": p.currency}}),
        )?,
        Kind::Lead => standard(
            json!({"type": "lead.submitted", "data": {"submission_id": p.id, "name": "Olena Koval",
            "email": "olena@example.com", "phone": "+380441234567", "message": "Please call me", "source": "website"}}),
        )?,
        Kind::BankRow => bail!("a bank row is built by `bank_row`"),
    })
}

/// A bank row: monobank's personal webhook `StatementItem` for `account`.
fn bank_row(p: &Payment, account: &str) -> Result<Delivery> {
    let body = json!({"type": "StatementItem", "data": {"account": account, "statementItem": {
        "id": p.id, "time": chrono::Utc::now().timestamp() - 60,
        "description": format!("Payment for {}", p.invoice.as_deref().unwrap_or("an order")),
        "mcc": 4829, "amount": minor_units(&p.amount, &p.currency)?, "operationAmount": minor_units(&p.amount, &p.currency)?,
        "currencyCode": Currency::parse(&p.currency).context("--currency")?.numeric(),
        "comment": p.invoice, "balance": 100000, "counterName": "Olena K"}}});
    Ok(Delivery {
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string(),
    })
}

/// Sends `delivery` `repeat` times, `concurrent` at once; the answers in order of sending, each
/// with whether it was given from a stored answer (`Idempotent-Replayed`).
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
            let mut req = http.post(url);
            for (k, v) in &d.headers {
                req = req.header(k, v);
            }
            let res = req.body(d.body.clone()).send().await?;
            let status = res.status().as_u16();
            let replayed = res.headers().contains_key("idempotent-replayed");
            let mut answer = res.json().await.unwrap_or(Value::Null);
            if replayed {
                answer["(Idempotent-Replayed)"] = json!(true);
            }
            Ok::<_, anyhow::Error>((status, answer))
        });
        for answer in futures::future::join_all(calls).await {
            answers.push(answer?);
        }
    }
    Ok(answers)
}

/// `cargo xtask send ...`
pub async fn run(args: Args) -> Result<()> {
    let http = firmspace::http::client(reqwest::Client::builder());
    let target = match &args.to {
        Some(url) => Target {
            url: url.clone(),
            secret: args.secret.clone(),
            invoice: args.invoice.clone(),
            key: None,
        },
        None => local_target(&http, args.kind, &args.currency).await?,
    };
    let payment = Payment {
        id: args
            .id
            .clone()
            .unwrap_or_else(|| format!("x{}", hex::encode(firmspace::ids::random_bytes::<4>()))),
        invoice: target.invoice.clone(),
        amount: match (&args.amount, args.kind) {
            (Some(amount), _) => amount.clone(),
            (None, Kind::Sms) => "0.05".into(),
            (None, _) => whole(40, &args.currency)?,
        },
        currency: args.currency.clone(),
        status: args.status.clone().unwrap_or_else(|| {
            match args.kind {
                Kind::Call | Kind::Twilio => "completed",
                _ => "success",
            }
            .into()
        }),
    };
    let at = chrono::Utc::now().timestamp();
    let mut d = match (args.kind, &target.key) {
        (Kind::BankRow, Some(_)) => csv_row(&payment)?,
        (Kind::BankRow, None) => bank_row(&payment, &args.account)?,
        (kind, _) => delivery(kind, &target.secret, &target.url, &payment, at)?,
    };
    if let Some(key) = &target.key {
        d.headers
            .push(("authorization".into(), format!("Bearer {key}")));
    }
    println!(
        "POST {}\n{}\n{}\n",
        target.url,
        d.headers
            .iter()
            .filter(|(k, _)| k != "authorization")
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("\n"),
        d.body
    );
    let answers = send(&http, &target.url, &d, args.repeat, args.concurrent).await?;
    for (i, (status, answer)) in answers.iter().enumerate() {
        println!("delivery {}: {status} {answer}", i + 1);
    }
    Ok(())
}

/// A bank row as a one-row CSV file of a CSV bank integration.
fn csv_row(p: &Payment) -> Result<Delivery> {
    Currency::parse(&p.currency).context("--currency")?;
    let reference = p.invoice.as_deref().unwrap_or("");
    let body = format!(
        "id,date,amount,currency,description,reference\n{},{},{},{},Payment for {reference},{reference}\n",
        p.id,
        chrono::Utc::now().format("%Y-%m-%d"),
        p.amount,
        p.currency
    );
    Ok(Delivery {
        headers: vec![("content-type".into(), "text/csv".into())],
        body,
    })
}

/// Where a delivery goes: the URL, the secret its sender signs with, the invoice it names, and
/// for a CSV upload the organisation's key.
struct Target {
    url: String,
    secret: String,
    invoice: Option<String>,
    key: Option<String>,
}

/// An organisation and an integration of `kind` in the running local stack, with a member, a
/// contact and an invoice in `currency` the member owns and the contact is on (and a wallet
/// topped up, for an SMS).
async fn local_target(http: &reqwest::Client, kind: Kind, currency: &str) -> Result<Target> {
    let coords = Coordinates::read(&Stack::local().coords_file())?;
    let post = |path: &str, token: &str, body: Value| {
        let req = http
            .post(format!("{}{path}", coords.api_url))
            .bearer_auth(token.to_owned())
            .header(
                "idempotency-key",
                hex::encode(firmspace::ids::random_bytes::<8>()),
            )
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
    let own_secret = hex::encode(firmspace::ids::random_bytes::<16>());
    let spec = match kind {
        Kind::Standard | Kind::Stripe => {
            json!({"kind": "payments", "provider": format!("{kind:?}").to_lowercase()})
        }
        Kind::Monobank => {
            json!({"kind": "payments", "provider": "monobank", "public_key": demo_monobank_public_key()})
        }
        Kind::Message => json!({"kind": "messages", "provider": "standard"}),
        Kind::Telegram => {
            json!({"kind": "messages", "provider": "telegram", "bot_token": "123456:xtask-send"})
        }
        Kind::Whatsapp => json!({"kind": "messages", "provider": "whatsapp",
            "app_secret": own_secret, "access_token": "xtask-send"}),
        Kind::Call => json!({"kind": "calls", "provider": "standard"}),
        Kind::Twilio => json!({"kind": "calls", "provider": "twilio", "auth_token": own_secret}),
        Kind::Sms => json!({"kind": "sms", "provider": "standard"}),
        Kind::Lead => json!({"kind": "leads", "provider": "standard"}),
        Kind::BankRow => json!({"kind": "bank", "provider": "csv"}),
    };
    let hook = post("/api/integrations", &key, spec).await?;
    // A member who owns the invoice and a contact on it: a payment tells them, as in a team.
    post(
        "/api/members",
        &key,
        json!({"user_id": "u1", "name": "Olena"}),
    )
    .await?;
    let contact = post(
        "/api/contacts",
        &key,
        json!({"name": "Taras", "owner": "u1"}),
    )
    .await?;
    let invoice = post(
        "/api/invoices",
        &key,
        json!({"currency": currency, "gross": whole(100, currency)?, "owner": "u1",
            "contact_id": contact["contact_id"]}),
    )
    .await?;
    if kind == Kind::Sms {
        post(
            "/api/wallet/topups",
            &key,
            json!({"amount": whole(20, currency)?, "currency": currency}),
        )
        .await?;
    }
    println!(
        "local stack: organisation {}, integration {}, invoice {}",
        org["org_id"], hook["integration_id"], invoice["id"]
    );
    let secret = match kind {
        Kind::Telegram => hook["secret_token"].as_str().unwrap_or_default().to_owned(),
        Kind::Whatsapp | Kind::Twilio => own_secret,
        _ => hook["secret"].as_str().unwrap_or_default().to_owned(),
    };
    let (url, key) = match kind {
        Kind::BankRow => (
            format!(
                "{}/api/integrations/{}/csv",
                coords.api_url,
                hook["integration_id"].as_str().context("integration_id")?
            ),
            Some(key),
        ),
        _ => (
            hook["webhook_url"]
                .as_str()
                .context("webhook_url")?
                .to_owned(),
            None,
        ),
    };
    Ok(Target {
        url,
        secret,
        invoice: invoice["id"].as_str().map(str::to_owned),
        key,
    })
}
