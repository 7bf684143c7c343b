//! A request that creates a CRM entry: a website form's submission through the lead webhook,
//! twenty copies at once, re-signed under a new `webhook-id`, and retried after the sender gave
//! up waiting, makes one contact and one card; its consequences happen once each; the board
//! lists the card and moves it once per key.

use crate::consequences::{fanout_app, stream_event, workers};
use crate::support::app::Crm;
use crate::support::queues::receive;
use chrono::Utc;
use firmspace::consequences::Trigger;
use firmspace::effects::automation::{self, Action};
use firmspace::ids::IntegrationId;
use firmspace::store::item::Read;
use serde_json::{json, Value};
use std::time::Duration;

/// A leads integration made through the api, and two team members: its id and its secret.
async fn form(crm: &Crm) -> (IntegrationId, String) {
    let created = crm
        .integration(json!({"kind": "leads", "provider": "standard"}))
        .await;
    assert!(created["webhook_url"].as_str().unwrap().ends_with("/leads"));
    for user in ["u1", "u2"] {
        let member = json!({"user_id": user, "name": user});
        crm.expect_status("POST", "/api/members", member, 201).await;
    }
    let id = IntegrationId::parse(created["integration_id"].as_str().unwrap()).unwrap();
    (id, created["secret"].as_str().unwrap().to_owned())
}

fn submission(id: &str) -> String {
    json!({"type": "lead.submitted", "data": {"submission_id": id, "name": "Olena Koval",
        "email": "Olena@example.com", "phone": "+380 44 123 45 67", "message": "Please call me",
        "source": "website"}})
    .to_string()
}

/// `body` signed now under `webhook_id`.
fn signed(
    hook: &IntegrationId,
    secret: &str,
    webhook_id: &str,
    body: &str,
) -> lambda_http::Request {
    let now = Utc::now().timestamp();
    crate::support::fixtures::signed_post(hook, "leads", secret, webhook_id, now, body)
}

async fn answer(app: &lead_webhook::App, req: lambda_http::Request) -> (u16, Value) {
    crate::support::app::deliver_at(app, &req, Utc::now()).await
}

#[tokio::test]
async fn twenty_copies_and_a_re_signed_one_are_one_contact_one_card_and_one_notification_each() {
    let crm = Crm::new().await;
    let (hook, secret) = form(&crm).await;
    let task = Action::CreateTask {
        title: "Call the lead".into(),
    };
    automation::create_rule(
        crm.store(),
        &crm.org,
        Trigger::LeadCreated,
        task,
        Utc::now(),
    )
    .await
    .unwrap();
    let app = lead_webhook::app(crm.store().clone());
    let body = submission("s-1");
    let copies = (0..20).map(|_| answer(&app, signed(&hook, &secret, "msg_1", &body)));
    let mut answers = futures::future::join_all(copies).await;
    // The form service sends it again under a new webhook-id.
    answers.push(answer(&app, signed(&hook, &secret, "msg_2", &body)).await);
    let mut statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    statuses.sort();
    assert_eq!(statuses, [vec![200; 20], vec![201]].concat(), "{answers:?}");
    let first = &answers.iter().find(|(s, _)| *s == 201).unwrap().1;
    assert_eq!(first["duplicate"], false);
    for (_, a) in &answers {
        assert_eq!(
            (&a["deal_id"], &a["contact_id"]),
            (&first["deal_id"], &first["contact_id"])
        );
    }
    assert_eq!(
        (
            crm.count("lead").await,
            crm.count("deal").await,
            crm.count("contact").await,
            crm.count("identity").await
        ),
        (1, 1, 1, 2),
        "one lead, one card, one contact with its e-mail and phone"
    );
    assert!(crm.reasons().await.is_empty());
    its_consequences_happen_once(&crm).await;
    the_board_shows_the_card_and_moves_it_once(&crm, first["deal_id"].as_str().unwrap()).await;
}

/// The stored lead through the fan-out twice and every worker twice: a notification for each of
/// the two members, one activity line on the contact, one task from the `lead.created` rule.
async fn its_consequences_happen_once(crm: &Crm) {
    let lead = crm.env.items_of("lead").await.remove(0);
    let (sqs, q, fanout) = fanout_app(&crm.env).await;
    for seq in ["1", "2"] {
        let out = fanout.process(stream_event(&lead, seq), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
    }
    let (notes, triggers) = (
        receive(&sqs, &q.notifications, 1).await,
        receive(&sqs, &q.automation, 1).await,
    );
    // The notifications (a team of two) and the activity line the fan-out wrote, once; the
    // trigger, which a rule takes, twice.
    assert_eq!((notes.len(), triggers.len()), (0, 2));
    let w = workers(&crm.env, Duration::from_secs(2), 5);
    w.notify_all(&notes).await;
    w.automation_all(&triggers).await;
    for user in ["u1", "u2"] {
        let inbox = crm
            .get(&format!("/api/notifications?recipient={user}"))
            .await;
        assert_eq!(
            inbox["items"].as_array().unwrap().len(),
            1,
            "{user}: {inbox}"
        );
    }
    let contact = lead.get("contact_id").unwrap().as_s().unwrap();
    let log = crm.get(&format!("/api/activity/contact/{contact}")).await;
    assert_eq!(log["items"].as_array().unwrap().len(), 1, "{log}");
    let tasks = automation::tasks(crm.store(), &crm.org).await.unwrap();
    assert_eq!(tasks.len(), 1);
}

async fn the_board_shows_the_card_and_moves_it_once(crm: &Crm, deal_id: &str) {
    let board = crm.get("/api/deals?stage=new").await;
    let cards = board["items"].as_array().unwrap();
    assert_eq!(cards.len(), 1);
    assert_eq!(
        (cards[0]["deal_id"].as_str(), cards[0]["title"].as_str()),
        (Some(deal_id), Some("Olena Koval"))
    );
    let path = format!("/api/deals/{deal_id}/stage");
    let qualify = json!({"stage": "qualified"});
    let moved = crm
        .call_with(
            "POST",
            &path,
            &[("idempotency-key", "mv-1")],
            qualify.clone(),
        )
        .await;
    assert_eq!(
        (
            moved.0,
            moved.1["moved"].as_bool(),
            moved.1["from"].as_str()
        ),
        (200, Some(true), Some("new"))
    );
    let again = crm
        .call_with(
            "POST",
            &path,
            &[("idempotency-key", "mv-1")],
            qualify.clone(),
        )
        .await;
    assert_eq!(again, moved, "the same key: the stored answer");
    let other_key = crm
        .call_with("POST", &path, &[("idempotency-key", "mv-2")], qualify)
        .await;
    assert_eq!(
        (
            other_key.0,
            other_key.1["moved"].as_bool(),
            other_key.1["version"].as_u64()
        ),
        (200, Some(false), Some(2))
    );
    let refused = crm
        .call_with(
            "POST",
            &path,
            &[("idempotency-key", "mv-3")],
            json!({"stage": "archived"}),
        )
        .await;
    assert_eq!(
        (refused.0, refused.1["error"].as_str()),
        (400, Some("invalid_stage"))
    );
    let nowhere = crm
        .call_with(
            "POST",
            "/api/deals/dl_nope/stage",
            &[("idempotency-key", "mv-4")],
            json!({"stage": "won"}),
        )
        .await;
    assert_eq!(nowhere.0, 404);
    let qualified = crm.get("/api/deals?stage=qualified").await;
    assert_eq!(qualified["items"][0]["deal_id"], deal_id);
    assert_eq!(crm.get("/api/deals?stage=new").await["items"], json!([]));

    // Ten clicks at once under one key: the move and its record are one transaction, so each
    // gets the one answer (none is told "in progress") and the card moved once.
    let won = json!({"stage": "won"});
    let clicks =
        (0..10).map(|_| crm.call_with("POST", &path, &[("idempotency-key", "mv-5")], won.clone()));
    let answers = futures::future::join_all(clicks).await;
    assert!(
        answers.iter().all(|a| a.0 == 200 && a.1 == answers[0].1),
        "{answers:?}"
    );
    assert_eq!(
        (
            answers[0].1["moved"].as_bool(),
            answers[0].1["from"].as_str(),
            answers[0].1["version"].as_u64()
        ),
        (Some(true), Some("qualified"), Some(3)),
        "{answers:?}"
    );
}

#[tokio::test]
async fn a_sender_that_gave_up_waiting_and_retried_makes_one_card() {
    let crm = Crm::new().await;
    let (hook, secret) = form(&crm).await;
    let app = std::sync::Arc::new(lead_webhook::app(crm.store().clone()));
    let body = submission("s-slow");
    // The first delivery runs on; its sender stops waiting at once (its timeout) and retries.
    let first = {
        let (app, req) = (app.clone(), signed(&hook, &secret, "msg_a", &body));
        tokio::spawn(async move { answer(&app, req).await })
    };
    let retry = answer(&app, signed(&hook, &secret, "msg_b", &body)).await;
    let first = first.await.unwrap();
    let mut statuses = [first.0, retry.0];
    statuses.sort();
    assert_eq!(statuses, [200, 201]);
    assert_eq!(first.1["deal_id"], retry.1["deal_id"]);
    assert_eq!(
        (crm.count("deal").await, crm.count("contact").await),
        (1, 1)
    );
    // A later submission of the same person is another card on the same contact; the fields a
    // form service adds besides the lead's own are left unread.
    let mut tracked: Value = serde_json::from_str(&submission("s-next")).unwrap();
    tracked["data"]["utm_source"] = "ads".into();
    tracked["data"]["consent"] = true.into();
    let tracked = tracked.to_string();
    let (status, next) = answer(&app, signed(&hook, &secret, "msg_c", &tracked)).await;
    assert_eq!(status, 201);
    assert_eq!(next["contact_id"], first.1["contact_id"]);
    assert_ne!(next["deal_id"], first.1["deal_id"]);
    assert_eq!(
        (crm.count("deal").await, crm.count("contact").await),
        (2, 1)
    );
}

#[tokio::test]
async fn a_bad_submission_is_kept_for_a_person_and_a_forged_one_writes_nothing() {
    let crm = Crm::new().await;
    let (hook, secret) = form(&crm).await;
    let app = lead_webhook::app(crm.store().clone());
    let forged = signed(
        &hook,
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_f",
        &submission("s-f"),
    );
    assert_eq!(answer(&app, forged).await.0, 401);
    let no_name = json!({"type": "lead.submitted", "data": {"submission_id": "s-x", "name": " "}})
        .to_string();
    let (status, kept) = answer(&app, signed(&hook, &secret, "msg_x", &no_name)).await;
    assert_eq!(
        (status, kept["status"].as_str()),
        (200, Some("unparseable")),
        "{kept}"
    );
    let (status, ignored) = answer(
        &app,
        signed(
            &hook,
            &secret,
            "msg_v",
            &json!({"type": "lead.viewed", "data": {}}).to_string(),
        ),
    )
    .await;
    assert_eq!(
        (status, ignored["status"].as_str()),
        (200, Some("ignored")),
        "{ignored}"
    );
    assert_eq!((crm.count("lead").await, crm.count("deal").await), (0, 0));
    assert_eq!(crm.reasons().await, ["unparseable_payload"]);
}

#[tokio::test]
async fn a_name_typed_on_two_lines_with_an_rtl_mark_is_one_line_of_the_lead_not_a_lost_lead() {
    let crm = Crm::new().await;
    let (hook, secret) = form(&crm).await;
    let app = lead_webhook::app(crm.store().clone());
    let typed = json!({"type": "lead.submitted", "data": {"submission_id": "s-rtl",
        "name": "Olena\u{200F}\nKoval\u{202E}"}})
    .to_string();
    let (status, made) = answer(&app, signed(&hook, &secret, "msg_rtl", &typed)).await;
    assert_eq!(status, 201, "{made}");
    let contacts = crm.env.items_of("contact").await;
    let names: Vec<&str> = contacts.iter().filter_map(|c| c.opt_str("name")).collect();
    assert_eq!(names, ["Olena Koval"]);
}

/// A submission from `name` with this e-mail and phone.
fn from(id: &str, email: &str, phone: &str) -> String {
    json!({"type": "lead.submitted", "data": {"submission_id": id, "name": "Olena",
        "email": email, "phone": phone}})
    .to_string()
}

#[tokio::test]
async fn a_lead_whose_email_and_phone_are_two_contacts_makes_one_card_and_asks_a_person() {
    let crm = Crm::new().await;
    let (hook, secret) = form(&crm).await;
    let app = lead_webhook::app(crm.store().clone());
    // Two people: one known by her e-mail, one by his phone.
    let (status, a) = answer(
        &app,
        signed(
            &hook,
            &secret,
            "m1",
            &from("s1", "olena@example.com", "+380441111111"),
        ),
    )
    .await;
    assert_eq!(status, 201);
    let (status, b) = answer(
        &app,
        signed(
            &hook,
            &secret,
            "m2",
            &from("s2", "ivan@example.com", "+380442222222"),
        ),
    )
    .await;
    assert_eq!(status, 201);
    let open = |items: Vec<firmspace::review::ReviewView>| -> Vec<Value> {
        items
            .into_iter()
            .filter(|i| i.reason.as_deref() == Some("possible_same_contact"))
            .map(|i| serde_json::to_value(i).unwrap())
            .collect()
    };
    // A lead matching one contact by both is that contact: nothing is filed.
    let (status, same) = answer(
        &app,
        signed(
            &hook,
            &secret,
            "m3",
            &from("s3", "olena@example.com", "+380441111111"),
        ),
    )
    .await;
    assert_eq!((status, &same["contact_id"]), (201, &a["contact_id"]));
    assert!(open(
        firmspace::review::list(crm.store(), &crm.org, 20)
            .await
            .unwrap()
    )
    .is_empty());
    // Her e-mail and his phone: one card, on the e-mail's contact, and one item naming both.
    let body = from("s4", "olena@example.com", "+380442222222");
    let (status, mixed) = answer(&app, signed(&hook, &secret, "m4", &body)).await;
    assert_eq!((status, &mixed["contact_id"]), (201, &a["contact_id"]));
    let (status, _) = answer(&app, signed(&hook, &secret, "m5", &body)).await;
    assert_eq!(status, 200, "a repeat");
    let items = open(
        firmspace::review::list(crm.store(), &crm.org, 20)
            .await
            .unwrap(),
    );
    assert_eq!(items.len(), 1, "filed once: {items:?}");
    let named: Vec<&str> = items[0]["detail"]["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["contact_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        named,
        [
            a["contact_id"].as_str().unwrap(),
            b["contact_id"].as_str().unwrap()
        ],
        "{items:?}"
    );
    assert_eq!(
        (crm.count("deal").await, crm.count("contact").await),
        (4, 2),
        "never merged: four cards, two contacts"
    );
}
