use super::*;
use proptest::prelude::*;

fn delivery(posted: Posted) -> (Vec<Incoming>, Vec<StatusEvent>, bool) {
    match posted {
        Posted::Delivery {
            messages,
            statuses,
            batch,
            ..
        } => (messages, statuses, batch),
        Posted::Ignored(kind) => panic!("ignored: {kind}"),
    }
}

#[test]
fn a_telegram_photo_takes_the_largest_size_and_the_caption() {
    let body = br#"{"update_id":10,"message":{"message_id":7,"date":1764763200,
        "from":{"id":42,"first_name":"Olena","last_name":"K","username":"olenak"},
        "chat":{"id":42,"type":"private"},"caption":"the invoice",
        "photo":[{"file_id":"small","width":90,"height":60,"file_size":900},
                 {"file_id":"large","width":1280,"height":853,"file_size":90000},
                 {"file_id":"mid","width":320,"height":213,"file_size":9000}]}}"#;
    let (messages, statuses, batch) = delivery(telegram(body).unwrap());
    assert!(statuses.is_empty() && !batch);
    let m = &messages[0];
    assert_eq!(m.provider_id, "42:7");
    assert_eq!(m.chat_id, "42");
    assert_eq!(
        (m.from.identity.as_str(), m.from.name.as_str()),
        ("42", "Olena K")
    );
    assert_eq!(m.text, "the invoice");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(
        m.attachments[0].media,
        MediaRef::TelegramFile("large".into())
    );
    assert_eq!(m.sent_at.map(|t| t.timestamp()), Some(1764763200));
}

#[test]
fn a_telegram_sender_without_a_name_is_named_by_username() {
    let body = br#"{"update_id":11,"message":{"message_id":8,"from":{"id":5,"username":"anon"},
        "chat":{"id":-100,"type":"group"},"text":"hello"}}"#;
    let (messages, ..) = delivery(telegram(body).unwrap());
    assert_eq!(messages[0].from.name, "anon");
    assert_eq!(messages[0].provider_id, "-100:8");
}

#[test]
fn other_telegram_updates_are_ignored() {
    for (body, kind) in [
        (
            r#"{"update_id":1,"edited_message":{"message_id":1}}"#,
            "edited_message",
        ),
        (r#"{"update_id":2,"my_chat_member":{}}"#, "my_chat_member"),
        (
            r#"{"update_id":3,"message_reaction":{}}"#,
            "message_reaction",
        ),
        (
            r#"{"update_id":4,"message":{"message_id":1,"chat":{"id":1},"from":{"id":1},"new_chat_members":[{"id":2}]}}"#,
            "message_without_text",
        ),
    ] {
        assert_eq!(
            telegram(body.as_bytes()),
            Ok(Posted::Ignored(kind.into())),
            "{body}"
        );
    }
    assert!(telegram(b"{}").is_ok());
    assert!(telegram(br#"{"message":{"message_id":1}}"#).is_err());
}

#[test]
fn a_whatsapp_delivery_carries_messages_and_statuses() {
    let body = br#"{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{
        "messaging_product":"whatsapp","metadata":{"display_phone_number":"15550001111","phone_number_id":"PN1"},
        "contacts":[{"profile":{"name":"Taras"},"wa_id":"380501234567"}],
        "messages":[
          {"from":"380501234567","id":"wamid.A","timestamp":"1764763200","type":"text","text":{"body":"hi"}},
          {"from":"380501234567","id":"wamid.B","timestamp":"1764763201","type":"image","image":{"id":"MEDIA1","mime_type":"image/jpeg","caption":"look"}},
          {"from":"380501234567","id":"wamid.C","timestamp":"1764763202","type":"reaction","reaction":{"emoji":"+"}}],
        "statuses":[{"id":"wamid.OUT","status":"read","timestamp":"1764763300","recipient_id":"380501234567"},
                    {"id":"wamid.OUT","status":"deleted","timestamp":"1764763301"}]}}]}]}"#;
    let (messages, statuses, batch) = delivery(whatsapp(body).unwrap());
    assert!(batch);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].from.name, "Taras");
    assert_eq!(messages[0].from.phone.as_deref(), Some("+380501234567"));
    assert_eq!(messages[0].chat_id, "380501234567");
    assert_eq!(messages[0].reply_via.as_deref(), Some("PN1"));
    assert_eq!(messages[1].text, "look");
    assert_eq!(
        messages[1].attachments[0].media,
        MediaRef::WhatsappMedia("MEDIA1".into())
    );
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].status, OutStatus::Read);
    assert_eq!(
        whatsapp(br#"{"entry":[{"changes":[{"value":{"metadata":{}}}]}]}"#),
        Ok(Posted::Ignored("no_messages_or_statuses".into()))
    );
}

#[test]
fn what_a_customer_sends_without_typing_is_a_message_too() {
    let telegram_message = |inner: &str| {
        let body = format!(
            r#"{{"update_id":5,"message":{{"message_id":3,"chat":{{"id":9}},"from":{{"id":9}},{inner}}}}}"#
        );
        delivery(telegram(body.as_bytes()).unwrap()).0.remove(0)
    };
    let sticker = telegram_message(r#""sticker":{"file_id":"STK","file_size":300}"#);
    assert_eq!(
        sticker.attachments[0].media,
        MediaRef::TelegramFile("STK".into())
    );
    let place = telegram_message(r#""location":{"latitude":50.45,"longitude":30.52}"#);
    assert_eq!(place.text, "Location: 50.45, 30.52");
    let venue = telegram_message(
        r#""location":{"latitude":50.45,"longitude":30.52},"venue":{"location":{"latitude":50.45,"longitude":30.52},"title":"Office","address":"Khreshchatyk 1"}"#,
    );
    assert_eq!(
        venue.text,
        "Location: Office, Khreshchatyk 1 (50.45, 30.52)"
    );
    let card = telegram_message(
        r#""contact":{"phone_number":"+380441234567","first_name":"Olena","last_name":"K"}"#,
    );
    assert_eq!(card.text, "Contact: Olena K +380441234567");

    let whatsapp_messages = |m: &str| {
        let body = format!(
            r#"{{"entry":[{{"changes":[{{"value":{{"metadata":{{"phone_number_id":"PN1"}},"messages":[{m}]}}}}]}}]}}"#
        );
        match whatsapp(body.as_bytes()).unwrap() {
            Posted::Delivery {
                messages, unread, ..
            } => (messages, unread),
            ignored => panic!("{ignored:?}"),
        }
    };
    let head = r#""from":"380501234567","id":"wamid.X","timestamp":"1764763200""#;
    let read = |m: &str| {
        whatsapp_messages(&format!("{{{head},{m}}}"))
            .0
            .remove(0)
            .text
    };
    assert_eq!(
        read(r#""type":"button","button":{"text":"Yes, call me","payload":"p"}"#),
        "Yes, call me"
    );
    assert_eq!(
        read(
            r#""type":"interactive","interactive":{"type":"list_reply","list_reply":{"id":"2","title":"Tomorrow"}}"#
        ),
        "Tomorrow"
    );
    assert_eq!(
        read(
            r#""type":"location","location":{"latitude":50.45,"longitude":30.52,"name":"Office"}"#
        ),
        "Location: Office (50.45, 30.52)"
    );
    assert_eq!(
        read(
            r#""type":"contacts","contacts":[{"name":{"formatted_name":"Olena K"},"phones":[{"phone":"+380 44 123 45 67"}]}]"#
        ),
        "Contact: Olena K +380 44 123 45 67"
    );
    // A type this CRM does not read is set aside for a person, never dropped.
    let (messages, unread) = whatsapp_messages(&format!(
        r#"{{{head},"type":"unsupported","errors":[{{"code":131051}}]}}"#
    ));
    assert!(messages.is_empty());
    assert_eq!(unread.len(), 1);
    assert!(unread[0].1.contains("unsupported"), "{}", unread[0].1);
}

#[test]
fn the_documented_generic_message_is_what_the_parser_reads() {
    let documented = GenericMessage {
        kind: "message.received".into(),
        data: GenericMessageData {
            message_id: "m7".into(),
            chat_id: "c7".into(),
            from: GenericSender {
                id: "u7".into(),
                name: "Olena".into(),
                phone: Some("+380441234567".into()),
            },
            text: "hi".into(),
            attachments: Some(vec![GenericAttachment {
                url: "https://files.example.com/b.pdf".into(),
                name: "b.pdf".into(),
                content_type: Some("application/pdf".into()),
            }]),
            sent_at: Some("2026-12-03T10:00:00Z".into()),
        },
    };
    let body = serde_json::to_vec(&documented).unwrap();
    let (messages, ..) = delivery(standard(&body).unwrap());
    let m = &messages[0];
    let d = &documented.data;
    assert_eq!((m.provider_id.as_str(), m.chat_id.as_str()), ("m7", "c7"));
    assert_eq!(
        (m.from.identity.as_str(), m.from.name.as_str()),
        ("u7", "Olena")
    );
    assert_eq!(m.from.phone, d.from.phone);
    assert_eq!(m.text, d.text);
    assert_eq!(m.attachments[0].name, "b.pdf");
    assert_eq!(
        m.attachments[0].content_type.as_deref(),
        Some("application/pdf")
    );
    assert_eq!(
        m.sent_at.map(crate::time::format).as_deref(),
        Some("2026-12-03T10:00:00.000Z")
    );
}

#[test]
fn a_generic_sender_posts_message_received() {
    let body = br#"{"type":"message.received","data":{"message_id":"m1","chat_id":"c1",
        "from":{"id":"u1","name":"Iryna","phone":"+380441234567"},"text":"hello",
        "attachments":[{"url":"https://files.example.com/a.pdf","name":"a.pdf","content_type":"application/pdf"}],
        "sent_at":"2026-12-03T10:00:00Z"}}"#;
    let (messages, ..) = delivery(standard(body).unwrap());
    let m = &messages[0];
    assert_eq!((m.provider_id.as_str(), m.chat_id.as_str()), ("m1", "c1"));
    assert_eq!(m.attachments[0].name, "a.pdf");
    assert!(m.sent_at.is_some());
    assert_eq!(
        standard(br#"{"type":"message.read"}"#),
        Ok(Posted::Ignored("message.read".into()))
    );
    assert!(standard(br#"{"type":"message.received","data":{"message_id":"m1"}}"#).is_err());
    assert!(standard(br#"{"type":"message.received","data":{"message_id":"m1","chat_id":"c","from":{"id":"u","name":"n"},"sent_at":5}}"#).is_err());
}

#[test]
fn fields_beyond_their_limits_are_refused_by_check() {
    let body = br#"{"type":"message.received","data":{"message_id":"m 1","chat_id":"c1","from":{"id":"u1","name":"n"},"text":"x"}}"#;
    let (messages, ..) = delivery(standard(body).unwrap());
    assert!(messages[0].check().unwrap_err().contains("message_id"));
    let long = format!(
        r#"{{"type":"message.received","data":{{"message_id":"m1","chat_id":"c1","from":{{"id":"u1","name":"n"}},"text":"{}"}}}}"#,
        "x".repeat(crate::messages::TEXT_MAX + 1)
    );
    let (messages, ..) = delivery(standard(long.as_bytes()).unwrap());
    assert!(messages[0].check().unwrap_err().contains("text"));
    let typed = |content_type: &str| {
        let body = format!(
            r#"{{"type":"message.received","data":{{"message_id":"m1","chat_id":"c1","from":{{"id":"u1","name":"n"}},"text":"x","attachments":[{{"url":"https://files.example/a.pdf","name":"a.pdf","content_type":"{content_type}"}}]}}}}"#
        );
        delivery(standard(body.as_bytes()).unwrap())
            .0
            .remove(0)
            .check()
    };
    assert!(typed("application/pdf").is_ok());
    let long = typed(&"a".repeat(crate::messages::CONTENT_TYPE_MAX + 1));
    assert!(long.unwrap_err().contains("content_type"));
    assert!(typed("text/html\\u0007")
        .unwrap_err()
        .contains("content_type"));
}

#[test]
fn control_characters_in_what_a_customer_wrote_are_shown_not_refused() {
    let body = "{\"type\":\"message.received\",\"data\":{\"message_id\":\"m1\",\"chat_id\":\"c1\",\"from\":{\"id\":\"u1\",\"name\":\"N\\u0007\"},\"text\":\"a\\u0000b\\nc\\uffff\"}}";
    let (messages, ..) = delivery(standard(body.as_bytes()).unwrap());
    let m = messages.into_iter().next().unwrap().printable();
    assert_eq!(m.text, "a\u{FFFD}b\nc\u{FFFD}");
    assert_eq!(m.from.name, "N\u{FFFD}");
    assert!(m.check().is_ok());
}

proptest! {
    #[test]
    fn parsers_never_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = telegram(&body);
        let _ = whatsapp(&body);
        let _ = standard(&body);
    }

    #[test]
    fn parsers_never_panic_on_json_shapes(
        id in "[a-z0-9.]{0,8}",
        n in any::<i64>(),
        text in "\\PC{0,20}",
    ) {
        let shapes = [
            format!(r#"{{"message":{{"message_id":{n},"chat":{{"id":"{id}"}},"from":{{"id":{n}}},"text":{text:?},"photo":[{{"file_id":"{id}","width":{n},"height":{n}}}]}}}}"#),
            format!(r#"{{"entry":[{{"changes":[{{"value":{{"messages":[{{"from":"{id}","id":"{id}","type":"image","image":{{"id":{n}}}}}],"statuses":[{{"id":"{id}","status":{text:?},"timestamp":{n}}}]}}}}]}}]}}"#),
            format!(r#"{{"type":"message.received","data":{{"message_id":{n},"chat_id":"{id}","from":{{"id":"{id}","name":{text:?}}},"attachments":[{{"url":{text:?},"name":"{id}"}}]}}}}"#),
        ];
        for s in &shapes {
            let _ = telegram(s.as_bytes());
            let _ = whatsapp(s.as_bytes());
            let _ = standard(s.as_bytes());
        }
    }
}
