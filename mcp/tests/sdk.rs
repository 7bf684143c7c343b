//! The official MCP Python SDK (`mcp` 2.3.0, installed by `cargo xtask` into `.venv`) drives the
//! server over stdio in its default mode, against the stack `cargo xtask test` deploys: it
//! connects with `server/discover` at the newest revision both speak (2026-07-28), lists the
//! tools with their annotations, finds an invoice by its number with a read tool alone (the
//! assistant's example), and its `_meta` call ids keep payments apart and a reused id with
//! another amount books nothing.

mod stack;

use serde_json::{json, Value};

#[tokio::test]
async fn the_official_python_sdk_connects_and_its_call_ids_keep_money_right() {
    let org = stack::Org::new("SDK").await;
    let new = json!({"currency": "UAH", "gross": "100.00"});
    let invoice = org.post("/api/invoices", new).await;
    let (invoice_id, number) = (
        invoice["id"].as_str().unwrap().to_owned(),
        invoice["number"].as_str().unwrap().to_owned(),
    );
    let (api_url, key) = (&org.api_url, &org.key);

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{}: run `cargo xtask test`, which installs the SDK",
        python.display()
    );
    let out = tokio::process::Command::new(python)
        .arg(root.join("mcp/tests/sdk_client.py"))
        .arg(env!("CARGO_BIN_EXE_firmspace-mcp"))
        .arg(&number)
        .env("FIRMSPACE_API_URL", api_url)
        .env("FIRMSPACE_API_KEY", key)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK's client failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    // The newest revision the SDK offers, reached through its `server/discover`.
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    assert_eq!(seen["tools"]["register_payment"], false, "{seen}");
    assert_eq!(seen["tools"]["find_invoices"], true, "read only: {seen}");
    // Found by its number with the read tool alone: the invoice the payments went to.
    assert_eq!(seen["invoice_id"], invoice_id.as_str(), "{seen}");
    assert_eq!(
        (&seen["one"]["error"], &seen["two"]["error"]),
        (&json!(false), &json!(false)),
        "{seen}"
    );
    assert_eq!(seen["again"]["structured"]["duplicate"], true, "{seen}");
    assert!(
        seen["again"]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("was made at {}", today())),
        "{seen}"
    );
    assert_eq!(seen["reused"]["error"], true, "{seen}");
    assert!(
        seen["reused"]["text"]
            .as_str()
            .unwrap()
            .contains("idempotency_key_reused"),
        "{seen}"
    );
    let found = &seen["found"]["structured"]["result"]["items"];
    assert_eq!(
        found[0]["paid"], "20.00",
        "two payments named apart, nothing more: {seen}"
    );
}

/// Today's date as the repeat's text names its time (`2026-12-07T...`): a repeat says when.
fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}
