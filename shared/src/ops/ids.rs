//! The ids the operator's lists hand out: an item's own key, base64url, so an action finds the
//! item in one read. An id is only taken for an item of the kind the route acts on and, for an
//! organisation's key, of that organisation.

use crate::ids::OrgId;
use base64::{engine::general_purpose::URL_SAFE_NO_PAD as B64URL, Engine};

/// The id of the item under `pk`.
pub fn encode(pk: &str) -> String {
    B64URL.encode(pk)
}

/// The key an id stands for, when it is an item of `org` (any organisation's for the admin,
/// `None`) whose key's own part starts with `prefix` (`REVIEW#`, `RUN#`, ...).
pub fn decode(id: &str, org: Option<&OrgId>, prefixes: &[&str]) -> Option<(OrgId, String)> {
    if id.len() > 2048 {
        return None;
    }
    let pk = String::from_utf8(B64URL.decode(id).ok()?).ok()?;
    let rest = pk.strip_prefix("ORG#")?;
    let (owner, own) = rest.split_once('#')?;
    let owner = OrgId::parse(owner).ok()?;
    if org.is_some_and(|o| *o != owner) || !prefixes.iter().any(|p| own.starts_with(p)) {
        return None;
    }
    Some((owner, pk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_taken_only_for_its_kind_and_its_organisation() {
        let org = OrgId::generate();
        let other = OrgId::generate();
        let id = encode(&org.pk("REVIEW#needs_check#k1"));
        assert_eq!(
            decode(&id, Some(&org), &["REVIEW#"]).map(|(o, _)| o),
            Some(org.clone())
        );
        assert!(decode(&id, None, &["REVIEW#"]).is_some(), "the admin's");
        assert!(decode(&id, Some(&other), &["REVIEW#"]).is_none());
        assert!(decode(&id, Some(&org), &["RUN#"]).is_none());
        assert!(decode("not base64!", Some(&org), &["REVIEW#"]).is_none());
        assert!(decode(&encode("REVIEW#x"), None, &["REVIEW#"]).is_none());
    }
}
