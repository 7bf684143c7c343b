//! The page at `GET /ops/`: static HTML, CSS and JavaScript compiled into the function, with
//! no build step. It calls the JSON routes with the key in the `Authorization` header (kept in
//! the tab's `sessionStorage`, never in a URL or a cookie), and its Content-Security-Policy
//! allows only its own script, style and API.

use lambda_http::{Body, Request, Response};

const INDEX: &str = include_str!("../page/index.html");
const SCRIPT: &str = include_str!("../page/app.js");
const STYLE: &str = include_str!("../page/app.css");

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'none'";

fn respond(status: u16, content_type: &str, body: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("content-security-policy", POLICY)
        .header("x-content-type-options", "nosniff")
        .header("x-frame-options", "DENY")
        .header("referrer-policy", "no-referrer")
        .header("cache-control", "no-store")
        .body(Body::Text(body.to_owned()))
        .expect("status and headers are valid")
}

/// The page and its files, for `GET`; `None` for every other request.
pub(crate) fn asset(method: &str, segments: &[&str], req: &Request) -> Option<Response<Body>> {
    if method != "GET" {
        return None;
    }
    let path = req.uri().path();
    // `/ops` without its slash: the page's relative links need it.
    if path.ends_with("/ops") {
        let mut moved = respond(308, "text/plain; charset=utf-8", "see ops/");
        moved
            .headers_mut()
            .insert("location", http::HeaderValue::from_static("ops/"));
        return Some(moved);
    }
    match segments {
        ["ops"] => Some(respond(200, "text/html; charset=utf-8", INDEX)),
        ["ops", "app.js"] => Some(respond(200, "text/javascript; charset=utf-8", SCRIPT)),
        ["ops", "app.css"] => Some(respond(200, "text/css; charset=utf-8", STYLE)),
        _ => None,
    }
}
