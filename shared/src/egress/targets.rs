//! Which outbound targets automation may call: https to a public address. Loopback is allowed only
//! where the stage says so (local stack, tests). Checked when an integration is created, and again
//! at every connection by a resolver that drops private addresses, so a name that later resolves
//! inward is refused too.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, SocketAddr};

/// Addresses that lead inward or nowhere public (loopback apart, which `allowed` decides):
/// private, link-local, unspecified, broadcast, CGNAT, benchmarking (198.18.0.0/15), reserved
/// (240.0.0.0/4), "this network" (0.0.0.0/8) and multicast; for IPv6 unique-local, link-local,
/// multicast, and every form that carries an IPv4 address inside (IPv4-mapped, IPv4-compatible,
/// NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32`), refused
/// whatever the address inside.
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (b & 0xc0) == 64)
                || (a == 198 && (b & 0xfe) == 18)
                || a >= 240
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments();
            let embeds_v4 = v6.to_ipv4_mapped().is_some()
                || (seg[..6] == [0; 6] && !v6.is_loopback())
                || (seg[0] == 0x64 && seg[1] == 0xff9b)
                || seg[0] == 0x2002
                || (seg[0] == 0x2001 && seg[1] == 0);
            embeds_v4
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00
                || (seg[0] & 0xffc0) == 0xfe80
        }
    }
}

/// May a connection go to `ip`?
pub fn allowed(ip: IpAddr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        allow_loopback
    } else {
        !is_internal(ip)
    }
}

/// Validates a target URL; the error says why it is refused.
pub fn check_url(raw: &str, allow_loopback: bool) -> Result<(), &'static str> {
    check_url_on(raw, allow_loopback, None)
}

/// `check_url`, and the port one of 443 and 80, or `port` when an integration named it.
pub fn check_url_on(
    raw: &str,
    allow_loopback: bool,
    port: Option<u16>,
) -> Result<(), &'static str> {
    let url = url::Url::parse(raw).map_err(|_| "url is not an absolute URL")?;
    let host = url.host_str().ok_or("url has no host")?;
    let ip: Option<IpAddr> = host.trim_matches(|c| c == '[' || c == ']').parse().ok();
    let loopback = host == "localhost" || ip.is_some_and(|ip| ip.is_loopback());
    if loopback {
        return if allow_loopback {
            Ok(())
        } else {
            Err("loopback targets are not allowed on this stage")
        };
    }
    if url.scheme() != "https" {
        return Err("url must use https");
    }
    let on = url.port_or_known_default();
    if !matches!(on, Some(443 | 80)) && on != port {
        return Err("url's port must be 443 or 80, or the integration's named `port`");
    }
    let internal = match ip {
        Some(ip) => is_internal(ip),
        None => host.ends_with(".internal") || host.ends_with(".local"),
    };
    if internal {
        return Err("private and link-local addresses are not allowed");
    }
    Ok(())
}

/// A resolver that hands reqwest only the addresses `allowed` lets through.
#[derive(Clone, Copy, Debug)]
pub struct PublicOnly {
    pub allow_loopback: bool,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let usable: Vec<SocketAddr> =
                found.filter(|a| allowed(a.ip(), allow_loopback)).collect();
            if usable.is_empty() {
                return Err(format!("{} resolves to no public address", name.as_str()).into());
            }
            Ok(Box::new(usable.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbound_urls_must_be_public_https() {
        assert!(check_url("https://hooks.example.com/x", false).is_ok());
        assert!(check_url("https://hooks.example.com:443/x", false).is_ok());
        assert!(check_url("https://hooks.example.com:22/x", false).is_err());
        assert!(check_url("https://hooks.example.com:6379/x", false).is_err());
        assert!(check_url_on("https://hooks.example.com:8443/x", false, Some(8443)).is_ok());
        assert!(check_url_on("https://hooks.example.com:8444/x", false, Some(8443)).is_err());
        assert!(check_url("http://hooks.example.com/x", false).is_err());
        assert!(check_url("https://10.0.0.5/x", false).is_err());
        assert!(check_url("https://100.64.0.1/x", false).is_err());
        assert!(check_url("https://169.254.169.254/latest", false).is_err());
        assert!(check_url("https://[::ffff:10.0.0.1]/x", false).is_err());
        assert!(check_url("https://[fe80::1]/x", false).is_err());
        assert!(check_url("http://127.0.0.1:9000/x", false).is_err());
        assert!(check_url("http://127.0.0.1:9000/x", true).is_ok());
        assert!(check_url("http://localhost:9000/x", false).is_err());
    }

    #[test]
    fn every_form_that_leads_inward_is_refused() {
        for inward in [
            "https://[::10.0.0.1]/x",
            "https://[::127.0.0.1]/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://[64:ff9b::a9fe:a9fe]/x",
            "https://[64:ff9b:1::1]/x",
            "https://[2002:a00:1::1]/x",
            "https://[2001:0:4136:e378::1]/x",
            "https://[ff02::1]/x",
            "https://[fd00::1]/x",
            "https://240.0.0.1/x",
            "https://255.255.255.254/x",
            "https://198.18.0.1/x",
            "https://198.19.255.1/x",
            "https://224.0.0.1/x",
            "https://239.255.255.250/x",
            "https://0.1.2.3/x",
        ] {
            assert!(check_url(inward, false).is_err(), "{inward}");
            assert!(
                check_url(inward, true).is_err(),
                "{inward} with loopback allowed"
            );
        }
        for public in [
            "https://198.20.0.1/x",
            "https://[2606:4700::1111]/x",
            "https://8.8.8.8/x",
        ] {
            assert!(check_url(public, false).is_ok(), "{public}");
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_that_resolve_inward() {
        let refused = PublicOnly {
            allow_loopback: false,
        }
        .resolve(Name::from_str("localhost").unwrap())
        .await;
        assert!(refused.is_err());
        let allowed = PublicOnly {
            allow_loopback: true,
        }
        .resolve(Name::from_str("localhost").unwrap())
        .await
        .expect("loopback allowed on this stage");
        assert!(allowed.into_iter().all(|a| a.ip().is_loopback()));
    }

    use std::str::FromStr;
}
