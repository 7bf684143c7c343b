//! The `ai` action acts once: the model (through ministack's Bedrock, which forwards Converse to
//! a stand-in OpenAI-compatible model on loopback) is called once per run, each of its tool calls
//! is one effect, however often the trigger is redelivered, and after a timeout that came when
//! the reply was already sent.

use crate::messages::{telegram_update, Setup};
use crate::support::queues::event_of;
use axum::extract::State;
use axum::Router;
use chrono::Utc;
use firmspace::effects::automation::{self, Action, Tool};
use firmspace::effects::runs::{self, RunState};
use firmspace::effects::{Consequence, Trigger};
use firmspace::messages::Message;
use firmspace::store::item::Read;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The model the local and test stages allow.
pub const HAIKU: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";

/// The bounds of the test stage: the one model allowed.
pub fn bounds() -> automation_worker::AiBounds {
    automation_worker::AiBounds {
        models: firmspace::commands::model::Models::parse(HAIKU),
        runs_per_hour: 1000,
        timeout: Duration::from_secs(20),
    }
}

/// An `ai` rule on `message.received`: the allowed model with `instructions` and `tools`.
pub async fn ai_rule(s: &Setup, instructions: &str, tools: Vec<Tool>) -> automation::Rule {
    let action = Action::Ai {
        model: HAIKU.into(),
        instructions: instructions.into(),
        tools,
        max_tokens: None,
    };
    let trigger = Trigger::MessageReceived;
    automation::create_rule(&s.env.store, &s.org, trigger, action, Utc::now())
        .await
        .unwrap()
}

/// The automation worker over the setup's table, asking `model` within `bounds`.
pub fn worker(
    s: &Setup,
    model: aws_sdk_bedrockruntime::Client,
    bounds: automation_worker::AiBounds,
) -> automation_worker::App {
    automation_worker::app_with_model(
        s.env.store.clone(),
        firmspace::effects::outbound::Outbound::new(Duration::from_secs(2), true),
        crate::support::channels::apis(true),
        (model, bounds),
        5,
    )
}

/// A model that answers every chat with a reply and a task; how often it was asked, and what.
#[derive(Clone, Default)]
struct Model {
    calls: Arc<AtomicUsize>,
    asked: Arc<std::sync::Mutex<Vec<Value>>>,
}

async fn complete(State(model): State<Model>, body: axum::Json<Value>) -> axum::Json<Value> {
    model.calls.fetch_add(1, Ordering::SeqCst);
    model.asked.lock().unwrap().push(body.0);
    axum::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "stand-in",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "I will answer and make a task.",
            "tool_calls": [
                {"id": "call_reply", "type": "function", "function": {"name": "reply",
                    "arguments": "{\"conversation_id\": \"elsewhere\", \"text\": \"Yes, we deliver on Fridays\"}"}},
                {"id": "call_task", "type": "function", "function": {"name": "create_task",
                    "arguments": "{\"title\": \"Confirm the Friday delivery\"}"}}]}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}))
}

/// The stand-in model on the port ministack's Bedrock forwards to.
async fn model() -> Model {
    let url = std::env::var("FIRMSPACE_TEST_MODEL_URL")
        .expect("FIRMSPACE_TEST_MODEL_URL: run `cargo xtask test`");
    let addr = url.trim_start_matches("http://");
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("the model's port");
    let model = Model::default();
    let app = Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .with_state(model.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    model
}

#[tokio::test]
async fn an_ai_step_asks_the_model_once_and_each_tool_call_acts_once() {
    let model = model().await;
    let s = Setup::new(Setup::telegram).await;
    let instructions = "Answer the customer briefly and make a task for the team.";
    let rule = ai_rule(&s, instructions, vec![Tool::Reply, Tool::CreateTask]).await;
    let (status, _) = s
        .answer(s.telegram_request(&telegram_update(31, "do you deliver on Fridays?", None)))
        .await;
    assert_eq!(status, 200);
    let item = s.items_of("message").await.remove(0);
    let fired = Message::from_item(&item)
        .unwrap()
        .consequences()
        .into_iter()
        .find(|c| matches!(c, Consequence::Trigger(_)))
        .unwrap();
    let Consequence::Trigger(trigger) = &fired else {
        unreachable!()
    };
    let key = trigger.event_key.clone();
    let body = serde_json::to_string(&fired).unwrap();
    let bedrock = aws_sdk_bedrockruntime::Client::new(&crate::support::sdk_config().await);
    let worker = worker(&s, bedrock, bounds());
    // Delivered three times: the model once, one reply, one task.
    for i in 0..3 {
        let out = worker
            .process(event_of(&format!("t{i}"), &body), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty(), "{out:?}");
    }
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        1,
        "the model is asked once per run"
    );
    let asked = model.asked.lock().unwrap()[0].clone();
    assert!(
        asked.to_string().contains("do you deliver on Fridays?"),
        "the conversation is its input"
    );
    assert_eq!(s.stand_in.sends(), 1);
    assert_eq!(
        s.stand_in.sent()[0],
        json!({"chat_id": "42", "text": "Yes, we deliver on Fridays"})
    );
    assert_eq!(
        automation::tasks(&s.env.store, &s.org).await.unwrap().len(),
        1
    );
    let run = s
        .env
        .store
        .get(&runs::run_pk(
            &s.org,
            &automation::run_key(&rule.rule_id, &key),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.opt_str("state"), Some("done"));
    let tokens: Value = serde_json::from_str(run.opt_str("tokens").unwrap()).unwrap();
    assert_eq!(tokens["total"], 150, "the tokens are kept on the run");

    // A timeout after the reply was sent: the run left `sending` with its answer kept, its lease
    // run out. The next delivery reads the kept answer: no second call, no second send.
    let pk = runs::run_pk(&s.org, &automation::run_key(&rule.rule_id, &key));
    let died = firmspace::store::Update::new()
        .set("state", firmspace::store::item::s("sending"))
        .set(
            "lease_until",
            firmspace::store::item::s("2000-01-01T00:00:00.000Z"),
        );
    assert!(s.env.store.update_if(&pk, &died).await.unwrap());
    let out = worker.process(event_of("t-late", &body), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty(), "{out:?}");
    assert_eq!(model.calls.load(Ordering::SeqCst), 1);
    assert_eq!(s.stand_in.sends(), 1);
    assert_eq!(
        automation::tasks(&s.env.store, &s.org).await.unwrap().len(),
        1
    );
    let state = runs::run_state(&s.env.store, &s.org, &rule.rule_id, &key)
        .await
        .unwrap();
    assert_eq!(state, Some(RunState::Done));
    // The operator's list of runs shows what the model used.
    let (done, _) = firmspace::ops::runs::page(&s.env.store, &s.org, "done", 50, None)
        .await
        .unwrap();
    let shown = done
        .iter()
        .find(|r| {
            r.rule_id.as_deref() == Some(rule.rule_id.as_str())
                && r.event_key.as_deref() == Some(key.as_str())
        })
        .expect("the ai run on the list");
    assert_eq!(
        shown.tokens.as_ref().map(|t| t["total"].clone()),
        Some(150.into())
    );
}

/// A Bedrock endpoint that answers every Converse with `status` and this error type.
async fn refusing(status: u16, error_type: &'static str) -> aws_sdk_bedrockruntime::Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(move || async move {
        let mut res = axum::response::IntoResponse::into_response(axum::Json(
            json!({"message": "no such model for this account"}),
        ));
        *res.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
        res.headers_mut()
            .insert("x-amzn-errortype", error_type.parse().unwrap());
        res
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    let config = crate::support::sdk_config().await;
    let conf = aws_sdk_bedrockruntime::config::Builder::from(&config)
        .endpoint_url(format!("http://{addr}"))
        .build();
    aws_sdk_bedrockruntime::Client::from_conf(conf)
}

#[tokio::test]
async fn a_model_that_refuses_fails_the_run_with_its_reason_and_one_that_is_down_is_retried() {
    let s = Setup::new(Setup::telegram).await;
    let rule = ai_rule(&s, "Answer.", vec![Tool::CreateTask]).await;
    s.answer(s.telegram_request(&telegram_update(41, "hello", None)))
        .await;
    let item = s.items_of("message").await.remove(0);
    let fired = Message::from_item(&item)
        .unwrap()
        .consequences()
        .into_iter()
        .find(|c| matches!(c, Consequence::Trigger(_)))
        .unwrap();
    let Consequence::Trigger(trigger) = &fired else {
        unreachable!()
    };
    let body = serde_json::to_string(&fired).unwrap();
    let worker = |model| worker(&s, model, bounds());
    // Down: the message comes back, the run may be tried again.
    let down = worker(refusing(503, "ServiceUnavailableException").await);
    let out = down.process(event_of("d1", &body), Utc::now()).await;
    assert_eq!(out.batch_item_failures.len(), 1, "retried by the queue");
    // Refused: the run ends failed with the reason, for a person; nothing acted.
    let refused = worker(refusing(400, "ValidationException").await);
    let out = refused.process(event_of("r1", &body), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty(), "{out:?}");
    let state = runs::run_state(&s.env.store, &s.org, &rule.rule_id, &trigger.event_key)
        .await
        .unwrap();
    assert_eq!(state, Some(RunState::Failed));
    assert!(automation::tasks(&s.env.store, &s.org)
        .await
        .unwrap()
        .is_empty());
    assert!(s
        .review_reasons()
        .await
        .contains(&"model_refused".to_string()));
}
