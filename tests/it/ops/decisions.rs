//! A person's decisions, each once: two resolutions at once leave one, and `resend` clicked
//! twice makes one more request with the run's own key.

use super::{ids, thanks_rule, trigger_body, Ops};
use crate::consequences::workers;
use crate::support::api::ADMIN;
use crate::support::target;
use chrono::Utc;
use firmspace::effects::automation;
use firmspace::ids::OrgId;
use firmspace::review::ReviewItem;
use serde_json::json;
use std::time::Duration;

/// An open overpayment review item about Stripe payment `payment` of `org`: its id on the
/// open list `key` reads (the only one open).
async fn open_overpayment(o: &Ops, (key, org): (&str, &OrgId), payment: &str) -> String {
    ReviewItem {
        org: org.clone(),
        kind: firmspace::review::Kind::Payment,
        reason: firmspace::review::Reason::Overpayment,
        key: format!("payment:stripe:{payment}"),
        at: Utc::now(),
        detail: json!({}),
    }
    .put(&o.env.store)
    .await
    .unwrap();
    let (_, open) = o.get("/ops/review?state=open", key).await;
    ids(&open)[0].clone()
}

/// One resolution sent twice at once under one key: each twin resolves or is told it was
/// resolved, and the key keeps the resolution, never the twin's refusal (a repeat is 200).
#[tokio::test]
async fn a_resolution_sent_twice_at_once_under_one_key_keeps_the_resolution() {
    let o = Ops::new().await;
    let (key, org) = super::org_by_key(&o).await;
    let note = json!({"note": "refunded by hand"});
    // Five items, each resolved by two twins at once: five chances for a twin to lose.
    for round in 0..5 {
        let id = open_overpayment(&o, (&key, &org), &format!("pi_twin_{round}")).await;
        let path = format!("/ops/review/{id}/resolve");
        let twin = format!("twin-{round}");
        let (a, b) = tokio::join!(
            o.post(&path, &key, &twin, &note),
            o.post(&path, &key, &twin, &note),
        );
        assert!(
            [&a, &b].iter().any(|(status, _)| *status == 200),
            "{round}: {a:?} {b:?}"
        );
        let (status, again) = o.post(&path, &key, &twin, &note).await;
        assert_eq!(
            (status, again["state"].as_str()),
            (200, Some("resolved")),
            "{round}: {again}"
        );
    }
}

#[tokio::test]
async fn two_people_resolving_at_once_leave_one_resolution() {
    let o = Ops::new().await;
    let (key, org) = super::org_by_key(&o).await;
    let id = open_overpayment(&o, (&key, &org), "pi_9").await;
    let path = format!("/ops/review/{id}/resolve");
    let (note_a, note_b) = (
        json!({"note": "refunded by hand"}),
        json!({"note": "checked"}),
    );
    let (a, b) = tokio::join!(
        o.post(&path, &key, "person-a", &note_a),
        o.post(&path, ADMIN, "person-b", &note_b),
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{a:?} {b:?}");
    let (won, lost) = if a.0 == 200 {
        (a.1.clone(), b.1.clone())
    } else {
        (b.1.clone(), a.1.clone())
    };
    assert_eq!(won["state"], "resolved");
    let (by_key, by_admin) = (
        firmspace::orgs::key_id(&key),
        firmspace::admin::admin_id(&crate::support::digests().await, ADMIN)
            .await
            .unwrap(),
    );
    // Keyed: not the token's bare digest, which a weak token's guesser could compute offline.
    assert_ne!(
        by_admin,
        format!("admin:{}", firmspace::orgs::key_id(ADMIN))
    );
    assert!(
        by_admin.starts_with("admin:adm_") && by_admin.len() == 26,
        "{by_admin}"
    );
    assert!(
        won["by"] == by_key.as_str() || won["by"] == by_admin.as_str(),
        "{won}"
    );
    assert_eq!(lost["error"], "not_open");
    assert_eq!(
        lost["outcome"]["by"], won["by"],
        "the loser is told who resolved it"
    );
    let (_, resolved) = o.get("/ops/review?state=resolved", &key).await;
    assert_eq!(resolved["items"].as_array().unwrap().len(), 1);
    assert_eq!(resolved["items"][0]["note"], won["note"]);
    assert_eq!(
        o.get("/ops/review?state=open", &key).await.1["items"],
        json!([])
    );
    assert_eq!(o.get("/ops/summary", &key).await.1["review"]["open"], 0);
    // The same click again gets the stored answer.
    let (status, repeat) = o
        .post(
            &path,
            &key,
            "person-a",
            &json!({"note": "refunded by hand"}),
        )
        .await;
    assert_eq!(status, if a.0 == 200 { 200 } else { 409 });
    assert_eq!(repeat, a.1);
    // Without a key, nothing happens.
    let auth = format!("Bearer {key}");
    let res = o
        .app
        .handle(crate::support::request(
            "POST",
            &path,
            &[("authorization", &auth)],
            b"{\"note\":\"x\"}".to_vec(),
        ))
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
}

#[tokio::test]
async fn resend_clicked_twice_makes_one_more_request_with_the_same_key() {
    let o = Ops::new().await;
    let (key, org) = super::org_by_key(&o).await;
    // The target answers after 800 ms; the worker waits 200 ms and has no status URL to ask.
    let server = target::spawn(Duration::from_millis(800), 200).await;
    let rule = thanks_rule(&o, &org, server.url()).await;
    let w = workers(&o.env, Duration::from_millis(200), 5);
    let body = trigger_body(&org, "payment:stripe:p_resend");
    w.automation
        .process(crate::support::queues::event_of("t1", &body), Utc::now())
        .await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(server.seen().len(), 1);
    let (_, check) = o.get("/ops/runs?state=needs_check", &key).await;
    let items = check["items"].as_array().unwrap();
    assert_eq!(
        (items.len(), items[0]["resendable"].as_bool()),
        (1, Some(true)),
        "{check}"
    );
    assert_eq!(
        o.get("/ops/summary", &key).await.1["runs"]["needs_check"],
        1
    );
    let path = format!("/ops/runs/{}/decide", ids(&check)[0]);
    one_more_request_with_the_runs_key(&o, &key, &path).await;
    let expected = automation::idempotency_key(
        &org,
        &automation::run_key(
            &rule.rule_id,
            &firmspace::ids::EventKey::parse("payment:stripe:p_resend").unwrap(),
        ),
    );
    assert_eq!(
        server.seen(),
        [expected.clone(), expected],
        "one more request, with the run's key"
    );
    assert_eq!(
        o.get("/ops/summary", &key).await.1["runs"]["needs_check"],
        0
    );
    let (_, sent) = o.get("/ops/runs?state=sent", &key).await;
    assert_eq!(sent["items"][0]["attempts"], 2);
}

/// A double click on resend: the same key twice at once, then a second click with a new key
/// while the resend waits in the queue; the automation worker (with time for the target's
/// 800 ms) sends it, and a copy of its message sends nothing.
async fn one_more_request_with_the_runs_key(o: &Ops, key: &str, path: &str) {
    let resend = json!({"decision": "resend"});
    let (first, twin) = tokio::join!(
        o.post(path, key, "click-1", &resend),
        o.post(path, key, "click-1", &resend),
    );
    let answers = [first.clone(), twin.clone()];
    assert!(
        answers
            .iter()
            .any(|(s, a)| *s == 202 && a["state"] == "sending"),
        "{answers:?}"
    );
    // A twin sent while the first works does the work too, and is told what it did: the run
    // was sending already (or, after the first's answer was kept, that answer again).
    assert!(
        answers.iter().all(|(s, a)| *s == 202
            || (*s == 409
                && a["error"] == "not_needs_check"
                && a["outcome"]["state"] == "sending")),
        "{answers:?}"
    );
    let (status, waiting) = o.post(path, key, "click-2", &resend).await;
    assert_eq!(
        (status, waiting["outcome"]["state"].as_str()),
        (409, Some("sending"))
    );
    let messages = crate::support::queues::receive(&o.sqs, &o.consequences.automation, 0).await;
    assert_eq!(messages.len(), 1, "one resend queued for the two clicks");
    let patient = workers(&o.env, Duration::from_secs(3), 5);
    for _copy in 0..2 {
        let answer = patient
            .automation
            .process(crate::support::queues::event(&messages), Utc::now())
            .await;
        assert!(answer.batch_item_failures.is_empty(), "{answer:?}");
    }
    let (status, later) = o.post(path, key, "click-3", &resend).await;
    assert_eq!(
        (status, later["outcome"]["state"].as_str()),
        (409, Some("sent"))
    );
}
