//! `.wasm` artifacts through real sandboxes: manifests carried inside, digest pins,
//! Ed25519 signatures and the trust policy, and WIT versions, with real components
//! (packed Lua plugins, Rust plugins built during the run against other versions of
//! the WIT package, and a Lua plugin packed by toolcell 0.1, `tests/compat/`).

use toolcell::artifact::Artifact;
use toolcell::cache::sha256_hex;
use toolcell::files::FileAccess;
use toolcell::integrity::Pins;
use toolcell::manifest::{Capabilities, MANIFEST_SECTION, Manifest};
use toolcell::pack;
use toolcell::signature::{self, SecretKey, TrustPolicy, UnsignedPolicy};
use toolcell::wit_version::WIT_VERSION;
use toolcell::{CallOutcome, DiagnosticKind, Severity};
use toolcell_tests::{Fixture, assert_contains, call, failure, guest_build, output};

const HELLO: &str = r#"clm.tool_register("hello", { invoke = function(args, ctx)
  ctx:complete("Hello, " .. tostring(args.name) .. "!")
end })
clm.tool_register("write", { invoke = function(args, ctx)
  local ok, err = clm.write_file("out.txt", "x")
  if not ok then return ctx:fail(err) end
  ctx:complete("written")
end })"#;

fn manifest(id: &str, capabilities: Capabilities) -> Manifest {
    Manifest {
        version: semver::Version::new(1, 0, 0),
        description: format!("the {id} plugin"),
        capabilities,
        ..Manifest::clm_default(id)
    }
}

fn packed(id: &str) -> Vec<u8> {
    pack::pack_lua(HELLO.as_bytes(), &Manifest::clm_default(id)).expect("packs")
}

/// A fixture holding `files` as raw bytes.
fn fixture_with(files: &[(&str, &[u8])]) -> Fixture {
    let fixture = Fixture::new(&[]);
    for (name, bytes) in files {
        std::fs::write(fixture.plugin_dir().join(name), bytes).expect("write");
    }
    fixture
}

#[tokio::test]
async fn a_packed_plugin_carries_its_manifest_and_the_host_enforces_it() {
    let asks = manifest(
        "greeter",
        Capabilities {
            files: FileAccess::ReadOnly,
            ..Capabilities::default()
        },
    );
    let bytes = pack::pack_lua(HELLO.as_bytes(), &asks).expect("packs");
    // The id comes from the manifest inside, and the file must be named after it.
    let misnamed = fixture_with(&[("dist-build-7.wasm", &bytes)]);
    let runtime = misnamed.load().await;
    let refusals: Vec<(DiagnosticKind, &str)> = runtime
        .diagnostics()
        .iter()
        .map(|diagnostic| (diagnostic.kind, diagnostic.message.as_str()))
        .collect();
    assert_eq!(
        refusals,
        [(
            DiagnosticKind::IdMismatch,
            "plugin dist-build-7.wasm was refused: its manifest claims the id 'greeter', which \
             is not its file's: a .wasm plugin is named after its id, as `toolcell install` \
             writes it (greeter.wasm)"
        )]
    );
    let fixture = fixture_with(&[("greeter.wasm", &bytes)]);
    let runtime = fixture.load().await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(runtime.plugins()[0].manifest, asks);
    assert_eq!(
        runtime.tool("hello").map(|t| t.plugin.as_str()),
        Some("greeter")
    );
    assert_eq!(
        output(&runtime, "hello", r#"{"name":"wasm"}"#).await,
        "Hello, wasm!"
    );
    assert_contains(
        &failure(&runtime, "write", "{}").await,
        &["plugin 'greeter' may only read files"],
    );
}

/// Loading, `inspect` and `pack` take a `.lua` file's manifest from one definition: a
/// file name that is not an id (`Hello.lua`) gives the same id everywhere, one that
/// `pack` can embed and a packed plugin's loader accepts.
#[tokio::test]
async fn a_lua_file_named_unlike_an_id_has_one_id_when_loaded_inspected_and_packed() {
    let fixture = Fixture::new(&[]);
    fixture.add_plugin("Hello World.lua", HELLO);
    let script = fixture.plugin_dir().join("Hello World.lua");

    let runtime = fixture.load().await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(runtime.plugins()[0].manifest.id, "hello_world");

    let engine = toolcell_tests::engine();
    let report = toolcell::inspect::inspect(&script, &engine)
        .await
        .expect("inspects");
    assert_eq!(
        report
            .manifest
            .as_ref()
            .map(|manifest| manifest.id.as_str()),
        Ok("hello_world")
    );
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);

    let packed = pack::pack_file(&script, None).expect("packs");
    assert_eq!(packed.manifest.id, "hello_world");
    let diagnostics = pack::check(&packed.bytes, "hello_world.wasm", &engine)
        .await
        .expect("checks");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let packed_fixture = fixture_with(&[("hello_world.wasm", &packed.bytes)]);
    let runtime = packed_fixture.load().await;
    assert_eq!(runtime.plugins()[0].manifest.id, "hello_world");
}

#[tokio::test]
async fn a_wasm_without_a_usable_manifest_is_refused() {
    let bytes = packed("hello");
    let artifact = Artifact::parse(&bytes).expect("parses");
    let stripped = artifact.rewrite(&[MANIFEST_SECTION], &[]);
    let broken = artifact.rewrite(&[MANIFEST_SECTION], &[(MANIFEST_SECTION, b"id = 5")]);
    let fixture = fixture_with(&[
        ("a_stripped.wasm", &stripped),
        ("b_broken.wasm", &broken),
        ("c_junk.wasm", b"\0asm not a component"),
    ]);
    let runtime = fixture.load().await;
    let kinds: Vec<_> = runtime.diagnostics().iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        [
            DiagnosticKind::ManifestMissing,
            DiagnosticKind::ManifestInvalid,
            DiagnosticKind::LoadFailed
        ]
    );
    assert_contains(
        &runtime.diagnostics()[0].message,
        &["a_stripped.wasm", "carries no manifest", "toolcell pack"],
    );
    assert_contains(
        &runtime.diagnostics()[1].message,
        &["b_broken.wasm", "manifest"],
    );
    assert!(runtime.tools().is_empty());
}

#[tokio::test]
async fn pinned_digests_admit_only_the_files_they_name() {
    let bytes = packed("hello");
    let digest = sha256_hex(&bytes);
    let fixture = fixture_with(&[("hello.wasm", &bytes)]);

    let mut pins = Pins::default();
    pins.require(&digest).expect("a digest");
    let runtime = fixture.load_with(|builder| builder.pins(pins)).await;
    assert_eq!(
        output(&runtime, "hello", r#"{"name":"pinned"}"#).await,
        "Hello, pinned!"
    );

    let mut pins = Pins::default();
    pins.require(&"0".repeat(64)).expect("a digest");
    let runtime = fixture.load_with(|builder| builder.pins(pins)).await;
    let refusal = &runtime.diagnostics()[0];
    assert_eq!(
        (refusal.kind, refusal.severity),
        (DiagnosticKind::DigestMismatch, Severity::Error)
    );
    assert_contains(&refusal.message, &["hello.wasm", &digest]);
    assert!(runtime.tools().is_empty());
}

#[tokio::test]
async fn a_lock_file_pins_every_plugin_file_and_its_sidecar() {
    let bytes = packed("hello");
    let fixture = fixture_with(&[("hello.wasm", &bytes)]);
    fixture.add_plugin(
        "notes.lua",
        &HELLO
            .replace("\"hello\"", "\"notes_hello\"")
            .replace("\"write\"", "\"notes_write\""),
    );
    fixture.add_plugin("notes.lua.toml", "[capabilities]\nfiles = \"read-only\"\n");
    let dir = fixture.plugin_dir();
    let lock = dir.join("toolcell.lock");
    let digest_of = |name: &str| sha256_hex(&std::fs::read(dir.join(name)).expect("read"));
    std::fs::write(
        &lock,
        format!(
            "{}  hello.wasm\n{}  notes.lua\n{}  notes.lua.toml\n",
            digest_of("hello.wasm"),
            digest_of("notes.lua"),
            digest_of("notes.lua.toml")
        ),
    )
    .expect("write the lock");
    let pinned = || {
        let mut pins = Pins::default();
        pins.load_lock(&lock).expect("the lock parses");
        pins
    };
    let runtime = fixture.load_with(|builder| builder.pins(pinned())).await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(runtime.plugins().len(), 2);

    // Changing the sidecar (asking for more) refuses its plugin; the other still loads.
    fixture.add_plugin("notes.lua.toml", "[capabilities]\nfiles = \"read-write\"\n");
    // A file the lock does not list is refused too.
    std::fs::write(dir.join("extra.wasm"), packed("extra")).expect("write");
    let runtime = fixture.load_with(|builder| builder.pins(pinned())).await;
    let refusals: Vec<_> = runtime
        .diagnostics()
        .iter()
        .map(|d| (d.kind, d.message.clone()))
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert_eq!(refusals[0].0, DiagnosticKind::DigestMismatch);
    assert_contains(&refusals[0].1, &["extra.wasm", "not listed"]);
    assert_eq!(refusals[1].0, DiagnosticKind::DigestMismatch);
    assert_contains(&refusals[1].1, &["notes.lua.toml", "pins"]);
    assert_eq!(
        output(&runtime, "hello", r#"{"name":"locked"}"#).await,
        "Hello, locked!"
    );
}

fn trusting(key: &SecretKey, unsigned: UnsignedPolicy) -> TrustPolicy {
    TrustPolicy {
        keys: vec![key.public()],
        unsigned,
    }
}

fn sign(bytes: &[u8], key: &SecretKey) -> Vec<u8> {
    signature::sign(&Artifact::parse(bytes).expect("parses"), key)
}

#[tokio::test]
async fn the_trust_policy_admits_signed_plugins_and_refuses_the_rest_when_asked() {
    let (trusted, stranger) = (SecretKey::generate(), SecretKey::generate());
    let fixture = fixture_with(&[
        ("a-trusted.wasm", &sign(&packed("a-trusted"), &trusted)),
        ("b-stranger.wasm", &sign(&packed("b-stranger"), &stranger)),
        ("c-unsigned.wasm", &packed("c-unsigned")),
    ]);
    fixture.add_plugin("d_script.lua", &HELLO.replace("hello", "script_hello"));

    // Refusing unsigned plugins: only the trusted signature loads.
    let runtime = fixture
        .load_with(|builder| builder.trust(trusting(&trusted, UnsignedPolicy::Refuse)))
        .await;
    let kinds: Vec<_> = runtime.diagnostics().iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        [
            DiagnosticKind::SignatureUntrusted,
            DiagnosticKind::SignatureMissing,
            DiagnosticKind::SignatureMissing,
        ]
    );
    assert!(
        runtime
            .diagnostics()
            .iter()
            .all(|d| d.severity == Severity::Error)
    );
    assert_contains(
        &runtime.diagnostics()[0].message,
        &["b-stranger.wasm", &stranger.public().to_string()],
    );
    assert_contains(
        &runtime.diagnostics()[2].message,
        &["d_script.lua", "toolcell pack"],
    );
    assert_eq!(runtime.plugins().len(), 1);
    assert_eq!(runtime.plugins()[0].manifest.id, "a-trusted");

    // Allowing them: everything loads; the unknown signer is a warning.
    let runtime = fixture
        .load_with(|builder| builder.trust(trusting(&trusted, UnsignedPolicy::Allow)))
        .await;
    assert_eq!(runtime.plugins().len(), 4, "{:?}", runtime.diagnostics());
    let warning = &runtime.diagnostics()[0];
    assert_eq!(
        (warning.kind, warning.severity),
        (DiagnosticKind::SignatureUntrusted, Severity::Warning)
    );
}

#[tokio::test]
async fn a_changed_artifact_fails_its_signature_whatever_the_policy() {
    let key = SecretKey::generate();
    let signed = sign(&packed("hello"), &key);
    // Swap the script for another of the same length: still a valid component.
    let artifact = Artifact::parse(&signed).expect("parses");
    let script = artifact
        .script()
        .expect("one script")
        .expect("a script")
        .to_vec();
    let evil = String::from_utf8(script.clone())
        .expect("text")
        .replace("Hello, ", "Owned, ");
    let mut tampered = signed.clone();
    let at = tampered
        .windows(script.len())
        .position(|window| window == script.as_slice())
        .expect("the script is in the file");
    tampered[at..at + script.len()].copy_from_slice(evil.as_bytes());
    let fixture = fixture_with(&[("hello.wasm", &tampered)]);
    let runtime = fixture
        .load_with(|builder| builder.trust(TrustPolicy::default()))
        .await;
    let refusal = &runtime.diagnostics()[0];
    assert_eq!(refusal.kind, DiagnosticKind::SignatureInvalid);
    assert_contains(&refusal.message, &["changed after signing"]);
    assert!(runtime.tools().is_empty());
    // The signature section itself survives the edit untouched.
    let kept = Artifact::parse(&tampered).expect("parses");
    assert_eq!(kept.signatures().len(), 1);
    assert!(String::from_utf8_lossy(kept.signatures()[0]).contains("ed25519"));
}

/// A version guest, packed with a manifest as `toolcell pack --manifest` would.
fn version_plugin(version: &str) -> Vec<u8> {
    let built =
        std::fs::read(guest_build::wit_version_guest(version)).expect("the guest was built");
    let artifact = Artifact::parse(&built).expect("a component");
    let id = format!("built-for-{}", version.replace('.', "-"));
    let text = manifest(&id, Capabilities::default()).to_toml();
    artifact.rewrite(&[MANIFEST_SECTION], &[(MANIFEST_SECTION, text.as_bytes())])
}

#[tokio::test]
async fn plugins_built_for_this_wit_version_and_for_0_2_and_0_1_load() {
    assert_eq!(
        WIT_VERSION, "0.3.0",
        "update the versions this test builds against"
    );
    // 0.1.x and 0.2.0 run through the frozen worlds the host still links.
    for version in ["0.1.0", "0.1.2", "0.2.0", "0.3.0"] {
        let file = format!("built-for-{}.wasm", version.replace('.', "-"));
        let fixture = fixture_with(&[(&file, &version_plugin(version))]);
        let runtime = fixture.load().await;
        assert!(
            runtime.diagnostics().is_empty(),
            "{version}: {:?}",
            runtime.diagnostics()
        );
        assert_eq!(
            output(&runtime, "versioned", "{}").await,
            format!("built for {version}")
        );
    }
}

/// A Lua plugin packed by toolcell 0.1 (`tests/compat/lua-0.1.1.lua`): the Lua guest
/// of `toolcell:plugin@0.1.1` with the script and a manifest, as such files exist.
const PACKED_FOR_0_1_1: &[u8] = include_bytes!("../compat/lua-0.1.1.wasm");

#[tokio::test]
async fn a_lua_plugin_packed_with_the_0_1_guest_keeps_running_with_typed_outcomes() {
    let artifact = Artifact::parse(PACKED_FOR_0_1_1).expect("parses");
    assert_eq!(
        artifact.wit_version().map(|version| version.to_string()),
        Ok("0.1.1".to_string())
    );
    let fixture = fixture_with(&[("legacy.wasm", PACKED_FOR_0_1_1)]);
    let runtime = fixture.load().await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(
        output(&runtime, "legacy_hello", "{}").await,
        "hello from the 0.1.1 guest"
    );
    // A step after a wait: the timer's outcome reaches the 0.1 guest.
    assert_eq!(output(&runtime, "legacy_nap", "{}").await, "rested");
    assert_eq!(
        call(&runtime, "legacy_fail", "{}").await,
        CallOutcome::Failed("refused by the tool".to_string())
    );
    // The 0.1 world can only say "out of memory" in words: the host reads them.
    assert_eq!(
        call(&runtime, "legacy_hog", "{}").await,
        CallOutcome::OutOfMemory(
            "out of memory: the plugin reached its memory limit of 8 MiB".to_string()
        )
    );
    assert_eq!(output(&runtime, "legacy_nap", "{}").await, "rested");
}

#[tokio::test]
async fn a_plugin_built_for_an_incompatible_wit_version_is_refused_naming_both() {
    let fixture = fixture_with(&[
        ("a_next_minor.wasm", &version_plugin("0.4.0")),
        ("b_newer_patch.wasm", &version_plugin("0.3.1")),
    ]);
    let runtime = fixture.load().await;
    let refusals = runtime.diagnostics();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(
        refusals
            .iter()
            .all(|d| d.kind == DiagnosticKind::WitMismatch)
    );
    assert_contains(
        &refusals[0].message,
        &[
            "a_next_minor.wasm",
            "toolcell:plugin@0.4.0",
            &format!("toolcell:plugin@{WIT_VERSION}"),
        ],
    );
    assert_contains(
        &refusals[1].message,
        &["b_newer_patch.wasm", "toolcell:plugin@0.3.1", "newer"],
    );
    assert!(runtime.tools().is_empty());
}

#[test]
fn pack_refuses_a_component_this_toolcell_cannot_load() {
    let built = std::fs::read(guest_build::wit_version_guest("0.4.0")).expect("built");
    let error =
        pack::with_manifest(&built, &manifest("x", Capabilities::default())).expect_err("refused");
    assert_contains(&error.0, &["toolcell:plugin@0.4.0", WIT_VERSION]);
}

#[tokio::test]
async fn a_packed_lua_plugin_from_another_toolcell_build_prepares_its_own_runtime() {
    // Another build's Lua runtime differs in its bytes (here: one more custom section),
    // so it is compiled as a component of its own, without this toolcell's snapshot of
    // the prepared runtime: it builds its Lua state in `load`.
    let ours = packed("elsewhere");
    let theirs = Artifact::parse(&ours)
        .expect("parses")
        .rewrite(&[], &[("built-elsewhere", b"another toolcell build")]);
    assert_ne!(
        Artifact::parse(&theirs).expect("parses").code(),
        Artifact::parse(&ours).expect("parses").code()
    );
    let fixture = fixture_with(&[("elsewhere.wasm", &theirs)]);
    let runtime = fixture.load().await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(
        output(&runtime, "hello", r#"{"name":"there"}"#).await,
        "Hello, there!"
    );
    assert_eq!(output(&runtime, "write", "{}").await, "written");
}
