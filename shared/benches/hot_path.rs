#![forbid(unsafe_code)]
//! The pure work a webhook does before it touches DynamoDB: verify the signature, parse the
//! payload, decide what the payment does. `cargo bench -p firmspace`.

use criterion::{criterion_group, criterion_main, Criterion};
use firmspace::ids::{ExternalId, LocalId, OrgId};
use firmspace::money::Currency;
use firmspace::payments::invoice::Links;
use firmspace::payments::{
    decide, providers, Invoice, InvoiceStatus, PaymentInput, Related, Source,
};
use firmspace::signature::{monobank, standard, stripe};
use rust_decimal::Decimal;
use std::hint::black_box;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const MONO_KEY: &str = "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUZrd0V3WUhLb1pJemowQ0FRWUlLb1pJemowREFRY0RRZ0FFaXVBREJyeUkwa3RvVHdVaWpFS21QR3RlKzhEWgpJbWtDamFvQkprb1YzVUV1aTFzeERLaytOZDlPSXdrbldBKy9ma1MvaWtJSFRpTGJqcHlUV2pMSlZnPT0KLS0tLS1FTkQgUFVCTElDIEtFWS0tLS0tCg==";
const MONO_BODY: &[u8] = br#"{"invoiceId":"p2_9ZgpZVsl3","status":"success","amount":4200,"ccy":980,"reference":"inv_1"}"#;
const MONO_SIGN: &str = "MEQCIFb+M0e4GFU1V73Sq68xfkCGuTijiBsO5TzNl05t4L/EAiANtWQk9YvWlkKmcyzrfOclNWAQsqrZvKAecg0J8eahUw==";

fn bench(c: &mut Criterion) {
    let body = br#"{"type":"payment.succeeded","data":{"payment_id":"pay_1","invoice_id":"inv_1","amount":"40.00","currency":"UAH"}}"#;
    let sig = standard::sign(SECRET, "msg_1", 1_800_000_000, body).unwrap();
    c.bench_function("standard_webhooks_verify", |b| {
        b.iter(|| {
            let headers = standard::Headers {
                id: Some("msg_1"),
                timestamp: Some("1800000000"),
                signature: Some(&sig),
            };
            standard::verify(SECRET, &headers, black_box(body), 1_800_000_010)
        })
    });
    let stripe_header = stripe::sign(SECRET, 1_800_000_000, body);
    c.bench_function("stripe_verify", |b| {
        b.iter(|| stripe::verify(SECRET, Some(&stripe_header), black_box(body), 1_800_000_010))
    });
    c.bench_function("monobank_ecdsa_verify", |b| {
        b.iter(|| monobank::verify(MONO_KEY, Some(MONO_SIGN), black_box(MONO_BODY)))
    });
    c.bench_function("standard_payload_parse", |b| {
        b.iter(|| providers::standard(black_box(body), None))
    });
    let invoice = Invoice {
        org: OrgId::parse("o0123456789ab").unwrap(),
        id: LocalId::parse("id", "inv_1").unwrap(),
        number: "INV-00001".into(),
        currency: Currency::parse("UAH").unwrap(),
        gross: Decimal::new(10000, 2),
        paid: Decimal::new(2500, 2),
        status: InvoiceStatus::PartiallyPaid,
        version: 1,
        links: Links::default(),
        created_at: chrono::DateTime::UNIX_EPOCH,
    };
    let input = PaymentInput {
        org: invoice.org.clone(),
        invoice_ref: Some("inv_1".into()),
        source: Source::Standard,
        external_id: ExternalId::parse("id", "pay_1").unwrap(),
        amount: Some(Decimal::new(4000, 2)),
        currency: None,
        at: chrono::DateTime::UNIX_EPOCH,
        actor: "bench".into(),
        fingerprint: String::new(),
        reverses: None,
    };
    c.bench_function("decide_partial_payment", |b| {
        b.iter(|| {
            decide(
                black_box(Some(&invoice)),
                black_box(&input),
                Related::Nothing,
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
