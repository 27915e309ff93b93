//! The tool model: what a tool is (`info`), how it is named (`names`), its schemas as
//! models see them (`schema`, `strict_schema`), the budget they are compiled under
//! (`schema_budget`), and values checked against them (`validation`).

pub(crate) mod info;
pub mod names;
pub mod schema;
pub(crate) mod schema_budget;
pub mod strict_schema;
pub(crate) mod validation;
