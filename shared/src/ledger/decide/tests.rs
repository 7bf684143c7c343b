use super::*;
use crate::money::Currency;
use rust_decimal::Decimal;

fn org() -> OrgId {
    OrgId::parse("o0123456789abcdef").unwrap_or_else(|_| OrgId::generate())
}

fn usd(cents: i64) -> Price {
    Price {
        amount: Decimal::new(cents, 2),
        currency: Currency::parse("USD").unwrap(),
    }
}

fn event(kind: SmsType, event_id: &str, price: Option<Price>) -> SmsEvent {
    SmsEvent {
        integration_id: "in_1".into(),
        event_id: event_id.into(),
        kind,
        message_id: "m1".into(),
        from: "+15550001111".into(),
        to: "+15550002222".into(),
        text: Some("hello".into()),
        segments: Some(1),
        price,
        free: false,
        at: Utc::now(),
        fingerprint: "f".into(),
    }
}

fn wallet(cents: i64) -> Wallet {
    Wallet {
        balance: Decimal::new(cents, 2),
        currency: Some(Currency::parse("USD").unwrap()),
        version: 3,
    }
}

/// What is stored after `plan` ran over `seen` (the inbox line as the transaction leaves it).
fn after(seen: &Seen, plan: &Plan) -> Seen {
    let mut next = seen.clone();
    for line in &plan.lines {
        match line.kind {
            LineKind::Debit => next.debit = Some(line.clone()),
            LineKind::Refund => next.refund = Some(line.clone()),
            LineKind::Topup => unreachable!(),
        }
    }
    if let Some(w) = plan.wallet {
        next.wallet = w;
    }
    match &plan.inbox {
        InboxWrite::New(line) => next.inbox = Some((**line).clone()),
        InboxWrite::Move { to } => next.inbox.as_mut().unwrap().status = *to,
        InboxWrite::Booked { .. } => {
            next.inbox.as_mut().unwrap().sent_event = Some("booked".into())
        }
        InboxWrite::Nothing => {}
    }
    next
}

#[test]
fn a_first_sent_books_one_debit_and_one_outgoing_line() {
    let seen = Seen {
        wallet: wallet(1000),
        ..Seen::default()
    };
    let plan = decide(
        &event(SmsType::Sent, "e1", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(plan.lines.len(), 1);
    assert_eq!(plan.lines[0].kind, LineKind::Debit);
    assert!(plan.lines[0].applied);
    assert!(
        matches!(&plan.inbox, InboxWrite::New(l) if l.status == InboxStatus::Sent && l.sent_event.as_deref() == Some("e1"))
    );
    let w = plan.wallet.expect("moved");
    assert_eq!((w.balance, w.version), (Decimal::new(995, 2), 4));
    assert_eq!(plan.answer["duplicate"], false);
    assert_eq!(plan.answer["balance"], "9.95");
    assert_eq!(plan.answer["ledger_id"], plan.lines[0].ledger_id.as_str());
    assert!(plan.flags.is_empty() && plan.writes && !plan.message);
}

#[test]
fn the_same_message_under_a_new_event_id_writes_nothing_and_names_the_first_lines() {
    let seen = Seen {
        wallet: wallet(1000),
        ..Seen::default()
    };
    let first = decide(
        &event(SmsType::Sent, "e1", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    );
    let seen = after(&seen, &first);
    let again = decide(
        &event(SmsType::Sent, "e2", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    );
    assert!(!again.writes && again.lines.is_empty() && again.wallet.is_none());
    assert_eq!(again.answer["duplicate"], true);
    assert_eq!(again.answer["ledger_id"], first.answer["ledger_id"]);
    assert_eq!(again.answer["inbox_id"], first.answer["inbox_id"]);
    assert_eq!(again.answer["ack"], "e2");
    // Another price for the same message: the first kept, a person asked.
    let other = decide(
        &event(SmsType::Sent, "e3", Some(usd(50))),
        &org(),
        &seen,
        Utc::now(),
    );
    assert!(other.lines.is_empty() && other.wallet.is_none() && other.writes);
    assert_eq!(other.flags.len(), 1);
    assert_eq!(other.flags[0].reason, "payload_mismatch");
    assert_eq!(other.flags[0].detail["stored"]["price"], "0.05");
    assert_eq!(other.flags[0].detail["received"]["price"], "0.50");
    assert_eq!(other.answer["review"], json!(["payload_mismatch"]));
    // Priced 0 now, where the first was charged: the same matter.
    let free = SmsEvent {
        free: true,
        ..event(SmsType::Sent, "e4", None)
    };
    let free = decide(&free, &org(), &seen, Utc::now());
    assert_eq!(free.flags[0].reason, "payload_mismatch");
    assert_eq!(free.flags[0].detail["received"]["price"], "0");
}

#[test]
fn a_failure_after_the_debit_refunds_once_and_a_later_delivery_changes_nothing() {
    let seen = Seen {
        wallet: wallet(1000),
        ..Seen::default()
    };
    let sent = decide(
        &event(SmsType::Sent, "e1", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    );
    let seen = after(&seen, &sent);
    let failed = decide(
        &event(SmsType::Failed, "e2", None),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(failed.lines.len(), 1);
    assert_eq!(failed.lines[0].kind, LineKind::Refund);
    assert_eq!(
        failed.inbox,
        InboxWrite::Move {
            to: InboxStatus::Failed
        }
    );
    assert_eq!(failed.wallet.unwrap().balance, Decimal::new(1000, 2));
    let seen = after(&seen, &failed);
    let twice = decide(
        &event(SmsType::Failed, "e3", None),
        &org(),
        &seen,
        Utc::now(),
    );
    assert!(!twice.writes);
    assert_eq!(twice.answer["ledger_id"], failed.answer["ledger_id"]);
    let delivered = decide(
        &event(SmsType::Delivered, "e4", None),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(delivered.inbox, InboxWrite::Nothing);
    assert!(delivered.lines.is_empty() && delivered.wallet.is_none());
    assert_eq!(delivered.flags[0].reason, "status_conflict");
    assert_eq!(delivered.answer["status"], "failed");
}

#[test]
fn a_status_before_its_sent_makes_the_line_and_the_sent_leaves_the_status() {
    let seen = Seen {
        wallet: wallet(1000),
        ..Seen::default()
    };
    let delivered = decide(
        &event(SmsType::Delivered, "e1", None),
        &org(),
        &seen,
        Utc::now(),
    );
    assert!(
        matches!(&delivered.inbox, InboxWrite::New(l) if l.status == InboxStatus::Delivered && l.sent_event.is_none())
    );
    assert!(delivered.lines.is_empty());
    let seen = after(&seen, &delivered);
    let sent = decide(
        &event(SmsType::Sent, "e2", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(
        sent.inbox,
        InboxWrite::Booked {
            status: InboxStatus::Delivered
        }
    );
    assert_eq!(sent.lines.len(), 1);
    assert_eq!(sent.answer["status"], "delivered");
}

/// A 0.05 message's failure, then its `sent`, on a wallet of `cents`: the `sent`'s plan.
fn sent_after_its_failure(cents: i64) -> Plan {
    let seen = Seen {
        wallet: wallet(cents),
        ..Seen::default()
    };
    let failed = decide(
        &event(SmsType::Failed, "e1", None),
        &org(),
        &seen,
        Utc::now(),
    );
    let seen = after(&seen, &failed);
    decide(
        &event(SmsType::Sent, "e2", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    )
}

#[test]
fn a_sent_after_its_failure_costs_nothing() {
    let sent = sent_after_its_failure(1000);
    let kinds: Vec<LineKind> = sent.lines.iter().map(|l| l.kind).collect();
    assert_eq!(kinds, [LineKind::Debit, LineKind::Refund]);
    assert_eq!(sent.wallet.unwrap().balance, Decimal::new(1000, 2));
    assert_eq!(sent.wallet.unwrap().version, 4, "one version per event");
}

#[test]
fn a_sent_after_its_failure_on_a_low_wallet_is_no_ones_matter() {
    // 0.02 in the wallet: the debit and its refund cost nothing together.
    let sent = sent_after_its_failure(2);
    assert_eq!(sent.lines.len(), 2);
    assert_eq!(sent.wallet.unwrap().balance, Decimal::new(2, 2));
    assert!(sent.flags.is_empty(), "{:?}", sent.answer["review"]);
    assert_eq!(sent.answer.get("review"), None);
}

#[test]
fn a_debit_below_zero_is_booked_and_flagged_and_another_currency_is_left_to_a_person() {
    let seen = Seen {
        wallet: wallet(3),
        ..Seen::default()
    };
    let plan = decide(
        &event(SmsType::Sent, "e1", Some(usd(5))),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(plan.wallet.unwrap().balance, Decimal::new(-2, 2));
    assert_eq!(plan.flags[0].reason, "negative_balance");
    assert_eq!(plan.answer["review"], json!(["negative_balance"]));

    let eur = Price {
        amount: Decimal::new(5, 2),
        currency: Currency::parse("EUR").unwrap(),
    };
    let plan = decide(
        &event(SmsType::Sent, "e1", Some(eur)),
        &org(),
        &seen,
        Utc::now(),
    );
    assert!(!plan.lines[0].applied);
    assert!(
        plan.wallet.is_none(),
        "a line in another currency moves nothing"
    );
    assert_eq!(plan.flags[0].reason, "currency_mismatch");
}

#[test]
fn an_incoming_sms_is_one_inbound_line_and_a_message_and_is_charged_only_when_priced() {
    let seen = Seen::default();
    let free = decide(
        &event(SmsType::Received, "e1", None),
        &org(),
        &seen,
        Utc::now(),
    );
    assert!(free.lines.is_empty() && free.flags.is_empty() && free.message);
    assert!(matches!(&free.inbox, InboxWrite::New(l) if l.status == InboxStatus::Received));
    assert_eq!(free.answer["ledger_id"], Value::Null);
    let priced = decide(
        &event(SmsType::Received, "e1", Some(usd(1))),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(priced.lines.len(), 1);
    let w = priced.wallet.unwrap();
    assert_eq!(
        (w.balance, w.currency.map(|c| c.as_str())),
        (Decimal::new(-1, 2), Some("USD"))
    );
    let again = decide(
        &event(SmsType::Received, "e2", Some(usd(1))),
        &org(),
        &after(&seen, &priced),
        Utc::now(),
    );
    assert!(!again.writes && !again.message);
}

#[test]
fn an_unpriced_sent_is_kept_and_left_to_a_person() {
    let plan = decide(
        &event(SmsType::Sent, "e1", None),
        &org(),
        &Seen::default(),
        Utc::now(),
    );
    assert!(plan.lines.is_empty() && plan.wallet.is_none());
    assert_eq!(plan.flags[0].reason, "missing_price");
    assert!(matches!(plan.inbox, InboxWrite::New(_)));
}

#[test]
fn a_sent_the_carrier_priced_zero_is_free_and_no_ones_matter() {
    let free = SmsEvent {
        free: true,
        ..event(SmsType::Sent, "e1", None)
    };
    let plan = decide(&free, &org(), &Seen::default(), Utc::now());
    assert!(plan.lines.is_empty() && plan.wallet.is_none());
    assert!(plan.flags.is_empty(), "no missing_price for a free message");
    assert!(matches!(plan.inbox, InboxWrite::New(_)));
}

#[test]
fn a_sent_in_another_currency_after_its_failure_files_one_review_item() {
    let seen = Seen {
        wallet: wallet(1000),
        ..Seen::default()
    };
    let failed = decide(
        &event(SmsType::Failed, "e1", None),
        &org(),
        &seen,
        Utc::now(),
    );
    let seen = after(&seen, &failed);
    let eur = Price {
        amount: Decimal::new(5, 2),
        currency: Currency::parse("EUR").unwrap(),
    };
    let sent = decide(
        &event(SmsType::Sent, "e2", Some(eur)),
        &org(),
        &seen,
        Utc::now(),
    );
    assert_eq!(sent.lines.len(), 2, "debit and refund, neither applied");
    assert!(sent.lines.iter().all(|l| !l.applied) && sent.wallet.is_none());
    let reasons: Vec<&str> = sent.flags.iter().map(|f| f.reason.name()).collect();
    assert_eq!(
        reasons,
        ["currency_mismatch"],
        "one item per reason: one transaction step"
    );
}
