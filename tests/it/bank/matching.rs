//! Matching rows to invoices: automatically by the invoice number a credit names, by hand,
//! re-matched and unmatched, concurrently too; after every step the row's money is applied zero
//! times or once, on exactly one invoice, and every invoice's `paid` is the sum of its events.

use crate::consequences::fanout_app;
use crate::support::queues::{event, receive};
use crate::support::{fixtures, TestEnv};
use chrono::Utc;
use firmspace::bank::matching::{self, MatchError};
use firmspace::bank::{self, Arrival, BankRow, BankTx};
use firmspace::ids::OrgId;
use firmspace::money::Currency;
use firmspace::ops::review::view;
use firmspace::payments::{invoice, register};
use firmspace::store::item::Read;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

/// A stored row of `amount` UAH whose description says `text`.
pub async fn row(env: &TestEnv, org: &OrgId, id: &str, amount: Decimal, text: &str) -> BankTx {
    let tx = BankTx::new(
        org,
        &format!("{org}_00000000000000000000000000000001"),
        "csv",
        BankRow {
            id: id.into(),
            time: Utc::now(),
            amount,
            currency: Currency::parse("UAH").unwrap(),
            description: text.into(),
            counterparty: None,
            reference: None,
        },
        Arrival::Csv,
        Utc::now(),
    );
    bank::store_row(&env.store, &tx).await.unwrap();
    tx
}

async fn paid(env: &TestEnv, org: &OrgId, id: &str) -> Decimal {
    let item = env
        .store
        .get(&invoice::invoice_pk(org, id))
        .await
        .unwrap()
        .unwrap();
    item.dec_of("paid").unwrap()
}

/// The invariants of a row over the invoices it may have been matched to.
pub async fn check(env: &TestEnv, org: &OrgId, tx_id: &str, invoices: &[String]) {
    let tx = bank::get(&env.store, org, tx_id).await.unwrap().unwrap();
    let mut holding = Vec::new();
    for id in invoices {
        let events = register::list_for_invoice(&env.store, org, id)
            .await
            .unwrap();
        let sum: Decimal = events.iter().map(|e| e.applied).sum();
        assert_eq!(
            paid(env, org, id).await,
            sum,
            "{id}: paid is the sum of its events"
        );
        let of_row: Decimal = events
            .iter()
            .filter(|e| e.external_id.as_str().starts_with(tx_id))
            .map(|e| e.applied)
            .sum();
        if !of_row.is_zero() {
            holding.push((id.clone(), of_row));
        }
    }
    match &tx.matched {
        Some(m) if !m.applied.is_zero() => {
            assert_eq!(
                holding,
                [(m.invoice_id.clone(), m.applied)],
                "the row's money is on its invoice alone"
            )
        }
        _ => assert!(
            holding.is_empty(),
            "an unmatched row holds no money: {holding:?}"
        ),
    }
}

/// Stored rows through the fan-out and the match worker, each stream record delivered twice.
async fn through_the_match_worker(env: &TestEnv, rows: &[&BankTx]) {
    let (sqs, q, fanout) = fanout_app(env).await;
    for tx in rows {
        for seq in ["1", "2"] {
            let item = env.store.get(&tx.pk()).await.unwrap().unwrap();
            let out = fanout
                .process(crate::consequences::stream_event(&item, seq), Utc::now())
                .await;
            assert!(out.batch_item_failures.is_empty());
        }
    }
    let credits = receive(&sqs, &q.matching, 1).await;
    assert_eq!(credits.len(), 2 * rows.len());
    let worker = match_worker::app(env.store.clone(), 5);
    assert!(worker
        .process(event(&credits), Utc::now())
        .await
        .batch_item_failures
        .is_empty());
}

#[tokio::test]
async fn a_bank_credit_for_an_invoice_already_paid_by_card_is_left_to_a_person() {
    use firmspace::ids::ExternalId;
    use firmspace::payments::{PaymentInput, Source};
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let inv = fixtures::invoice(&env, &org, dec!(40), "UAH").await;
    let card = PaymentInput {
        org: org.clone(),
        invoice_ref: Some(inv.id.as_str().to_owned()),
        source: Source::Stripe,
        external_id: ExternalId::parse("id", "pi_card").unwrap(),
        amount: Some(dec!(40)),
        currency: Some(Currency::parse("UAH").unwrap()),
        at: Utc::now(),
        actor: "stripe".into(),
        reverses: None,
        reversible: true,
        via: None,
    };
    register::register_payment(&env.store, &card).await.unwrap();
    // The customer also transferred the money, naming the invoice.
    let text = format!("Payment for {}", inv.number);
    let transfer = row(&env, &org, "r-card", dec!(40), &text).await;
    through_the_match_worker(&env, &[&transfer]).await;
    assert_eq!(
        paid(&env, &org, inv.id.as_str()).await,
        dec!(40),
        "paid once"
    );
    let stored = bank::get(&env.store, &org, &transfer.id())
        .await
        .unwrap()
        .unwrap();
    assert!(stored.matched.is_none(), "the machine books nothing");
    let review = firmspace::review::list(&env.store, &org, 10).await.unwrap();
    let left: Vec<_> = review
        .iter()
        .filter(|r| r.reason.as_deref() == Some("unmatched_bank_row"))
        .collect();
    assert_eq!(left.len(), 1, "one item for a person: {review:?}");
    assert_eq!(
        (
            &left[0].detail["invoice_numbers"],
            &left[0].detail["open_invoices"]
        ),
        (&serde_json::json!([inv.number]), &serde_json::json!([])),
        "it names the paid invoice and that none is open"
    );
    check(&env, &org, &transfer.id(), &[inv.id.as_str().to_owned()]).await;
}

#[tokio::test]
async fn a_credit_naming_an_open_invoice_pays_it_once_and_one_naming_none_waits_for_a_person() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let inv = fixtures::invoice(&env, &org, dec!(40), "UAH").await;
    let named = row(
        &env,
        &org,
        "r1",
        dec!(40),
        &format!("Payment for {}", inv.number.to_lowercase()),
    )
    .await;
    let nameless = row(&env, &org, "r2", dec!(15), "Transfer").await;
    let debit = row(&env, &org, "r3", dec!(-7), &inv.number).await;
    assert!(debit.consequences().is_empty(), "a debit is not matched");

    through_the_match_worker(&env, &[&named, &nameless]).await;
    assert_eq!(paid(&env, &org, inv.id.as_str()).await, dec!(40));
    let stored = bank::get(&env.store, &org, &named.id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.matched.as_ref().map(|m| m.invoice_id.as_str()),
        Some(inv.id.as_str())
    );
    let events = register::list_for_invoice(&env.store, &org, inv.id.as_str())
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].source.label(), "bank");

    let review = firmspace::review::list(&env.store, &org, 10).await.unwrap();
    let unmatched: Vec<_> = review
        .iter()
        .filter(|r| r.reason.as_deref() == Some("unmatched_bank_row"))
        .collect();
    assert_eq!(unmatched.len(), 1, "{review:?}");
    let open = firmspace::review::open_by_reason(&env.store, &org)
        .await
        .unwrap();
    assert_eq!(open.get("unmatched_bank_row"), Some(&1), "{open:?}");
    a_person_matches_it(&env, &org, &nameless).await;
}

/// A person matches the nameless row to another invoice: its review item is resolved, and leaves
/// the operator's open list and its count for the resolved list.
async fn a_person_matches_it(env: &TestEnv, org: &OrgId, nameless: &BankTx) {
    let other = fixtures::invoice(env, org, dec!(100), "UAH").await;
    let m = matching::match_row(
        &env.store,
        org,
        &nameless.id(),
        other.id.as_str(),
        ("u1", true),
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(m.applied, dec!(15));
    let review = firmspace::review::list(&env.store, org, 10).await.unwrap();
    assert!(
        review
            .iter()
            .any(|r| r.reason.as_deref() == Some("unmatched_bank_row")
                && r.state.as_deref() == Some("resolved")),
        "{review:?}"
    );
    // ... and it leaves the operator's open list and its count, for the resolved list.
    let (open_list, _) = firmspace::review::page(&env.store, org, "open", 50, None, view)
        .await
        .unwrap();
    assert!(
        open_list
            .iter()
            .all(|r| r.item.reason.as_deref() != Some("unmatched_bank_row")),
        "{open_list:?}"
    );
    let open = firmspace::review::open_by_reason(&env.store, org)
        .await
        .unwrap();
    assert_eq!(open.get("unmatched_bank_row"), None, "{open:?}");
    let (resolved, _) = firmspace::review::page(&env.store, org, "resolved", 50, None, view)
        .await
        .unwrap();
    let by = resolved
        .iter()
        .find(|r| r.item.reason.as_deref() == Some("unmatched_bank_row"))
        .and_then(|r| r.item.resolved_by.clone());
    assert_eq!(by.as_deref(), Some("u1"), "{resolved:?}");
}

#[tokio::test]
async fn match_rematch_and_unmatch_move_the_money_once_each_way() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let a = fixtures::invoice(&env, &org, dec!(100), "UAH").await;
    let b = fixtures::invoice(&env, &org, dec!(100), "UAH").await;
    let usd = fixtures::invoice(&env, &org, dec!(100), "USD").await;
    let tx = row(&env, &org, "m1", dec!(40), "no number").await;
    let debit = row(&env, &org, "m2", dec!(-40), "fee").await;
    let ids = [a.id.as_str().to_owned(), b.id.as_str().to_owned()];
    let now = Utc::now();

    let first = matching::match_row(&env.store, &org, &tx.id(), a.id.as_str(), ("u1", true), now)
        .await
        .unwrap();
    assert_eq!((first.duplicate, first.applied), (false, dec!(40)));
    let again = matching::match_row(&env.store, &org, &tx.id(), a.id.as_str(), ("u1", true), now)
        .await
        .unwrap();
    assert!(again.duplicate);
    let moved = matching::match_row(&env.store, &org, &tx.id(), b.id.as_str(), ("u1", true), now)
        .await
        .unwrap();
    assert_eq!(moved.previous.as_ref().map(|i| i.paid), Some(dec!(0)));
    assert_eq!(
        (
            paid(&env, &org, a.id.as_str()).await,
            paid(&env, &org, b.id.as_str()).await
        ),
        (dec!(0), dec!(40))
    );
    check(&env, &org, &tx.id(), &ids).await;
    let back = matching::match_row(&env.store, &org, &tx.id(), a.id.as_str(), ("u1", true), now)
        .await
        .unwrap();
    assert_eq!(back.applied, dec!(40));
    check(&env, &org, &tx.id(), &ids).await;
    let undone = matching::unmatch_row(&env.store, &org, &tx.id(), "u1", now)
        .await
        .unwrap();
    assert_eq!(undone.reverted, dec!(40));
    check(&env, &org, &tx.id(), &ids).await;
    assert!(matches!(
        matching::unmatch_row(&env.store, &org, &tx.id(), "u1", now).await,
        Err(MatchError::NotMatched)
    ));
    assert!(matches!(
        matching::match_row(
            &env.store,
            &org,
            &debit.id(),
            a.id.as_str(),
            ("u1", true),
            now
        )
        .await,
        Err(MatchError::NotACredit)
    ));
    assert!(matches!(
        matching::match_row(
            &env.store,
            &org,
            &tx.id(),
            usd.id.as_str(),
            ("u1", true),
            now
        )
        .await,
        Err(MatchError::CurrencyMismatch { .. })
    ));
}

/// A row whose payment an earlier release reversed without the row (a person's `same_money`
/// then): the row still named its match. The next re-match takes it off, reverses nothing
/// twice and moves the money once.
#[tokio::test]
async fn a_row_whose_match_was_reversed_without_it_is_unmatched_by_the_next_move() {
    use firmspace::ids::ExternalId;
    use firmspace::payments::{reversal_id, PaymentInput, Source};
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let a = fixtures::invoice(&env, &org, dec!(100), "UAH").await;
    let b = fixtures::invoice(&env, &org, dec!(100), "UAH").await;
    let tx = row(&env, &org, "m-stale", dec!(40), "no number").await;
    let ids = [a.id.as_str().to_owned(), b.id.as_str().to_owned()];
    let now = Utc::now();
    matching::match_row(&env.store, &org, &tx.id(), a.id.as_str(), ("u1", true), now)
        .await
        .unwrap();
    let original = ExternalId::parse("id", &format!("{}:1", tx.id())).unwrap();
    let reversal = PaymentInput {
        org: org.clone(),
        invoice_ref: Some(a.id.as_str().to_owned()),
        source: Source::Bank,
        external_id: reversal_id(&original),
        amount: None,
        currency: None,
        at: now,
        actor: "admin".into(),
        reverses: Some(original),
        reversible: false,
        via: None,
    };
    register::register_payment(&env.store, &reversal)
        .await
        .unwrap();
    assert_eq!(paid(&env, &org, a.id.as_str()).await, dec!(0));
    let stale = bank::get(&env.store, &org, &tx.id())
        .await
        .unwrap()
        .unwrap();
    assert!(stale.matched.is_some(), "the row still names its match");

    let moved = matching::match_row(&env.store, &org, &tx.id(), b.id.as_str(), ("u1", true), now)
        .await
        .unwrap();
    assert_eq!((moved.duplicate, moved.applied), (false, dec!(40)));
    assert_eq!(
        (
            paid(&env, &org, a.id.as_str()).await,
            paid(&env, &org, b.id.as_str()).await
        ),
        (dec!(0), dec!(40))
    );
    check(&env, &org, &tx.id(), &ids).await;
}

#[tokio::test]
async fn ten_concurrent_rematches_between_two_invoices_leave_the_money_on_one() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let a = fixtures::invoice(&env, &org, dec!(1000), "UAH").await;
    let b = fixtures::invoice(&env, &org, dec!(1000), "UAH").await;
    let tx = row(&env, &org, "c1", dec!(40), "").await;
    let ids = [a.id.as_str().to_owned(), b.id.as_str().to_owned()];
    let rematches =
        (0..10).map(|i| {
            let (store, org, tx_id) = (env.store.clone(), org.clone(), tx.id());
            let target = ids[i % 2].clone();
            async move {
                matching::match_row(&store, &org, &tx_id, &target, ("u1", true), Utc::now()).await
            }
        });
    let results = futures::future::join_all(rematches).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    check(&env, &org, &tx.id(), &ids).await;
    // Every request that answered "matched" to an invoice was true when it answered: the last
    // one standing is where the row is.
    let tx_now = bank::get(&env.store, &org, &tx.id())
        .await
        .unwrap()
        .unwrap();
    let on = tx_now.matched.expect("matched").invoice_id;
    assert!(results
        .iter()
        .flatten()
        .any(|m| m.invoice.as_ref().is_some_and(|i| i.id.as_str() == on)));
    let total = paid(&env, &org, a.id.as_str()).await + paid(&env, &org, b.id.as_str()).await;
    assert_eq!(total, dec!(40));
}

#[tokio::test]
async fn the_machine_never_overrides_a_person() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let named = fixtures::invoice(&env, &org, dec!(100), "UAH").await;
    let chosen = fixtures::invoice(&env, &org, dec!(100), "UAH").await;
    let tx = row(&env, &org, "h1", dec!(40), &format!("for {}", named.number)).await;
    // A person matched the row before its automatic match ran (or the message came again).
    matching::match_row(
        &env.store,
        &org,
        &tx.id(),
        chosen.id.as_str(),
        ("u1", true),
        Utc::now(),
    )
    .await
    .unwrap();
    let auto = matching::auto_match(&env.store, &org, &tx.id(), Utc::now())
        .await
        .unwrap();
    assert_eq!(auto, matching::Auto::Nothing);
    matching::unmatch_row(&env.store, &org, &tx.id(), "u1", Utc::now())
        .await
        .unwrap();
    let auto = matching::auto_match(&env.store, &org, &tx.id(), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        auto,
        matching::Auto::Nothing,
        "an unmatch by a person stays"
    );
    assert_eq!(
        (
            paid(&env, &org, named.id.as_str()).await,
            paid(&env, &org, chosen.id.as_str()).await
        ),
        (dec!(0), dec!(0))
    );
}

#[test]
fn random_sequences_of_match_rematch_and_unmatch_keep_the_invariants() {
    use proptest::prelude::*;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = ProptestConfig {
        cases: 6,
        ..ProptestConfig::default()
    };
    proptest!(config, |(ops in proptest::collection::vec(0u8..3, 1..10))| {
        runtime.block_on(async {
            let env = TestEnv::new().await;
            let org = fixtures::org(&env).await.id;
            let a = fixtures::invoice(&env, &org, dec!(1000), "UAH").await;
            let b = fixtures::invoice(&env, &org, dec!(1000), "UAH").await;
            let tx = row(&env, &org, "p1", dec!(40), "").await;
            let ids = [a.id.as_str().to_owned(), b.id.as_str().to_owned()];
            for op in &ops {
                let result = match op {
                    0 | 1 => matching::match_row(&env.store, &org, &tx.id(), &ids[*op as usize], ("u1", true), Utc::now()).await.map(drop),
                    _ => matching::unmatch_row(&env.store, &org, &tx.id(), "u1", Utc::now()).await.map(drop),
                };
                assert!(matches!(result, Ok(()) | Err(MatchError::NotMatched)), "{result:?}");
                check(&env, &org, &tx.id(), &ids).await;
            }
        });
    });
}
