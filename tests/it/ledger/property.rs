//! Random interleavings of carrier events (repeats, re-pushes under new event ids, statuses
//! before their sent, contradicting statuses) and top-ups: after every one, the balance is the
//! top-ups less the debits plus the refunds, each charged message has one debit, and each
//! message and direction one inbox line.

use super::{event, Carrier};
use firmspace::store::item::Read;
use rust_decimal::Decimal;
use std::collections::{HashMap, HashSet};
use std::str::FromStr;

/// One step: `kind` 0 sent, 1 received, 2 delivered, 3 failed, 4 a top-up, 5 the last
/// delivery again; `message` one of three.
type Op = (u8, u8);

/// What the events so far imply, kept beside the store.
#[derive(Default)]
struct Model {
    topups: Decimal,
    sent: HashSet<u8>,
    received: HashSet<u8>,
    outbound: HashSet<u8>,
    first_final: HashMap<u8, &'static str>,
}

impl Model {
    fn apply(&mut self, (kind, m): Op) {
        match kind {
            0 => {
                self.sent.insert(m);
                self.outbound.insert(m);
            }
            1 => {
                self.received.insert(m);
            }
            2 | 3 => {
                self.outbound.insert(m);
                self.first_final
                    .entry(m)
                    .or_insert(if kind == 2 { "delivered" } else { "failed" });
            }
            _ => self.topups += Decimal::new(100, 2),
        }
    }

    fn refunded(&self) -> usize {
        self.sent
            .iter()
            .filter(|m| self.first_final.get(*m) == Some(&"failed"))
            .count()
    }

    fn balance(&self) -> Decimal {
        self.topups - Decimal::new(5, 2) * Decimal::from(self.sent.len())
            + Decimal::new(5, 2) * Decimal::from(self.refunded())
            - Decimal::new(1, 2) * Decimal::from(self.received.len())
    }
}

async fn check(c: &Carrier, model: &Model) {
    let items = c.env.items().await;
    let of = |kind: &'static str| {
        items
            .iter()
            .filter(move |i| i.opt_str("kind") == Some(kind))
    };
    let mut sum = Decimal::ZERO;
    let mut debits = HashSet::new();
    let mut refunds = 0;
    for line in of("ledger_line") {
        let amount = line.dec_of("amount").unwrap();
        match line.str_of("line_kind").unwrap() {
            "topup" => sum += amount,
            "debit" => {
                sum -= amount;
                let key = (
                    line.str_of("message_id").unwrap().to_owned(),
                    line.str_of("inbox_id").unwrap().to_owned(),
                );
                assert!(debits.insert(key), "a second debit for one message");
            }
            _ => {
                sum += amount;
                refunds += 1;
            }
        }
    }
    assert_eq!(
        debits.len(),
        model.sent.len() + model.received.len(),
        "one debit per charged message"
    );
    assert_eq!(
        refunds,
        model.refunded(),
        "a refund exactly where a failure won over a debit"
    );
    let wallet = c.wallet().await;
    let balance = Decimal::from_str(wallet["balance"].as_str().unwrap()).unwrap();
    assert_eq!(balance, sum, "balance = top-ups - debits + refunds");
    assert_eq!(balance, model.balance());
    let lines: Vec<_> = of("inbox_row").collect();
    assert_eq!(
        lines.len(),
        model.outbound.len() + model.received.len(),
        "one line per message and direction"
    );
    for line in lines {
        let m: u8 = line.str_of("message_id").unwrap()[1..].parse().unwrap();
        let status = line.str_of("status").unwrap();
        match model.first_final.get(&m) {
            Some(first) if line.str_of("direction").unwrap() == "outbound" => {
                assert_eq!(status, *first)
            }
            None if line.str_of("direction").unwrap() == "outbound" => assert_eq!(status, "sent"),
            _ => assert_eq!(status, "received"),
        }
    }
}

#[test]
fn any_interleaving_of_events_keeps_the_ledger_and_the_inbox_exact() {
    use proptest::prelude::*;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = ProptestConfig {
        cases: 6,
        ..ProptestConfig::default()
    };
    proptest!(config, |(ops in proptest::collection::vec((0u8..6, 0u8..3), 1..24))| {
        runtime.block_on(async {
            let c = Carrier::new().await;
            let mut model = Model::default();
            let mut last: Option<(String, serde_json::Value)> = None;
            for (n, (kind, m)) in ops.into_iter().enumerate() {
                let message = format!("M{m}");
                let body = match kind {
                    0 => event("sent", &message, Some("0.05")),
                    1 => event("received", &message, Some("0.01")),
                    2 => event("delivered", &message, None),
                    3 => event("failed", &message, None),
                    4 => {
                        assert_eq!(c.top_up(&format!("t{n}"), "1.00").await.0, 200);
                        model.apply((4, m));
                        check(&c, &model).await;
                        continue;
                    }
                    _ => match &last {
                        Some((id, body)) => {
                            let (status, again) = c.send(id, body).await;
                            assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
                            check(&c, &model).await;
                            continue;
                        }
                        None => continue,
                    },
                };
                let id = format!("evt_{n}");
                let (status, answer) = c.send(&id, &body).await;
                assert_eq!(status, 200, "{answer}");
                model.apply((kind, m));
                last = Some((id, body));
                check(&c, &model).await;
            }
        });
    });
}
