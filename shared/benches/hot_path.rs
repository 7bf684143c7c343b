#![forbid(unsafe_code)]
//! The pure work a webhook does before it touches DynamoDB: verify the signature, parse the
//! payload, decide what the payment does, map the event to its item. `cargo bench -p firmspace`.
//!
//! Beside our verifiers it times what they are made of (one HMAC-SHA256 over the same body), so
//! the README can say what each costs.

use criterion::{criterion_group, criterion_main, Criterion};
use firmspace::ids::{ExternalId, LocalId, OrgId};
use firmspace::money::Currency;
use firmspace::payments::invoice::Links;
use firmspace::payments::providers::standard as standard_payload;
use firmspace::payments::{
    decide, Invoice, InvoiceStatus, PaymentEvent, PaymentInput, Related, Source,
};
use firmspace::signature::{monobank, standard, stripe, Verify};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use rust_decimal::Decimal;
use std::hint::black_box;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const MONO_KEY: &str = "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUZrd0V3WUhLb1pJemowQ0FRWUlLb1pJemowREFRY0RRZ0FFaXVBREJyeUkwa3RvVHdVaWpFS21QR3RlKzhEWgpJbWtDamFvQkprb1YzVUV1aTFzeERLaytOZDlPSXdrbldBKy9ma1MvaWtJSFRpTGJqcHlUV2pMSlZnPT0KLS0tLS1FTkQgUFVCTElDIEtFWS0tLS0tCg==";
const MONO_BODY: &[u8] = br#"{"invoiceId":"p2_9ZgpZVsl3","status":"success","amount":4200,"ccy":980,"reference":"inv_1"}"#;
const MONO_SIGN: &str = "MEQCIFb+M0e4GFU1V73Sq68xfkCGuTijiBsO5TzNl05t4L/EAiANtWQk9YvWlkKmcyzrfOclNWAQsqrZvKAecg0J8eahUw==";

fn now() -> chrono::DateTime<chrono::Utc> {
    firmspace::time::from_unix(1_800_000_010).unwrap()
}

/// A 2 KB Standard Webhooks payment body.
fn two_kb_body() -> Vec<u8> {
    let note = "x".repeat(1900);
    format!(r#"{{"type":"payment.succeeded","data":{{"payment_id":"pay_1","invoice_id":"inv_1","amount":"40.00","currency":"UAH","note":"{note}"}}}}"#).into_bytes()
}

fn signatures(c: &mut Criterion) {
    let body = two_kb_body();
    let mut headers = HeaderMap::new();
    headers.insert(standard::ID, "msg_1".parse().unwrap());
    headers.insert(standard::TIMESTAMP, "1800000000".parse().unwrap());
    let sig = standard::sign(SECRET, "msg_1", 1_800_000_000, &body).unwrap();
    headers.insert(standard::SIGNATURE, sig.parse().unwrap());
    let verifier = standard::Verifier::new(SECRET).unwrap();
    c.bench_function("standard_verify_2kb", |b| {
        b.iter(|| verifier.verify(&headers, black_box(&body), now()).unwrap())
    });
    c.bench_function("one_hmac_sha256_2kb", |b| {
        b.iter(|| {
            let mut mac =
                Hmac::<sha2::Sha256>::new_from_slice(b"0123456789abcdef0123456789abcdef").unwrap();
            mac.update(black_box(&body));
            mac.finalize()
        })
    });
    let mut stripe_headers = HeaderMap::new();
    stripe_headers.insert(
        stripe::SIGNATURE,
        stripe::sign(SECRET, 1_800_000_000, &body).parse().unwrap(),
    );
    let stripe_verifier = stripe::Verifier::new(SECRET).unwrap();
    c.bench_function("stripe_verify_2kb", |b| {
        b.iter(|| {
            stripe_verifier
                .verify(&stripe_headers, black_box(&body), now())
                .unwrap()
        })
    });
}

fn ecdsa(c: &mut Criterion) {
    let mut headers = HeaderMap::new();
    headers.insert(monobank::SIGNATURE, MONO_SIGN.parse().unwrap());
    let verifier = monobank::Verifier::new(MONO_KEY).unwrap();
    c.bench_function("monobank_verify_aws_lc_key_parsed_once", |b| {
        b.iter(|| {
            verifier
                .verify(&headers, black_box(MONO_BODY), now())
                .unwrap()
        })
    });
    c.bench_function("monobank_verifier_build_aws_lc", |b| {
        b.iter(|| monobank::Verifier::new(black_box(MONO_KEY)).unwrap())
    });
}

fn payment(c: &mut Criterion) {
    let body = two_kb_body();
    c.bench_function("standard_payload_parse_2kb", |b| {
        b.iter(|| standard_payload::parse(black_box(&body), Some("msg_1"), None).unwrap())
    });
    let invoice = Invoice {
        org: OrgId::parse("o0123456789ab").unwrap(),
        id: LocalId::parse("id", "inv_1").unwrap(),
        number: "INV-00001".into(),
        currency: Currency::parse("UAH").unwrap(),
        gross: Decimal::new(10000, 2),
        paid: Decimal::new(2500, 2),
        credited: rust_decimal::Decimal::ZERO,
        status: InvoiceStatus::PartiallyPaid,
        version: 1,
        links: Links::default(),
        created_at: chrono::DateTime::UNIX_EPOCH,
    };
    let input = PaymentInput {
        org: invoice.org.clone(),
        invoice_ref: Some("inv_1".into()),
        source: Source::Stripe,
        external_id: ExternalId::parse("id", "pay_1").unwrap(),
        amount: Some(Decimal::new(4000, 2)),
        currency: None,
        at: chrono::DateTime::UNIX_EPOCH,
        actor: "bench".into(),
        reverses: None,
        reversible: false,
        via: None,
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
    let decision = decide(Some(&invoice), &input, Related::Nothing);
    c.bench_function("payment_event_to_item_and_back", |b| {
        b.iter(|| {
            let event = PaymentEvent::new(&input, &decision, Some(&invoice), Some(&invoice));
            PaymentEvent::from_item(&black_box(event.to_item())).unwrap()
        })
    });
}

criterion_group!(benches, signatures, ecdsa, payment);
criterion_main!(benches);
