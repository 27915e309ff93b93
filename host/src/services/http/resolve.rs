//! The DNS resolver the HTTP clients connect through: it resolves a name, then
//! refuses it unless every address is allowed, and hands the checked addresses to
//! the connector, so the connection goes to an address that was checked (no second,
//! unchecked lookup, so DNS tricks such as a name resolving to 127.0.0.1 or
//! rebinding between check and connect do not work).
//!
//! reqwest asks a resolver about a name only, not a port, so a resolver alone cannot
//! apply `HOST:PORT` grants. The port-aware decision is made per URL by
//! `HttpPolicy::route`, and each route has its own client and resolver: the client
//! for granted URLs admits any address of a granted name, the client for public URLs
//! admits public addresses only.

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::HttpError;
use super::addr::classify;
use super::policy::{HttpPolicy, refuse_resolved};

/// Which addresses a resolver lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Any address of a name some grant covers; public addresses only for other names.
    /// Used by the client that fetches granted URLs.
    Granted,
    /// Public addresses only, whatever the name. Used by the client that fetches
    /// URLs allowed because public hosts are.
    PublicOnly,
}

/// A `reqwest` resolver that resolves with the system resolver, then filters.
#[derive(Debug, Clone)]
pub(crate) struct PolicyResolver {
    policy: Arc<HttpPolicy>,
    admit: Admit,
}

impl PolicyResolver {
    /// A resolver for `policy` that lets through what `admit` says.
    pub(crate) fn new(policy: Arc<HttpPolicy>, admit: Admit) -> Self {
        PolicyResolver { policy, admit }
    }
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let any_address = self.admit == Admit::Granted && self.policy.grants_name(&host);
        Box::pin(async move {
            let addrs = lookup(&host).await?;
            if !any_address {
                check_public(&host, &addrs)?;
            }
            tracing::trace!(%host, ?addrs, "resolved");
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Resolves `host` with the system resolver (getaddrinfo, on tokio's blocking pool).
async fn lookup(host: &str) -> Result<Vec<SocketAddr>, HttpError> {
    match tokio::net::lookup_host((host, 0)).await {
        Ok(addrs) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            if addrs.is_empty() {
                Err(HttpError::Dns(format!("{host} has no addresses")))
            } else {
                Ok(addrs)
            }
        }
        Err(e) => {
            let text = e.to_string();
            let reason = text
                .strip_prefix("failed to lookup address information: ")
                .unwrap_or(&text);
            Err(HttpError::Dns(format!("{host}: {reason}")))
        }
    }
}

/// Refuses `host` unless every address it resolved to is public.
fn check_public(host: &str, addrs: &[SocketAddr]) -> Result<(), HttpError> {
    for addr in addrs {
        let class = classify(addr.ip());
        if !class.is_public() {
            tracing::debug!(%host, ip = %addr.ip(), %class, "refused by HTTP policy");
            return Err(refuse_resolved(host, addr.ip(), class));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|ip| SocketAddr::new(ip.parse().expect("test address parses"), 0))
            .collect()
    }

    #[test]
    fn every_address_must_be_public() {
        assert!(check_public("example.com", &addrs(&["93.184.216.34", "2606:2800::1"])).is_ok());
        // One bad address among good ones is enough to refuse: the connector could
        // pick any of them.
        match check_public(
            "rebind.example",
            &addrs(&["93.184.216.34", "169.254.169.254"]),
        ) {
            Err(e) => assert_eq!(
                e.to_string(),
                "refused by policy: rebind.example resolves to 169.254.169.254, a link-local \
                 address (grant it with --allow-http rebind.example)"
            ),
            Ok(()) => panic!("a link-local address must be refused"),
        }
        assert!(check_public("mapped.example", &addrs(&["::ffff:127.0.0.1"])).is_err());
    }

    #[tokio::test]
    async fn localhost_is_refused_after_resolving() {
        let policy = Arc::new(HttpPolicy::default());
        let resolver = PolicyResolver::new(policy, Admit::PublicOnly);
        let name: Name = "localhost".parse().expect("a valid name");
        let err = match resolver.resolve(name).await {
            Ok(addrs) => panic!(
                "localhost must be refused, got {:?}",
                addrs.collect::<Vec<_>>()
            ),
            Err(err) => err,
        };
        // The error must be our own type, so `from_reqwest` can find it in the chain.
        assert!(
            matches!(err.downcast_ref::<HttpError>(), Some(HttpError::Policy(_))),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.starts_with("refused by policy: localhost resolves to ")
                && text.contains("a loopback address"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn granted_names_may_resolve_anywhere() {
        let grant = "localhost".parse().expect("a valid grant");
        let policy = Arc::new(HttpPolicy::new(vec![grant], false));
        let name: Name = "localhost".parse().expect("a valid name");
        let granted = PolicyResolver::new(policy.clone(), Admit::Granted);
        let addrs: Vec<SocketAddr> = match granted.resolve(name).await {
            Ok(addrs) => addrs.collect(),
            Err(e) => panic!("a granted name must resolve: {e}"),
        };
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
        // The public-only client refuses the same name, grant or not.
        let public = PolicyResolver::new(policy, Admit::PublicOnly);
        let name: Name = "localhost".parse().expect("a valid name");
        assert!(public.resolve(name).await.is_err());
    }
}
