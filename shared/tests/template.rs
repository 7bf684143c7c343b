//! What the template promises about the worker queues: every message kept 14 days (the SQS
//! default, 4, loses a paused worker's messages silently), and an alarm on the oldest message's
//! age for each. The test reads `infra/template.yaml` itself.

const TEMPLATE: &str = include_str!("../../infra/template.yaml");
const QUEUES: [&str; 5] = [
    "NotificationsQueue",
    "AutomationQueue",
    "MatchingQueue",
    "ImportQueue",
    "FileQueue",
];

/// The lines of the resource `name`, up to the next resource.
fn resource(name: &str) -> String {
    let head = format!("  {name}:");
    let lines: Vec<&str> = TEMPLATE.lines().collect();
    let start = lines.iter().position(|l| *l == head).expect(name);
    let top = |l: &&str| l.starts_with("  ") && !l.starts_with("   ") && l.ends_with(':');
    let end = lines[start + 1..]
        .iter()
        .position(top)
        .map_or(lines.len(), |i| start + 1 + i);
    lines[start..end].join("\n")
}

#[test]
fn every_worker_queue_keeps_its_messages_14_days_and_alarms_on_their_age() {
    for queue in QUEUES {
        assert!(
            resource(queue).contains("MessageRetentionPeriod: 1209600"),
            "{queue} keeps its messages 14 days"
        );
        let alarm = resource(&format!("{queue}AgeAlarm"));
        assert!(
            alarm.contains("MetricName: ApproximateAgeOfOldestMessage"),
            "{alarm}"
        );
        assert!(
            alarm.contains(&format!("!GetAtt {queue}.QueueName")),
            "{alarm}"
        );
    }
}

#[test]
fn a_schedule_emits_the_figures_every_5_minutes_and_an_alarm_reads_the_oldest_waiting_event() {
    let ops = resource("OpsFunction");
    let schedule = ops
        .split("Gauges:")
        .nth(1)
        .expect("the ops function's schedule");
    assert!(schedule.contains("Type: Schedule"), "{ops}");
    assert!(schedule.contains("rate(5 minutes)"), "{ops}");
    let alarm = resource("OldestWaitingAlarm");
    for line in [
        "MetricName: oldest_waiting_seconds",
        "Value: ops",
        "Threshold: 900",
        "ComparisonOperator: GreaterThanThreshold",
    ] {
        assert!(alarm.contains(line), "{line}: {alarm}");
    }
}

#[test]
fn a_worker_may_delete_waiting_marks_only() {
    for worker in ["NotifyWorkerFunction", "AutomationWorkerFunction"] {
        let policy = resource(worker);
        let delete = policy
            .split("Action: [dynamodb:DeleteItem]")
            .nth(1)
            .unwrap_or_else(|| panic!("{worker} deletes waiting marks"));
        let keys = delete.split("LeadingKeys:").nth(1).expect("limited by key");
        assert!(
            keys.trim_start().starts_with(r#"["ORG#*#WAITING"]"#),
            "{worker}: {keys}"
        );
    }
}

#[test]
fn the_ops_function_hands_a_recovery_to_the_import_function_and_opens_no_secret() {
    let ops = resource("OpsFunction");
    assert!(
        ops.contains("RECOVERY_FUNCTION: !Ref BankImportFunction"),
        "{ops}"
    );
    let invoke = ops
        .split("Action: [lambda:InvokeFunction]")
        .nth(1)
        .expect("may invoke");
    assert!(
        invoke
            .trim_start()
            .starts_with("Resource: !GetAtt BankImportFunction.Arn"),
        "{invoke}"
    );
    assert!(!ops.contains("kms:Decrypt]"), "no kms:Decrypt");
}

#[test]
fn an_alarm_email_is_subscribed_and_every_alarm_tells_the_topic() {
    assert!(resource("AlarmEmail").contains("Default: \"\""));
    let subscription = resource("AlarmEmailSubscription");
    for line in [
        "Condition: HasAlarmEmail",
        "Protocol: email",
        "Endpoint: !Ref AlarmEmail",
        "TopicArn: !If [HasAlarmTopic, !Ref AlarmTopicArn, !Ref AlarmTopic]",
    ] {
        assert!(subscription.contains(line), "{line}: {subscription}");
    }
    assert!(resource("AlarmTopic").contains("Condition: MakesAlarmTopic"));
    let told = "[!If [HasAlarmTopic, !Ref AlarmTopicArn, !Ref AlarmTopic]]";
    let alarms = TEMPLATE.matches("Type: AWS::CloudWatch::Alarm").count();
    assert!(alarms > 10);
    assert_eq!(
        TEMPLATE
            .matches(&format!("AlarmActions: !If [NotifiesSomeone, {told}"))
            .count(),
        alarms
    );
    assert_eq!(
        TEMPLATE
            .matches(&format!("OKActions: !If [NotifiesSomeone, {told}"))
            .count(),
        alarms
    );
}

#[test]
fn functions_log_json_and_the_gateway_writes_an_access_log_with_the_request_ids() {
    let globals = TEMPLATE
        .split("\nGlobals:")
        .nth(1)
        .and_then(|g| g.split("\nResources:").next())
        .expect("Globals");
    assert!(globals.contains("LoggingConfig:"), "{globals}");
    assert!(globals.contains("LogFormat: JSON"), "{globals}");
    let stage = resource("HttpApiStage");
    assert!(
        stage.contains("DestinationArn: !GetAtt HttpApiAccessLogs.Arn"),
        "{stage}"
    );
    for field in [
        "$context.requestId",
        "$context.integration.requestId",
        "$context.status",
    ] {
        assert!(stage.contains(field), "{field}: {stage}");
    }
    assert!(resource("HttpApiAccessLogs").contains("RetentionInDays: !Ref LogRetentionDays"));
}

#[test]
fn a_recovery_runs_in_the_import_function_within_its_concurrency_cap() {
    // Recoveries are handed to the import function (above), which takes at most
    // `ImportConcurrency` executions at once: statement turns, file steps and recoveries
    // together, so a burst of recoveries cannot take the account's concurrency.
    let import = resource("BankImportFunction");
    assert!(
        import.contains(
            "ReservedConcurrentExecutions: !If [ReservesConcurrency, !Ref ImportConcurrency, !Ref AWS::NoValue]"
        ),
        "{import}"
    );
    let cap = resource("ImportConcurrency");
    assert!(cap.contains("MinValue: 1"), "{cap}");
}

/// Every grant that opens or seals a secret (`kms:Decrypt`, `kms:GenerateDataKey`) is held to
/// the encryption context every sealing names, an organisation's record (`record: ORG#…`): no
/// function's role opens what was sealed for anything else. (Which organisation's record a
/// function opens its code decides from the item it read: one function serves every
/// organisation.) The key's own policy (`kms:*` for the account) is not a function's grant.
#[test]
fn every_grant_that_opens_or_seals_a_secret_is_held_to_an_organisations_record() {
    let lines: Vec<&str> = TEMPLATE.lines().collect();
    let grants: Vec<usize> = (lines.iter().enumerate())
        .filter(|(_, l)| {
            l.contains("Action: [kms:Decrypt]") || l.contains("Action: [kms:GenerateDataKey]")
        })
        .map(|(i, _)| i)
        .collect();
    assert!(
        grants.len() >= 8,
        "every function that opens a secret: {grants:?}"
    );
    for at in grants {
        let statement = lines[at..(at + 6).min(lines.len())].join("\n");
        assert!(
            statement.contains("kms:EncryptionContext:record: \"ORG#*\""),
            "line {}: {statement}",
            at + 1
        );
    }
}
