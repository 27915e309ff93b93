//! Which hosts a plugin may reach: host grants (`--allow-http HOST[:PORT]`), the
//! "any public host" switch, and the per-URL decision made before every hop.
//!
//! A URL whose host and port match a grant may connect to whatever the host resolves
//! to. Any other URL is allowed only when public hosts are allowed, and then only to
//! public addresses: literal IPs are judged here, names by the resolver after lookup
//! (see `resolve.rs`).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use url::{Host, Url};

use super::HttpError;
use super::addr::{AddrClass, classify};

/// One grant: `HOST[:PORT]`, `*.domain[:PORT]`, an IPv4 literal or a bracketed IPv6
/// literal. Without a port it grants every port of that host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGrant {
    host: GrantHost,
    port: Option<u16>,
}

/// The host part of a grant, normalized (lower-case ASCII, IDNA to punycode, no
/// trailing dot).
#[derive(Debug, Clone, PartialEq, Eq)]
enum GrantHost {
    /// Exactly this name.
    Name(String),
    /// Any name strictly below this domain (`*.example.com` stores `example.com`).
    Below(String),
    /// Exactly this literal address.
    Ip(IpAddr),
}

/// Why a grant did not parse. The text says what is wrong and shows the right form;
/// it does not repeat the input, which callers (the command line, the config file)
/// already show beside it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct HostGrantError {
    input: String,
    reason: String,
}

impl HostGrantError {
    /// Builds the error for `input`.
    fn new(input: &str, reason: impl Into<String>) -> Self {
        HostGrantError {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    /// The text that did not parse.
    pub fn input(&self) -> &str {
        &self.input
    }
}

/// The forms a grant can take, appended to parse errors.
const GRANT_FORMS: &str =
    "expected HOST, HOST:PORT, *.DOMAIN[:PORT], an IPv4 address or [IPv6][:PORT]";

impl FromStr for HostGrant {
    type Err = HostGrantError;

    /// Parses the text given to `--allow-http`.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| HostGrantError::new(input, reason);
        let text = input.trim();
        if text.is_empty() {
            return Err(err(&format!("the grant is empty; {GRANT_FORMS}")));
        }
        if text.contains("://") {
            return Err(err(
                "give a host, not a URL (for example example.com or example.com:8080)",
            ));
        }
        if let Some(bad) = text
            .chars()
            .find(|c| matches!(c, '/' | '?' | '#' | '@' | '\\') || c.is_whitespace())
        {
            return Err(err(&format!(
                "{bad:?} cannot appear in a host; {GRANT_FORMS}"
            )));
        }
        let (host_text, port) = split_port(text).map_err(|reason| err(&reason))?;
        let host = parse_host(host_text).map_err(|reason| err(&reason))?;
        Ok(HostGrant { host, port })
    }
}

/// Splits `HOST[:PORT]`, where an IPv6 host is bracketed.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some(close) = rest.find(']') else {
            return Err("the IPv6 address has no closing ']'".into());
        };
        let after = &rest[close + 1..];
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return Err(format!("unexpected {after:?} after the IPv6 address")),
            },
        };
        (&text[..close + 2], port)
    } else {
        match text.matches(':').count() {
            0 => (text, None),
            1 => text
                .split_once(':')
                .map_or((text, None), |(h, p)| (h, Some(p))),
            _ => {
                return Err(
                    "an IPv6 address must be in brackets, as in [::1] or [::1]:8080".into(),
                );
            }
        }
    };
    let port = match port {
        None => None,
        Some(text) => {
            let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
            match text.parse::<u16>() {
                Ok(0) => return Err("port 0 cannot be granted".into()),
                Ok(port) if digits => Some(port),
                _ => return Err(format!("{text:?} is not a port number (1-65535)")),
            }
        }
    };
    Ok((host, port))
}

/// Parses and normalizes the host part of a grant.
fn parse_host(text: &str) -> Result<GrantHost, String> {
    if text.is_empty() {
        return Err(format!("the host is missing; {GRANT_FORMS}"));
    }
    if let Some(domain) = text.strip_prefix("*.") {
        let domain = normalize_domain(domain)?;
        return match domain {
            Host::Domain(name) => Ok(GrantHost::Below(name)),
            Host::Ipv4(_) | Host::Ipv6(_) => {
                Err("a wildcard needs a domain name after \"*.\", not an address".into())
            }
        };
    }
    if text.contains('*') {
        return Err(
            "a wildcard is only allowed as the whole first label, as in *.example.com".into(),
        );
    }
    match normalize_domain(text)? {
        Host::Domain(name) => Ok(GrantHost::Name(name)),
        Host::Ipv4(ip) => Ok(GrantHost::Ip(IpAddr::V4(ip))),
        Host::Ipv6(ip) => Ok(GrantHost::Ip(IpAddr::V6(ip))),
    }
}

/// Parses a host the way URLs are parsed (IDNA, IPv4 forms, bracketed IPv6), then
/// checks that a name is a plausible DNS name.
fn normalize_domain(text: &str) -> Result<Host<String>, String> {
    let trimmed = text.strip_suffix('.').unwrap_or(text);
    let host =
        Host::parse(trimmed).map_err(|e| format!("{trimmed:?} is not a valid host ({e})"))?;
    if let Host::Domain(name) = &host {
        if name.len() > 253 {
            return Err("the host name is longer than 253 characters".into());
        }
        for label in name.split('.') {
            if label.is_empty() {
                return Err("the host name has an empty label".into());
            }
            if label.len() > 63 {
                return Err(format!("the label {label:?} is longer than 63 characters"));
            }
            if let Some(bad) = label
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
            {
                return Err(format!("{bad:?} cannot appear in a host name"));
            }
        }
    }
    Ok(host)
}

impl HostGrant {
    /// Whether this grant covers `host` at `port` (the URL's effective port).
    pub(crate) fn matches(&self, host: &Host<&str>, port: u16) -> bool {
        self.port.is_none_or(|p| p == port) && self.matches_host(host)
    }

    /// Whether this grant names `host`, on any of the ports it grants.
    fn matches_host(&self, host: &Host<&str>) -> bool {
        match (&self.host, host) {
            (GrantHost::Name(name), Host::Domain(d)) => trim_dot(d).eq_ignore_ascii_case(name),
            (GrantHost::Below(domain), Host::Domain(d)) => {
                let d = trim_dot(d);
                d.len() > domain.len() + 1
                    && d.is_char_boundary(d.len() - domain.len() - 1)
                    && d[d.len() - domain.len() - 1..].eq_ignore_ascii_case(&format!(".{domain}"))
            }
            (GrantHost::Ip(IpAddr::V4(ip)), Host::Ipv4(v4)) => ip == v4,
            (GrantHost::Ip(IpAddr::V6(ip)), Host::Ipv6(v6)) => ip == v6,
            _ => false,
        }
    }

    /// The port this grant is limited to, if any.
    pub fn port(&self) -> Option<u16> {
        self.port
    }
}

/// `example.com.` and `example.com` are the same name.
fn trim_dot(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

impl fmt::Display for HostGrant {
    /// The normalized grant, in the form `--allow-http` accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            GrantHost::Name(name) => f.write_str(name)?,
            GrantHost::Below(domain) => write!(f, "*.{domain}")?,
            GrantHost::Ip(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            GrantHost::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// Which hosts one plugin may reach over HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPolicy {
    grants: Vec<HostGrant>,
    allow_public: bool,
    /// The destinations the plugin's manifest asks for; `None` means any. A URL must
    /// be among them and also pass the user's grants and public switch.
    destinations: Option<Vec<HostGrant>>,
}

impl Default for HttpPolicy {
    /// The default: any public host, nothing special (no loopback, private or
    /// link-local destinations).
    fn default() -> Self {
        HttpPolicy::new(Vec::new(), true)
    }
}

/// How a URL that passed the policy must be fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The host and port are granted: any address the host resolves to is fine.
    Granted,
    /// Not granted, but public hosts are allowed: only public addresses may be used.
    Public,
}

impl HttpPolicy {
    /// A policy of explicit grants, plus any public host when `allow_public` is true.
    pub fn new(grants: Vec<HostGrant>, allow_public: bool) -> Self {
        HttpPolicy {
            grants,
            allow_public,
            destinations: None,
        }
    }

    /// The same policy, further limited to the destinations a plugin's manifest asks
    /// for (`None`: any destination the policy allows).
    pub fn limited_to(mut self, destinations: Option<Vec<HostGrant>>) -> Self {
        self.destinations = destinations;
        self
    }

    /// Why the policy certainly refuses every request to `ask` (a destination a
    /// manifest asks for), if it does: not granted while public hosts are off, or a
    /// literal address of a special class that is not granted. Names are resolved only
    /// when a request is made, so a name that resolves to a private address is refused
    /// then, not here.
    pub fn refusal_of(&self, ask: &HostGrant) -> Option<String> {
        let host = match &ask.host {
            GrantHost::Name(name) => Host::Domain(name.as_str()),
            GrantHost::Below(_) => return None,
            GrantHost::Ip(IpAddr::V4(ip)) => Host::Ipv4(*ip),
            GrantHost::Ip(IpAddr::V6(ip)) => Host::Ipv6(*ip),
        };
        let granted = self.grants.iter().any(|grant| {
            grant.matches_host(&host)
                && match (grant.port, ask.port) {
                    (None, _) => true,
                    (Some(granted), Some(asked)) => granted == asked,
                    (Some(_), None) => false,
                }
        });
        if granted {
            return None;
        }
        if !self.allow_public {
            return Some(format!(
                "{ask} is not among the user's HTTP grants (grant it with --allow-http {ask})"
            ));
        }
        let literal = match host {
            Host::Domain(_) => return None,
            Host::Ipv4(ip) => IpAddr::V4(ip),
            Host::Ipv6(ip) => IpAddr::V6(ip),
        };
        match classify(literal) {
            AddrClass::Public => None,
            class => Some(format!(
                "{ask} is {class} (grant it with --allow-http {ask})"
            )),
        }
    }

    /// Whether some request could pass: the manifest asks for a destination the
    /// policy does not certainly refuse (see [`HttpPolicy::refusal_of`]), or for any
    /// while the policy grants a host or allows public ones.
    pub fn may_reach_some_host(&self) -> bool {
        match &self.destinations {
            None => self.allow_public || !self.grants.is_empty(),
            Some(asked) => asked.iter().any(|ask| self.refusal_of(ask).is_none()),
        }
    }

    /// The explicit grants, for display.
    pub fn grants(&self) -> &[HostGrant] {
        &self.grants
    }

    /// Whether hosts without a grant may be reached at public addresses.
    pub fn allow_public(&self) -> bool {
        self.allow_public
    }

    /// Decides how `url` may be fetched, or refuses it. Literal IP hosts are judged
    /// here, since they bypass the resolver; names that are not granted are judged
    /// again by the resolver once their addresses are known.
    pub(crate) fn route(&self, url: &Url) -> Result<Route, HttpError> {
        let Some(host) = url.host() else {
            return Err(HttpError::InvalidRequest(format!("{url} has no host")));
        };
        let Some(port) = url.port_or_known_default() else {
            return Err(HttpError::InvalidRequest(format!("{url} has no port")));
        };
        if let Some(destinations) = &self.destinations {
            if destinations.is_empty() {
                return Err(HttpError::Policy(
                    "the plugin's manifest asks for no HTTP access (capabilities.http)".to_string(),
                ));
            }
            if !destinations.iter().any(|ask| ask.matches(&host, port)) {
                let asked: Vec<String> = destinations.iter().map(ToString::to_string).collect();
                return Err(HttpError::Policy(format!(
                    "{host}:{port} is not among the hosts the plugin's manifest asks for \
                     (capabilities.http = {asked:?})"
                )));
            }
        }
        if self.grants.iter().any(|grant| grant.matches(&host, port)) {
            return Ok(Route::Granted);
        }
        if !self.allow_public {
            return Err(HttpError::Policy(format!(
                "{host} is not among this plugin's HTTP grants (grant it with --allow-http {host})"
            )));
        }
        let literal = match host {
            Host::Domain(_) => return Ok(Route::Public),
            Host::Ipv4(ip) => IpAddr::V4(ip),
            Host::Ipv6(ip) => IpAddr::V6(ip),
        };
        match classify(literal) {
            AddrClass::Public => Ok(Route::Public),
            class => Err(HttpError::Policy(format!(
                "{host} is {class} (grant it with --allow-http {host})"
            ))),
        }
    }

    /// Whether some grant names `host` (on some port). Only the resolver of the
    /// client used for granted URLs asks this, as a second line of defence.
    pub(crate) fn grants_name(&self, host: &str) -> bool {
        self.grants
            .iter()
            .any(|grant| grant.matches_host(&Host::Domain(host)))
    }
}

/// The refusal for a name that resolved to a non-public address.
pub(crate) fn refuse_resolved(host: &str, ip: IpAddr, class: AddrClass) -> HttpError {
    HttpError::Policy(format!(
        "{host} resolves to {ip}, {class} (grant it with --allow-http {host})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(text: &str) -> HostGrant {
        match text.parse() {
            Ok(grant) => grant,
            Err(e) => panic!("{text:?} should parse: {e}"),
        }
    }

    fn url(text: &str) -> Url {
        Url::parse(text).expect("test URL parses")
    }

    fn grants(text: &str, url_text: &str) -> bool {
        let url = url(url_text);
        let host = url.host().expect("test URL has a host");
        grant(text).matches(&host, url.port_or_known_default().expect("port"))
    }

    #[test]
    fn good_grants_parse_and_normalize() {
        let cases = [
            ("example.com", "example.com"),
            ("Example.COM", "example.com"),
            ("example.com.", "example.com"),
            ("example.com:8080", "example.com:8080"),
            ("*.example.com", "*.example.com"),
            ("*.Example.com:443", "*.example.com:443"),
            ("localhost", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("[::1]", "[::1]"),
            ("[::1]:8080", "[::1]:8080"),
            ("[0:0::1]", "[::1]"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("my_host.internal", "my_host.internal"),
            ("  api.example.com  ", "api.example.com"),
        ];
        for (input, normalized) in cases {
            assert_eq!(grant(input).to_string(), normalized, "{input}");
        }
    }

    #[test]
    fn bad_grants_say_why() {
        let cases = [
            ("", "empty"),
            ("   ", "empty"),
            ("http://example.com", "not a URL"),
            ("example.com/path", "'/'"),
            ("user@example.com", "'@'"),
            ("exa mple.com", "' '"),
            ("::1", "brackets"),
            ("[::1", "closing"),
            ("[::1]x", "after the IPv6"),
            ("example.com:", "not a port"),
            ("example.com:http", "not a port"),
            ("example.com:0", "port 0"),
            ("example.com:65536", "not a port"),
            ("example.com:-1", "not a port"),
            ("example.com:+80", "not a port"),
            (":8080", "host is missing"),
            ("*", "wildcard"),
            ("*.", "not a valid host"),
            ("*example.com", "wildcard"),
            ("a.*.example.com", "wildcard"),
            ("*.127.0.0.1", "not an address"),
            ("a..b", "empty label"),
            ("exa!mple.com", "'!'"),
            ("[not-ipv6]", "not a valid host"),
        ];
        for (input, needle) in cases {
            match input.parse::<HostGrant>() {
                Ok(grant) => panic!("{input:?} should not parse, got {grant}"),
                Err(e) => {
                    let text = e.to_string();
                    assert!(
                        text.contains(needle),
                        "{input:?}: {text:?} should mention {needle:?}"
                    );
                    assert_eq!(e.input(), input);
                }
            }
        }
    }

    #[test]
    fn exact_names_match_case_insensitively() {
        assert!(grants("example.com", "http://EXAMPLE.com/"));
        assert!(grants("example.com", "https://example.com./x"));
        assert!(!grants("example.com", "http://www.example.com/"));
        assert!(!grants("example.com", "http://example.com.evil.net/"));
        assert!(!grants("example.com", "http://notexample.com/"));
    }

    #[test]
    fn wildcards_match_strict_subdomains_only() {
        assert!(grants("*.example.com", "http://a.example.com/"));
        assert!(grants("*.example.com", "http://a.b.example.com/"));
        assert!(!grants("*.example.com", "http://example.com/"));
        assert!(!grants("*.example.com", "http://badexample.com/"));
        assert!(!grants("*.example.com", "http://a.example.com.evil.net/"));
        assert!(!grants("*.example.com", "http://127.0.0.1/"));
    }

    #[test]
    fn ports_are_effective_ports() {
        assert!(grants("example.com:443", "https://example.com/"));
        assert!(grants("example.com:80", "http://example.com/"));
        assert!(!grants("example.com:80", "https://example.com/"));
        assert!(grants("example.com:8080", "http://example.com:8080/"));
        assert!(!grants("example.com:8080", "http://example.com:8081/"));
        assert!(grants("127.0.0.1", "http://127.0.0.1:1/"));
        assert!(grants("127.0.0.1", "http://127.0.0.1:65535/"));
    }

    #[test]
    fn ip_literals_match_the_same_literal() {
        assert!(grants("127.0.0.1", "http://127.0.0.1/"));
        // URL parsing normalizes odd IPv4 spellings to the same address.
        assert!(grants("127.0.0.1", "http://2130706433/"));
        assert!(grants("127.0.0.1", "http://0x7f.1/"));
        assert!(!grants("127.0.0.1", "http://127.0.0.2/"));
        assert!(!grants("127.0.0.1", "http://localhost/"));
        assert!(!grants("127.0.0.1", "http://[::ffff:127.0.0.1]/"));
        assert!(grants("[::1]", "http://[::1]:8080/"));
        assert!(!grants("[::1]", "http://127.0.0.1/"));
    }

    #[test]
    fn routes() {
        let policy = HttpPolicy::new(vec![grant("localhost:8080"), grant("10.0.0.5")], true);
        assert_eq!(
            policy.route(&url("http://localhost:8080/")).ok(),
            Some(Route::Granted)
        );
        assert_eq!(
            policy.route(&url("http://10.0.0.5:9/")).ok(),
            Some(Route::Granted)
        );
        // Not granted on this port: only public addresses, which the resolver checks.
        assert_eq!(
            policy.route(&url("http://localhost:9090/")).ok(),
            Some(Route::Public)
        );
        assert_eq!(
            policy.route(&url("https://example.com/")).ok(),
            Some(Route::Public)
        );
        assert_eq!(
            policy.route(&url("http://8.8.8.8/")).ok(),
            Some(Route::Public)
        );
    }

    #[test]
    fn literal_ips_are_judged_without_resolving() {
        let policy = HttpPolicy::default();
        let refusals = [
            (
                "http://127.0.0.1:8080/",
                "127.0.0.1 is a loopback address (grant it with --allow-http 127.0.0.1)",
            ),
            (
                "http://169.254.169.254/latest/meta-data/",
                "169.254.169.254 is a link-local address",
            ),
            ("http://0x7f000001/", "127.0.0.1 is a loopback address"),
            (
                "http://[::1]/",
                "[::1] is a loopback address (grant it with --allow-http [::1])",
            ),
            ("http://[::ffff:a9fe:a9fe]/", "is a link-local address"),
            ("http://[fd00::1]/", "is a private address"),
            ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
            ("http://10.1.2.3/", "10.1.2.3 is a private address"),
        ];
        for (target, needle) in refusals {
            match policy.route(&url(target)) {
                Err(e @ HttpError::Policy(_)) => {
                    let text = e.to_string();
                    assert!(text.starts_with("refused by policy: "), "{text}");
                    assert!(text.contains(needle), "{target}: {text:?}");
                }
                other => panic!("{target} should be refused, got {other:?}"),
            }
        }
    }

    #[test]
    fn no_public_access_refuses_everything_ungranted() {
        let policy = HttpPolicy::new(vec![grant("api.example.com")], false);
        assert_eq!(
            policy.route(&url("https://api.example.com/")).ok(),
            Some(Route::Granted)
        );
        match policy.route(&url("https://example.org/")) {
            Err(HttpError::Policy(text)) => assert_eq!(
                text,
                "example.org is not among this plugin's HTTP grants (grant it with --allow-http example.org)"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(matches!(
            policy.route(&url("http://8.8.8.8/")),
            Err(HttpError::Policy(_))
        ));
    }

    #[test]
    fn grants_name_ignores_ports() {
        let policy = HttpPolicy::new(
            vec![grant("localhost:8080"), grant("*.corp.example")],
            false,
        );
        assert!(policy.grants_name("localhost"));
        assert!(policy.grants_name("git.corp.example"));
        assert!(!policy.grants_name("corp.example"));
        assert!(!policy.grants_name("127.0.0.1"));
    }

    #[test]
    fn a_manifest_limits_the_destinations_on_top_of_the_policy() {
        let policy = HttpPolicy::default().limited_to(Some(vec![grant("api.example.com")]));
        assert_eq!(
            policy.route(&url("https://api.example.com/x")).ok(),
            Some(Route::Public)
        );
        match policy.route(&url("https://example.org/")) {
            Err(HttpError::Policy(text)) => assert!(
                text.contains(
                    "example.org:443 is not among the hosts the plugin's manifest asks for"
                ),
                "{text}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
        // Asked for but not allowed by the user's policy: still refused.
        let loopback = HttpPolicy::default().limited_to(Some(vec![grant("127.0.0.1")]));
        assert!(matches!(
            loopback.route(&url("http://127.0.0.1/")),
            Err(HttpError::Policy(_))
        ));
        let none = HttpPolicy::default().limited_to(Some(Vec::new()));
        match none.route(&url("https://example.com/")) {
            Err(HttpError::Policy(text)) => assert!(text.contains("asks for no HTTP access")),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn certain_refusals_of_asked_hosts_are_known_before_any_request() {
        let public = HttpPolicy::default();
        assert_eq!(public.refusal_of(&grant("api.example.com")), None);
        assert!(public.refusal_of(&grant("127.0.0.1:8080")).is_some());
        let granted = HttpPolicy::new(vec![grant("127.0.0.1")], true);
        assert_eq!(granted.refusal_of(&grant("127.0.0.1:8080")), None);
        let closed = HttpPolicy::new(vec![grant("a.example:443")], false);
        assert_eq!(closed.refusal_of(&grant("a.example:443")), None);
        assert!(closed.refusal_of(&grant("a.example")).is_some());
        assert!(closed.refusal_of(&grant("b.example")).is_some());
    }
}
