//! `toolcell keygen`, `sign` and `verify`, and a trust policy that refuses unsigned
//! plugins.

use std::fs;

use crate::support::*;

#[test]
fn keygen_sign_and_verify_and_a_trust_policy_that_refuses_unsigned_plugins() {
    let (dir, wasm) = packed_plugin("greeter", GREETER);
    let key = dir.path().join("key.pem");
    let generated = toolcell_run(&["keygen", "-o", path_str(&key)]);
    assert_eq!(generated.code, Some(0), "{generated}");
    let public = generated.stdout.trim().to_string();
    assert_eq!(public.len(), 44, "a base64 Ed25519 key{generated}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&key)
            .expect("the key exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the secret key is private");
    }
    let again = toolcell_run(&["keygen", "-o", path_str(&key)]);
    assert!(again.usage_error().contains("never overwrites"), "{again}");

    let unsigned = dir.path().join("unsigned").join("greeter.wasm");
    fs::create_dir_all(unsigned.parent().expect("a parent")).expect("mkdir");
    fs::copy(&wasm, &unsigned).expect("copy");
    let signed = toolcell_run(&["sign", "--key", path_str(&key), path_str(&wasm)]);
    assert_eq!(
        signed.stdout,
        format!("signed {} with key {public}\n", wasm.display()),
        "{signed}"
    );

    let verified = toolcell_run(&["verify", "--key", &public, path_str(&wasm)]);
    assert_eq!(verified.code, Some(0), "{verified}");
    assert!(
        verified.stdout.contains("signed by trusted key"),
        "{verified}"
    );
    let other = temp_dir();
    let other_key = other.path().join("other.pem");
    let other_public = toolcell_run(&["keygen", "-o", path_str(&other_key)]).stdout;
    let untrusted = toolcell_run(&["verify", "--key", other_public.trim(), path_str(&wasm)]);
    assert_eq!(untrusted.code, Some(1), "{untrusted}");
    assert!(untrusted.stdout.contains("not trusted"), "{untrusted}");
    let not_signed = toolcell_run(&["verify", "--key", &public, path_str(&unsigned)]);
    assert_eq!(not_signed.code, Some(1), "{not_signed}");
    assert!(not_signed.stdout.contains("not signed"), "{not_signed}");
    let no_keys = toolcell_run(&["verify", path_str(&wasm)]);
    assert!(
        no_keys.usage_error().contains("no trusted keys"),
        "{no_keys}"
    );

    let config = dir.path().join("trust.toml");
    write(
        &config,
        format!("[trust]\nkeys = [\"{public}\"]\nunsigned = \"refuse\"\n"),
    );
    let dist = wasm.parent().expect("dist");
    let trusted = run(toolcell()
        .args([
            "call",
            "--config",
            path_str(&config),
            "--plugins",
            path_str(dist),
        ])
        .args(["greet", r#"{"name":"signed"}"#]));
    trusted.assert_completed("Hello, signed!");
    let refused = run(toolcell()
        .args(["call", "--config", path_str(&config), "--plugins"])
        .arg(unsigned.parent().expect("dir"))
        .args(["greet", "{}"]));
    assert_eq!(refused.code, Some(2), "{refused}");
    refused.assert_stderr_line(&["greeter.wasm", "was refused", "not signed"]);
}
