//! Every bad request the API is sent, as (case, request), one function per area. This file:
//! what a CRM sets up (organisations, members, integrations, invoices); `daily_cases`: what it
//! does every day, and what no route serves.

use super::daily_cases;
use super::raw;
use crate::support::api::ADMIN;
use crate::support::fixtures;
use lambda_http::Request;
use serde_json::{json, Value};

/// Who sends, and the cases so far.
pub(super) struct Cases {
    pub(super) org: String,
    pub(super) admin: String,
    pub(super) huge: String,
    pub(super) list: Vec<(String, Request)>,
}

/// A JSON body sent with `token`.
pub(super) fn json_case(
    cases: &mut Vec<(String, Request)>,
    name: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Value,
) {
    cases.push((
        format!("{method} {path} {name}"),
        raw(
            method,
            path,
            &[("authorization", token)],
            body.to_string().as_bytes(),
        ),
    ));
}

/// Every bad request the API is sent, for an organisation with API key `key` and its two
/// invoices (UAH and JPY).
pub(super) fn api_cases(key: &str, invoice: &str, jpy_invoice: &str) -> Vec<(String, Request)> {
    let mut c = Cases {
        org: format!("Bearer {key}"),
        admin: format!("Bearer {ADMIN}"),
        huge: "x".repeat(1 << 20),
        list: Vec::new(),
    };
    organisations_and_members(&mut c);
    integrations(&mut c);
    outbound_integrations(&mut c);
    invoices(&mut c);
    daily_cases::all(&mut c, invoice, jpy_invoice);
    c.list
}

fn organisations_and_members(c: &mut Cases) {
    let (org, admin, huge) = (c.org.as_str(), c.admin.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    // Organisations and members.
    for (name, body) in [
        ("array", json!([])),
        ("number", json!(5)),
        ("mistyped name", json!({"name": 5})),
        ("empty name", json!({"name": "  "})),
        ("1 MiB name", json!({"name": huge})),
        ("NUL in name", json!({"name": "Acme\u{0}"})),
    ] {
        json_case(cases, name, "POST", "/api/orgs", admin, body);
    }
    for (name, body) in [
        ("user_id with #", json!({"user_id": "u#1", "name": "Ann"})),
        ("1 MiB user_id", json!({"user_id": huge, "name": "Ann"})),
        ("1 MiB name", json!({"user_id": "u1", "name": huge})),
        (
            "control in name",
            json!({"user_id": "u1", "name": "A\u{7}nn"}),
        ),
        ("missing name", json!({"user_id": "u1"})),
    ] {
        json_case(cases, name, "POST", "/api/members", org, body);
    }
}

fn integrations(c: &mut Cases) {
    let (org, huge) = (c.org.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    // Integrations: weak secrets, bad keys, oversize fields, inward URLs.
    let payments = |extra: Value| {
        let mut body = json!({"kind": "payments"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    for (name, body) in [
        ("unknown kind", json!({"kind": "bank"})),
        ("calls without provider", json!({"kind": "calls"})),
        (
            "twilio without auth_token",
            json!({"kind": "calls", "provider": "twilio"}),
        ),
        (
            "1 MiB twilio auth_token",
            json!({"kind": "calls", "provider": "twilio", "auth_token": huge}),
        ),
        (
            "calls with a weak secret",
            json!({"kind": "calls", "provider": "standard", "secret": "whsec_AAAA"}),
        ),
        ("unknown provider", payments(json!({"provider": "paypal"}))),
        (
            "empty whsec",
            payments(json!({"provider": "standard", "secret": "whsec_"})),
        ),
        (
            "3-byte whsec",
            payments(json!({"provider": "standard", "secret": "whsec_AAAA"})),
        ),
        (
            "23-byte whsec",
            payments(
                json!({"provider": "standard", "secret": "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
            ),
        ),
        (
            "1 MiB secret",
            payments(json!({"provider": "standard", "secret": huge})),
        ),
        (
            "empty stripe secret",
            payments(json!({"provider": "stripe", "secret": ""})),
        ),
        (
            "garbage monobank key",
            payments(json!({"provider": "monobank", "public_key": "bm90IGEga2V5"})),
        ),
        (
            "1 MiB monobank key",
            payments(json!({"provider": "monobank", "public_key": huge})),
        ),
        (
            "1 MiB monobank token",
            payments(
                json!({"provider": "monobank", "public_key": fixtures::monobank_public_key_b64(), "token": huge}),
            ),
        ),
    ] {
        json_case(cases, name, "POST", "/api/integrations", org, body);
    }
}

/// Outbound integrations whose URL points inward or is absurd.
fn outbound_integrations(c: &mut Cases) {
    let (org, huge) = (c.org.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    for (name, body) in [
        (
            "1 MiB url",
            json!({"kind": "outbound", "url": format!("https://example.com/{huge}")}),
        ),
        (
            "private url",
            json!({"kind": "outbound", "url": "https://10.0.0.1/x"}),
        ),
        (
            "IPv4-compatible url",
            json!({"kind": "outbound", "url": "https://[::10.0.0.1]/x"}),
        ),
        (
            "NAT64 url",
            json!({"kind": "outbound", "url": "https://[64:ff9b::a9fe:a9fe]/x"}),
        ),
        (
            "reserved status_url",
            json!({"kind": "outbound", "url": "https://example.com/x", "status_url": "https://240.0.0.1/{key}"}),
        ),
        (
            "NUL in url",
            json!({"kind": "outbound", "url": "https://example.com/\u{0}"}),
        ),
        (
            "status_url without {key}",
            json!({"kind": "outbound", "url": "https://example.com/x", "status_url": "https://example.com/health"}),
        ),
    ] {
        json_case(cases, name, "POST", "/api/integrations", org, body);
    }
}

fn invoices(c: &mut Cases) {
    let (org, huge) = (c.org.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    // Invoices: currencies and amounts, links.
    for (name, body) in [
        (
            "unknown currency",
            json!({"currency": "XXY", "gross": "10.00"}),
        ),
        (
            "no minor units",
            json!({"currency": "XAU", "gross": "10.00"}),
        ),
        (
            "four letters",
            json!({"currency": "UAHH", "gross": "10.00"}),
        ),
        (
            "currency as number",
            json!({"currency": 980, "gross": "10.00"}),
        ),
        ("exponent", json!({"currency": "UAH", "gross": "1e3"})),
        ("negative", json!({"currency": "UAH", "gross": "-1"})),
        ("zero", json!({"currency": "UAH", "gross": "0.00"})),
        (
            "ten billion",
            json!({"currency": "UAH", "gross": "10000000000"}),
        ),
        (
            "40 digits",
            json!({"currency": "UAH", "gross": "1234567890123456789012345678901234567890"}),
        ),
        (
            "29 significant digits",
            json!({"currency": "UAH", "gross": "1.0000000000000000000000000001"}),
        ),
        (
            "kopiyka fractions",
            json!({"currency": "UAH", "gross": "10.005"}),
        ),
        ("yen fractions", json!({"currency": "JPY", "gross": "10.5"})),
        ("won fractions", json!({"currency": "KRW", "gross": "10.5"})),
        (
            "fils beyond 3",
            json!({"currency": "BHD", "gross": "1.0005"}),
        ),
        ("gross as number", json!({"currency": "UAH", "gross": 10})),
        (
            "owner with #",
            json!({"currency": "UAH", "gross": "10.00", "owner": "k1#u1"}),
        ),
        (
            "1 MiB contact_id",
            json!({"currency": "UAH", "gross": "10.00", "contact_id": huge}),
        ),
        (
            "control in deal_id",
            json!({"currency": "UAH", "gross": "10.00", "deal_id": "d\u{1b}1"}),
        ),
        (
            "empty company_id",
            json!({"currency": "UAH", "gross": "10.00", "company_id": ""}),
        ),
    ] {
        json_case(cases, name, "POST", "/api/invoices", org, body);
    }
}
