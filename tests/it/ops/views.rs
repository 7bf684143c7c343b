//! What the operator reads: counts from the index (equal to what was stored), lists by kind and
//! state, the chart, and tenancy: an organisation's key sees nothing of another's.

use super::{ids, Ops};
use crate::support::api::ADMIN;
use crate::support::fixtures;
use chrono::Utc;
use firmspace::ids::OrgId;
use firmspace::review::ReviewItem;
use serde_json::{json, Value};

/// An organisation (by its API key) with a member, `payments` payment webhooks stored (one of
/// them delivered twice; no worker has told the member yet), and a review item.
async fn busy_org(o: &Ops, payments: usize) -> (String, OrgId) {
    let (key, org) = super::org_by_key(o).await;
    let member = json!({"user_id": "u1", "name": "Olena"});
    let (status, _) = crate::support::api::call(&o.api, "POST", "/api/members", &key, member).await;
    assert_eq!(status, 201);
    let (hook, inv, app) = super::payment_hook(o, &org).await;
    for i in 0..payments {
        // Amounts apart: the same amount on one invoice is lookalike money, for a person.
        let amount = format!("1.0{i}");
        let body = fixtures::standard_body(&format!("pay_{i}"), inv.id.as_str(), Some(&amount));
        let at = Utc::now().timestamp();
        for _ in 0..if i == 0 { 2 } else { 1 } {
            let req = fixtures::standard_request_with_id(&hook, &body, at, &format!("msg_{i}"));
            assert_eq!(app.handle(req).await.unwrap().status(), 200);
        }
    }
    ReviewItem {
        org: org.clone(),
        kind: firmspace::review::Kind::Payment,
        reason: firmspace::review::Reason::Overpayment,
        key: format!("payment:{org}"),
        at: Utc::now(),
        detail: json!({}),
    }
    .put(&o.env.store)
    .await
    .unwrap();
    (key, org)
}

#[tokio::test]
async fn the_summary_counts_what_was_stored_and_each_key_sees_only_its_own() {
    let o = Ops::new().await;
    let (a, org_a) = busy_org(&o, 3).await;
    let (b, org_b) = busy_org(&o, 2).await;
    the_summary_is_what_was_stored(&o, &a, &org_b).await;
    each_key_lists_only_its_own(&o, (&a, &org_a), (&b, &org_b)).await;
    pages_chart_and_refusals(&o, &a).await;
}

/// A's summary: three payments, one review item, no queues; the admin's adds up or looks at B.
async fn the_summary_is_what_was_stored(o: &Ops, a: &str, org_b: &OrgId) {
    o.streamed().await;
    let (status, summary) = o.get("/ops/summary", a).await;
    assert_eq!(status, 200, "{summary}");
    let payments = &summary["events"]["payment"];
    // Read by the fan-out: counted, and waiting on no queue.
    assert_eq!(
        (&payments["today"], &payments["week"], &payments["waiting"]),
        (&json!(3), &json!(3), &json!(0)),
        "{summary}"
    );
    assert!(payments["oldest_waiting_at"].is_null(), "{summary}");
    for kind in ["message", "call", "bank_row", "sms", "lead", "credit_note"] {
        assert_eq!(
            summary["events"][kind],
            json!({"today": 0, "week": 0, "waiting": 0, "oldest_waiting_at": null,
                   "units": {"write": 0.0, "read": 0.0, "sqs": 0.0, "invocations": 0.0}}),
            "{kind}"
        );
    }
    assert_eq!(
        summary["review"],
        json!({"open": 1, "by_reason": {"overpayment": 1}})
    );
    assert_eq!(summary["runs"], json!({"needs_check": 0, "failed": 0}));
    assert_eq!(
        summary["queues"],
        Value::Null,
        "an organisation's key sees no queues"
    );
    // The admin adds every organisation up, or looks at one.
    let (_, all) = o.get("/ops/summary", ADMIN).await;
    assert!(
        all["events"]["payment"]["today"].as_u64().unwrap() >= 5,
        "{all}"
    );
    assert!(all["queues"]["notifications"].is_object(), "{all}");
    let (_, only_b) = o.get(&format!("/ops/summary?org={org_b}"), ADMIN).await;
    assert_eq!(only_b["events"]["payment"]["today"], 2);
}

/// Lists: A's key lists A's items; B's ids are not A's to see or act on.
async fn each_key_lists_only_its_own(
    o: &Ops,
    (a, org_a): (&str, &OrgId),
    (b, org_b): (&str, &OrgId),
) {
    let (_, a_events) = o.get("/ops/events?kind=payment", a).await;
    let (_, b_events) = o.get("/ops/events?kind=payment", b).await;
    assert_eq!((ids(&a_events).len(), ids(&b_events).len()), (3, 2));
    assert!(a_events["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["org"] == org_a.as_str()));
    assert!(ids(&a_events).iter().all(|id| !ids(&b_events).contains(id)));
    let (_, b_review) = o.get("/ops/review?state=open", b).await;
    let b_item = &ids(&b_review)[0];
    for (path, body) in [
        (
            format!("/ops/review/{b_item}/resolve"),
            json!({"note": "not mine"}),
        ),
        (
            format!("/ops/events/{}/replay", ids(&b_events)[0]),
            Value::Null,
        ),
    ] {
        let (status, refused) = o.post(&path, a, &format!("k{path}"), &body).await;
        assert_eq!(status, 404, "{path}: {refused}");
    }
    assert_eq!(
        o.get("/ops/review?state=open", b).await.1["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A's key cannot widen itself with org=: it stays A's.
    let (_, widened) = o
        .get(&format!("/ops/events?kind=payment&org={org_b}"), a)
        .await;
    assert_eq!(ids(&widened).len(), 3);
    // The admin names the organisation for a list.
    assert_eq!(o.get("/ops/events?kind=payment", ADMIN).await.0, 400);
    let (_, admin_b) = o
        .get(&format!("/ops/events?kind=payment&org={org_b}"), ADMIN)
        .await;
    assert_eq!(ids(&admin_b), ids(&b_events));
}

/// Paging, the chart and refusals of ours, with A's key.
async fn pages_chart_and_refusals(o: &Ops, a: &str) {
    // Paging: 3 events two at a time.
    let (_, first) = o.get("/ops/events?kind=payment&limit=2", a).await;
    let cursor = first["cursor"].as_str().expect("a next page");
    let (_, rest) = o
        .get(
            &format!("/ops/events?kind=payment&limit=2&cursor={cursor}"),
            a,
        )
        .await;
    assert_eq!(
        (ids(&first).len(), ids(&rest).len(), rest["cursor"].clone()),
        (2, 1, Value::Null)
    );

    // A cursor decoded and changed is refused, never a server error: another organisation's
    // item, a position over DynamoDB's key limit.
    let other_org = format!("ORG#{}#PAYMENT#x", firmspace::ids::OrgId::generate());
    for forged in [
        crate::support::forged_cursor(cursor, "pk", &other_org),
        crate::support::forged_cursor(cursor, "sk", &"9".repeat(2000)),
    ] {
        let path = format!("/ops/events?kind=payment&limit=2&cursor={forged}");
        let (status, answer) = o.get(&path, a).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_cursor"))
        );
    }

    // The chart: A's three stored payments and one duplicate, this hour.
    let (_, chart) = o.get("/ops/chart", a).await;
    let hours = chart["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 24);
    let now = &hours[23];
    assert_eq!(
        (
            now["stored"]["payment"].as_u64(),
            now["duplicates"].as_u64()
        ),
        (Some(3), Some(1)),
        "{now}"
    );

    // Refusals of ours.
    for (path, status) in [
        ("/ops/events?kind=planet", 400),
        ("/ops/review?state=maybe", 400),
        ("/ops/events?kind=payment&limit=500", 400),
        ("/ops/events?kind=payment&cursor=bogus", 400),
        ("/ops/nothing", 404),
    ] {
        assert_eq!(o.get(path, a).await.0, status, "{path}");
    }
    assert_eq!(o.get("/ops/summary", "fsk_wrong").await.0, 401);
    assert_eq!(o.get("/ops/summary", "not-the-admin-token").await.0, 401);

    // A path of ours asked with a method it does not take: 405 naming the one it takes, never
    // a 404 nor an action run (a POST to a read, a GET of an action, the page traced).
    for (path, method, takes) in [
        ("/ops/summary", "POST", "GET"),
        ("/ops/integrations", "POST", "GET"),
        ("/ops/dlq/notify", "POST", "GET"),
        ("/ops/events/replay", "GET", "POST"),
        ("/ops", "TRACE", "GET"),
    ] {
        let auth = format!("Bearer {a}");
        let headers = [
            ("authorization", auth.as_str()),
            ("idempotency-key", "k405"),
        ];
        let req = crate::support::request(method, path, &headers, Vec::new());
        let res = o.app.handle(req).await.unwrap();
        let allow = res.headers().get("allow").and_then(|v| v.to_str().ok());
        assert_eq!(
            (res.status().as_u16(), allow),
            (405, Some(takes)),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn the_page_is_served_with_a_policy_that_allows_only_its_own_script_and_style() {
    let o = Ops::new().await;
    for path in ["/ops/", "/ops"] {
        let res = o
            .app
            .handle(crate::support::request("GET", path, &[], Vec::new()))
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let policy = res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let html = crate::support::body_text(&res);
        let script = html
            .split("<script>")
            .nth(1)
            .and_then(|s| s.split("</script>").next())
            .expect("the script");
        use base64::Engine;
        use sha2::Digest;
        let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script));
        assert!(
            policy.contains(&format!("script-src 'sha256-{hash}'")),
            "{policy}"
        );
        assert!(
            !policy.contains("unsafe-inline") && policy.contains("frame-ancestors 'none'"),
            "{policy}"
        );
        assert!(
            !html.contains("/*SCRIPT*/") && html.contains("Authorization"),
            "the script is inline"
        );
    }
}
