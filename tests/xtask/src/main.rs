#![forbid(unsafe_code)]
//! `cargo xtask up`   — start ministack, deploy infra/template.yaml into it, seed a demo
//!                      organisation and show a signed webhook retried and booked once.
//! `cargo xtask test` — every test: lint, unit, integration and end-to-end against ministack.
//! `cargo xtask latency` — webhook-to-last-consequence latency in the running local stack.
//! `cargo xtask send PROVIDER` — sign and send a provider's delivery (see send.rs).
//! `cargo xtask bench` — webhook throughput in-process against ministack, beside the Python peer.
//! `cargo xtask bench-bank` — rows per second of the CSV and statement imports.
//! `cargo xtask load [RATE [SECONDS]]` — a bounded load through the local stack's gateway.
//! `cargo xtask load --neighbour [RATE [SECONDS]]` — organisation A steady while B floods.
//! `cargo xtask down` — stop the local stack.

mod bank_bench;
mod bench;
mod coldstart;
mod coords;
mod demo;
mod load;
mod migrate;
mod neighbour;
mod peer;
mod send;
mod stack;
mod testrun;
mod throughput;

use anyhow::{bail, Result};

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("up") => {
            let local = stack::Stack::local();
            local.start().await?;
            let coords = local.deploy(&local.admin_token()).await?;
            coords.write(&local.coords_file())?;
            println!("{}", serde_json::to_string_pretty(&coords.json())?);
            println!("coordinates written to {}", local.coords_file().display());
            demo::run(&coords).await?;
            println!(
                "\nministack keeps running on {} (stop it: cargo xtask down)",
                local.endpoint()
            );
            Ok(())
        }
        Some("demo") => {
            let local = stack::Stack::local();
            let coords = stack::Coordinates::read(&local.coords_file())?;
            demo::run(&coords).await
        }
        Some("latency") => {
            let coords = stack::Coordinates::read(&stack::Stack::local().coords_file())?;
            bench::latency(&coords).await
        }
        Some("down") => stack::Stack::local().stop(),
        Some("test") => testrun::test(&args[1..]).await,
        Some("coldstart") => coldstart::run(&args[1..]).await,
        Some("send") => send::run(&args[1..]).await,
        Some("load") => load::run(&args[1..]).await,
        Some("migrate-keys") => migrate::keys(&args[1..]).await,
        Some("bench") => throughput::optimised(),
        Some("bench-run") => throughput::run().await,
        Some("bench-bank") => bank_bench::optimised(),
        Some("bench-bank-run") => bank_bench::run().await,
        _ => bail!(
            "usage: cargo xtask up | demo | send PROVIDER | load [--neighbour] [RATE [SECONDS]] | bench | bench-bank | latency | coldstart | migrate-keys [--table NAME] | down | test [-- cargo test args]"
        ),
    }
}
