//! Support for toolcell's integration tests: real plugins loaded into real sandboxes,
//! and a real HTTP server on 127.0.0.1.

pub mod http_server;
