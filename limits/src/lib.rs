//! The limits that toolcell's host and its guests (the Lua guest, the Rust guest SDK)
//! must agree on, defined once: a guest that checked a different number than the host
//! would accept what the host then refuses, or refuse what the host allows. The host
//! enforces every one of them whatever the guest checks; a guest checks them first so
//! that the plugin's author gets the error where the mistake is.
//!
//! The crate has no dependencies and builds for the host and for wasm32-wasip2.

/// One kibibyte.
pub const KIB: u64 = 1024;

/// One mebibyte.
pub const MIB: u64 = 1024 * KIB;

/// The most tools one plugin may register: more would flood the model's tool list,
/// and no honest plugin comes near it.
pub const MAX_TOOLS_PER_PLUGIN: usize = 1000;

/// The longest tool name. Names are `[A-Za-z0-9_-]{1,64}`, valid function names for
/// every model provider's tool schema.
pub const MAX_TOOL_NAME: usize = 64;

/// The largest JSON text a plugin is handed or may decode: a call's arguments, and
/// clm-tool(5)'s `json.decode` limit.
pub const MAX_JSON_BYTES: usize = 2 * MIB as usize;

/// Whether `name` may name a tool: 1 to [`MAX_TOOL_NAME`] ASCII letters, digits, `_`
/// or `-`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// A byte count the way limits are written in messages: `8 MiB`, `512 KiB`, `1000
/// bytes`, `1 byte`.
pub fn format_bytes(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else if bytes == 1 {
        "1 byte".to_owned()
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(format_bytes(4 * MIB), "4 MiB");
        assert_eq!(format_bytes(512 * KIB), "512 KiB");
        assert_eq!(format_bytes(1536), "1536 bytes");
        assert_eq!(format_bytes(1000), "1000 bytes");
        assert_eq!(format_bytes(1), "1 byte");
        assert_eq!(format_bytes(0), "0 bytes");
    }

    #[test]
    fn tool_names_are_what_every_provider_accepts() {
        assert!(is_valid_tool_name("get_weather-2"));
        assert!(is_valid_tool_name(&"x".repeat(MAX_TOOL_NAME)));
        assert!(!is_valid_tool_name(&"x".repeat(MAX_TOOL_NAME + 1)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("a.b"));
        assert!(!is_valid_tool_name("wetter-ä"));
    }
}
