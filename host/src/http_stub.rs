//! TEMPORARY: stand-in for the http module being written; removed before commit.
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub enum Method {
    Get,
    Post,
}
pub struct Request {
    pub method: Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub max_response_bytes: u64,
    pub max_redirects: usize,
}
impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 4 << 20,
            max_redirects: 5,
        }
    }
}
#[derive(Debug, Clone, Default)]
pub struct HttpPolicy;
impl HttpPolicy {
    pub fn new(_g: Vec<HostGrant>, _p: bool) -> Self {
        HttpPolicy
    }
}
#[derive(Debug, Clone)]
pub struct HostGrant;
impl std::str::FromStr for HostGrant {
    type Err = String;
    fn from_str(_s: &str) -> Result<Self, String> {
        Ok(HostGrant)
    }
}
pub struct PluginHttp;
impl PluginHttp {
    pub fn new(_p: HttpPolicy, _s: HttpSettings) -> Result<Self, HttpError> {
        Ok(PluginHttp)
    }
    pub async fn fetch(&self, _r: Request) -> Result<Response, HttpError> {
        Err(HttpError("http is not available yet".into()))
    }
}
