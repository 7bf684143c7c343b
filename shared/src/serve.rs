//! The loop of the HTTP functions: every invocation API Gateway makes gets our JSON answer.
//! `lambda_http::run` turns an event it cannot read into HTTP (a header value with a control
//! character, say) into a runtime error, which the gateway shows the caller as its own 500.
//! Here that event is a 400 problem like every other refusal, and the handler sees only requests
//! that parsed. Every answer carries `x-request-id`, the invocation's request id (the one its log
//! lines carry), and an error's `instance` is `urn:request:<that id>`.

use crate::http::ApiError;
use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request, Response};
use lambda_runtime::LambdaEvent;
use serde_json::Value;
use std::convert::Infallible;
use std::future::Future;

/// Runs `handler` for every request of an HTTP API (payload format 2.0) until the runtime ends.
pub async fn run<H, F>(handler: H) -> Result<(), lambda_runtime::Error>
where
    H: Fn(Request) -> F,
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    let handler = &handler;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            Ok::<_, Infallible>(answer(event.payload, &event.context.request_id, handler).await)
        },
    ))
    .await
}

/// [`run`] for a function a schedule invokes too: an EventBridge event (`source:
/// aws.events`) runs `scheduled` and answers nothing; every other event is a request.
pub async fn run_scheduled<H, F, S, G>(
    handler: H,
    scheduled: S,
) -> Result<(), lambda_runtime::Error>
where
    H: Fn(Request) -> F,
    F: Future<Output = Result<Response<Body>, Infallible>>,
    S: Fn() -> G,
    G: Future<Output = ()>,
{
    let (handler, scheduled) = (&handler, &scheduled);
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            if is_scheduled(&event.payload) {
                scheduled().await;
                return Ok::<_, Infallible>(Value::Null);
            }
            let response = answer(event.payload, &event.context.request_id, handler).await;
            Ok(serde_json::to_value(response).unwrap_or(Value::Null))
        },
    ))
    .await
}

/// Whether an event is the schedule's (EventBridge), not a request.
pub fn is_scheduled(event: &Value) -> bool {
    event.get("source").and_then(Value::as_str) == Some("aws.events")
}

/// One invocation: the event read as an HTTP request and answered, or a 400; the answer
/// marked with `request_id`.
pub async fn answer<H, F>(event: Value, request_id: &str, handler: H) -> ApiGatewayV2httpResponse
where
    H: Fn(Request) -> F,
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    let request = serde_json::from_value::<ApiGatewayV2httpRequest>(event)
        .ok()
        .and_then(|req| {
            // lambda_http builds the URI with `expect`: a path or query that http's URI parser
            // refuses would panic the function; here it is a refused request.
            std::panic::catch_unwind(|| Request::from(LambdaRequest::ApiGatewayV2(req))).ok()
        });
    let response = match request {
        Some(req) => match handler(req).await {
            Ok(response) => response,
            Err(never) => match never {},
        },
        None => {
            // Not the serde message: it quotes the offending value, which may be a credential.
            tracing::warn!("request could not be read as HTTP");
            ApiError::bad_request(
                "malformed_request",
                "a header, the path or the query of the request cannot be read as HTTP",
            )
            .into_response()
        }
    };
    to_gateway(with_request_id(response, request_id))
}

/// `x-request-id` on the answer; an error's body gets `instance`, `urn:request:<id>`.
fn with_request_id(response: Response<Body>, request_id: &str) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    if let Ok(value) = lambda_http::http::HeaderValue::from_str(request_id) {
        parts.headers.insert("x-request-id", value);
    }
    let problem = parts
        .headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes() == crate::http::PROBLEM.as_bytes());
    let body = match (problem, body) {
        (true, Body::Text(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(mut value) => {
                value["instance"] = Value::String(format!("urn:request:{request_id}"));
                Body::Text(value.to_string())
            }
            Err(_) => Body::Text(text),
        },
        (_, body) => body,
    };
    Response::from_parts(parts, body)
}

fn to_gateway(response: Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.headers = parts.headers;
    out.is_base64_encoded = matches!(body, Body::Binary(_));
    out.body = match body {
        Body::Empty => None,
        other => Some(other),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(headers: Value) -> Value {
        json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/api/invoices",
            "rawQueryString": "",
            "headers": headers,
            "requestContext": {
                "accountId": "000000000000", "apiId": "api", "domainName": "localhost",
                "domainPrefix": "localhost", "requestId": "r1", "routeKey": "$default",
                "stage": "$default", "time": "03/Dec/2026:00:00:00 +0000", "timeEpoch": 0,
                "http": {"method": "GET", "path": "/api/invoices", "protocol": "HTTP/1.1",
                         "sourceIp": "127.0.0.1", "userAgent": "test"}
            },
            "isBase64Encoded": false
        })
    }

    async fn echo_path(req: Request) -> Result<Response<Body>, Infallible> {
        Ok(crate::http::json_response(
            200,
            &json!({"path": req.uri().path()}),
        ))
    }

    #[tokio::test]
    async fn a_readable_request_reaches_the_handler() {
        let answer = answer(
            event(json!({"accept": "application/json"})),
            "req-1",
            echo_path,
        )
        .await;
        assert_eq!(answer.status_code, 200);
        let Some(Body::Text(body)) = answer.body else {
            panic!("expected a text body");
        };
        assert_eq!(body, r#"{"path":"/api/invoices"}"#);
        assert_eq!(answer.headers.get("x-request-id").unwrap(), "req-1");
    }

    #[tokio::test]
    async fn a_query_the_uri_parser_refuses_is_our_400_not_a_panic() {
        let mut bad = event(json!({}));
        bad["rawQueryString"] = json!("x=\"<a b>\"");
        let answer = answer(bad, "req-2", echo_path).await;
        assert_eq!(answer.status_code, 400);
    }

    #[tokio::test]
    async fn a_header_http_cannot_hold_is_our_400_not_a_runtime_error() {
        let answer = answer(event(json!({"x-bad": "a\u{1}b"})), "req-3", echo_path).await;
        assert_eq!(answer.status_code, 400);
        let Some(Body::Text(body)) = answer.body else {
            panic!("expected a text body");
        };
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"], "malformed_request");
        assert_eq!(
            (body["status"].as_u64(), body["instance"].as_str()),
            (Some(400), Some("urn:request:req-3"))
        );
        assert_eq!(
            body["type"],
            "tag:firmspace.events,2026:problem:malformed_request"
        );
        assert_eq!(
            answer.headers.get("content-type").unwrap(),
            "application/problem+json"
        );
        assert_eq!(answer.headers.get("x-request-id").unwrap(), "req-3");
    }
}
