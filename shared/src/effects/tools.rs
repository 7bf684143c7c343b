//! The product's write actions as tools a model is given: one name, description and JSON
//! schema each, for the assistant's route (`GET /api/assistant/tools`) and the AI step alike.

use crate::fields::{TEXT_MAX, TITLE_MAX};
use serde_json::{json, Value};

/// The longest note a resolution takes.
pub const NOTE_MAX: usize = 2000;

/// One tool: its name, what it does, and its input's JSON schema.
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: fn() -> Value,
}

impl Tool {
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "description": self.description, "input_schema": (self.input_schema)()})
    }
}

pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

pub const TOOLS: &[Tool] = &[
    Tool {
        name: "reply",
        description: "Send a text into a Telegram or WhatsApp conversation, once. The send goes \
                      through the channel's API from the automation worker; the result says \
                      `sending`, and the conversation shows the message once it is sent.",
        input_schema: || {
            json!({"type": "object", "additionalProperties": false,
                "required": ["conversation_id", "text"],
                "properties": {
                    "conversation_id": {"type": "string", "description": "cv_... from GET /api/conversations"},
                    "text": {"type": "string", "minLength": 1, "maxLength": TEXT_MAX}}})
        },
    },
    Tool {
        name: "create_task",
        description: "Create a task for the team, once.",
        input_schema: || {
            json!({"type": "object", "additionalProperties": false, "required": ["title"],
                "properties": {"title": {"type": "string", "minLength": 1, "maxLength": TITLE_MAX}}})
        },
    },
    Tool {
        name: "register_payment",
        description: "Record a payment on an invoice (source `assistant`), through the same \
                      payment function as every other payment: the open amount when no amount \
                      is given; never more than is open.",
        input_schema: || {
            json!({"type": "object", "additionalProperties": false, "required": ["invoice_id"],
                "properties": {
                    "invoice_id": {"type": "string", "description": "inv_..."},
                    "amount": {"type": "string", "description": "major units, e.g. \"40.00\"; default: the open amount"},
                    "actor": {"type": "string", "maxLength": 128, "description": "for whom the assistant acts"}}})
        },
    },
    Tool {
        name: "create_credit_note",
        description: "Issue a credit note (CN-00001, ...) on an issued invoice: the unpaid part \
                      is credited first; what falls on the paid part is a refund for a person.",
        input_schema: || {
            json!({"type": "object", "additionalProperties": false,
                "required": ["invoice_id", "reason"],
                "properties": {
                    "invoice_id": {"type": "string"},
                    "amount": {"type": "string", "description": "major units; default: the lines' sum, else all that is left to credit"},
                    "reason": {"type": "string", "minLength": 1, "maxLength": 500},
                    "lines": {"type": "array", "maxItems": 100, "items": {"type": "object",
                        "required": ["description", "amount"], "additionalProperties": false,
                        "properties": {"description": {"type": "string"}, "amount": {"type": "string"}}}}}})
        },
    },
    Tool {
        name: "resolve_review",
        description: "Resolve an open review item (GET /api/review lists them) with a note.",
        input_schema: || {
            json!({"type": "object", "additionalProperties": false,
                "required": ["reason", "key", "note"],
                "properties": {
                    "reason": {"type": "string", "description": "the item's reason, e.g. overpayment"},
                    "key": {"type": "string", "description": "the item's key"},
                    "note": {"type": "string", "minLength": 1, "maxLength": NOTE_MAX}}})
        },
    },
];
