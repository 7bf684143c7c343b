//! The one binary every function of the stack runs. A release build links the dependency graph
//! once instead of once per function, and `sam build` builds it once for every `CodeUri`
//! (docs/measurements.md, "A clean release build").
//!
//! Which function a process is comes from `FIRMSPACE_FUNCTION`, else from `_HANDLER`, which
//! Lambda sets to the function's `Handler` in the template. A name that is neither fails at
//! start, naming the ones there are.
#![forbid(unsafe_code)]
#![recursion_limit = "256"]

use firmspace::serve;
use firmspace::webhook::{Edge, Source};
use lambda_runtime::{service_fn, Error};

/// Every function, by the name its `Handler` carries.
const FUNCTIONS: [&str; 13] = [
    "payment-webhook",
    "call-webhook",
    "message-webhook",
    "bank-webhook",
    "sms-webhook",
    "lead-webhook",
    "api",
    "ops",
    "fanout",
    "notify-worker",
    "automation-worker",
    "match-worker",
    "bank-import",
];

#[tokio::main]
async fn main() -> Result<(), Error> {
    let function = chosen(
        std::env::var("FIRMSPACE_FUNCTION").ok().as_deref(),
        std::env::var("_HANDLER").ok().as_deref(),
    )?;
    firmspace::telemetry::init(function);
    run(function).await
}

/// The function named first by `FIRMSPACE_FUNCTION`, then by `_HANDLER`.
fn chosen(variable: Option<&str>, handler: Option<&str>) -> Result<&'static str, String> {
    let named = variable.or(handler).unwrap_or_default();
    FUNCTIONS.into_iter().find(|f| *f == named).ok_or_else(|| {
        format!(
            "FIRMSPACE_FUNCTION or _HANDLER must name a function, one of: {} (got {named:?})",
            FUNCTIONS.join(", ")
        )
    })
}

/// A webhook function: the shared edge over its source, answering HTTP.
async fn edge<S: Source>() -> Result<(), Error> {
    let app = Edge::<S>::from_env().await?;
    serve::run(|req| app.handle(req)).await
}

async fn run(function: &'static str) -> Result<(), Error> {
    match function {
        "payment-webhook" => edge::<payment_webhook::Payments>().await,
        "call-webhook" => edge::<call_webhook::Calls>().await,
        "message-webhook" => edge::<message_webhook::Messages>().await,
        "bank-webhook" => edge::<bank_webhook::Bank>().await,
        "sms-webhook" => edge::<sms_webhook::Sms>().await,
        "lead-webhook" => edge::<lead_webhook::Leads>().await,
        "api" => {
            let app = api::App::from_env().await?;
            serve::run(|req| app.handle(req)).await
        }
        "ops" => {
            let app = ops::App::from_env().await?;
            serve::run_scheduled(|req| app.handle(req), || app.gauges()).await
        }
        "fanout" => {
            let app = fanout::App::from_env().await?;
            lambda_runtime::run(service_fn(|event| app.handle(event))).await
        }
        "notify-worker" => {
            let app = notify_worker::from_env().await?;
            lambda_runtime::run(service_fn(|event| app.handle(event))).await
        }
        "automation-worker" => {
            let app = automation_worker::from_env().await?;
            lambda_runtime::run(service_fn(|event| app.handle(event))).await
        }
        "match-worker" => {
            let app = match_worker::from_env().await?;
            lambda_runtime::run(service_fn(|event| app.handle(event))).await
        }
        "bank-import" => {
            let app = bank_import::App::from_env().await?;
            lambda_runtime::run(service_fn(|event| app.handle(event))).await
        }
        other => Err(format!("no function {other}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_wins_over_the_handler_and_an_unknown_name_is_refused_with_the_list() {
        assert_eq!(chosen(Some("api"), Some("ops")), Ok("api"));
        assert_eq!(chosen(None, Some("bank-import")), Ok("bank-import"));
        let refused = chosen(None, Some("bootstrap")).unwrap_err();
        assert!(
            refused.contains("payment-webhook, call-webhook"),
            "{refused}"
        );
        assert!(refused.contains("\"bootstrap\""), "{refused}");
        assert!(chosen(None, None).is_err());
    }

    #[test]
    fn every_function_crate_and_every_handler_in_the_template_is_one_of_the_functions() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut crates: Vec<String> = std::fs::read_dir(root.join("functions"))
            .expect("functions/")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        crates.sort();
        let mut known: Vec<String> = FUNCTIONS.iter().map(|f| f.to_string()).collect();
        known.sort();
        assert_eq!(crates, known);
        let template = std::fs::read_to_string(root.join("infra/template.yaml")).expect("template");
        let mut handlers: Vec<String> = template
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Handler: "))
            .map(str::to_owned)
            .collect();
        handlers.sort();
        assert_eq!(handlers, known, "one function in the template per handler");
    }
}
