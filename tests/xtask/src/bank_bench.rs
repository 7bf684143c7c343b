//! `cargo xtask bench-bank`: rows per second of the bank imports, in-process against ministack,
//! built optimised: a 10,000-row CSV file (checked whole, then stored `UPLOAD_CONCURRENCY` at a time, as
//! `POST /api/integrations/{id}/csv` does), the same file again (all duplicates), and a
//! 10,000-row monobank statement read page by page from a loopback stand-in (20 pages of 500;
//! the window between calls set to 0 for the measurement). Three rounds; medians.

use crate::stack::{root, Stack};
use crate::throughput::{sdk_config, sealing_store};
use anyhow::{Context, Result};
use axum::extract::{Path, State};
use axum::routing::get;
use axum::Router;
use firmspace::bank::import::{self, Limits};
use firmspace::bank::providers::BankSettings;
use firmspace::bank::{self, Arrival, BankTx};
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::integrations::{self, Integration, Settings};
use firmspace::store::schema;
use serde_json::{json, Value};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROWS: usize = 10_000;
const ROUNDS: usize = 3;
/// Rows stored at once, as the api's upload does.
const CONCURRENCY: usize = firmspace::bank::UPLOAD_CONCURRENCY;

/// Builds the xtask optimised and runs the measurement there.
pub fn optimised() -> Result<()> {
    crate::stack::run(
        Command::new(crate::stack::cargo())
            .current_dir(root())
            .args([
                "run",
                "--quiet",
                "--profile",
                "bench-xtask",
                "-p",
                "xtask",
                "--",
                "bench-bank-run",
            ]),
    )
}

fn csv_file() -> String {
    let mut csv = String::from("id,date,amount,currency,description,counterparty\n");
    for i in 0..ROWS {
        csv.push_str(&format!(
            "row-{i:06},2026-11-{:02}T10:{:02}:00Z,+{}.{:02},UAH,Payment {i},Client {}\n",
            i % 28 + 1,
            i % 60,
            10 + i % 900,
            i % 100,
            i % 37
        ));
    }
    csv
}

async fn statement(
    State(rows): State<Arc<Vec<Value>>>,
    Path((_account, from, to)): Path<(String, i64, i64)>,
) -> axum::Json<Vec<Value>> {
    let page = rows
        .iter()
        .filter(|r| (from..=to).contains(&r["time"].as_i64().unwrap_or(0)))
        .take(500)
        .cloned()
        .collect();
    axum::Json(page)
}

async fn stand_in() -> Result<String> {
    let now = chrono::Utc::now().timestamp() - 60;
    let rows: Vec<Value> = (0..ROWS)
        .map(|i| json!({"id": format!("st-{i:06}"), "time": now - i as i64 * 200, "description": format!("Transfer {i}"),
            "amount": 1000 + i as i64, "currencyCode": 980}))
        .collect();
    let app = Router::new()
        .route("/personal/statement/{account}/{from}/{to}", get(statement))
        .with_state(Arc::new(rows));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
}

/// The measurement itself (`cargo xtask bench-bank-run`).
pub async fn run() -> Result<()> {
    let stack = Stack {
        name: "firmspace-bench-bank",
        port: 4599,
        stage: "bench",
    };
    stack.start().await?;
    let endpoint = stack.endpoint();
    let config = sdk_config(&endpoint).await;
    let file = csv_file();
    let statement_url = stand_in().await?;
    let (mut csv_new, mut csv_again, mut statement_rates) = (Vec::new(), Vec::new(), Vec::new());
    println!(
        "== {ROWS} rows, {ROUNDS} rounds; file {} KiB",
        file.len() / 1024
    );
    for round in 0..ROUNDS {
        let client = aws_sdk_dynamodb::Client::new(&config);
        let table = format!(
            "bench-bank-{round}-{}",
            hex::encode(firmspace::ids::random_bytes::<4>())
        );
        schema::create_table(&client, &table).await?;
        let store = sealing_store(&config, client, &table).await?;
        let org = OrgId::generate();

        let csv_integration = IntegrationId::generate(&org);
        let started = Instant::now();
        let rows = bank::csv::parse(file.as_bytes()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let txs: Vec<BankTx> = rows
            .into_iter()
            .map(|row| {
                BankTx::new(
                    &org,
                    &csv_integration.id,
                    "csv",
                    row,
                    Arrival::Csv,
                    chrono::Utc::now(),
                )
            })
            .collect();
        let imported = bank::store_rows(&store, &txs, CONCURRENCY)
            .await?
            .imported();
        let first = started.elapsed();
        let started = Instant::now();
        let rows = bank::store_rows(&store, &txs, CONCURRENCY).await?;
        let (again, duplicates) = (rows.imported(), rows.duplicates());
        let second = started.elapsed();
        anyhow::ensure!(
            imported == ROWS && again == 0 && duplicates == ROWS,
            "rows stored once"
        );

        let integration = Integration {
            id: IntegrationId::generate(&org),
            settings: Settings::Bank(BankSettings::Monobank {
                token: "bench-token".to_owned().into(),
                account: "0".into(),
                api_url: Some(statement_url.clone()),
            }),
            created_at: chrono::Utc::now(),
        };
        integrations::create(&store, &integration).await?;
        let integration = integrations::get(&store, &integration.id)
            .await?
            .context("stored")?;
        let apis = firmspace::messages::media::Apis::new(
            "http://127.0.0.1:9",
            "http://127.0.0.1:9",
            true,
            Duration::from_secs(10),
        );
        let limits = Limits {
            interval: Duration::ZERO,
            max_wait: Duration::from_secs(1),
            max_pages: 100,
        };
        let started = Instant::now();
        let report = import::run(&store, &apis, &integration, &limits, chrono::Utc::now()).await?;
        let read = started.elapsed();
        anyhow::ensure!(
            report.imported == ROWS && report.caught_up,
            "statement imported: {report:?}"
        );
        let rate = |d: Duration| ROWS as f64 / d.as_secs_f64();
        println!(
            "round {round}: csv {:.0} rows/s ({:.2} s), csv again {:.0} rows/s, statement {:.0} rows/s ({} calls, {:.2} s)",
            rate(first), first.as_secs_f64(), rate(second), rate(read), report.calls, read.as_secs_f64()
        );
        csv_new.push(rate(first));
        csv_again.push(rate(second));
        statement_rates.push(rate(read));
    }
    println!(
        "\nmedians: csv {:.0} rows/s, the same csv again {:.0} rows/s, statement {:.0} rows/s",
        median(csv_new),
        median(csv_again),
        median(statement_rates)
    );
    stack.stop()
}
