//! Registry credentials, from the environment or the Docker config file. They are
//! handed to the OCI client and never logged or put in an error message.
//!
//! In order:
//! 1. `TOOLCELL_REGISTRY_USERNAME` and `TOOLCELL_REGISTRY_PASSWORD`, for every
//!    registry the command contacts (CI jobs);
//! 2. the Docker config file, `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`:
//!    its `credHelpers` and `credsStore` (a `docker-credential-NAME` program), or the
//!    registry's `auths` entry (`auth`, base64 of `USER:PASSWORD`, or `username` and
//!    `password`);
//! 3. otherwise anonymous access.

use std::path::PathBuf;

use docker_credential::{CredentialRetrievalError, DockerCredential};
use oci_client::secrets::RegistryAuth;

use super::DistributionError;

/// The variable with the user name for every registry.
pub const USERNAME_VAR: &str = "TOOLCELL_REGISTRY_USERNAME";
/// The variable with the password (or token) for every registry.
pub const PASSWORD_VAR: &str = "TOOLCELL_REGISTRY_PASSWORD";

/// How to authenticate to `registry`, and where that came from (for `-v` logs).
pub(super) fn for_registry(registry: &str) -> Result<(RegistryAuth, String), DistributionError> {
    let error = |why: String| DistributionError::Credentials {
        registry: registry.to_string(),
        why,
    };
    match (
        std::env::var(USERNAME_VAR).ok(),
        std::env::var(PASSWORD_VAR).ok(),
    ) {
        (Some(user), Some(password)) => {
            return Ok((
                RegistryAuth::Basic(user, password),
                format!("{USERNAME_VAR} and {PASSWORD_VAR}"),
            ));
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(error(format!(
                "set both {USERNAME_VAR} and {PASSWORD_VAR}, or neither"
            )));
        }
        (None, None) => {}
    }
    let Some(path) = docker_config_path() else {
        return Ok((RegistryAuth::Anonymous, "no credentials".to_string()));
    };
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(not_found) if not_found.kind() == std::io::ErrorKind::NotFound => {
            return Ok((RegistryAuth::Anonymous, "no credentials".to_string()));
        }
        Err(other) => return Err(error(format!("cannot read {}: {other}", path.display()))),
    };
    let from = path.display().to_string();
    match docker_credential::get_credential_from_reader(std::io::BufReader::new(file), registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            Ok((RegistryAuth::Basic(user, password), from))
        }
        Ok(DockerCredential::IdentityToken(_)) => Err(error(format!(
            "{from} holds an identity token for it, which toolcell cannot use; log in with a \
             user name and password (or a token as the password), or set {USERNAME_VAR} and \
             {PASSWORD_VAR}"
        ))),
        Err(CredentialRetrievalError::NoCredentialConfigured) => {
            Ok((RegistryAuth::Anonymous, "no credentials".to_string()))
        }
        // The helper's own output is not repeated: it may hold a secret.
        Err(CredentialRetrievalError::HelperFailure { helper, .. }) => {
            Err(error(format!("the credential helper {helper} failed")))
        }
        Err(other) => Err(error(format!("{from}: {other}"))),
    }
}

/// `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`.
fn docker_config_path() -> Option<PathBuf> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker")))?;
    Some(dir.join("config.json"))
}
