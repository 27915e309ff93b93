//! Which loaded plugins register, and in what order, given what their manifests
//! `require` and `conflict` with.
//!
//! The rules, chosen so that a plugin can refuse only itself and move only itself later:
//!
//! - a plugin that `conflicts` with a loaded plugin is not registered (the one that
//!   names the conflict, never the one it names);
//! - a plugin is registered only when each of its requirements finds exactly one
//!   registered plugin (by its id; a name without a namespace also finds a plugin of
//!   that name in any namespace), in a version the requirement accepts; a plugin left
//!   out leaves out its dependents in turn;
//! - registration follows file order, except that a plugin waits for the plugins it
//!   requires: of the plugins whose requirements have registered, the first in file
//!   order goes next. A plugin without requirements is never registered after one that
//!   comes after it in file order, so requiring cannot take a tool name from an
//!   independent plugin. Plugins that require each other in a cycle register in file
//!   order once nothing else holds them back.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::artifact::manifest::{Manifest, Requirement};
use crate::base::fast_map::FastMap;
use crate::runtime::diagnostic::{Diagnostic, DiagnosticKind};

use super::plugin::PluginEntry;

/// What [`resolve`] decided.
pub(super) struct Resolution {
    /// The plugins that register (indices into the runtime's plugins), in order.
    pub order: Vec<usize>,
    /// The plugins that do not, each with the error that says why.
    pub refused: Vec<(usize, Diagnostic)>,
}

/// Decides which of `present` (indices of `plugins` that loaded and hold their id, in
/// file order) register, and in which order.
pub(super) fn resolve(plugins: &[PluginEntry], present: &[usize]) -> Resolution {
    let manifest = |index: usize| plugin_manifest(&plugins[index]);
    if present
        .iter()
        .all(|&index| manifest(index).dependencies.is_empty())
    {
        return Resolution {
            order: present.to_vec(),
            refused: Vec::new(),
        };
    }
    let graph = Graph::new(plugins, present);
    let mut refused: Vec<(usize, Diagnostic)> = Vec::new();
    // By position in `present`: whether it does not register.
    let mut out: Vec<bool> = vec![false; present.len()];
    for (position, &index) in present.iter().enumerate() {
        let conflict = manifest(index)
            .dependencies
            .conflicts
            .iter()
            .find_map(|id| graph.find(id, position).first().copied());
        if let Some(other) = conflict {
            out[position] = true;
            refused.push((index, graph.conflict(index, present[other])));
        }
    }
    // A plugin left out can leave out its dependents: repeat until nothing changes.
    let mut requirements: Vec<Option<Vec<usize>>> = vec![None; present.len()];
    loop {
        let mut changed = false;
        for (position, &index) in present.iter().enumerate() {
            if out[position] {
                continue;
            }
            let mut found = Vec::new();
            for requirement in &manifest(index).dependencies.requires {
                match graph.requirement(position, requirement, &out) {
                    Ok(other) => found.push(other),
                    Err(diagnostic) => {
                        out[position] = true;
                        refused.push((index, diagnostic));
                        changed = true;
                        break;
                    }
                }
            }
            requirements[position] = Some(found);
        }
        if !changed {
            break;
        }
    }
    Resolution {
        order: registration_order(present, &out, &requirements),
        refused,
    }
}

/// The registered plugins' order: file order, each plugin after those it requires
/// (Kahn's algorithm, taking the first in file order among the plugins ready); what a
/// cycle holds back comes last, in file order.
fn registration_order(
    present: &[usize],
    out: &[bool],
    requirements: &[Option<Vec<usize>>],
) -> Vec<usize> {
    let mut waiting_on: Vec<usize> = vec![0; present.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); present.len()];
    for (position, found) in requirements.iter().enumerate() {
        if out[position] {
            continue;
        }
        for &required in found.iter().flatten() {
            waiting_on[position] += 1;
            dependents[required].push(position);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..present.len())
        .filter(|&position| !out[position] && waiting_on[position] == 0)
        .map(Reverse)
        .collect();
    let mut placed = vec![false; present.len()];
    let mut order = Vec::with_capacity(present.len());
    while let Some(Reverse(position)) = ready.pop() {
        placed[position] = true;
        order.push(present[position]);
        for &dependent in &dependents[position] {
            waiting_on[dependent] -= 1;
            if waiting_on[dependent] == 0 {
                ready.push(Reverse(dependent));
            }
        }
    }
    order.extend(
        (0..present.len())
            .filter(|&position| !out[position] && !placed[position])
            .map(|position| present[position]),
    );
    order
}

/// The present plugins by id and by name, to find what a manifest names.
struct Graph<'a> {
    plugins: &'a [PluginEntry],
    present: &'a [usize],
    /// Id → position in `present`.
    by_id: FastMap<&'a str, usize>,
    /// Name (the id's last segment) → positions in `present`, in file order.
    by_name: FastMap<&'a str, Vec<usize>>,
}

impl<'a> Graph<'a> {
    fn new(plugins: &'a [PluginEntry], present: &'a [usize]) -> Graph<'a> {
        let mut by_id = FastMap::default();
        let mut by_name: FastMap<&str, Vec<usize>> = FastMap::default();
        for (position, &index) in present.iter().enumerate() {
            let id = plugin_manifest(&plugins[index]).id.as_str();
            by_id.insert(id, position);
            let name = id.rsplit('/').next().unwrap_or(id);
            by_name.entry(name).or_default().push(position);
        }
        Graph {
            plugins,
            present,
            by_id,
            by_name,
        }
    }

    /// The positions of the present plugins that `id`, in the manifest of the plugin
    /// at `own`, names: the one with that id, else, for a name without a namespace,
    /// every other plugin of that name.
    fn find(&self, id: &str, own: usize) -> Vec<usize> {
        if let Some(&position) = self.by_id.get(id) {
            return vec![position];
        }
        if id.contains('/') {
            return Vec::new();
        }
        let mut found = self.by_name.get(id).cloned().unwrap_or_default();
        found.retain(|&position| position != own);
        found
    }

    /// The position of the plugin that satisfies `requirement` of the plugin at `own`,
    /// or the error saying why none does; `out` marks the plugins that do not register.
    fn requirement(
        &self,
        own: usize,
        requirement: &Requirement,
        out: &[bool],
    ) -> Result<usize, Diagnostic> {
        let found = self.find(&requirement.id, own);
        let (kind, problem) = match found.as_slice() {
            [] => (
                DiagnosticKind::PluginNotInstalled,
                "no loaded plugin has that id".to_string(),
            ),
            [one] if out[*one] => (
                DiagnosticKind::PluginNotInstalled,
                format!("{}, which is not loaded either", self.described(*one)),
            ),
            [one] => {
                let version = &self.manifest(*one).version;
                if requirement.versions.matches(version) {
                    return Ok(*one);
                }
                (
                    DiagnosticKind::PluginVersionMismatch,
                    format!("{} does not satisfy it", self.described(*one)),
                )
            }
            several => {
                let named: Vec<String> = several
                    .iter()
                    .map(|&position| self.described(position))
                    .collect();
                (
                    DiagnosticKind::PluginAmbiguous,
                    format!(
                        "it names {}; give the id with its namespace",
                        named.join(" and ")
                    ),
                )
            }
        };
        Err(Diagnostic::error(
            self.plugins[self.present[own]].file.path.clone(),
            kind,
            format!(
                "{} requires plugin {requirement}, but {problem}; it is not loaded",
                self.described(own)
            ),
        ))
    }

    /// The error of plugin `index`, which conflicts with the plugin at `other`.
    fn conflict(&self, index: usize, other: usize) -> Diagnostic {
        Diagnostic::error(
            self.plugins[index].file.path.clone(),
            DiagnosticKind::PluginConflict,
            format!(
                "{} conflicts with {}, which loaded; it is not loaded (remove one of the two)",
                self.described_at(index),
                self.described_at(other)
            ),
        )
    }

    fn manifest(&self, position: usize) -> &Manifest {
        plugin_manifest(&self.plugins[self.present[position]])
    }

    /// `plugin 'acme/x' 1.2.0 (x.wasm)`, for the plugin at `position` in `present`.
    fn described(&self, position: usize) -> String {
        self.described_at(self.present[position])
    }

    /// As [`Graph::described`], for the plugin at `index` in the runtime's plugins.
    fn described_at(&self, index: usize) -> String {
        let plugin = &self.plugins[index];
        let manifest = plugin_manifest(plugin);
        format!(
            "plugin '{}' {} ({})",
            manifest.id,
            manifest.version,
            plugin.file.display_name()
        )
    }
}

fn plugin_manifest(plugin: &PluginEntry) -> &Manifest {
    &plugin
        .info
        .as_ref()
        .expect("a present plugin loaded")
        .manifest
}
