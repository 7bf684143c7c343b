//! The Python peer of `cargo xtask bench` (tests/peer: Powertools idempotency) on its own fresh
//! table with the same workload, in a venv made from tests/peer/requirements.txt.

use crate::stack::root;
use crate::throughput::{cpu_seconds, sdk_config, seed, workload, Figures, SECRET, SENDERS};
use anyhow::{bail, Context, Result};
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::store::schema;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// The peer's venv, made from tests/peer/requirements.txt unless it already has it.
pub(crate) fn python() -> Result<PathBuf> {
    let venv = root().join(".venv-peer");
    let requirements = root().join("tests/peer/requirements.txt");
    let stamp = venv.join(".firmspace-requirements");
    let wanted = std::fs::read_to_string(&requirements)?;
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        println!("== installing the peer's packages into {}", venv.display());
        crate::stack::run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        crate::stack::run(
            Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
                .arg(&requirements),
        )?;
        std::fs::write(&stamp, wanted)?;
    }
    Ok(venv.join("bin/python"))
}

/// The Python peer on its own fresh table with the same workload.
pub(crate) async fn run(
    python: &PathBuf,
    endpoint: &str,
    emulator_pid: &str,
    round: usize,
) -> Result<Figures> {
    let config = sdk_config(endpoint).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let suffix = hex::encode(firmspace::ids::random_bytes::<4>());
    let table = format!("bench-peer-{round}-{suffix}");
    schema::create_table(&client, &table).await?;
    let store = crate::throughput::sealing_store(&config, client, &table).await?;
    let org = OrgId::generate();
    let integration = IntegrationId::generate(&org);
    let invoices = seed(&store, &org, &integration).await?;
    let file = root().join(format!("target/bench-workload-{round}.json"));
    let deliveries = workload(&org, &integration, &invoices)?;
    std::fs::write(&file, json!({"secret": SECRET, "org": org.as_str(), "integration": integration.id, "deliveries": deliveries}).to_string())?;
    let emu0 = cpu_seconds(emulator_pid)?;
    let out = Command::new(python)
        .arg(root().join("tests/peer/bench.py"))
        .args([
            "--endpoint",
            endpoint,
            "--table",
            &table,
            "--idempotency-table",
            &format!("bench-idem-{round}-{suffix}"),
        ])
        .arg("--workload")
        .arg(&file)
        .args(["--concurrency", &SENDERS.to_string()])
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", crate::stack::REGION)
        .output()?;
    let emu = cpu_seconds(emulator_pid)? - emu0;
    if !out.status.success() {
        bail!("the peer failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: Value =
        serde_json::from_slice(out.stdout.trim_ascii()).context("the peer's JSON line")?;
    let f = |k: &str| {
        v[k].as_f64()
            .with_context(|| format!("the peer reported no {k}"))
    };
    // The peer's emulator CPU includes creating its idempotency table; its own figures exclude it.
    Ok(Figures {
        events_per_s: f("events_per_s")?,
        median_ms: f("median_ms")?,
        p99_ms: f("p99_ms")?,
        calls_per_event: f("calls_per_event")?,
        cpu_ms_per_event: f("cpu_ms_per_event")?,
        emulator_cpu_ms_per_event: emu * 1000.0 / f("events")?,
    })
}
