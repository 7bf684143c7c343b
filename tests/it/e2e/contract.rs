//! The served OpenAPI document held against the deployed API by a tool nobody here wrote:
//! schemathesis (pinned in infra/requirements.txt, installed by `cargo xtask` into `.venv`)
//! generates requests for every operation from the document alone, sends them as a fresh
//! organisation's key, and checks every answer against it.

use serde_json::json;

/// The checks of what the API answers: never a server error; only the statuses, content types,
/// headers and bodies the document declares; 405 for a method a path does not take.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_schema_conformance,response_headers_conformance,unsupported_method";

#[tokio::test]
async fn every_answer_to_requests_made_from_the_document_is_one_the_document_declares() {
    let stack = super::stack();
    let (status, org) = stack
        .api(
            reqwest::Method::POST,
            "/api/orgs",
            &stack.admin_token,
            json!({"name": "Contract"}),
        )
        .await;
    assert_eq!(status, 201, "{org}");
    let key = org["api_key"].as_str().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let st = root.join(".venv/bin/st");
    assert!(
        st.exists(),
        "{}: run `cargo xtask test`, which installs schemathesis",
        st.display()
    );
    let api = stack.api_url.trim_end_matches('/');
    let out = std::process::Command::new(st)
        .args(["run", &format!("{api}/api/openapi.json"), "--url", api])
        .args(["-H", &format!("Authorization: Bearer {key}")])
        // Its own key is not revoked under it.
        .args(["--exclude-path", "/api/keys/{key_id}"])
        .args(["--checks", CHECKS])
        // The document's own examples, then every operation's boundaries and its schema's
        // violations (a deterministic set), under a time bound a slow machine still meets.
        .args(["--phases", "examples,coverage"])
        .args(["--max-examples", "3", "--seed", "1", "--max-time", "300"])
        .args(["--no-shrink", "--no-color"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found answers the document does not declare:\n{shown}"
    );
    // Every operation but the one left out was tried.
    let tested = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("Tested: "))
        .and_then(|n| n.trim().parse::<usize>().ok());
    assert!(tested.is_some_and(|n| n >= 70), "{tested:?}\n{shown}");
}
