//! What a review item is about and why a person must look: two closed sets, stored and shown
//! by the names below (the API's and the operator's vocabulary).

use serde::{Deserialize, Serialize};

macro_rules! named {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($variant,)*
        }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The stored and shown name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }

            pub fn parse(raw: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|k| k.name() == raw)
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.name() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named! {
    /// What a review item is about: the part of the product that filed it.
    Kind {
        Webhook => "webhook",
        Payment => "payment",
        Call => "call",
        Message => "message",
        Sms => "sms",
        Wallet => "wallet",
        Bank => "bank",
        Fanout => "fanout",
        Notify => "notify",
        Activity => "activity",
        Automation => "automation",
        Matching => "matching",
        Lead => "lead",
    }
}

named! {
    /// Why a machine could not decide.
    Reason {
        PayloadMismatch => "payload_mismatch",
        IdempotencyKeyReused => "idempotency_key_reused",
        UnparseablePayload => "unparseable_payload",
        UnparseableMessage => "unparseable_message",
        Overpayment => "overpayment",
        InvoiceClosed => "invoice_closed",
        InvoiceVoid => "invoice_void",
        RefundDue => "refund_due",
        CurrencyMismatch => "currency_mismatch",
        UnknownInvoice => "unknown_invoice",
        ReversalWithoutPayment => "reversal_without_payment",
        ReversedBeforePayment => "reversed_before_payment",
        UnconfirmedPayment => "unconfirmed_payment",
        UnmatchedBankRow => "unmatched_bank_row",
        UnreadableBankRow => "unreadable_bank_row",
        UnconfirmedBankRow => "unconfirmed_bank_row",
        AttachmentTooLarge => "attachment_too_large",
        AttachmentFailed => "attachment_failed",
        StatusConflict => "status_conflict",
        MissingPrice => "missing_price",
        NegativeBalance => "negative_balance",
        DeadLetter => "dead_letter",
        StoreRefused => "store_refused",
        WrongQueue => "wrong_queue",
        MatchRefused => "match_refused",
        NoBankRow => "no_bank_row",
        NoRecipients => "no_recipients",
        ReplyUnsupported => "reply_unsupported",
        ReplyRejected => "reply_rejected",
        UnknownIntegration => "unknown_integration",
        OutboundRejected => "outbound_rejected",
        ModelRefused => "model_refused",
        PaymentProposed => "payment_proposed",
        PossibleSameMoney => "possible_same_money",
        PossibleSameContact => "possible_same_contact",
        AiBudget => "ai_budget",
        NeedsCheck => "needs_check",
        UnpublishableConsequence => "unpublishable_consequence",
        MalformedEvent => "malformed_event",
        MalformedMessage => "malformed_message",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_unique_and_parses_back_to_its_variant() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.name()), Some(*kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
        for reason in Reason::ALL {
            assert_eq!(Reason::parse(reason.name()), Some(*reason));
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.name());
        }
    }
}
