//! The table's shape, for tests and tools that make their own table. `infra/template.yaml`
//! declares the same shape for the deployed stack.

use super::{Index, StoreError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;

fn attr(name: &str) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .expect("name and type are set")
}

fn key(name: &str, key_type: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .expect("name and type are set")
}

/// A secondary index: of the whole item (`Lists` and `States` read items), or of its keys
/// alone (`Keys`: its marks are counted and its invoices fetched by key, not read from it).
fn index(index: Index, projection: ProjectionType) -> GlobalSecondaryIndex {
    GlobalSecondaryIndex::builder()
        .index_name(index.name())
        .key_schema(key(index.pk(), KeyType::Hash))
        .key_schema(key(index.sk(), KeyType::Range))
        .projection(Projection::builder().projection_type(projection).build())
        .build()
        .expect("index fields are set")
}

/// Creates the table (on-demand, stream NEW_IMAGE, `gsi1`, `gsi2` and `gsi3`). Returns the stream ARN.
pub async fn create_table(client: &Client, name: &str) -> Result<Option<String>, StoreError> {
    let out = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(
            [
                "pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "gsi3pk", "gsi3sk",
            ]
            .map(attr)
            .to_vec(),
        ))
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .global_secondary_indexes(index(Index::Lists, ProjectionType::All))
        .global_secondary_indexes(index(Index::States, ProjectionType::All))
        .global_secondary_indexes(index(Index::Keys, ProjectionType::KeysOnly))
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewImage)
                .build()
                .expect("stream fields are set"),
        )
        .send()
        .await
        .map_err(StoreError::sdk)?;
    Ok(out.table_description.and_then(|t| t.latest_stream_arn))
}
