//! The store's one write path under contention: every writer that loses a condition reads again,
//! decides again and gets in, within the one attempt limit, and nothing is written twice.

use crate::support::{fixtures, TestEnv};
use chrono::{DateTime, Utc};
use firmspace::ids::{ExternalId, OrgId};
use firmspace::ledger::{self, wallet, Price};
use firmspace::money::Currency;
use firmspace::store::item::{n, Builder, Read};
use firmspace::store::{Cond, Decision, Plan, Seen, Step, Store, StoreError, Update, Written};
use rust_decimal_macros::dec;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One writer's event: its own item, and the shared counter moved on from the value it read.
struct Bump<'a> {
    org: &'a OrgId,
    writer: usize,
    decisions: &'a AtomicUsize,
    /// Read stale first, and whether a new number then holds (a repeat always does).
    stale: Option<bool>,
}

impl Bump<'_> {
    fn counter(&self) -> String {
        self.org.pk("COUNTER#contention")
    }
}

impl Decision for Bump<'_> {
    type Out = u64;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![
            self.org.pk(&format!("BUMP#{}", self.writer)),
            self.counter(),
        ]
    }

    fn reads_stale_first(&self) -> bool {
        self.stale.is_some()
    }

    fn stale_holds(&self, plan: &Plan<u64>) -> bool {
        matches!(plan, Plan::Done(_)) || self.stale == Some(true)
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<u64>, StoreError> {
        self.decisions.fetch_add(1, Ordering::SeqCst);
        if let Some(item) = seen.stored() {
            return Ok(Plan::Done(Written::Repeat {
                stored: item.u64_of("n")?,
            }));
        }
        let last = seen.get(1).map(|c| c.u64_of("n")).transpose()?;
        let next = last.unwrap_or(0) + 1;
        let own = Builder::new(&self.keys()[0], "bump", self.org.as_str())
            .num("n", next)
            .build();
        let counter = match last {
            None => Step::PutNew(
                Builder::new(&self.counter(), "counter", self.org.as_str())
                    .num("n", next)
                    .build(),
            ),
            Some(last) => Step::Update {
                pk: self.counter(),
                update: Update::new()
                    .set("n", n(next))
                    .when(Cond::Equals("n".into(), n(last))),
            },
        };
        Ok(Plan::Write {
            steps: vec![Step::PutNew(own), counter],
            out: next,
        })
    }
}

async fn bump(store: &Store, org: &OrgId, writer: usize, decisions: &AtomicUsize) -> Written<u64> {
    let mut decision = Bump {
        org,
        writer,
        decisions,
        stale: None,
    };
    store.write(&mut decision, Utc::now()).await.unwrap()
}

/// A decision that reads stale first writes what holds on that read at once, decides again
/// on a consistent read what does not, and answers a repeat off the stale read.
#[tokio::test]
async fn a_stale_first_read_decides_again_consistently_unless_the_plan_holds() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let decisions = AtomicUsize::new(0);
    let mut calls = Vec::new();
    for (writer, stale) in [(1, Some(false)), (2, Some(true)), (2, Some(false))] {
        decisions.store(0, Ordering::SeqCst);
        env.calls.clear();
        let mut decision = Bump {
            org: &org,
            writer,
            decisions: &decisions,
            stale,
        };
        let written = env.store.write(&mut decision, Utc::now()).await.unwrap();
        calls.push((
            matches!(written, Written::New(_)),
            decisions.load(Ordering::SeqCst),
            env.calls.take(),
        ));
    }
    let batch = "BatchGetItem".to_owned();
    assert_eq!(
        calls,
        [
            (
                true,
                2,
                vec![batch.clone(), batch.clone(), "TransactWriteItems".into()]
            ),
            (true, 1, vec![batch.clone(), "TransactWriteItems".into()]),
            (false, 1, vec![batch]),
        ],
        "a plan that does not hold is read and decided again; one that holds, and a repeat, are not"
    );
    assert_eq!(env.count("bump").await, 2);
}

#[tokio::test]
async fn thirty_writers_on_one_counter_all_get_in_each_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let decisions = AtomicUsize::new(0);
    let written =
        futures::future::join_all((0..30).map(|w| bump(&env.store, &org, w, &decisions))).await;
    let mut numbers: Vec<u64> = written
        .iter()
        .map(|w| match w {
            Written::New(n) => *n,
            other => panic!("every writer is new: {other:?}"),
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (1..=30).collect::<Vec<_>>(),
        "each number taken once"
    );
    let counter = env
        .store
        .get(&org.pk("COUNTER#contention"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(counter.u64_of("n").unwrap(), 30);
    assert_eq!(env.count("bump").await, 30);
    assert!(
        decisions.load(Ordering::SeqCst) > 30,
        "losers decided again: {} decisions",
        decisions.load(Ordering::SeqCst)
    );
    // A writer that comes again is a repeat, answered from the read.
    let again = bump(&env.store, &org, 7, &decisions).await;
    assert!(matches!(again, Written::Repeat { .. }), "{again:?}");
    assert_eq!(env.count("bump").await, 30);
}

#[tokio::test]
async fn thirty_concurrent_top_ups_of_one_wallet_all_land_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let price = Price {
        amount: dec!(2.50),
        currency: Currency::parse("USD").unwrap(),
    };
    let keys: Vec<ExternalId> = (0..30)
        .map(|i| ExternalId::parse("key", &format!("topup-{i}")).unwrap())
        .collect();
    let written = futures::future::join_all(
        keys.iter()
            .map(|key| ledger::top_up(&env.store, &org, key, price, Utc::now())),
    )
    .await;
    assert!(
        written.iter().all(|w| matches!(w, Ok(Written::New(_)))),
        "{written:?}"
    );
    let wallet = wallet::get(&env.store, &org).await.unwrap();
    assert_eq!((wallet.balance, wallet.version), (dec!(75.00), 30));
    assert_eq!(env.count("ledger_line").await, 30);
    // Every key again, concurrently: repeats, and the wallet does not move.
    let again = futures::future::join_all(
        keys.iter()
            .map(|key| ledger::top_up(&env.store, &org, key, price, Utc::now())),
    )
    .await;
    assert!(
        again
            .iter()
            .all(|w| matches!(w, Ok(Written::Repeat { .. }))),
        "{again:?}"
    );
    let wallet = wallet::get(&env.store, &org).await.unwrap();
    assert_eq!((wallet.balance, wallet.version), (dec!(75.00), 30));
}

#[tokio::test]
async fn a_bank_row_costs_one_conditional_put_new_or_repeat_and_a_changed_row_is_a_conflict() {
    use firmspace::bank::{self, Arrival, BankRow, BankTx};
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let row = |amount| BankRow {
        id: "r1".into(),
        time: Utc::now(),
        amount,
        currency: Currency::parse("UAH").unwrap(),
        description: "Payment INV-00001".into(),
        counterparty: None,
        reference: None,
    };
    let integration = format!("{org}_00000000000000000000000000000001");
    let tx = |amount| {
        BankTx::new(
            &org,
            &integration,
            "acc",
            row(amount),
            Arrival::Webhook,
            Utc::now(),
        )
    };
    let first = tx(dec!(40));
    let mut counted = Vec::new();
    for again in [&first, &first] {
        env.calls.clear();
        let written = bank::store_row(&env.store, again).await.unwrap();
        counted.push((written.is_new(), env.calls.take()));
    }
    assert_eq!(
        counted,
        [
            (true, vec!["PutItem".to_owned()]),
            (false, vec!["PutItem".to_owned()])
        ],
        "no read first: one conditional put (the fan-out counts the row), refused for a repeat"
    );
    let changed = tx(dec!(41));
    match bank::store_row(&env.store, &changed).await.unwrap() {
        Written::Conflict { stored, mismatch } => {
            assert_eq!(stored.row.amount, dec!(40), "the first row is kept");
            assert!(mismatch.fields.contains(&"amount"), "{mismatch:?}");
        }
        other => panic!("another row under the same id is a conflict: {other:?}"),
    }
    assert_eq!(env.count("bank_tx").await, 1);
}

/// A step DynamoDB refuses as it is (a number added to an item's text) fails the same every
/// time: the transaction answers it at once as a defect no retry gets past, not as a contention
/// tried again until the write's budget runs out; nothing of it is written.
#[tokio::test]
async fn a_step_refused_as_invalid_is_no_contention_and_writes_nothing() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let texted = Builder::new(&org.pk("TEXTED#1"), "texted", org.as_str())
        .str("count", "not a number")
        .build();
    env.store.put_new(texted).await.unwrap();
    let small = Builder::new(&org.pk("BESIDE#1"), "beside", org.as_str()).build();
    let add = Step::Update {
        pk: org.pk("TEXTED#1"),
        update: Update::new().add("count", n(1)),
    };
    let started = std::time::Instant::now();
    let sent = env.store.transact(vec![Step::PutNew(small), add]).await;
    let err = sent.expect_err("a number added to a text is refused");
    assert!(!err.is_retryable(), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "answered at once"
    );
    assert_eq!(env.count("beside").await, 0, "nothing of it written");
}
