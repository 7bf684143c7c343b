//! The unit prices every dollar figure of ours is made from: `cargo xtask load` prints what an
//! event of each kind costs with them, and docs/measurements.md's table is computed from them
//! (list prices of us-east-1, December 2026).

/// A Lambda request (arm64).
pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
/// A Lambda GB-second (arm64).
pub const LAMBDA_GB_SECOND: f64 = 0.000_013_333_4;
/// A DynamoDB on-demand write unit, a read unit.
pub const WRITE_UNIT: f64 = 0.625 / 1e6;
pub const READ_UNIT: f64 = 0.125 / 1e6;
/// An SQS request (standard queue, up to 64 KB).
pub const SQS_REQUEST: f64 = 0.40 / 1e6;
/// An HTTP API request.
pub const HTTP_REQUEST: f64 = 1.00 / 1e6;
/// A GB of CloudWatch Logs ingested.
pub const LOG_GB: f64 = 0.50;

/// What an invocation is billed, assumed: 256 MB for 15 ms (the webhook's, the fan-out's and a
/// worker's measured CPU is 1 to 5 ms; a DynamoDB round trip in region about 5).
pub const INVOCATION_GB_SECONDS: f64 = 0.25 * 0.015;

/// What one event costs, its consequences included.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerEvent {
    pub write_units: f64,
    pub read_units: f64,
    /// SQS requests our code sends (the fan-out's); Lambda's queue poller adds a receive and a
    /// delete per message batch, counted here as two more per request sent.
    pub sqs_sent: f64,
    pub invocations: f64,
    /// Requests through the HTTP API (1 for a webhook's delivery).
    pub http: f64,
    pub log_bytes: f64,
}

impl PerEvent {
    /// Dollars a million such events.
    pub fn dollars_a_million(&self) -> f64 {
        let one = self.write_units * WRITE_UNIT
            + self.read_units * READ_UNIT
            + self.sqs_sent * 3.0 * SQS_REQUEST
            + self.invocations * (LAMBDA_REQUEST + INVOCATION_GB_SECONDS * LAMBDA_GB_SECOND)
            + self.http * HTTP_REQUEST
            + self.log_bytes / 1e9 * LOG_GB;
        one * 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_payments_as_the_docs_table_adds_them_up() {
        // 28 write units, 2 read units, 2 SQS sends (6 requests), 4 invocations, one HTTP
        // request and 2 KB of logs.
        let cost = PerEvent {
            write_units: 28.0,
            read_units: 2.0,
            sqs_sent: 2.0,
            invocations: 4.0,
            http: 1.0,
            log_bytes: 2000.0,
        };
        let expected = 17.50 + 0.25 + 2.40 + 0.80 + 0.2 + 1.00 + 1.00;
        assert!(
            (cost.dollars_a_million() - expected).abs() < 0.01,
            "{}",
            cost.dollars_a_million()
        );
    }
}
