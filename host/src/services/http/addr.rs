//! Which IP addresses count as "public": the table the HTTP policy uses to refuse
//! loopback, private, link-local and other special-purpose destinations.
//!
//! std's `IpAddr::is_global` is unstable, so the classification is written here as
//! small tables of prefixes (IANA's IPv4 and IPv6 special-purpose registries), checked
//! in order. IPv6 addresses that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
//! NAT64 and 6to4) are judged by the IPv4 address they embed, since that is where
//! the packets end up. Any IPv6 address outside 2000::/3, the only block IANA
//! allocates for global unicast, is treated as reserved.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP is, as far as the HTTP policy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrClass {
    /// A globally routable unicast address: the only class a non-granted host may use.
    Public,
    /// 127.0.0.0/8 and ::1: this machine.
    Loopback,
    /// 0.0.0.0 and ::, which many stacks treat as "this machine".
    Unspecified,
    /// 0.0.0.0/8: "this network".
    ThisNetwork,
    /// 10/8, 172.16/12, 192.168/16, IPv6 unique-local fc00::/7, the deprecated site-local
    /// fec0::/10 and local-use NAT64 64:ff9b:1::/48.
    Private,
    /// 100.64.0.0/10: carrier-grade NAT space, often internal to a provider.
    Shared,
    /// 169.254/16 (including the cloud metadata address 169.254.169.254) and fe80::/10.
    LinkLocal,
    /// 224/4 and ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32 and 3fff::/20.
    Documentation,
    /// 198.18/15: network benchmarking.
    Benchmarking,
    /// Everything else set aside: 240/4, 192.0.0/24, 192.88.99/24, 100::/64, 2001::/23
    /// and IPv6 outside 2000::/3.
    Reserved,
}

impl AddrClass {
    /// Whether a host that is not granted may be reached at an address of this class.
    pub fn is_public(self) -> bool {
        self == AddrClass::Public
    }
}

impl fmt::Display for AddrClass {
    /// The phrase used in policy messages: "a loopback address", ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrClass::Public => "a public address",
            AddrClass::Loopback => "a loopback address",
            AddrClass::Unspecified => "an unspecified address",
            AddrClass::ThisNetwork => "a \"this network\" address",
            AddrClass::Private => "a private address",
            AddrClass::Shared => "a shared (carrier-grade NAT) address",
            AddrClass::LinkLocal => "a link-local address",
            AddrClass::Multicast => "a multicast address",
            AddrClass::Broadcast => "a broadcast address",
            AddrClass::Documentation => "a documentation address",
            AddrClass::Benchmarking => "a benchmarking address",
            AddrClass::Reserved => "a reserved address",
        })
    }
}

/// IPv4 special-purpose blocks, most specific first where they overlap.
const V4_TABLE: &[(Ipv4Addr, u8, AddrClass)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 32, AddrClass::Unspecified),
    (Ipv4Addr::new(0, 0, 0, 0), 8, AddrClass::ThisNetwork),
    (Ipv4Addr::new(10, 0, 0, 0), 8, AddrClass::Private),
    (Ipv4Addr::new(100, 64, 0, 0), 10, AddrClass::Shared),
    (Ipv4Addr::new(127, 0, 0, 0), 8, AddrClass::Loopback),
    (Ipv4Addr::new(169, 254, 0, 0), 16, AddrClass::LinkLocal),
    (Ipv4Addr::new(172, 16, 0, 0), 12, AddrClass::Private),
    (Ipv4Addr::new(192, 0, 0, 0), 24, AddrClass::Reserved),
    (Ipv4Addr::new(192, 0, 2, 0), 24, AddrClass::Documentation),
    (Ipv4Addr::new(192, 88, 99, 0), 24, AddrClass::Reserved),
    (Ipv4Addr::new(192, 168, 0, 0), 16, AddrClass::Private),
    (Ipv4Addr::new(198, 18, 0, 0), 15, AddrClass::Benchmarking),
    (Ipv4Addr::new(198, 51, 100, 0), 24, AddrClass::Documentation),
    (Ipv4Addr::new(203, 0, 113, 0), 24, AddrClass::Documentation),
    (Ipv4Addr::new(224, 0, 0, 0), 4, AddrClass::Multicast),
    (Ipv4Addr::new(255, 255, 255, 255), 32, AddrClass::Broadcast),
    (Ipv4Addr::new(240, 0, 0, 0), 4, AddrClass::Reserved),
];

/// IPv6 special-purpose blocks inside or beside 2000::/3, checked after the embedded
/// IPv4 forms; most specific first where they overlap.
const V6_TABLE: &[(Ipv6Addr, u8, AddrClass)] = &[
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        128,
        AddrClass::Unspecified,
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1),
        128,
        AddrClass::Loopback,
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        AddrClass::Private,
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        AddrClass::Reserved,
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        AddrClass::Reserved,
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        AddrClass::Documentation,
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        AddrClass::Documentation,
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        AddrClass::Private,
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        AddrClass::LinkLocal,
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        AddrClass::Private,
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        AddrClass::Multicast,
    ),
];

/// Classifies an address for the HTTP policy.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// Classifies an IPv4 address by the first table entry whose prefix contains it.
fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    let bits = u32::from(ip);
    V4_TABLE
        .iter()
        .find(|(net, len, _)| prefix_matches_v4(bits, u32::from(*net), *len))
        .map_or(AddrClass::Public, |(_, _, class)| *class)
}

/// Classifies an IPv6 address, judging the forms that embed an IPv4 address by it.
fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    if let Some(v4) = embedded_ipv4(ip) {
        return classify_v4(v4);
    }
    let bits = u128::from(ip);
    if let Some((_, _, class)) = V6_TABLE
        .iter()
        .find(|(net, len, _)| prefix_matches_v6(bits, u128::from(*net), *len))
    {
        return *class;
    }
    // Only 2000::/3 is allocated for global unicast; the rest is unassigned or special.
    if prefix_matches_v6(bits, 0x2000 << 112, 3) {
        AddrClass::Public
    } else {
        AddrClass::Reserved
    }
}

/// The IPv4 address an IPv6 address carries, for the forms whose packets reach it:
/// IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d (not :: or ::1), NAT64
/// 64:ff9b::a.b.c.d and 6to4 2002:aabb:ccdd::/48.
fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let mapped = prefix_matches_v6(bits, 0xffff << 32, 96);
    let compatible = prefix_matches_v6(bits, 0, 96) && bits > 1;
    let nat64 = prefix_matches_v6(
        bits,
        u128::from(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0)),
        96,
    );
    if mapped || compatible || nat64 {
        return Some(low32);
    }
    if prefix_matches_v6(bits, 0x2002 << 112, 16) {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

/// Whether `addr` lies in `net/len` (IPv4).
fn prefix_matches_v4(addr: u32, net: u32, len: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    addr & mask == net & mask
}

/// Whether `addr` lies in `net/len` (IPv6).
fn prefix_matches_v6(addr: u128, net: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    addr & mask == net & mask
}

#[cfg(test)]
mod tests {
    use super::AddrClass::*;
    use super::*;

    fn class(text: &str) -> AddrClass {
        classify(text.parse().expect("test address parses"))
    }

    #[test]
    fn ipv4_table() {
        let cases = [
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", ThisNetwork),
            ("10.0.0.1", Private),
            ("10.255.255.255", Private),
            ("100.63.255.255", Public),
            ("100.64.0.1", Shared),
            ("100.127.255.255", Shared),
            ("100.128.0.0", Public),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("169.254.169.254", LinkLocal),
            ("169.254.0.1", LinkLocal),
            ("172.15.255.255", Public),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("172.32.0.0", Public),
            ("192.0.0.8", Reserved),
            ("192.0.2.1", Documentation),
            ("192.88.99.1", Reserved),
            ("192.167.255.255", Public),
            ("192.168.1.1", Private),
            ("192.169.0.0", Public),
            ("198.17.255.255", Public),
            ("198.18.0.1", Benchmarking),
            ("198.19.255.255", Benchmarking),
            ("198.20.0.0", Public),
            ("198.51.100.7", Documentation),
            ("203.0.113.9", Documentation),
            ("224.0.0.1", Multicast),
            ("239.255.255.255", Multicast),
            ("240.0.0.1", Reserved),
            ("255.255.255.254", Reserved),
            ("255.255.255.255", Broadcast),
            ("1.1.1.1", Public),
            ("8.8.8.8", Public),
            ("93.184.216.34", Public),
            ("223.255.255.255", Public),
        ];
        for (addr, expected) in cases {
            assert_eq!(class(addr), expected, "{addr}");
        }
    }

    #[test]
    fn ipv6_table() {
        let cases = [
            ("::", Unspecified),
            ("::1", Loopback),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", Private),
            ("ff02::1", Multicast),
            ("ff0e::1", Multicast),
            ("2001:db8::1", Documentation),
            ("3fff::1", Documentation),
            ("2001::1", Reserved),
            ("2001:1ff::1", Reserved),
            ("100::1", Reserved),
            ("64:ff9b:1::1", Private),
            ("5f00::1", Reserved),
            ("4000::1", Reserved),
            ("1::1", Reserved),
            ("2001:200::1", Public),
            ("2001:4860:4860::8888", Public),
            ("2606:4700:4700::1111", Public),
            ("2a00:1450::1", Public),
            ("3ffe::1", Public),
        ];
        for (addr, expected) in cases {
            assert_eq!(class(addr), expected, "{addr}");
        }
    }

    #[test]
    fn embedded_ipv4_is_judged_by_the_ipv4_address() {
        let cases = [
            // IPv4-mapped
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:0.0.0.0", Unspecified),
            ("::ffff:8.8.8.8", Public),
            // IPv4-compatible (deprecated, but still an address a stack may route)
            ("::127.0.0.1", Loopback),
            ("::192.168.0.1", Private),
            ("::0.0.0.2", ThisNetwork),
            ("::8.8.8.8", Public),
            // NAT64 well-known prefix
            ("64:ff9b::127.0.0.1", Loopback),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            ("64:ff9b::8.8.8.8", Public),
            // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD
            ("2002:7f00:1::1", Loopback),
            ("2002:a9fe:a9fe::", LinkLocal),
            ("2002:c0a8:101::1", Private),
            ("2002:0808:0808::1", Public),
        ];
        for (addr, expected) in cases {
            assert_eq!(class(addr), expected, "{addr}");
        }
    }

    #[test]
    fn only_public_is_public() {
        assert!(Public.is_public());
        for other in [
            Loopback,
            Unspecified,
            Private,
            Shared,
            LinkLocal,
            Multicast,
            Reserved,
        ] {
            assert!(!other.is_public(), "{other}");
        }
    }

    #[test]
    fn phrases_read_well_in_messages() {
        assert_eq!(Loopback.to_string(), "a loopback address");
        assert_eq!(LinkLocal.to_string(), "a link-local address");
        assert_eq!(Unspecified.to_string(), "an unspecified address");
    }

    #[test]
    fn prefix_edges() {
        assert!(prefix_matches_v4(0x0a00_0001, 0x0a00_0000, 8));
        assert!(prefix_matches_v4(12345, 0, 0));
        assert!(prefix_matches_v4(7, 7, 32));
        assert!(!prefix_matches_v4(8, 7, 32));
        assert!(prefix_matches_v6(1, 1, 128));
        assert!(prefix_matches_v6(u128::MAX, 0, 0));
    }
}
