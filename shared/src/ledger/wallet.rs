//! The organisation's prepaid wallet: a balance, the currency its first money set, and a
//! version every change is conditioned on (as an invoice's), so two writers never both move it
//! from the same state.

use crate::ids::OrgId;
use crate::money::{display, Currency};
use crate::store::item::{malformed, n, s, Read};
use crate::store::{Cond, Item, Step, Store, StoreError, Update};
use rust_decimal::Decimal;
use serde_json::Value;

pub const KIND: &str = "wallet";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wallet {
    pub balance: Decimal,
    /// Set by the first money that moves the balance; `None` before.
    pub currency: Option<Currency>,
    /// 0 while no item is stored.
    pub version: u64,
}

impl Default for Wallet {
    fn default() -> Self {
        Self {
            balance: Decimal::ZERO,
            currency: None,
            version: 0,
        }
    }
}

pub fn wallet_pk(org: &OrgId) -> String {
    org.pk("WALLET")
}

impl Wallet {
    /// The stored wallet, or the empty one when there is none yet.
    pub fn from_item(item: Option<&Item>) -> Result<Self, StoreError> {
        let Some(item) = item else {
            return Ok(Self::default());
        };
        let currency = item
            .opt_str("currency")
            .map(|c| Currency::parse(c).map_err(|_| malformed(item, "currency")))
            .transpose()?;
        Ok(Self {
            balance: item.dec_of("balance")?,
            currency,
            version: item.u64_of("version")?,
        })
    }

    /// Whether money in `currency` may move this balance: the wallet's own currency, or any
    /// while it has none.
    pub fn takes(&self, currency: Currency) -> bool {
        self.currency.is_none_or(|c| c == currency)
    }

    /// The wallet after `delta` in `currency` (which it takes), one version on.
    pub fn moved(&self, delta: Decimal, currency: Currency) -> Self {
        Self {
            balance: self.balance + delta,
            currency: Some(currency),
            version: self.version + 1,
        }
    }

    /// The step that stores `next` over this state: created when none was stored, else
    /// conditioned on the version read.
    pub fn step(&self, org: &OrgId, next: &Wallet) -> Step {
        let mut update = Update::new()
            .set("kind", s(KIND))
            .set("org", s(org.as_str()))
            .set("balance", n(next.balance))
            .set("version", n(next.version));
        if let Some(currency) = next.currency {
            update = update.set("currency", s(currency.as_str()));
        }
        let cond = if self.version == 0 {
            Cond::Missing
        } else {
            Cond::Equals("version".into(), n(self.version))
        };
        Step::Update {
            pk: wallet_pk(org),
            update: update.when(cond),
        }
    }

    /// The balance shown: in the currency's minor units, or "0.00" before any money.
    pub fn shown_balance(&self) -> String {
        match self.currency {
            Some(c) => {
                let mut b = self.balance;
                b.rescale(c.exponent().max(b.normalize().scale()));
                b.to_string()
            }
            None => display(self.balance),
        }
    }

    /// The wallet as the API shows it.
    pub fn view(&self) -> WalletView {
        WalletView {
            balance: self.shown_balance(),
            currency: self.currency.map(|c| c.as_str()),
            version: self.version,
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a wallet's view serialises")
    }
}

/// The prepaid wallet (`Wallet`).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = Wallet)]
pub struct WalletView {
    /// Major units; negative when SMS already sent cost more than was topped up.
    #[schema(example = "12.35")]
    pub balance: String,
    /// Set by the first top-up; null before.
    #[schema(example = "USD")]
    pub currency: Option<&'static str>,
    /// Moves with every change of the balance.
    pub version: u64,
}

pub async fn get(store: &Store, org: &OrgId) -> Result<Wallet, StoreError> {
    Wallet::from_item(store.get(&wallet_pk(org)).await?.as_ref())
}
