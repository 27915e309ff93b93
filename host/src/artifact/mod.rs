//! A `.wasm` plugin file as toolcell reads and writes it: a component plus toolcell's
//! custom sections.
//!
//! | section | content |
//! |---|---|
//! | `toolcell-manifest` | the manifest (TOML), see `manifest` |
//! | `toolcell-script` | a packed Lua plugin's script, passed to the guest in `load` |
//! | `toolcell-signature` | one Ed25519 signature each, see `signature` |
//!
//! `toolcell pack` appends them to the component at its top level. A manifest may also
//! sit in one of the component's core modules (where a Rust plugin's
//! `toolcell_guest::manifest!` puts it); the top-level one wins. Custom sections do not
//! change what a component does, so the code toolcell compiles is the file without its
//! top-level toolcell sections ([`Artifact::code`]): packing, re-packing and signing
//! never change the compiled code or its cache entry.

pub mod integrity;
pub mod manifest;
pub mod signature;
pub mod wit_version;

use std::ops::Range;

use wasmparser::{Encoding, Parser, Payload};

use crate::artifact::manifest::MANIFEST_SECTION;

/// The custom section that holds a packed Lua plugin's script.
pub const SCRIPT_SECTION: &str = "toolcell-script";

/// The custom section that holds one signature.
pub const SIGNATURE_SECTION: &str = "toolcell-signature";

/// The WIT package every plugin targets, without its version.
pub const WIT_PACKAGE: &str = "toolcell:plugin";

/// The interface every plugin exports.
const GUEST_INTERFACE: &str = "toolcell:plugin/guest";

/// A parsed plugin file.
#[derive(Debug)]
pub struct Artifact<'a> {
    bytes: &'a [u8],
    /// Every top-level section: its full byte range (header included) and, for custom
    /// sections, its name.
    sections: Vec<(Range<usize>, Option<&'a str>)>,
    top_manifests: Vec<&'a [u8]>,
    module_manifests: Vec<&'a [u8]>,
    scripts: Vec<&'a [u8]>,
    signatures: Vec<&'a [u8]>,
    /// The names of the component's top-level imports and exports.
    imports: Vec<&'a str>,
    exports: Vec<&'a str>,
}

/// Why a file is not a usable plugin component.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArtifactError(pub String);

impl<'a> Artifact<'a> {
    /// Parses `bytes` as a component and finds toolcell's sections in it.
    pub fn parse(bytes: &'a [u8]) -> Result<Artifact<'a>, ArtifactError> {
        let mut artifact = Artifact {
            bytes,
            sections: Vec::new(),
            top_manifests: Vec::new(),
            module_manifests: Vec::new(),
            scripts: Vec::new(),
            signatures: Vec::new(),
            imports: Vec::new(),
            exports: Vec::new(),
        };
        // The encodings of the component and of the modules and components nested in
        // it, outermost first.
        let mut nesting: Vec<Encoding> = Vec::new();
        let mut section_start = 0;
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|error| {
                ArtifactError(format!("not a valid wasm component: {}", error.message()))
            })?;
            match &payload {
                Payload::Version {
                    encoding, range, ..
                } => {
                    if nesting.is_empty() {
                        if *encoding != Encoding::Component {
                            return Err(ArtifactError(
                                "a core wasm module, not a component: build it as a component \
                                 (for Rust, --target wasm32-wasip2)"
                                    .to_string(),
                            ));
                        }
                        section_start = range.end;
                    }
                    nesting.push(*encoding);
                    continue;
                }
                Payload::End(_) => {
                    nesting.pop();
                    continue;
                }
                _ => {}
            }
            let top_level = nesting.len() == 1;
            if let Payload::CustomSection(reader) = &payload {
                let (name, data) = (reader.name(), reader.data());
                match (top_level, name) {
                    (true, MANIFEST_SECTION) => artifact.top_manifests.push(data),
                    (true, SCRIPT_SECTION) => artifact.scripts.push(data),
                    (true, SIGNATURE_SECTION) => artifact.signatures.push(data),
                    // A manifest inside one of the component's own core modules.
                    (false, MANIFEST_SECTION)
                        if nesting.len() == 2 && nesting[1] == Encoding::Module =>
                    {
                        artifact.module_manifests.push(data)
                    }
                    _ => {}
                }
            }
            if top_level {
                match &payload {
                    Payload::ComponentImportSection(reader) => {
                        for import in reader.clone() {
                            let import = import.map_err(|error| {
                                ArtifactError(format!("unreadable import: {}", error.message()))
                            })?;
                            artifact.imports.push(import.name.name);
                        }
                    }
                    Payload::ComponentExportSection(reader) => {
                        for export in reader.clone() {
                            let export = export.map_err(|error| {
                                ArtifactError(format!("unreadable export: {}", error.message()))
                            })?;
                            artifact.exports.push(export.name.name);
                        }
                    }
                    _ => {}
                }
                if let Some((_, content)) = payload.as_section() {
                    let name = match &payload {
                        Payload::CustomSection(reader) => Some(reader.name()),
                        _ => None,
                    };
                    artifact.sections.push((section_start..content.end, name));
                    section_start = content.end;
                }
            }
        }
        Ok(artifact)
    }

    /// The names of the component's top-level imports (interfaces such as
    /// `toolcell:plugin/host@0.2.0`, or functions), in file order.
    pub fn imports(&self) -> &[&'a str] {
        &self.imports
    }

    /// The names of the component's top-level exports, in file order.
    pub fn exports(&self) -> &[&'a str] {
        &self.exports
    }

    /// The manifest's bytes: the top-level section, else the one in a core module.
    /// More than one in the same place is an error.
    pub fn manifest(&self) -> Result<Option<&'a [u8]>, ArtifactError> {
        for (found, place) in [
            (&self.top_manifests, "at the top level"),
            (&self.module_manifests, "in its core modules"),
        ] {
            match found.as_slice() {
                [] => continue,
                [one] => return Ok(Some(one)),
                _ => {
                    return Err(ArtifactError(format!(
                        "the component has {} `{MANIFEST_SECTION}` sections {place}; it must have one",
                        found.len()
                    )));
                }
            }
        }
        Ok(None)
    }

    /// A packed Lua plugin's script, if this is one.
    pub fn script(&self) -> Result<Option<&'a [u8]>, ArtifactError> {
        match self.scripts.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            more => Err(ArtifactError(format!(
                "the component has {} `{SCRIPT_SECTION}` sections; it must have at most one",
                more.len()
            ))),
        }
    }

    /// The content of every signature section, in file order.
    pub fn signatures(&self) -> &[&'a [u8]] {
        &self.signatures
    }

    /// The version of `toolcell:plugin` the component was built against, from the
    /// names of its imports and exports.
    pub fn wit_version(&self) -> Result<semver::Version, ArtifactError> {
        if !self
            .exports
            .iter()
            .any(|name| interface_of(name) == GUEST_INTERFACE)
        {
            return Err(ArtifactError(format!(
                "the component does not export {GUEST_INTERFACE}: it is not a toolcell plugin"
            )));
        }
        let mut version: Option<semver::Version> = None;
        let plugin_names = self.imports.iter().chain(&self.exports);
        for name in plugin_names.filter(|name| name.starts_with(WIT_PACKAGE)) {
            let Some((_, text)) = name.split_once('@') else {
                return Err(ArtifactError(format!(
                    "{name} has no version; toolcell plugins name {WIT_PACKAGE}@VERSION"
                )));
            };
            let found = semver::Version::parse(text)
                .map_err(|error| ArtifactError(format!("{name}: bad version ({error})")))?;
            match &version {
                Some(seen) if *seen != found => {
                    return Err(ArtifactError(format!(
                        "the component mixes {WIT_PACKAGE}@{seen} and @{found}"
                    )));
                }
                _ => version = Some(found),
            }
        }
        version.ok_or_else(|| ArtifactError(format!("no {WIT_PACKAGE} interface found")))
    }

    /// The bytes toolcell compiles: the file without its top-level toolcell sections.
    pub fn code(&self) -> Vec<u8> {
        self.without(&[MANIFEST_SECTION, SCRIPT_SECTION, SIGNATURE_SECTION])
    }

    /// The bytes a signature covers: the file without its signature sections.
    pub fn signed_content(&self) -> Vec<u8> {
        self.without(&[SIGNATURE_SECTION])
    }

    /// The file without the top-level custom sections named in `names`, plus new
    /// custom sections appended in the order given.
    pub fn rewrite(&self, remove: &[&str], append: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = self.without(remove);
        for (name, data) in append {
            let section = wasm_encoder::CustomSection {
                name: (*name).into(),
                data: (*data).into(),
            };
            wasm_encoder::ComponentSection::append_to_component(&section, &mut out);
        }
        out
    }

    fn without(&self, names: &[&str]) -> Vec<u8> {
        let preamble_end = self
            .sections
            .first()
            .map_or(self.bytes.len(), |s| s.0.start);
        let mut out = self.bytes[..preamble_end].to_vec();
        for (range, name) in &self.sections {
            if name.is_some_and(|name| names.contains(&name)) {
                continue;
            }
            out.extend_from_slice(&self.bytes[range.clone()]);
        }
        out
    }
}

/// `toolcell:plugin/guest@0.1.0` → `toolcell:plugin/guest`.
fn interface_of(name: &str) -> &str {
    name.split_once('@')
        .map_or(name, |(interface, _)| interface)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A component exporting nothing, with these custom sections.
    pub(crate) fn component(sections: &[(&str, &[u8])]) -> Vec<u8> {
        let mut component = wasm_encoder::Component::new();
        for (name, data) in sections {
            component.section(&wasm_encoder::CustomSection {
                name: (*name).into(),
                data: (*data).into(),
            });
        }
        component.finish()
    }

    #[test]
    fn toolcell_sections_are_found_and_can_be_removed_and_added() {
        let bytes = component(&[
            ("other", b"keep"),
            (MANIFEST_SECTION, b"id = \"x\""),
            (SCRIPT_SECTION, b"return 1"),
        ]);
        let artifact = Artifact::parse(&bytes).expect("parses");
        assert_eq!(artifact.manifest(), Ok(Some(&b"id = \"x\""[..])));
        assert_eq!(artifact.script(), Ok(Some(&b"return 1"[..])));
        assert!(artifact.signatures().is_empty());

        let code = artifact.code();
        let stripped = Artifact::parse(&code).expect("the code parses");
        assert_eq!(stripped.manifest(), Ok(None));
        assert_eq!(stripped.script(), Ok(None));
        assert_eq!(code, component(&[("other", b"keep")]));

        let signed = artifact.rewrite(&[], &[(SIGNATURE_SECTION, b"sig")]);
        let signed = Artifact::parse(&signed).expect("parses");
        assert_eq!(signed.signatures(), &[&b"sig"[..]]);
        assert_eq!(signed.signed_content(), bytes);
    }

    #[test]
    fn duplicates_and_modules_are_refused() {
        let bytes = component(&[(MANIFEST_SECTION, b"a"), (MANIFEST_SECTION, b"b")]);
        let artifact = Artifact::parse(&bytes).expect("parses");
        assert!(artifact.manifest().is_err());
        let module = wasm_encoder::Module::new().finish();
        let error = Artifact::parse(&module).expect_err("a module is refused");
        assert!(error.0.contains("not a component"), "{error}");
        let error = Artifact::parse(b"\0asm junk").expect_err("junk is refused");
        assert!(error.0.contains("not a valid wasm component"), "{error}");
    }

    #[test]
    fn a_component_without_the_guest_export_is_not_a_plugin() {
        let bytes = component(&[]);
        let artifact = Artifact::parse(&bytes).expect("parses");
        let error = artifact.wit_version().expect_err("no plugin interface");
        assert!(
            error.0.contains("does not export toolcell:plugin/guest"),
            "{error}"
        );
    }
}
