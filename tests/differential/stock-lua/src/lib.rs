//! Nothing: this package exists so that cargo fetches the stock lua-src (see Cargo.toml).
