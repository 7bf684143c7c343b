//! The OpenAPI document against the code: every route of the SAM template and of the dispatch
//! table is in it, its schemas have the fields the handlers answer with, its enums are the values
//! the code reads.

use api::openapi::document;
use lambda_http::Body;
use serde_json::Value;
use std::collections::BTreeSet;

const TEMPLATE: &str = include_str!("../../../infra/template.yaml");

fn json() -> Value {
    serde_json::to_value(document()).expect("the document serialises")
}

/// Every `RouteKey:` of the SAM template, as (method, path).
fn template_routes() -> Vec<(&'static str, &'static str)> {
    TEMPLATE
        .lines()
        .filter_map(|line| line.trim().strip_prefix("RouteKey:"))
        .filter_map(|key| key.trim().trim_matches('"').split_once(' '))
        .collect()
}

/// Whether a path item has an operation for `method` (`ANY`: for some method).
fn has_method(item: &Value, method: &str) -> bool {
    match method {
        "ANY" => ["get", "put", "post", "delete", "patch"]
            .iter()
            .any(|m| item.get(m).is_some()),
        m => item.get(m.to_lowercase()).is_some_and(Value::is_object),
    }
}

#[test]
fn every_route_of_the_sam_template_is_in_the_document() {
    let doc = json();
    let paths = doc["paths"].as_object().expect("paths");
    let routes = template_routes();
    assert!(!routes.is_empty(), "no RouteKey in the template");
    for (method, path) in routes {
        let covered = match path.strip_suffix("{proxy+}") {
            Some(prefix) => paths
                .iter()
                .any(|(p, item)| p.starts_with(prefix) && has_method(item, method)),
            None => paths.get(path).is_some_and(|item| has_method(item, method)),
        };
        assert!(
            covered,
            "{method} {path} is routed by the template but not documented"
        );
    }
}

#[test]
fn every_dispatched_route_is_in_the_document_with_its_method() {
    let doc = json();
    for route in api::routes::all() {
        let method = route.method.as_str().to_lowercase();
        let operation = &doc["paths"][route.path][&method];
        assert_eq!(
            operation["summary"], route.summary,
            "{method} {}",
            route.path
        );
    }
    let operations: usize = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .map(|item| item.as_object().expect("path item").len())
        .sum();
    assert_eq!(
        operations,
        api::routes::all().count() + 8 + api::openapi::OPS_OPERATIONS,
        "the table's routes and the webhooks (payments, calls, messages and bank with their GETs, sms, leads)"
    );
}

#[test]
fn the_document_is_openapi_3_1_of_this_version() {
    let doc = json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "Firmspace Events");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn every_path_placeholder_is_a_path_parameter_and_no_other_is() {
    let doc = json();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let placeholders: BTreeSet<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for (method, operation) in item.as_object().expect("path item") {
            let params: BTreeSet<&str> = operation["parameters"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter(|p| p["in"] == "path" && p["required"] == true)
                .filter_map(|p| p["name"].as_str())
                .collect();
            assert_eq!(params, placeholders, "{method} {path}");
        }
    }
}

fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            out.extend(map.get("$ref").and_then(Value::as_str));
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_referenced_schema_is_in_the_components() {
    let doc = json();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(found.len() > 20, "{found:?}");
    for r in found {
        let name = r.strip_prefix("#/components/schemas/").expect(r);
        assert!(doc["components"]["schemas"].get(name).is_some(), "{r}");
    }
}

/// The property names of a component schema, and the keys of an answer.
fn properties(doc: &Value, schema: &str) -> BTreeSet<String> {
    let props = doc["components"]["schemas"][schema]["properties"].as_object();
    props.expect(schema).keys().cloned().collect()
}

fn keys(answer: &Value) -> BTreeSet<String> {
    answer
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

#[test]
fn invoice_and_payment_schemas_have_the_fields_the_code_answers_with() {
    use firmspace::ids::{ExternalId, LocalId, OrgId};
    use firmspace::payments::{decide, invoice::Links, PaymentEvent, PaymentInput};
    use firmspace::payments::{Invoice, InvoiceStatus, Related, Source};
    let org = OrgId::parse("o0123456789ab").expect("org id");
    let invoice = Invoice {
        org: org.clone(),
        id: LocalId::generate("inv_"),
        number: "INV-00001".into(),
        currency: firmspace::money::Currency::parse("UAH").expect("currency"),
        gross: rust_decimal::Decimal::ONE_HUNDRED,
        paid: rust_decimal::Decimal::ZERO,
        credited: rust_decimal::Decimal::ZERO,
        status: InvoiceStatus::Open,
        version: 0,
        links: Links::default(),
        created_at: chrono::Utc::now(),
    };
    let input = PaymentInput {
        org,
        invoice_ref: Some(invoice.id.as_str().to_owned()),
        source: Source::Manual,
        external_id: ExternalId::parse("Idempotency-Key", "k1").expect("key"),
        amount: None,
        currency: None,
        at: invoice.created_at,
        actor: "u1".into(),
        reverses: None,
        reversible: false,
        via: None,
    };
    let decision = decide(Some(&invoice), &input, Related::Nothing);
    let event = PaymentEvent::new(&input, &decision, Some(&invoice), Some(&invoice));
    let doc = json();
    assert_eq!(properties(&doc, "Invoice"), keys(&invoice.to_json()));
    let repeat = firmspace::store::Written::Repeat {
        stored: event.clone(),
    };
    assert_eq!(properties(&doc, "PaymentAnswer"), keys(&repeat.answer()));
    assert!(
        keys(&firmspace::store::Written::New(event.clone()).answer())
            .is_subset(&properties(&doc, "PaymentAnswer"))
    );
    assert_eq!(properties(&doc, "PaymentLine"), keys(&event.to_json()));
}

/// Each documented value of `schema` is one the code reads as `T`.
fn values_parse_as<T: serde::de::DeserializeOwned>(doc: &Value, schema: &str) -> usize {
    let values = doc["components"]["schemas"][schema]["enum"]
        .as_array()
        .expect(schema);
    for v in values {
        serde_json::from_value::<T>(v.clone()).unwrap_or_else(|e| panic!("{schema} {v}: {e}"));
    }
    values.len()
}

#[test]
fn documented_enum_values_are_the_ones_the_code_reads() {
    use firmspace::effects::Trigger;
    let doc = json();
    values_parse_as::<firmspace::payments::InvoiceStatus>(&doc, "InvoiceStatus");
    values_parse_as::<firmspace::payments::Outcome>(&doc, "Outcome");
    values_parse_as::<firmspace::integrations::IntegrationKind>(&doc, "IntegrationKind");
    assert_eq!(
        values_parse_as::<Trigger>(&doc, "Trigger"),
        Trigger::ALL.len()
    );
}

#[tokio::test]
async fn the_document_is_served_without_authentication() {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("eu-central-1"))
        .build();
    let store = firmspace::store::Store::new(aws_sdk_dynamodb::Client::from_conf(config), "unused");
    let settings = api::Settings {
        admin_token: "admin".to_owned().into(),
        public_url: String::new(),
        allows_loopback: false,
        files: None,
        imports: None,
        limits: firmspace::orgs::rate::Limits::default(),
        uploads: None,
        ai_models: firmspace::commands::model::Models::parse(
            "anthropic.claude-3-5-haiku-20241022-v1:0",
        ),
    };
    let app = api::App::new(store, settings);
    let get = |path: &str| {
        let uri = format!("https://api.example.com{path}");
        lambda_http::http::Request::get(uri)
            .body(Body::Empty)
            .expect("request")
    };
    let res = app
        .handle(get("/api/openapi.json"))
        .await
        .expect("infallible");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let Body::Text(text) = res.body() else {
        panic!("a text body")
    };
    let body: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(body, json());
    let other = app.handle(get("/api/invoices")).await.expect("infallible");
    assert_eq!(other.status(), 401, "other routes still need a key");
}

/// A client generator's method names: each operation's `operationId`, as one would name its
/// method (no fallback to a name made up from the path), with the tag it groups it under.
fn client_names(doc: &Value) -> Vec<(String, String, String)> {
    let mut names = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let id = operation["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            let tag = operation["tags"][0]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no tag"));
            names.push((id.to_owned(), tag.to_owned(), format!("{method} {path}")));
        }
    }
    names
}

#[test]
fn every_operation_has_a_unique_method_name_and_a_tag() {
    let names = client_names(&json());
    assert_eq!(
        names.len(),
        api::routes::all().count() + 8 + api::openapi::OPS_OPERATIONS
    );
    let mut seen = BTreeSet::new();
    for (id, tag, at) in &names {
        let camel = id.starts_with(|c: char| c.is_ascii_lowercase())
            && id.chars().all(|c| c.is_ascii_alphanumeric());
        assert!(camel, "{at}: {id} is not a method name");
        assert!(seen.insert(id.clone()), "{at}: {id} twice");
        assert!(
            !tag.is_empty() && tag.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{at}: tag {tag}"
        );
    }
    for expected in [
        "payInvoice",
        "createOrg",
        "receivePaymentsWebhook",
        "resolveOpsReviewItem",
    ] {
        assert!(seen.contains(expected), "{expected}");
    }
}

#[test]
fn the_idempotency_replay_and_retry_headers_are_documented() {
    let doc = json();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let keyed = operation["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == "Idempotency-Key"));
            let hook = path.starts_with("/hooks/") && method == "post";
            for (status, response) in operation["responses"].as_object().unwrap() {
                let headers = &response["headers"];
                // A webhook's duplicate is its 200 (a first call is 201).
                if (keyed && status.starts_with('2')) || (hook && status == "200") {
                    assert!(
                        headers["Idempotent-Replayed"].is_object(),
                        "{method} {path} {status}"
                    );
                }
                if status == "429" || status == "503" {
                    assert!(
                        headers["Retry-After"].is_object(),
                        "{method} {path} {status}"
                    );
                }
                if status.starts_with('4') || status.starts_with('5') {
                    let problem = &response["content"]["application/problem+json"];
                    assert!(problem.is_object(), "{method} {path} {status} is a problem");
                }
            }
        }
    }
}

#[test]
fn string_limits_are_max_lengths() {
    let doc = json();
    let schemas = &doc["components"]["schemas"];
    for (schema, field, max) in [
        ("NewContactBody", "name", 200),
        ("NewKey", "name", 100),
        ("NewMember", "name", 200),
        ("MarkRead", "key", 1020),
        ("CreditInput", "reason", 500),
    ] {
        let property = &schemas[schema]["properties"][field];
        assert_eq!(property["maxLength"], max, "{schema}.{field}: {property}");
    }
    let actor = &schemas["ManualPayment"]["properties"]["actor"];
    assert!(actor.to_string().contains("\"maxLength\":128"), "{actor}");
    let pay = &doc["paths"]["/api/invoices/{id}/payments"]["post"]["parameters"];
    let key = pay
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .unwrap();
    assert_eq!(key["schema"]["maxLength"], 255, "{key}");
}

/// Whether `schema` names fields: a reference to a component that has properties (or is one of
/// several, or all of several), an object with properties, or one of several such.
fn has_fields(doc: &Value, schema: &Value) -> bool {
    if let Some(target) = schema["$ref"].as_str() {
        let name = target.trim_start_matches("#/components/schemas/");
        return has_fields(doc, &doc["components"]["schemas"][name]);
    }
    if let Some(options) = schema["oneOf"].as_array().or(schema["allOf"].as_array()) {
        return !options.is_empty() && options.iter().all(|o| has_fields(doc, o));
    }
    schema["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty())
}

#[test]
fn every_json_answer_has_a_schema_with_its_fields() {
    let doc = json();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                let Some(schema) = response["content"]["application/json"].get("schema") else {
                    continue;
                };
                if !status.starts_with('2') || path == "/api/openapi.json" {
                    continue;
                }
                assert!(
                    has_fields(&doc, schema),
                    "{method} {path} {status}: the answer is described without fields: {schema}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 75, "{checked}");
    let ops = |path: &str, method: &str| doc["paths"][path][method]["responses"]["200"].clone();
    let resolved = &ops("/ops/review/{id}/resolve", "post")["content"]["application/json"];
    assert_eq!(
        resolved["schema"]["$ref"],
        "#/components/schemas/Resolution"
    );
    let page = &ops("/ops/events", "get")["content"]["application/json"]["schema"];
    assert_eq!(
        page["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/EventRow"
    );
    assert!(page["properties"]["cursor"].is_object(), "{page}");
}

/// A tool `cargo xtask` installs into `.venv` from `infra/requirements.txt`.
fn venv_tool(name: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tool = root.join(".venv/bin").join(name);
    assert!(
        tool.exists(),
        "{} is missing: `cargo xtask test` (or `cargo xtask up`) installs it",
        tool.display()
    );
    tool
}

/// The document checked by a validator of the OpenAPI 3.1 specification of its own
/// (`openapi-spec-validator`, which `cargo xtask` installs into `.venv` from
/// `infra/requirements.txt`): its structure, every `$ref`, every schema.
#[test]
fn the_document_passes_an_openapi_3_1_validator() {
    let validator = venv_tool("openapi-spec-validator");
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&json()).unwrap()).unwrap();
    let out = std::process::Command::new(&validator)
        .arg(&file)
        .output()
        .expect("the validator runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("OK"), "{said}");
}

/// A Python client generated from the document by a generator of its own
/// (`openapi-python-client`, installed by `cargo xtask` from `infra/requirements.txt`): every
/// schema becomes a model, with no warning and nothing left out.
#[test]
fn a_python_client_is_generated_from_the_document_without_a_warning() {
    let generator = venv_tool("openapi-python-client");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-client");
    std::fs::create_dir_all(&dir).unwrap();
    let (file, config) = (dir.join("openapi.json"), dir.join("config.yaml"));
    std::fs::write(&file, serde_json::to_vec_pretty(&json()).unwrap()).unwrap();
    // No formatter runs after it: what is judged is the generator's own reading.
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    let out = std::process::Command::new(&generator)
        .args(["generate", "--meta", "none", "--overwrite"])
        .arg("--path")
        .arg(&file)
        .arg("--config")
        .arg(&config)
        .arg("--output-path")
        .arg(dir.join("client"))
        .output()
        .expect("the generator runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(!said.to_lowercase().contains("warning"), "{said}");
    let models = dir.join("client/models");
    assert!(
        models.join("payment_answer.py").exists() && models.join("kept_call.py").exists(),
        "{said}"
    );
}

#[test]
fn a_tool_call_is_one_shape_per_tool_with_that_tools_own_input() {
    let doc = json();
    let schemas = &doc["components"]["schemas"];
    let call = &schemas["ToolCall"];
    let shapes = call["oneOf"].as_array().expect("one shape per tool");
    let listed = api::assistant::listed_names();
    assert_eq!(shapes.len(), listed.len(), "{call}");
    let named = |reference: &Value| {
        let name = reference["$ref"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap();
        schemas[name].clone()
    };
    for (shape, name) in shapes.iter().zip(&listed) {
        let shape = named(shape);
        assert_eq!(
            shape["properties"]["tool"]["enum"],
            serde_json::json!([name]),
            "{shape}"
        );
        assert_eq!(shape["additionalProperties"], false, "{shape}");
        let input = named(&shape["properties"]["input"]);
        assert_eq!(input["type"], "object", "{name}: {input}");
    }
    // A payment's input is the payment tool's: an invoice id, required.
    let pay = named(&schemas["RegisterPaymentCall"]["properties"]["input"]);
    assert_eq!(pay["required"], serde_json::json!(["invoice_id"]));
}
