//! The loop of the HTTP functions: every invocation API Gateway makes gets our JSON answer.
//! `lambda_http::run` turns an event it cannot read into HTTP (a header value with a control
//! character, say) into a runtime error, which the gateway shows the caller as its own 500.
//! Here that event is a 400 `{"error", "detail"}` like every other refusal, and the handler
//! sees only requests that parsed.

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
            Ok::<_, Infallible>(answer(event.payload, handler).await)
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
            let response = answer(event.payload, handler).await;
            Ok(serde_json::to_value(response).unwrap_or(Value::Null))
        },
    ))
    .await
}

/// Whether an event is the schedule's (EventBridge), not a request.
pub fn is_scheduled(event: &Value) -> bool {
    event.get("source").and_then(Value::as_str) == Some("aws.events")
}

/// One invocation: the event read as an HTTP request and answered, or a 400.
pub async fn answer<H, F>(event: Value, handler: H) -> ApiGatewayV2httpResponse
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
    to_gateway(response)
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
        let answer = answer(event(json!({"accept": "application/json"})), echo_path).await;
        assert_eq!(answer.status_code, 200);
        let Some(Body::Text(body)) = answer.body else {
            panic!("expected a text body");
        };
        assert_eq!(body, r#"{"path":"/api/invoices"}"#);
    }

    #[tokio::test]
    async fn a_query_the_uri_parser_refuses_is_our_400_not_a_panic() {
        let mut bad = event(json!({}));
        bad["rawQueryString"] = json!("x=\"<a b>\"");
        let answer = answer(bad, echo_path).await;
        assert_eq!(answer.status_code, 400);
    }

    #[tokio::test]
    async fn a_header_http_cannot_hold_is_our_400_not_a_runtime_error() {
        let answer = answer(event(json!({"x-bad": "a\u{1}b"})), echo_path).await;
        assert_eq!(answer.status_code, 400);
        let Some(Body::Text(body)) = answer.body else {
            panic!("expected a text body");
        };
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"], "malformed_request");
        assert_eq!(
            answer.headers.get("content-type").unwrap(),
            "application/json"
        );
    }
}
