//! What a CRM does every day (payments, consequences, calls, contacts), malformed and oversize
//! bodies on every route, and what no route serves.

use super::raw;
use super::setup_cases::{json_case, Cases};
use serde_json::json;

/// The cases of this file, for `invoice` (UAH) and `jpy_invoice`.
pub(super) fn all(c: &mut Cases, invoice: &str, jpy_invoice: &str) {
    payments(c, invoice, jpy_invoice);
    non_ascii_key(c, invoice);
    consequences(c);
    calls_and_contacts(c);
    malformed_bodies(c);
    oversize_body(c);
    unknown_routes(c);
}

fn payments(c: &mut Cases, invoice: &str, jpy_invoice: &str) {
    let (org, huge) = (c.org.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    // Paying an invoice: keys, sources, amounts.
    let pay = format!("/api/invoices/{invoice}/payments");
    let pay_jpy = format!("/api/invoices/{jpy_invoice}/payments");
    let long_key = "k".repeat(256);
    for (name, path, idem, body) in [
        ("no key", &pay, None, json!({"source": "manual"})),
        (
            "key with #",
            &pay,
            Some("k1#u1"),
            json!({"source": "manual"}),
        ),
        (
            "256-char key",
            &pay,
            Some(long_key.as_str()),
            json!({"source": "manual"}),
        ),
        (
            "unknown source",
            &pay,
            Some("k1"),
            json!({"source": "cash"}),
        ),
        (
            "kopiyka fractions",
            &pay,
            Some("k2"),
            json!({"source": "manual", "amount": "1.001"}),
        ),
        (
            "yen fractions",
            &pay_jpy,
            Some("k3"),
            json!({"source": "manual", "amount": "1.5"}),
        ),
        (
            "ten billion",
            &pay,
            Some("k4"),
            json!({"source": "manual", "amount": "99999999999"}),
        ),
        (
            // A JSON number is an amount read from its text (`40`); one with an exponent is not.
            "amount as an exponent",
            &pay,
            Some("k5"),
            json!({"source": "manual", "amount": 5e-3}),
        ),
        (
            "1 MiB actor",
            &pay,
            Some("k6"),
            json!({"source": "manual", "actor": huge}),
        ),
        (
            "unknown invoice",
            &"/api/invoices/inv_0000000000000000/payments".to_owned(),
            Some("k7"),
            json!({"source": "manual"}),
        ),
    ] {
        let mut headers = vec![("authorization", org)];
        headers.extend(idem.map(|k| ("idempotency-key", k)));
        cases.push((
            format!("POST {path} {name}"),
            raw("POST", path, &headers, body.to_string().as_bytes()),
        ));
    }
}

/// A payment whose Idempotency-Key is not ASCII.
fn non_ascii_key(c: &mut Cases, invoice: &str) {
    let pay = format!("/api/invoices/{invoice}/payments");
    let org = c.org.as_str();
    let mut non_ascii = raw(
        "POST",
        &pay,
        &[("authorization", org)],
        br#"{"source":"manual"}"#,
    );
    non_ascii.headers_mut().insert(
        "idempotency-key",
        http::HeaderValue::from_bytes("ключ".as_bytes()).unwrap(),
    );
    c.list.push(("non-ASCII Idempotency-Key".into(), non_ascii));
}

fn consequences(c: &mut Cases) {
    let (org, huge) = (c.org.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    // Consequences: reads and settings.
    for (name, body) in [
        ("1 MiB key", json!({"key": huge})),
        ("NUL in key", json!({"key": "a\u{0}"})),
    ] {
        json_case(cases, name, "POST", "/api/notifications/read", org, body);
    }
    for (name, body) in [
        (
            "unknown trigger",
            json!({"trigger": "invoice.eaten", "action": {"type": "create_task", "title": "x"}}),
        ),
        (
            "unknown action",
            json!({"trigger": "invoice.paid", "action": {"type": "launch"}}),
        ),
        (
            "action as array",
            json!({"trigger": "invoice.paid", "action": []}),
        ),
        (
            "1 MiB title",
            json!({"trigger": "invoice.paid", "action": {"type": "create_task", "title": huge}}),
        ),
        (
            "NUL in text",
            json!({"trigger": "invoice.paid", "action": {"type": "send_message", "integration_id": "o0123456789ab_0123456789abcdef", "text": "a\u{0}"}}),
        ),
        (
            "foreign integration",
            json!({"trigger": "invoice.paid", "action": {"type": "send_message", "integration_id": "o0123456789ab_0123456789abcdef", "text": "hi"}}),
        ),
    ] {
        json_case(cases, name, "POST", "/api/rules", org, body);
    }
}

fn calls_and_contacts(c: &mut Cases) {
    let (org, huge) = (c.org.as_str(), c.huge.as_str());
    let cases = &mut c.list;
    // Calls and contacts.
    for (name, body) in [
        (
            "no call_id",
            json!({"direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "call_id with #",
            json!({"call_id": "a#b", "direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "1 MiB call_id",
            json!({"call_id": huge, "direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "unknown direction",
            json!({"call_id": "c1", "direction": "up", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "peer not E.164",
            json!({"call_id": "c1", "direction": "inbound", "peer": "0441234567", "status": "completed"}),
        ),
        (
            "1 MiB peer",
            json!({"call_id": "c1", "direction": "inbound", "peer": huge, "status": "completed"}),
        ),
        (
            "unknown status",
            json!({"call_id": "c1", "direction": "inbound", "peer": "+380441234567", "status": "answered"}),
        ),
        (
            "negative duration",
            json!({"call_id": "c1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": -1}),
        ),
        (
            "duration over a day",
            json!({"call_id": "c1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 86401}),
        ),
    ] {
        json_case(cases, name, "POST", "/api/calls", org, body);
    }
    for (name, body) in [
        ("no name", json!({"phone": "+380441234567"})),
        ("1 MiB name", json!({"name": huge})),
        ("phone not E.164", json!({"name": "Ann", "phone": "12345"})),
        ("owner with #", json!({"name": "Ann", "owner": "u#1"})),
    ] {
        json_case(cases, name, "POST", "/api/contacts", org, body);
    }
    let reads = [
        format!("/api/notifications?recipient={}", "r".repeat(200)),
        "/api/notifications?recipient=a%23b".to_owned(),
        "/api/notifications".to_owned(),
        "/api/activity/planet/c1".to_owned(),
        format!("/api/activity/contact/{}", "c".repeat(200)),
    ];
    for path in reads {
        cases.push((
            format!("GET {path}"),
            raw("GET", &path, &[("authorization", org)], b""),
        ));
    }
}

fn malformed_bodies(c: &mut Cases) {
    let (org, admin) = (c.org.as_str(), c.admin.as_str());
    let cases = &mut c.list;
    // Malformed bodies on every POST route.
    for path in [
        "/api/orgs",
        "/api/integrations",
        "/api/members",
        "/api/invoices",
        "/api/notifications/read",
        "/api/rules",
        "/api/calls",
        "/api/contacts",
    ] {
        let token = if path == "/api/orgs" { admin } else { org };
        for (name, body) in [
            ("truncated JSON", &b"{\"name\":"[..]),
            ("not JSON", b"name=Acme"),
            ("invalid UTF-8", b"{\"name\":\"\xff\xfe\"}"),
            ("empty", b""),
        ] {
            cases.push((
                format!("POST {path} {name}"),
                raw("POST", path, &[("authorization", token)], body),
            ));
        }
    }
}

fn oversize_body(c: &mut Cases) {
    let org = c.org.as_str();
    let cases = &mut c.list;
    // A body over 256 KiB on any route.
    let big = vec![b' '; 300 * 1024];
    cases.push((
        "POST /api/invoices 300 KiB".into(),
        raw("POST", "/api/invoices", &[("authorization", org)], &big),
    ));
}

fn unknown_routes(c: &mut Cases) {
    let org = c.org.as_str();
    let cases = &mut c.list;
    // Unknown routes and methods, with and without a key.
    for (method, path) in [
        ("DELETE", "/api/invoices"),
        ("PUT", "/api/orgs"),
        ("GET", "/api/nothing"),
        ("POST", "/api/invoices/inv_1/refund"),
        ("GET", "/hooks/o0123456789ab_0123456789abcdef/payments"),
        ("GET", "/"),
        ("POST", "/wp-login.php"),
    ] {
        for token in [org, "Bearer nobody"] {
            cases.push((
                format!("{method} {path} as {}", &token[..10]),
                raw(method, path, &[("authorization", token)], b"{}"),
            ));
        }
    }
}
