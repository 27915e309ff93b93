//! `toolcell push`, `pull` and `install` against a real OCI registry: Debian's
//! `docker-registry` (the reference implementation, distribution 2.8), started by each
//! test on 127.0.0.1 with its own storage. tools/bootstrap installs it; where it is
//! missing, these tests say so on stderr and pass without running.
//!
//! What the registry stores is read back through its own HTTP API (the manifest, the
//! config blob, the layer), and an artifact written by hand in the layout other tools
//! of the ecosystem write is pulled by toolcell.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

#[path = "common/run.rs"]
mod run;
use run::Run;

const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");
const REGISTRY_BINARY: &str = "/usr/bin/docker-registry";
const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

// ---------------------------------------------------------------------------------
// The registry
// ---------------------------------------------------------------------------------

/// A `docker-registry` on 127.0.0.1, stopped when dropped.
struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    address: String,
    /// Its storage directory (the filesystem driver's root).
    storage: PathBuf,
    /// `user:password` when it requires them.
    login: Option<(String, String)>,
    _dir: TempDir,
}

impl Registry {
    /// Starts a registry, or returns None (with a message) if it is not installed.
    fn start() -> Option<Registry> {
        Self::start_with(None)
    }

    /// Starts a registry that accepts only `user`:`password` (htpasswd, bcrypt).
    fn start_with(login: Option<(&str, &str)>) -> Option<Registry> {
        if !Path::new(REGISTRY_BINARY).exists() {
            eprintln!(
                "SKIPPED: {REGISTRY_BINARY} is not installed (Debian's docker-registry \
                 package; tools/bootstrap installs it), so the registry tests did not run"
            );
            return None;
        }
        let dir = TempDir::new().expect("temp dir");
        let storage = dir.path().join("storage");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let address = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: {address}\n",
            storage.display()
        );
        if let Some((user, password)) = login {
            let hash = bcrypt::hash(password, 4).expect("bcrypt");
            let htpasswd = dir.path().join("htpasswd");
            fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("write htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: toolcell-tests\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        fs::write(&config_path, config).expect("write the registry config");
        let child = Command::new(REGISTRY_BINARY)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        let registry = Registry {
            child,
            address,
            storage,
            login: login.map(|(user, password)| (user.to_string(), password.to_string())),
            _dir: dir,
        };
        let started = Instant::now();
        while registry.get("/v2/", "*/*").0 == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "docker-registry did not answer on {} within 20 s",
                registry.address
            );
            thread::sleep(Duration::from_millis(50));
        }
        Some(registry)
    }

    /// GETs `path` from the registry's HTTP API: (status, Docker-Content-Digest, body);
    /// status 0 when it cannot be reached.
    fn get(&self, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
        let url = format!("http://{}{path}", self.address);
        let login = self.login.clone();
        let accept = accept.to_string();
        block_on(async move {
            let mut request = reqwest::Client::new().get(&url).header("Accept", accept);
            if let Some((user, password)) = login {
                request = request.basic_auth(user, Some(password));
            }
            let Ok(response) = request.send().await else {
                return (0, String::new(), Vec::new());
            };
            let status = response.status().as_u16();
            let digest = response
                .headers()
                .get("Docker-Content-Digest")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let body = response
                .bytes()
                .await
                .map(|b| b.to_vec())
                .unwrap_or_default();
            (status, digest, body)
        })
    }

    /// GETs a JSON document from the registry's HTTP API.
    fn get_json(&self, path: &str, accept: &str) -> (String, Value) {
        let (status, digest, body) = self.get(path, accept);
        assert_eq!(
            status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&body)
        );
        let value = serde_json::from_slice(&body).expect("a JSON document");
        (digest, value)
    }

    /// Uploads a blob (a session, then one PUT with the content) and returns its digest.
    fn put_blob(&self, repository: &str, data: &[u8]) -> String {
        let digest = sha256_digest(data);
        let start = format!("http://{}/v2/{repository}/blobs/uploads/", self.address);
        let (address, data, query_digest) = (self.address.clone(), data.to_vec(), digest.clone());
        let status = block_on(async move {
            let client = reqwest::Client::new();
            let session = client.post(&start).send().await.expect("start an upload");
            assert_eq!(session.status().as_u16(), 202, "an upload session starts");
            let location = session
                .headers()
                .get("Location")
                .and_then(|value| value.to_str().ok())
                .expect("the upload's Location")
                .to_string();
            let mut url = if location.starts_with('/') {
                format!("http://{address}{location}")
            } else {
                location
            };
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&format!("digest={query_digest}"));
            client
                .put(&url)
                .header("Content-Type", "application/octet-stream")
                .body(data)
                .send()
                .await
                .map(|response| response.status().as_u16())
                .unwrap_or(0)
        });
        assert_eq!(status, 201, "the blob upload completes");
        digest
    }

    /// Puts a manifest under `tag`.
    fn put_manifest(&self, repository: &str, tag: &str, manifest: &Value) {
        let url = format!("http://{}/v2/{repository}/manifests/{tag}", self.address);
        let body = serde_json::to_vec(manifest).expect("JSON");
        let status = block_on(async move {
            reqwest::Client::new()
                .put(&url)
                .header("Content-Type", MANIFEST_TYPE)
                .body(body)
                .send()
                .await
                .map(|response| response.status().as_u16())
                .unwrap_or(0)
        });
        assert_eq!(status, 201, "the manifest is accepted");
    }

    /// Where the filesystem driver keeps the content of blob `digest`.
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    fn reference(&self, repository_and_tag: &str) -> String {
        format!("{}/{repository_and_tag}", self.address)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn sha256_digest(data: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(data))
}

// ---------------------------------------------------------------------------------
// Running toolcell
// ---------------------------------------------------------------------------------

/// A workspace for one test: a HOME with no Docker config, and files.
struct Work {
    dir: TempDir,
}

impl Work {
    fn new() -> Work {
        Work {
            dir: TempDir::new().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `toolcell ARGS` with HOME in the workspace and no credentials in the
    /// environment, plus `env`.
    fn toolcell(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(TOOLCELL);
        command
            .args(args)
            .env("HOME", self.dir.path())
            .env(
                "TOOLCELL_CACHE_DIR",
                std::env::temp_dir().join("toolcell-test-cache"),
            )
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for name in [
            "DOCKER_CONFIG",
            "TOOLCELL_REGISTRY_USERNAME",
            "TOOLCELL_REGISTRY_PASSWORD",
            "RUST_LOG",
            "TOOLCELL_DEBUG_LOG",
            "CLM_DEBUG_LOG",
        ] {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().expect("run toolcell");
        Run::from(output)
    }

    fn ok(&self, args: &[&str]) -> Run {
        let run = self.toolcell(args, &[]);
        assert_eq!(run.code, Some(0), "toolcell {args:?} must succeed{run}");
        run
    }

    /// A new signing key; returns (its file, its public key).
    fn keygen(&self, name: &str) -> (PathBuf, String) {
        let key = self.path(&format!("{name}.pem"));
        let run = self.ok(&["keygen", "-o", path_str(&key)]);
        (key, run.stdout.trim().to_string())
    }

    /// `script` packed into `NAME.wasm` and, with `key`, signed.
    fn plugin(&self, name: &str, script: &str, key: Option<&Path>) -> PathBuf {
        let source = self.path(&format!("{name}.lua"));
        fs::write(&source, script).expect("write the script");
        let wasm = self.path(&format!("{name}.wasm"));
        self.ok(&["pack", path_str(&source), "-o", path_str(&wasm)]);
        if let Some(key) = key {
            self.ok(&["sign", "--key", path_str(key), path_str(&wasm)]);
        }
        wasm
    }

    /// A config file that trusts `keys` and refuses everything else.
    fn trust(&self, keys: &[&str]) -> PathBuf {
        let path = self.path("trust.toml");
        let keys: Vec<String> = keys.iter().map(|key| format!("{key:?}")).collect();
        fs::write(
            &path,
            format!(
                "[trust]\nkeys = [{}]\nunsigned = \"refuse\"\n",
                keys.join(", ")
            ),
        )
        .expect("write the config");
        path
    }
}

/// A plugin directory, its lock file and the trust configuration, as `install` and
/// `call` take them.
struct Target {
    plugins: PathBuf,
    lock: PathBuf,
    config: PathBuf,
}

impl Target {
    /// `COMMAND BEFORE... --plugins DIR --lock FILE --config FILE AFTER...`
    fn args<'a>(&'a self, command: &'a str, before: &[&'a str], after: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![command];
        args.extend_from_slice(before);
        args.extend([
            "--plugins",
            path_str(&self.plugins),
            "--lock",
            path_str(&self.lock),
            "--config",
            path_str(&self.config),
        ]);
        args.extend_from_slice(after);
        args
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp paths")
}

/// The pinned reference a push printed (`pushed FILE to REF@sha256:... (...)`).
fn pushed_reference(run: &Run) -> String {
    run.stdout
        .split_whitespace()
        .find(|word| word.contains("@sha256:"))
        .unwrap_or_else(|| panic!("push printed no pinned reference{run}"))
        .to_string()
}

/// A greeting plugin whose answer says which version it is.
fn versioned(version: &str) -> String {
    format!(
        r#"clm.tool_register("which", {{ description = "Which version am I", invoke = function(_, ctx)
  ctx:complete("{version}")
end }})"#
    )
}

// ---------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------

#[test]
fn a_plugin_goes_from_new_to_a_registry_and_back_verified_and_callable() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let work = Work::new();
    let (key, public) = work.keygen("author");
    // The project `toolcell new` writes, packed with its manifest and signed.
    work.ok(&["new", "hello"]);
    let wasm = work.path("hello.wasm");
    work.ok(&["pack", "hello/hello.lua", "-o", path_str(&wasm)]);
    work.ok(&["sign", "--key", path_str(&key), path_str(&wasm)]);
    let bytes = fs::read(&wasm).expect("the packed plugin");
    let reference = registry.reference("plugins/hello:1.0.0");

    let push = work.ok(&["push", path_str(&wasm), &reference]);
    let pinned = pushed_reference(&push);
    let digest = pinned.split_once('@').expect("pinned").1.to_string();
    assert_eq!(pinned, format!("{reference}@{digest}"), "{push}");

    // The registry holds the CNCF Wasm artifact layout, read through its own API.
    let (served_digest, manifest) =
        registry.get_json("/v2/plugins/hello/manifests/1.0.0", MANIFEST_TYPE);
    assert_eq!(
        served_digest, digest,
        "the printed digest is the manifest's"
    );
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(manifest["mediaType"], MANIFEST_TYPE);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "one component layer: {manifest}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(layers[0]["digest"], sha256_digest(&bytes));
    assert_eq!(layers[0]["size"], bytes.len());
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.title"],
        "hello"
    );
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.version"],
        "0.1.0"
    );
    let config_digest = manifest["config"]["digest"].as_str().expect("a digest");
    let (_, config) = registry.get_json(&format!("/v2/plugins/hello/blobs/{config_digest}"), "*/*");
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(config["layerDigests"], json!([sha256_digest(&bytes)]));
    let exports = config["component"]["exports"].as_array().expect("exports");
    assert!(
        exports.iter().any(|name| name
            .as_str()
            .is_some_and(|name| name.starts_with("toolcell:plugin/guest@"))),
        "the config lists the component's exports: {config}"
    );
    assert!(
        config["component"]["imports"]
            .as_array()
            .is_some_and(|imports| !imports.is_empty()),
        "{config}"
    );
    let created = config["created"].as_str().expect("created");
    assert!(humantime::parse_rfc3339(created).is_ok(), "{created}");
    let (status, _, layer) = registry.get(
        &format!("/v2/plugins/hello/blobs/{}", sha256_digest(&bytes)),
        "*/*",
    );
    assert_eq!(
        (status, layer == bytes),
        (200, true),
        "the layer is the file, byte for byte"
    );

    // Installed into another plugin directory, verified against the trust policy.
    let other = work.path("elsewhere");
    let target = Target {
        plugins: other.join("plugins"),
        lock: other.join("toolcell.lock"),
        config: work.trust(&[&public]),
    };
    let (plugins, lock) = (&target.plugins, &target.lock);
    let install = work.ok(&target.args("install", &[&reference], &[]));
    assert!(
        install
            .stdout
            .contains(&format!("signed by trusted key {public}")),
        "{install}"
    );
    assert_eq!(
        fs::read(plugins.join("hello.wasm")).expect("installed"),
        bytes
    );
    let lock_text = fs::read_to_string(lock).expect("the lock file");
    assert!(
        lock_text.contains(&format!(
            "#@ id=hello ref={reference} digest={digest} signer={public} file=hello.wasm\n{}  plugins/hello.wasm\n",
            sha256_hex(&bytes)
        )),
        "{lock_text}"
    );

    // ... and callable there, with the lock and the trust policy enforced.
    let call = work.ok(&target.args("call", &[], &["hello", r#"{"name":"registry"}"#]));
    assert_eq!(call.stdout, "Hello, registry!\n");

    // `pull` by digest writes the same file.
    let pulled = work.path("pulled");
    let pull = work.ok(&["pull", &pinned, "-o", path_str(&pulled)]);
    assert!(pull.stdout.contains("pulled hello 0.1.0"), "{pull}");
    assert_eq!(fs::read(pulled.join("hello.wasm")).expect("pulled"), bytes);
}

#[test]
fn install_without_a_reference_reinstalls_exactly_what_the_lock_records() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let work = Work::new();
    let (key, public) = work.keygen("team");
    let reference = registry.reference("team/which:stable");
    let v1 = work.plugin("which", &versioned("v1"), Some(&key));
    let v1_bytes = fs::read(&v1).expect("v1");
    work.ok(&["push", path_str(&v1), &reference]);
    let target = Target {
        plugins: work.path("plugins"),
        lock: work.path("toolcell.lock"),
        config: work.trust(&[&public]),
    };
    let (plugins, lock) = (&target.plugins, &target.lock);
    work.ok(&target.args("install", &[&reference], &[]));
    let lock_before = fs::read(lock).expect("the lock");

    // The tag moves on to another build; the installed file is damaged.
    let v2 = work.plugin("which", &versioned("v2"), Some(&key));
    work.ok(&["push", path_str(&v2), &reference]);
    fs::write(plugins.join("which.wasm"), b"damaged").expect("damage the file");
    let refused = work.toolcell(
        &[
            "call",
            "--plugins",
            path_str(plugins),
            "--lock",
            path_str(lock),
            "which",
        ],
        &[],
    );
    assert_ne!(
        refused.code,
        Some(0),
        "the lock refuses the damaged file{refused}"
    );

    let again = work.ok(&target.args("install", &[], &[]));
    assert!(again.stdout.contains("installed which 0.0.0"), "{again}");
    assert_eq!(
        fs::read(plugins.join("which.wasm")).expect("reinstalled"),
        v1_bytes,
        "the locked digest, not the tag's newer build"
    );
    assert_eq!(
        fs::read(lock).expect("the lock"),
        lock_before,
        "the lock is unchanged"
    );
    let call = work.ok(&target.args("call", &[], &["which"]));
    assert_eq!(call.stdout, "v1\n");
}

#[test]
fn a_lock_file_cannot_make_install_write_outside_the_plugin_directory() {
    // Issue 33, reproduction 5: a committed lock file's records named where to write.
    // No registry is needed: the lock is refused before anything is pulled.
    let work = Work::new();
    let home = work.path("home");
    fs::create_dir(&home).expect("home");
    fs::write(home.join(".bashrc"), "# mine\n").expect("bashrc");
    let target = Target {
        plugins: work.path("plugins"),
        lock: work.path("team.lock"),
        config: work.trust(&[]),
    };
    let digest = format!("sha256:{}", "0".repeat(64));
    let outside = home.join("evil.wasm");
    for file in ["../home/.bashrc", path_str(&outside), "sub/x.wasm", ".."] {
        fs::write(
            &target.lock,
            format!(
                "# committed by someone else\n#@ id=x ref=127.0.0.1:1/x/y:1 digest={digest} signer=none file={file}\n{}  {file}\n",
                "0".repeat(64)
            ),
        )
        .expect("write the lock");
        let run = work.toolcell(&target.args("install", &[], &[]), &[]);
        assert_eq!(run.code, Some(2), "{run}");
        assert!(
            run.stderr.contains("team.lock:2: ")
                && run
                    .stderr
                    .contains(&format!("file={file} is not a plain file name")),
            "{run}"
        );
        assert_eq!(
            fs::read_to_string(home.join(".bashrc")).expect("bashrc"),
            "# mine\n"
        );
        assert!(!outside.exists() && !target.plugins.exists(), "{run}");
    }
}

#[test]
fn untrusted_tampered_and_corrupted_artifacts_are_refused_before_anything_is_written() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let work = Work::new();
    let (trusted_key, trusted) = work.keygen("trusted");
    let (stranger_key, _) = work.keygen("stranger");
    let target = Target {
        plugins: work.path("plugins"),
        lock: work.path("toolcell.lock"),
        config: work.trust(&[&trusted]),
    };
    let (plugins, lock) = (&target.plugins, &target.lock);
    let install = |reference: &str| work.toolcell(&target.args("install", &[reference], &[]), &[]);
    let assert_nothing_written = |run: &Run| {
        assert_eq!(run.code, Some(1), "{run}");
        assert!(
            fs::read_dir(plugins).map_or(true, |mut entries| entries.next().is_none()),
            "nothing was written to the plugin directory{run}"
        );
        assert!(!lock.exists(), "no lock file was written{run}");
    };

    // Signed by a key the policy does not trust.
    let stranger = work.plugin("greeter", &versioned("stranger"), Some(&stranger_key));
    let reference = registry.reference("plugins/greeter:stranger");
    work.ok(&["push", path_str(&stranger), &reference]);
    let run = install(&reference);
    assert_nothing_written(&run);
    assert!(
        run.stderr
            .contains("refused (signature_untrusted), nothing was written"),
        "{run}"
    );

    // Changed after it was signed by the trusted key.
    let signed = work.plugin("greeter", &versioned("original"), Some(&trusted_key));
    let mut tampered = fs::read(&signed).expect("signed");
    let at = tampered
        .windows(8)
        .position(|window| window == b"original")
        .expect("the script is in the artifact");
    tampered[at..at + 8].copy_from_slice(b"tampered");
    let tampered_file = work.path("tampered.wasm");
    fs::write(&tampered_file, &tampered).expect("write");
    let reference = registry.reference("plugins/greeter:tampered");
    work.ok(&["push", path_str(&tampered_file), &reference]);
    let run = install(&reference);
    assert_nothing_written(&run);
    assert!(
        run.stderr
            .contains("refused (signature_invalid), nothing was written")
            && run.stderr.contains("changed after signing"),
        "{run}"
    );

    // Corrupted in the registry's storage: the bytes no longer match the digest.
    let reference = registry.reference("plugins/greeter:good");
    work.ok(&["push", path_str(&signed), &reference]);
    let layer = registry.blob_file(&sha256_digest(&fs::read(&signed).expect("signed")));
    let mut stored = fs::read(&layer).expect("the stored layer");
    let last = stored.len() - 1;
    stored[last] ^= 0xff;
    fs::write(&layer, &stored).expect("corrupt the stored layer");
    let run = install(&reference);
    assert_nothing_written(&run);
    assert!(
        run.stderr.contains("digest"),
        "the error names the digest{run}"
    );
}

#[test]
fn credentials_come_from_the_docker_config_or_the_environment_and_are_never_printed() {
    let password = "pw-5f2a9c1e7b";
    let Some(registry) = Registry::start_with(Some(("toolcell", password))) else {
        return;
    };
    let work = Work::new();
    let wasm = work.plugin("greeter", &versioned("private"), None);
    let reference = registry.reference("private/greeter:1");
    let never_shown = |run: &Run| {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("toolcell:{password}"));
        assert!(
            !run.stdout.contains(password)
                && !run.stderr.contains(password)
                && !run.stderr.contains(&auth),
            "a credential was printed{run}"
        );
    };

    let anonymous = work.toolcell(&["push", path_str(&wasm), &reference], &[]);
    assert_eq!(
        anonymous.code,
        Some(1),
        "the registry wants a login{anonymous}"
    );
    assert!(anonymous.stderr.contains(&reference), "{anonymous}");

    // ~/.docker/config.json, `auths` with base64 `user:password`, as `docker login` writes.
    let docker = work.path(".docker");
    fs::create_dir_all(&docker).expect("mkdir");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("toolcell:{password}"));
    fs::write(
        docker.join("config.json"),
        json!({ "auths": { registry.address.clone(): { "auth": auth } } }).to_string(),
    )
    .expect("write the Docker config");
    let push = work.toolcell(&["-vv", "push", path_str(&wasm), &reference], &[]);
    assert_eq!(push.code, Some(0), "{push}");
    never_shown(&push);
    assert!(
        push.stderr.contains("credentials from") && push.stderr.contains("config.json"),
        "-v says where the credentials came from{push}"
    );
    fs::remove_file(docker.join("config.json")).expect("remove the Docker config");

    // The environment, for CI.
    let pulled = work.path("pulled");
    let env = [
        ("TOOLCELL_REGISTRY_USERNAME", "toolcell"),
        ("TOOLCELL_REGISTRY_PASSWORD", password),
    ];
    let pull = work.toolcell(&["-vv", "pull", &reference, "-o", path_str(&pulled)], &env);
    assert_eq!(pull.code, Some(0), "{pull}");
    never_shown(&pull);
    assert_eq!(
        fs::read(pulled.join("greeter.wasm")).expect("pulled"),
        fs::read(&wasm).expect("pushed")
    );

    let wrong = [
        ("TOOLCELL_REGISTRY_USERNAME", "toolcell"),
        ("TOOLCELL_REGISTRY_PASSWORD", "wrong-password-93"),
    ];
    let run = work.toolcell(
        &["-vv", "pull", &reference, "-o", path_str(&pulled)],
        &wrong,
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert!(!run.stderr.contains("wrong-password-93"), "{run}");
}

#[test]
fn an_artifact_in_the_ecosystem_layout_pulls_and_other_artifacts_are_refused() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let work = Work::new();
    let wasm = work.plugin("greeter", &versioned("by hand"), None);
    let bytes = fs::read(&wasm).expect("the plugin");

    // As wkg (oci-wasm) writes it: a null author and target, no annotations.
    let layer = registry.put_blob("other/greeter", &bytes);
    let config = serde_json::to_vec(&json!({
        "created": "2025-01-01T00:00:00Z",
        "author": null,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer],
        "component": { "exports": ["toolcell:plugin/guest@0.2.0"], "imports": [], "target": null }
    }))
    .expect("JSON");
    let config_digest = registry.put_blob("other/greeter", &config);
    registry.put_manifest(
        "other/greeter",
        "1",
        &json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len() },
            "layers": [{ "mediaType": "application/wasm", "digest": layer, "size": bytes.len() }]
        }),
    );
    let pulled = work.path("pulled");
    work.ok(&[
        "pull",
        &registry.reference("other/greeter:1"),
        "-o",
        path_str(&pulled),
    ]);
    assert_eq!(
        fs::read(pulled.join("greeter.wasm")).expect("pulled"),
        bytes
    );

    // A container image is not a plugin.
    let image_config = registry.put_blob("other/image", b"{}");
    let tar = registry.put_blob("other/image", b"not a tar, never read");
    registry.put_manifest(
        "other/image",
        "1",
        &json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": { "mediaType": "application/vnd.oci.image.config.v1+json", "digest": image_config, "size": 2 },
            "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": tar, "size": 21 }]
        }),
    );
    let elsewhere = work.path("elsewhere");
    let run = work.toolcell(
        &[
            "pull",
            &registry.reference("other/image:1"),
            "-o",
            path_str(&elsewhere),
        ],
        &[],
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert!(run.stderr.contains("it is not a Wasm artifact"), "{run}");
    assert!(!elsewhere.join("greeter.wasm").exists());

    // A plugin larger than --max-artifact-bytes is refused before it is downloaded.
    let run = work.toolcell(
        &[
            "pull",
            &registry.reference("other/greeter:1"),
            "-o",
            path_str(&elsewhere),
            "--max-artifact-bytes",
            "1000",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stderr.contains("more than the limit of 1000 bytes"),
        "{run}"
    );
}
