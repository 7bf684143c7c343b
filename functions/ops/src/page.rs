//! The page at `GET /ops/`: static HTML, CSS and JavaScript compiled into the function, with
//! no build step. It calls the JSON routes with the key in the `Authorization` header (kept in
//! the tab's `sessionStorage`, never in a URL or a cookie), and its Content-Security-Policy
//! allows only its own script, style and API.

use lambda_http::{Body, Response};

const INDEX: &str = include_str!("../page/index.html");
const SCRIPT: &str = include_str!("../page/app.js");
const STYLE: &str = include_str!("../page/app.css");

/// The page with its style and script inline (so it works at `/ops` and `/ops/` alike, behind
/// any gateway prefix), and the policy that allows exactly those two by their SHA-256.
struct Page {
    html: String,
    policy: String,
}

fn page() -> &'static Page {
    static PAGE: std::sync::OnceLock<Page> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        use base64::Engine;
        use sha2::{Digest, Sha256};
        let hash =
            |text: &str| base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text));
        Page {
            html: INDEX
                .replace("/*STYLE*/", STYLE)
                .replace("/*SCRIPT*/", SCRIPT),
            policy: format!(
                "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; \
                 connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
                 base-uri 'none'; form-action 'none'",
                hash(SCRIPT),
                hash(STYLE)
            ),
        }
    })
}

fn respond(body: &str) -> Response<Body> {
    Response::builder()
        .status(200)
        .header("content-type", "text/html; charset=utf-8")
        .header("content-security-policy", &page().policy)
        .header("x-content-type-options", "nosniff")
        .header("x-frame-options", "DENY")
        .header("referrer-policy", "no-referrer")
        .header("cache-control", "no-store")
        .body(Body::Text(body.to_owned()))
        .expect("status and headers are valid")
}

/// The page, for `GET /ops` or `GET /ops/`; `None` for every other request.
pub(crate) fn asset(method: &str, segments: &[&str]) -> Option<Response<Body>> {
    match (method, segments) {
        ("GET", ["ops"]) => Some(respond(&page().html)),
        _ => None,
    }
}
