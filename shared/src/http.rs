//! The request/response edge: one error type mapped to HTTP once, JSON bodies, header access.

use lambda_http::{Body, Request, Response};
use serde_json::{json, Value};
use std::error::Error as StdError;

use crate::commands::{Made, Outcome, Performed, Refused, Why};

mod recovery;

pub use crate::egress::client;
pub use crate::fields::plain;

/// Largest body we read; bigger ones answer 413.
pub const MAX_BODY: usize = 256 * 1024;

/// The media type of every error of ours (RFC 9457).
pub const PROBLEM: &str = "application/problem+json";
/// Seconds a 503 asks the caller to wait when its cause names no time of its own.
pub const RETRY_UNAVAILABLE_SECS: u64 = 5;

/// An error code's problem type, a stable URI (RFC 4151 tag) per code: docs/http.md lists them.
pub fn problem_type(code: &str) -> String {
    format!("tag:firmspace.events,2026:problem:{code}")
}

/// An error code's title: the code in words (`rate_limited` → "Rate limited"), the same for
/// every occurrence of the problem.
pub fn problem_title(code: &str) -> String {
    let words = code.replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A 4xx says what was wrong; a 5xx says nothing internal (the cause chain goes to the log).
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub detail: String,
    /// The request field that was refused, for a 400 about one field.
    pub field: Option<&'static str>,
    /// Seconds the caller should wait (`Retry-After`, and `retry_after` in the body).
    pub retry_after: Option<u64>,
    /// The methods the path takes, for a 405 (`Allow`).
    pub allow: Option<String>,
    /// What else the refusal names: a conflict's stored `outcome`, a file's refused `rows`.
    pub more: Option<Box<serde_json::Map<String, Value>>>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            field: None,
            retry_after: None,
            allow: None,
            more: None,
        }
    }

    /// 429 `rate_limited`: the key read more than its limit this minute.
    pub fn rate_limited(limit: u64, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                429,
                "rate_limited",
                format!("at most {limit} requests a minute here; retry in {retry_after} s"),
            )
        }
    }

    /// A request's count before its work: on, or 429 over its limit.
    pub fn counted((read, limit): (crate::orgs::rate::Read, u64)) -> Result<(), Self> {
        match read {
            crate::orgs::rate::Read::Allowed => Ok(()),
            crate::orgs::rate::Read::Limited { retry_after } => {
                Err(Self::rate_limited(limit, retry_after))
            }
        }
    }

    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(400, code, detail)
    }

    pub fn unauthorized(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(401, code, detail)
    }

    /// 405, naming the methods the path takes.
    pub fn method_not_allowed(methods: &[&str]) -> Self {
        Self {
            allow: Some(methods.join(", ")),
            ..Self::new(
                405,
                "method_not_allowed",
                format!("this path takes {}", methods.join(", ")),
            )
        }
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(404, "not_found", format!("{what} not found"))
    }

    /// Logs the whole cause chain and answers a bare 500 (or 503 when a retry can help).
    pub fn internal(err: &(dyn StdError + 'static), retryable: bool) -> Self {
        Refused::failed(err, retryable).into()
    }

    /// The answer: an RFC 9457 problem (`type`, `title`, `status`, `detail`; `instance` is
    /// added where the request id is known, [`crate::serve`]) with our `error` code and, where
    /// they apply, `field` and `retry_after`; `Retry-After` on a 429 or 503, `Allow` on a 405.
    pub fn into_response(self) -> Response<Body> {
        let retry_after = match (self.retry_after, self.status) {
            (None, 503) => Some(RETRY_UNAVAILABLE_SECS),
            (given, _) => given,
        };
        let mut body = Value::Object(self.more.map(|m| *m).unwrap_or_default());
        body["error"] = json!(self.code);
        body["detail"] = json!(self.detail);
        if let Some(field) = self.field {
            body["field"] = json!(field);
        }
        if let Some(seconds) = retry_after {
            body["retry_after"] = json!(seconds);
        }
        let mut response = json_response(self.status, &body);
        let headers = response.headers_mut();
        if let Some(seconds) = retry_after {
            headers.insert("retry-after", lambda_http::http::HeaderValue::from(seconds));
        }
        if let Some(methods) = self.allow.and_then(|m| m.parse().ok()) {
            headers.insert("allow", methods);
        }
        response
    }
}

/// Every outcome's HTTP status: chosen here, once, for every edge that answers HTTP.
const STATUSES: [(Outcome, u16); 10] = [
    (Outcome::Made(Made::Done), 200),
    (Outcome::Made(Made::Created), 201),
    (Outcome::Made(Made::Accepted), 202),
    (Outcome::Refused(Why::Invalid), 400),
    (Outcome::Refused(Why::Forbidden), 403),
    (Outcome::Refused(Why::NotFound), 404),
    (Outcome::Refused(Why::Conflict), 409),
    (Outcome::Refused(Why::TooLarge), 413),
    (Outcome::Refused(Why::Unavailable), 503),
    (Outcome::Refused(Why::Broken), 500),
];

/// The status of a command's outcome.
pub fn status(outcome: Outcome) -> u16 {
    STATUSES
        .iter()
        .find(|(o, _)| *o == outcome)
        .map_or(500, |(_, status)| *status)
}

fn refused_status(why: Why) -> u16 {
    status(Outcome::Refused(why))
}

/// The outcome an HTTP answer of an operator's action stands for, to be kept for its repeats:
/// a status of the table, else its class's (a 2xx done, a 4xx a conflict, a 5xx a failure a
/// retry may get past).
pub fn outcome_of(status: u16) -> Outcome {
    let listed = STATUSES.iter().find(|(_, s)| *s == status);
    listed.map_or_else(
        || match status {
            200..=299 => Outcome::Made(Made::Done),
            400..=499 => Outcome::Refused(Why::Conflict),
            _ => Outcome::Refused(Why::Unavailable),
        },
        |(o, _)| *o,
    )
}

/// An operator's action refused with a problem, as the request record keeps it.
impl From<ApiError> for Refused {
    fn from(e: ApiError) -> Self {
        let Outcome::Refused(why) = outcome_of(e.status) else {
            return Self::new(Why::Broken, e.code, e.detail);
        };
        Self {
            field: e.field,
            more: e.more.map(|m| *m).unwrap_or_default(),
            ..Self::new(why, e.code, e.detail)
        }
    }
}

/// A command's refusal as a problem: its status from its `Why`.
impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        Self {
            field: refused.field,
            more: (!refused.more.is_empty()).then(|| Box::new(refused.more)),
            ..Self::new(refused_status(refused.why), refused.code, refused.detail)
        }
    }
}

/// A command's answer, as it was done: its status, its body, and `Idempotent-Replayed` when it
/// is a repeat's.
pub fn performed_response<T: serde::Serialize>(performed: &Performed<T>) -> Response<Body> {
    let (status, body) = match performed {
        Performed::Now {
            outcome, answer, ..
        } => (status(*outcome), to_json(answer)),
        Performed::Again(kept) => (status(kept.outcome), kept.answer.clone()),
    };
    replayed_response(status, &body, performed.repeat())
}

/// What became of a request, asked by its key: `running`, or `done` with what it was answered.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RequestOutcome {
    pub key: String,
    /// `running` or `done`.
    #[schema(example = "done", value_type = RequestState)]
    pub state: &'static str,
    /// `done`: the HTTP status the request was answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u64>,
    /// `done`: the answer's body (null if the stored one cannot be read): one of the answers
    /// of the requests a key is kept for, or the problem a refusal answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<KeptAnswer>)]
    pub answer: Option<Value>,
    #[schema(format = DateTime)]
    pub at: Option<String>,
}

/// Where a request asked for by its key stands (a document's type).
#[derive(utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum RequestState {
    /// A record an earlier release put before its work and never answered (none is put so now).
    Running,
    Done,
}

/// What a kept request answered (the document's shape of `RequestOutcome.answer`): the answer
/// of a route that takes an `Idempotency-Key`, of an assistant's call, or a problem.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum KeptAnswer {
    Payment(crate::payments::event::PaymentAnswer),
    CreditNote(crate::payments::credit::CreditNoteIssued),
    TopUp(crate::ledger::topup::TopUpAnswer),
    Refund(crate::ledger::correction::RefundAnswer),
    Deal(crate::deals::DealView),
    SecretsRotated(crate::commands::answers::SecretsRotated),
    Call(KeptCall),
    Problem(Problem),
}

/// An assistant's call as it was kept: what its tool answered.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct KeptCall {
    pub call_id: String,
    #[schema(value_type = Object)]
    pub result: Value,
    pub duplicate: bool,
}

impl RequestOutcome {
    /// The record of the request under `key`, as an answer.
    pub fn of(key: &str, looked: crate::commands::requests::Looked) -> Self {
        let (state, status, answer) = match looked.done {
            Some((outcome, answer)) => {
                let status = status(outcome);
                (
                    "done",
                    Some(u64::from(status)),
                    Some(as_answered(status, answer)),
                )
            }
            None => ("running", None, None),
        };
        Self {
            key: key.to_owned(),
            state,
            status,
            answer,
            at: looked.at,
        }
    }
}

/// A kept body as it was answered: a refusal as its problem (`type`, `title`, `status` beside
/// the kept fields), as `json_response` gave it.
fn as_answered(status: u16, body: Value) -> Value {
    match body.get("error").and_then(Value::as_str) {
        Some(code) if status >= 400 => {
            serde_json::to_value(Problem::of(status, code, &body)).unwrap_or(body)
        }
        _ => body,
    }
}

/// A refused field is a 400 that names it.
impl From<crate::fields::FieldError> for ApiError {
    fn from(err: crate::fields::FieldError) -> Self {
        Refused::from(err).into()
    }
}

/// A store failure is 503 when a retry can help (throttling, a conflict, a timeout) and 500
/// when it cannot (a malformed stored item, a request DynamoDB refuses): our own defect.
impl From<crate::store::StoreError> for ApiError {
    fn from(err: crate::store::StoreError) -> Self {
        Refused::from(err).into()
    }
}

impl From<crate::payments::PaymentError> for ApiError {
    fn from(err: crate::payments::PaymentError) -> Self {
        Refused::from(err).into()
    }
}

impl From<crate::ledger::LedgerError> for ApiError {
    fn from(e: crate::ledger::LedgerError) -> Self {
        Refused::from(e).into()
    }
}

/// Every 4xx and 5xx answer, an RFC 9457 problem (`application/problem+json`). A 4xx names the
/// problem and wrote nothing; a 5xx says nothing internal (500: our defect; 503: retry later).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = ErrorBody)]
pub struct Problem {
    /// `tag:firmspace.events,2026:problem:<error>`: one stable URI per code.
    #[serde(rename = "type")]
    #[schema(example = "tag:firmspace.events,2026:problem:not_found")]
    pub kind: String,
    /// The code in words.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `urn:request:<x-request-id>` (set where the answer leaves the function).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// A stable code: `malformed`, `unauthorized`, `not_found`, `invalid_signature`, ...
    pub error: String,
    /// The request field that was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Seconds to wait (429, 503), as `Retry-After` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// What else the refusal names: a conflict's stored `outcome`, a file's refused `rows`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub more: serde_json::Map<String, Value>,
}

impl Problem {
    /// The problem of a refusal with `code` whose body is `body`.
    fn of(status: u16, code: &str, body: &Value) -> Self {
        let mut more = body.as_object().cloned().unwrap_or_default();
        let mut text = |name: &str| match more.get(name) {
            Some(Value::String(_)) => more
                .remove(name)
                .and_then(|v| v.as_str().map(str::to_owned)),
            _ => None,
        };
        let (detail, instance, field) = (text("detail"), text("instance"), text("field"));
        let retry_after = more.get("retry_after").and_then(Value::as_u64);
        for known in ["error", "retry_after", "type", "title", "status"] {
            more.remove(known);
        }
        Self {
            kind: problem_type(code),
            title: problem_title(code),
            status,
            detail,
            instance,
            error: code.to_owned(),
            field,
            retry_after,
            more,
        }
    }
}

/// A page of an `/api` list: `{"items", "cursor"}`, `cursor` (what the next page's `cursor`
/// takes) while more remain, absent at the end (the OpenAPI document's `Paged` answer).
#[derive(Debug, serde::Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// A page's answer.
pub fn page_response<T: serde::Serialize>(items: Vec<T>, cursor: Option<String>) -> Response<Body> {
    typed_response(200, &Page { items, cursor })
}

/// A typed answer: the type the OpenAPI document describes, serialised.
pub fn typed_response<T: serde::Serialize>(status: u16, body: &T) -> Response<Body> {
    json_response(status, &to_json(body))
}

fn to_json<T: serde::Serialize>(body: &T) -> Value {
    serde_json::to_value(body).expect("an answer serialises")
}

/// A JSON answer. A refusal (4xx or 5xx with an `error` code, however it was made: an
/// [`ApiError`], a command's conflict with its outcome, a stored answer given again) is an RFC
/// 9457 problem: `application/problem+json`, with `type`, `title` and `status` beside the body's
/// own fields.
pub fn json_response(status: u16, body: &Value) -> Response<Body> {
    let code = body.get("error").and_then(Value::as_str);
    let (content_type, text) = match code {
        Some(code) if status >= 400 => {
            let problem = Problem::of(status, code, body);
            let text = serde_json::to_string(&problem).expect("a problem serialises");
            (PROBLEM, text)
        }
        _ => ("application/json", body.to_string()),
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header(NOSNIFF.0, NOSNIFF.1)
        .header(NO_STORE.0, NO_STORE.1)
        .body(Body::Text(text))
        .expect("status and header are valid")
}

/// Every answer is read as the type it says it is, never sniffed as another (a customer's text
/// in a JSON body is never run as a page's script).
pub const NOSNIFF: (&str, &str) = ("x-content-type-options", "nosniff");

/// An answer holds an organisation's own records: no cache between the client and us keeps it.
pub const NO_STORE: (&str, &str) = ("cache-control", "no-store");

/// The request's `Idempotency-Key`: 1 to 255 visible ASCII characters, or 400.
pub fn idempotency_key(req: &Request) -> Result<String, ApiError> {
    let raw = header(req, "idempotency-key").ok_or_else(|| {
        ApiError::bad_request(
            "missing_idempotency_key",
            "Idempotency-Key header is required",
        )
    })?;
    let visible = !raw.is_empty() && raw.len() <= 255 && raw.bytes().all(|b| b.is_ascii_graphic());
    if !visible {
        return Err(ApiError::bad_request(
            "invalid_idempotency_key",
            "Idempotency-Key is 1 to 255 visible ASCII characters",
        ));
    }
    Ok(raw.to_owned())
}

/// A JSON answer given from a stored answer (a duplicate webhook, an `Idempotency-Key` or an
/// assistant `call_id` again): marked `Idempotent-Replayed: true`, as Stripe marks it. A first
/// answer has no such header at all.
pub fn replayed_response(status: u16, body: &Value, replayed: bool) -> Response<Body> {
    let mut response = json_response(status, body);
    if replayed {
        response.headers_mut().insert(
            "idempotent-replayed",
            lambda_http::http::HeaderValue::from_static("true"),
        );
    }
    response
}

/// The raw body exactly as it arrived (API Gateway's base64 is already undone).
pub fn body_bytes(req: &Request) -> &[u8] {
    match req.body() {
        Body::Empty => &[],
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    }
}

pub fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The route part of the path (`/hooks/...`, `/api/...`), whatever stage or gateway prefix the
/// request came through.
pub fn route_path(req: &Request) -> &str {
    let path = req.uri().path();
    ["/api/", "/hooks/", "/ops/"]
        .iter()
        .filter_map(|p| path.find(p))
        .min()
        .map_or(path, |i| &path[i..])
}

/// The path's segments after the stage, each percent-decoded after the split:
/// `c_1-%C3%A4.x` is the id `c_1-ä.x`, and `%2F` a slash within one segment.
pub fn segments(req: &Request) -> Vec<String> {
    route_path(req)
        .trim_end_matches('/')
        .split('/')
        .skip(1)
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

/// The query parameter `name`, percent-decoded.
pub fn query(req: &Request, name: &str) -> Option<String> {
    url::form_urlencoded::parse(req.uri().query()?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Parses a JSON body into `T`, answering 400 `malformed` with serde's explanation in the
/// caller's terms: no Rust type names, and never more than 300 characters of it.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("malformed", plain(&e.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct NewThing {
        name: String,
    }

    #[test]
    fn json_errors_name_no_rust_type_and_stay_short() {
        for body in [&b"[]"[..], b"5", b"\"x\"", b"null"] {
            let err = parse_json::<NewThing>(body).unwrap_err();
            assert_eq!(err.status, 400);
            assert!(!err.detail.contains("NewThing"), "{}", err.detail);
        }
        let long = format!(r#"{{"name": 5, "{}": 1}}"#, "x".repeat(5000));
        let err = parse_json::<NewThing>(long.as_bytes()).unwrap_err();
        assert!(err.detail.chars().count() <= 301, "{}", err.detail.len());
    }

    #[tokio::test]
    async fn the_outgoing_client_builds_tls_on_the_sdk_crypto_provider() {
        let http = client(reqwest::Client::builder());
        let err = http
            .get("https://127.0.0.1:9/")
            .send()
            .await
            .expect_err("nothing listens on port 9");
        assert!(err.is_connect(), "{err:?}");
    }

    fn parts(response: Response<Body>) -> (u16, lambda_http::http::HeaderMap, Value) {
        let (parts, body) = response.into_parts();
        let Body::Text(text) = body else {
            panic!("a text body")
        };
        (
            parts.status.as_u16(),
            parts.headers,
            serde_json::from_str(&text).unwrap(),
        )
    }

    #[test]
    fn every_refusal_is_a_problem_with_its_headers() {
        let (status, headers, body) =
            parts(ApiError::method_not_allowed(&["GET", "POST"]).into_response());
        assert_eq!(status, 405);
        assert_eq!(headers["allow"], "GET, POST");
        assert_eq!(headers["content-type"], PROBLEM);
        assert_eq!(
            body,
            json!({"type": "tag:firmspace.events,2026:problem:method_not_allowed",
                "title": "Method not allowed", "status": 405, "error": "method_not_allowed",
                "detail": "this path takes GET, POST"})
        );
        let (status, headers, body) =
            parts(ApiError::new(503, "unavailable", "retry later").into_response());
        assert_eq!(
            (status, &headers["retry-after"]),
            (503, &"5".parse().unwrap())
        );
        assert_eq!(body["retry_after"], 5);
        let (_, headers, _) = parts(ApiError::rate_limited(10, 42).into_response());
        assert_eq!(headers["retry-after"], "42");
        // A command's refusal with its outcome, made as JSON: a problem too, its fields kept.
        let (_, headers, body) = parts(json_response(
            409,
            &json!({"error": "not_open", "detail": "resolved before", "outcome": {"by": "key_1"}}),
        ));
        assert_eq!(headers["content-type"], PROBLEM);
        assert_eq!(
            (body["status"].as_u64(), body["outcome"]["by"].as_str()),
            (Some(409), Some("key_1"))
        );
        let (_, headers, _) = parts(json_response(200, &json!({"error": "none"})));
        assert_eq!(
            headers["content-type"], "application/json",
            "an answer is not a problem"
        );
        assert_eq!(
            (
                &headers["x-content-type-options"],
                &headers["cache-control"]
            ),
            (&"nosniff".parse().unwrap(), &"no-store".parse().unwrap()),
            "read as its type and kept by no cache"
        );
    }

    #[test]
    fn a_problem_keeps_the_bodys_fields_but_its_own_type_title_and_status() {
        let (_, _, body) = parts(json_response(
            400,
            &json!({"error": "invalid_csv", "detail": 3, "rows": [{"line": 2}], "field": "file",
                    "type": "mine", "title": "Mine", "status": 200, "retry_after": 7}),
        ));
        let expected = json!({
            "type": problem_type("invalid_csv"), "title": "Invalid csv", "status": 400,
            "error": "invalid_csv", "field": "file", "retry_after": 7,
            // A detail that is no string stays as the body gave it, beside the others.
            "detail": 3, "rows": [{"line": 2}],
        });
        assert_eq!(body, expected);
    }

    #[test]
    fn a_kept_refusal_is_asked_for_as_the_problem_it_was_answered() {
        use crate::commands::{requests::Looked, Why};
        let kept = json!({"error": "not_found", "detail": "invoice not found"});
        let looked = Looked {
            done: Some((Outcome::Refused(Why::NotFound), kept.clone())),
            at: None,
        };
        let outcome = serde_json::to_value(RequestOutcome::of("k", looked)).unwrap();
        let (_, _, answered) = parts(json_response(404, &kept));
        assert_eq!(outcome["status"], 404);
        assert_eq!(outcome["answer"], answered, "{outcome}");
        assert_eq!(outcome["answer"]["title"], "Not found");
    }
}
