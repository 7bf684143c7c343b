//! `cargo xtask test`: every test, against a fresh ministack with the stack deployed.

use crate::stack::{aws_env, cargo, ensure_venv, root, run, Stack, REGION};
use anyhow::Result;
use std::process::Command;

/// `cargo xtask test`: lint the template, start a fresh ministack, deploy the stack, run every
/// test against it, stop it.
pub async fn test(extra: &[String]) -> Result<()> {
    let root = root();
    let venv = ensure_venv()?;
    println!("== sam validate --lint");
    let mut lint = Command::new(venv.join("bin/sam"));
    aws_env(&mut lint, "http://127.0.0.1:1");
    run(lint.current_dir(&root).args([
        "validate",
        "--lint",
        "--region",
        REGION,
        "-t",
        "infra/template.yaml",
    ]))?;
    let stack = Stack::testing();
    stack.stop()?;
    stack.start().await?;
    let result = async {
        let coords = stack
            .deploy(&hex::encode(firmspace::ids::random_bytes::<16>()))
            .await?;
        coords.write(&stack.coords_file())?;
        println!("== cargo test --workspace");
        let mut cmd = Command::new(cargo());
        aws_env(&mut cmd, &stack.endpoint());
        cmd.current_dir(&root)
            .args(["test", "--workspace"])
            .args(extra)
            .env("FIRMSPACE_TEST_ENDPOINT", stack.endpoint())
            .env("FIRMSPACE_TEST_MODEL_URL", stack.model_url())
            .env("FIRMSPACE_TEST_STACK", stack.coords_file());
        run(&mut cmd)
    }
    .await;
    stack.stop()?;
    result
}
