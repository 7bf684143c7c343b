//! What the template promises about the worker queues: every message kept 14 days (the SQS
//! default, 4, loses a paused worker's messages silently), and an alarm on the oldest message's
//! age for each. The test reads `infra/template.yaml` itself.

const TEMPLATE: &str = include_str!("../../infra/template.yaml");
const QUEUES: [&str; 5] = [
    "NotificationsQueue",
    "ActivityQueue",
    "AutomationQueue",
    "MatchingQueue",
    "ImportQueue",
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
