//! `cargo xtask deploy`: the cloud build and deploy as one command, and `cargo xtask env
//! FUNCTION`: what `cargo lambda watch` needs to run one function against the local stack.

use crate::stack::{ensure_venv, root, Coordinates, Stack, REGION};
use anyhow::{bail, Context, Result};
use std::process::Command;

/// `cargo xtask deploy [--guided] [--config-env NAME]`.
#[derive(clap::Args)]
pub struct Args {
    /// Ask for the parameters (Stage, AdminToken, ...) and save them to samconfig.toml: the
    /// first deploy of a stack.
    #[arg(long)]
    guided: bool,
    /// The samconfig.toml environment to deploy with.
    #[arg(long, default_value = "default")]
    config_env: String,
}

/// `sam build` (one cargo-lambda build of `lambda/` for arm64, copied to every function) and
/// `sam deploy` with samconfig.toml; cargo-lambda is installed into `.venv` first if missing.
pub fn run(args: Args) -> Result<()> {
    let venv = ensure_venv()?;
    let bin = venv.join("bin");
    if !bin.join("cargo-lambda").exists() {
        println!(
            "== installing cargo-lambda (with zig) into {}",
            venv.display()
        );
        crate::stack::run(
            Command::new(bin.join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .arg("cargo-lambda"),
        )?;
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sam = |verb: &str| {
        let mut cmd = Command::new(bin.join("sam"));
        cmd.current_dir(root())
            .env("PATH", &path)
            .env("SAM_CLI_TELEMETRY", "0")
            .arg(verb)
            .args(["--config-env", &args.config_env]);
        cmd
    };
    println!("== sam build (one arm64 build of lambda/ for every function)");
    let mut build = sam("build");
    build.args(["-t", "infra/template.yaml", "--beta-features"]);
    crate::stack::run(&mut build)?;
    println!("== sam deploy");
    let mut deploy = sam("deploy");
    if args.guided {
        deploy.arg("--guided");
    }
    crate::stack::run(&mut deploy)
}

/// Prints, as `export` lines, what FUNCTION needs to run by hand against the local stack: the
/// local AWS endpoint and credentials, `FIRMSPACE_FUNCTION`, and every variable the deployed
/// function has (its table, queues, keys), read from the local stack itself.
/// `eval "$(cargo xtask env api)"`, then `cd lambda && cargo lambda watch`.
pub async fn env(function: &str) -> Result<()> {
    let coords = Coordinates::read(&Stack::local().coords_file())?;
    let lambda =
        aws_sdk_lambda::Client::new(&crate::throughput::sdk_config(&coords.aws_endpoint_url).await);
    let mut found = None;
    let mut marker = None;
    loop {
        let page = lambda
            .list_functions()
            .set_marker(marker)
            .send()
            .await
            .context("ListFunctions on the local stack")?;
        found = found.or_else(|| {
            page.functions()
                .iter()
                .find(|f| {
                    f.function_name()
                        .is_some_and(|n| n.starts_with(&coords.stack_name))
                        && f.handler() == Some(function)
                })
                .cloned()
        });
        marker = page.next_marker().map(str::to_owned);
        if found.is_some() || marker.is_none() {
            break;
        }
    }
    let Some(config) = found else {
        bail!("the local stack has no function {function:?} (api, ops, payment-webhook, fanout, notify-worker, ...)");
    };
    let quote = |v: &str| format!("'{}'", v.replace('\'', r"'\''"));
    println!(
        "# {function} against the local stack: eval \"$(cargo xtask env {function})\", then cd lambda && cargo lambda watch"
    );
    for (name, value) in [
        ("AWS_ENDPOINT_URL", coords.aws_endpoint_url.as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", REGION),
        ("FIRMSPACE_FUNCTION", function),
        ("AWS_LAMBDA_LOG_FORMAT", "Text"),
    ] {
        println!("export {name}={}", quote(value));
    }
    let mut vars: Vec<(String, String)> = config
        .environment()
        .and_then(|e| e.variables())
        .map(|v| v.clone().into_iter().collect())
        .unwrap_or_default();
    vars.sort();
    for (name, value) in vars {
        if !name.starts_with("AWS_") {
            println!("export {name}={}", quote(&value));
        }
    }
    if function == "api" || function == "ops" {
        println!("export ADMIN_TOKEN={}", quote(&coords.admin_token));
    }
    Ok(())
}
