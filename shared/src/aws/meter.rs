//! The meter: what every DynamoDB request consumed, as DynamoDB itself reports it. Every request
//! that can asks `ReturnConsumedCapacity: INDEXES` (added to its body before it is signed), and
//! every answer's `ConsumedCapacity` is added up: read units, write units, and of the write
//! units those written to the indexes. A function's invocation writes its calls and units as
//! one metric document (`telemetry::flush_metrics`); a test reads them per request from its
//! [`super::CallLog`].

use std::ops::AddAssign;
use std::sync::Mutex;

/// Capacity units as DynamoDB reports them (a transactional write counts twice, an eventually
/// consistent read half).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Units {
    pub read: f64,
    /// Every write unit, the table's and the indexes'.
    pub write: f64,
    /// Of `write`, those the global secondary indexes took.
    pub index_write: f64,
}

impl AddAssign for Units {
    fn add_assign(&mut self, other: Self) {
        self.read += other.read;
        self.write += other.write;
        self.index_write += other.index_write;
    }
}

impl std::iter::Sum for Units {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |mut a, b| {
            a += b;
            a
        })
    }
}

/// Whether DynamoDB's `operation` reports consumed capacity, and if so whether it reads.
fn reads(operation: &str) -> Option<bool> {
    match operation {
        "GetItem" | "BatchGetItem" | "Query" | "Scan" | "TransactGetItems" => Some(true),
        "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems" => {
            Some(false)
        }
        _ => None,
    }
}

/// The JSON body of `operation` asking for its consumed capacity, table and indexes apart;
/// `None` when the operation reports none or the body is not a JSON object.
pub(crate) fn asking(operation: &str, body: &[u8]) -> Option<Vec<u8>> {
    reads(operation)?;
    let open = body.iter().position(|b| !b.is_ascii_whitespace())?;
    if body[open] != b'{' {
        return None;
    }
    let rest = &body[open + 1..];
    let empty = rest
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'}');
    let field: &[u8] = match empty {
        true => br#""ReturnConsumedCapacity":"INDEXES""#,
        false => br#""ReturnConsumedCapacity":"INDEXES","#,
    };
    let mut asked = Vec::with_capacity(body.len() + field.len());
    asked.extend_from_slice(&body[..=open]);
    asked.extend_from_slice(field);
    asked.extend_from_slice(rest);
    Some(asked)
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(rename = "ConsumedCapacity")]
    consumed: Option<Consumed>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Consumed {
    One(Capacity),
    Many(Vec<Capacity>),
}

#[derive(serde::Deserialize)]
struct Capacity {
    #[serde(rename = "CapacityUnits", default)]
    units: f64,
    #[serde(rename = "GlobalSecondaryIndexes", default)]
    indexes: std::collections::BTreeMap<String, IndexCapacity>,
}

#[derive(serde::Deserialize)]
struct IndexCapacity {
    #[serde(rename = "CapacityUnits", default)]
    units: f64,
}

/// The units one answer of `operation` reports (nothing for an answer without them).
pub fn units_of(operation: &str, body: &[u8]) -> Units {
    let Some(reading) = reads(operation) else {
        return Units::default();
    };
    let Ok(Answer {
        consumed: Some(consumed),
    }) = serde_json::from_slice::<Answer>(body)
    else {
        return Units::default();
    };
    let all = match consumed {
        Consumed::One(one) => vec![one],
        Consumed::Many(many) => many,
    };
    all.iter()
        .map(|c| {
            let indexes: f64 = c.indexes.values().map(|i| i.units).sum();
            match reading {
                true => Units {
                    read: c.units,
                    ..Units::default()
                },
                false => Units {
                    write: c.units,
                    index_write: indexes,
                    ..Units::default()
                },
            }
        })
        .sum()
}

/// The calls and units of this process since the last [`take`].
static SINCE: Mutex<(u64, Units)> = Mutex::new((
    0,
    Units {
        read: 0.0,
        write: 0.0,
        index_write: 0.0,
    },
));

/// The calls and units since the last take (an invocation's, taken when it writes its
/// metrics), and none after.
pub fn take() -> (u64, Units) {
    std::mem::take(&mut *SINCE.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Adds `calls` requests and their `units` to the process's count.
pub(crate) fn count(calls: u64, units: Units) {
    let mut since = SINCE.lock().unwrap_or_else(|p| p.into_inner());
    since.0 += calls;
    since.1 += units;
}

/// The operation a DynamoDB request names in `x-amz-target`.
pub(crate) fn operation(request: &aws_sdk_dynamodb::config::http::HttpRequest) -> String {
    match request.headers().get("x-amz-target") {
        Some(t) => t.rsplit('.').next().unwrap_or("unknown").to_owned(),
        None => format!("S3 {}", request.method()),
    }
}

/// The operation of the request an attempt sent, kept for its answer (which does not carry it).
#[derive(Clone, Debug)]
pub(crate) struct Operation(pub(crate) String);

impl aws_smithy_types::config_bag::Storable for Operation {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// What a `BatchGetItem` costs as DynamoDB bills it, kept for an answer that reports none (the
/// local emulator's): a unit a key read consistently, half a unit otherwise (our items are all
/// under the 4 KB a unit reads).
#[derive(Clone, Copy, Debug)]
struct Billed(f64);

impl aws_smithy_types::config_bag::Storable for Billed {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// The units a `BatchGetItem` request is billed, from its body.
fn billed(body: &[u8]) -> Option<f64> {
    #[derive(serde::Deserialize)]
    struct Request {
        #[serde(rename = "RequestItems")]
        items: std::collections::BTreeMap<String, Table>,
    }
    #[derive(serde::Deserialize)]
    struct Table {
        #[serde(rename = "Keys", default)]
        keys: Vec<serde::de::IgnoredAny>,
        #[serde(rename = "ConsistentRead", default)]
        consistent: bool,
    }
    let request: Request = serde_json::from_slice(body).ok()?;
    Some(
        request
            .items
            .values()
            .map(|t| t.keys.len() as f64 * if t.consistent { 1.0 } else { 0.5 })
            .sum(),
    )
}

/// The operation and units of an answered attempt: as DynamoDB reported them, or as it bills
/// a successful `BatchGetItem` whose answer reports none. A refusal (a condition that did not
/// hold, a cancelled transaction) reports no units, though DynamoDB bills the write: the meter
/// counts none for it, so what it shows of a contended or repeated write is a floor.
pub(crate) fn answered(
    cfg: &aws_sdk_dynamodb::config::ConfigBag,
    response: &aws_sdk_dynamodb::config::http::HttpResponse,
) -> Option<(String, Units)> {
    let Operation(op) = cfg.load::<Operation>()?;
    let body = response.body().bytes();
    let mut units = body.map(|b| units_of(op, b)).unwrap_or_default();
    if let (0.0, true, Some(Billed(read))) = (
        units.read,
        response.status().is_success(),
        cfg.load::<Billed>(),
    ) {
        units.read = *read;
    }
    Some((op.clone(), units))
}

/// The meter's interceptor on every DynamoDB client a store uses (`Store::new` puts it there):
/// it asks each request's consumed capacity and adds every request and its units to the
/// process's count ([`take`], an invocation's metrics) and to its own ([`Meter::take`], what
/// the invocation spent on whose events).
#[derive(Clone, Debug, Default)]
pub struct Meter(std::sync::Arc<Mutex<(u64, Units)>>);

impl Meter {
    /// The calls and units of this meter's client since its last take.
    pub fn take(&self) -> (u64, Units) {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn count(&self, calls: u64, units: Units) {
        count(calls, units);
        let mut since = self.0.lock().unwrap_or_else(|p| p.into_inner());
        since.0 += calls;
        since.1 += units;
    }

    /// `client` with this meter on it.
    pub fn on(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        let config = client
            .config()
            .to_builder()
            .interceptor(self.clone())
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }
}

impl aws_sdk_dynamodb::config::Intercept for Meter {
    fn name(&self) -> &'static str {
        "Meter"
    }

    fn modify_before_retry_loop(
        &self,
        context: &mut aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextMut<
            '_,
        >,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let request = context.request_mut();
        let op = operation(request);
        if let Some(read) = (op == "BatchGetItem")
            .then(|| request.body().bytes().and_then(billed))
            .flatten()
        {
            cfg.interceptor_state().store_put(Billed(read));
        }
        let Some(asked) = request.body().bytes().and_then(|b| asking(&op, b)) else {
            return Ok(());
        };
        request
            .headers_mut()
            .insert("content-length", asked.len().to_string());
        *request.body_mut() = aws_smithy_types::body::SdkBody::from(asked);
        Ok(())
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        self.count(1, Units::default());
        cfg.interceptor_state()
            .store_put(Operation(operation(context.request())));
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::AfterDeserializationInterceptorContextRef<
            '_,
        >,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        if let Some((_, units)) = answered(cfg, context.response()) {
            self.count(0, units);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_asks_for_its_units_and_an_empty_or_unmetered_one_is_left_alone() {
        let asked = asking("PutItem", br#"{"TableName":"t","Item":{}}"#).unwrap();
        let read: serde_json::Value = serde_json::from_slice(&asked).unwrap();
        assert_eq!(read["ReturnConsumedCapacity"], "INDEXES");
        assert_eq!(read["TableName"], "t");
        let empty = asking("Query", b" { } ").unwrap();
        let read: serde_json::Value = serde_json::from_slice(&empty).unwrap();
        assert_eq!(
            read,
            serde_json::json!({"ReturnConsumedCapacity": "INDEXES"})
        );
        assert_eq!(asking("DescribeTable", br#"{"TableName":"t"}"#), None);
    }

    #[test]
    fn units_are_read_from_one_answer_or_many_with_the_indexes_apart() {
        let put = br#"{"ConsumedCapacity":{"TableName":"t","CapacityUnits":3.0,
            "Table":{"CapacityUnits":1.0},
            "GlobalSecondaryIndexes":{"gsi1":{"CapacityUnits":1.0},"gsi2":{"CapacityUnits":1.0}}}}"#;
        assert_eq!(
            units_of("PutItem", put),
            Units {
                read: 0.0,
                write: 3.0,
                index_write: 2.0
            }
        );
        let batch = br#"{"Responses":{},"ConsumedCapacity":[{"TableName":"t","CapacityUnits":1.5},
            {"TableName":"u","CapacityUnits":0.5}]}"#;
        assert_eq!(units_of("BatchGetItem", batch).read, 2.0);
        assert_eq!(units_of("UpdateItem", b"{}"), Units::default());
        assert_eq!(units_of("DescribeTable", put), Units::default());
    }

    #[test]
    fn a_batch_get_is_billed_a_unit_a_consistent_key_and_half_an_eventual_one() {
        let body = br#"{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}},{"pk":{"S":"b"}}],
            "ConsistentRead":true},"u":{"Keys":[{"pk":{"S":"c"}}]}}}"#;
        assert_eq!(billed(body), Some(2.5));
        assert_eq!(billed(b"{}"), None);
    }
}
