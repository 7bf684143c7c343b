#![forbid(unsafe_code)]
//! `cargo xtask`: the project's commands. `cargo xtask --help` lists them, `cargo xtask help
//! COMMAND` (or `COMMAND --help`) tells one.

mod bank_bench;
mod bench;
mod coldstart;
mod coords;
mod demo;
mod deploy;
mod load;
mod migrate;
mod neighbour;
mod peer;
mod prices;
mod send;
mod stack;
mod testrun;
mod throughput;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// The commands of Firmspace Events: run it locally, test it, send events into it, measure it,
/// deploy it.
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start ministack (port 4566, or FIRMSPACE_LOCAL_PORT), deploy the template into it, seed a
    /// demo organisation and run the demo.
    Up,
    /// Run the demo again against the running local stack.
    Demo,
    /// Stop the local stack.
    Down,
    /// Every test: lint the template, deploy a fresh stack on port 4577, run `cargo test
    /// --workspace` against it. Further arguments go to `cargo test` (`--no-fail-fast`,
    /// `-- webhook::`).
    Test {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        cargo_args: Vec<String>,
    },
    /// Sign a realistic delivery of any kind exactly as its sender does and send it.
    Send(send::Args),
    /// A bounded load of every kind through the local stack's gateway; `--neighbour`: one
    /// organisation steady while another floods.
    Load {
        /// Organisation A steady beside organisation B flooding, each measured.
        #[arg(long)]
        neighbour: bool,
        /// New events a second (default 20; 8 with --neighbour).
        rate: Option<f64>,
        /// How long, in seconds (default 30).
        seconds: Option<u64>,
    },
    /// Webhook answer to last consequence, in the running local stack.
    Latency,
    /// Payment webhook throughput in-process against ministack, beside the Python peer.
    Bench,
    /// (The optimised build's run of `bench`.)
    #[command(hide = true)]
    BenchRun,
    /// Rows a second of the CSV and statement imports.
    BenchBank,
    /// (The optimised build's run of `bench-bank`.)
    #[command(hide = true)]
    BenchBankRun,
    /// Each function's cold start and memory.
    Coldstart {
        /// The build profile to measure.
        #[arg(long, default_value = "release")]
        profile: String,
    },
    /// List API keys made before scopes as legacy (a one-off migration).
    MigrateKeys {
        /// A table in the environment's AWS account instead of the local stack's.
        #[arg(long)]
        table: Option<String>,
    },
    /// Build every function and deploy the stack to AWS with `samconfig.toml` (one command).
    Deploy(deploy::Args),
    /// Print the exports `cargo lambda watch` needs to run FUNCTION against the local stack.
    Env {
        /// One of the 13 functions (`api`, `payment-webhook`, `notify-worker`, ...).
        function: String,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Up => {
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
        Cmd::Demo => {
            let local = stack::Stack::local();
            let coords = stack::Coordinates::read(&local.coords_file())?;
            demo::run(&coords).await
        }
        Cmd::Latency => {
            let coords = stack::Coordinates::read(&stack::Stack::local().coords_file())?;
            bench::latency(&coords).await
        }
        Cmd::Down => stack::Stack::local().stop(),
        Cmd::Test { cargo_args } => testrun::test(&cargo_args).await,
        Cmd::Coldstart { profile } => coldstart::run(&profile).await,
        Cmd::Send(args) => send::run(args).await,
        Cmd::Load {
            neighbour: true,
            rate,
            seconds,
        } => neighbour::run(rate.unwrap_or(8.0), seconds.unwrap_or(30)).await,
        Cmd::Load { rate, seconds, .. } => {
            load::run(rate.unwrap_or(20.0), seconds.unwrap_or(30)).await
        }
        Cmd::MigrateKeys { table } => migrate::keys(table).await,
        Cmd::Bench => throughput::optimised(),
        Cmd::BenchRun => throughput::run().await,
        Cmd::BenchBank => bank_bench::optimised(),
        Cmd::BenchBankRun => bank_bench::run().await,
        Cmd::Deploy(args) => deploy::run(args),
        Cmd::Env { function } => deploy::env(&function).await,
    }
}
