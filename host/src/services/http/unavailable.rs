//! Stands in for the HTTP client when toolcell is built without the `http` feature: no
//! client can be made, so every request a plugin starts fails, saying why.

use std::convert::Infallible;

use super::{HttpError, HttpPolicy, HttpSettings, Request, Response};

/// A plugin's HTTP client, which this build cannot make.
#[derive(Debug, Clone)]
pub struct PluginHttp {
    never: Infallible,
}

impl PluginHttp {
    /// Always fails: this toolcell was built without the `http` feature.
    pub fn new(_: HttpPolicy, _: HttpSettings) -> Result<Self, HttpError> {
        Err(HttpError::Other(
            "plugins cannot make HTTP requests: this toolcell was built without the `http` \
             feature"
                .to_string(),
        ))
    }

    /// Never runs: no client exists.
    pub async fn fetch(&self, _: Request) -> Result<Response, HttpError> {
        match self.never {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_client_can_be_made_and_the_error_says_why() {
        let error =
            PluginHttp::new(HttpPolicy::default(), HttpSettings::default()).expect_err("no client");
        assert_eq!(
            error.to_string(),
            "HTTP request failed: plugins cannot make HTTP requests: this toolcell was built \
             without the `http` feature"
        );
    }
}
