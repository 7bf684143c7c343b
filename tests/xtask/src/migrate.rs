//! `cargo xtask migrate-keys [--table NAME]`: the one-off migration that puts every API key made
//! before keys had scopes and a list on its organisation's list (`legacy: true`), so a person
//! sees it and can revoke it. Without `--table` it runs against the local stack's table; with
//! it, against that table in the account and region of the environment's AWS credentials.

use anyhow::Result;

pub async fn keys(table: Option<String>) -> Result<()> {
    let (table, sdk) = match table {
        None => {
            let local = crate::stack::Stack::local();
            let coords = crate::stack::Coordinates::read(&local.coords_file())?;
            let sdk = crate::throughput::sdk_config(&coords.aws_endpoint_url).await;
            (coords.table, sdk)
        }
        Some(table) => {
            let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            (table, sdk)
        }
    };
    let store = firmspace::store::Store::new(aws_sdk_dynamodb::Client::new(&sdk), &table);
    let listed = firmspace::orgs::keys::list_legacy(&store).await?;
    println!("{listed} key(s) from before scopes listed as legacy in {table}");
    Ok(())
}
