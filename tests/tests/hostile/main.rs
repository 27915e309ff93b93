//! The hostile-plugin suite: every plugin in `tests/hostile/` attacks the runtime one
//! way, and its test asserts the exact outcome, that the host is alive, that a canary
//! tool in another plugin still answers, and that nothing outside the granted root
//! changed (see `arena`). The catalogue (`catalogue`) is the table of attacks; this
//! harness runs one trial per attack and prints the figures docs/security.md publishes.
//!
//! Run it with `cargo test -p toolcell-tests --test hostile`; name filters work as
//! usual (`-- network::`).

mod arena;
mod attack;
mod catalogue;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use libtest_mimic::{Arguments, Trial};

use attack::Category;

/// Per category: attacks tried, contained, and escaped (something outside the granted
/// root changed). A host crash would end this process, so it has no counter: the
/// figures are printed only when the host survived every attack.
type Tally = BTreeMap<Category, (usize, usize, usize)>;

fn main() {
    let arguments = Arguments::from_args();
    let tally: Arc<Mutex<Tally>> = Arc::default();
    let attacks = catalogue::attacks();
    let mut counts: BTreeMap<Category, usize> = BTreeMap::new();
    for attack in &attacks {
        *counts.entry(attack.category).or_default() += 1;
    }
    let published = Trial::test("security_doc::figures_match_the_catalogue", move || {
        published_figures_match(&counts).map_err(Into::into)
    });
    let trials = attacks
        .into_iter()
        .map(|attack| {
            let tally = tally.clone();
            let name = format!("{}::{}", attack.category, attack.name);
            Trial::test(name, move || {
                let result = arena::run(&attack);
                let mut tally = tally.lock().expect("tally");
                let entry = tally.entry(attack.category).or_default();
                entry.0 += 1;
                match result {
                    Ok(()) => {
                        entry.1 += 1;
                        Ok(())
                    }
                    Err(failure) => {
                        entry.2 += usize::from(failure.escaped);
                        Err(format!("{}: {}", attack.what, failure.message).into())
                    }
                }
            })
        })
        .chain([published])
        .collect();
    let conclusion = libtest_mimic::run(&arguments, trials);
    print_figures(&tally.lock().expect("tally"));
    conclusion.exit();
}

/// Checks that docs/security.md publishes the catalogue's figures: a row
/// `| CATEGORY | N | N |` per category and the summary line.
fn published_figures_match(counts: &BTreeMap<Category, usize>) -> Result<(), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/security.md");
    let page = std::fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))?;
    for (category, count) in counts {
        let row = format!("| {} | {count} | {count} |", category.title());
        if !page.lines().any(|line| line.starts_with(&row)) {
            return Err(format!("docs/security.md has no row starting {row:?}"));
        }
    }
    let total: usize = counts.values().sum();
    let summary = format!("{total} attacks tried, {total} contained, 0 host crashes, 0 escapes");
    if !page.contains(&summary) {
        return Err(format!("docs/security.md does not say {summary:?}"));
    }
    Ok(())
}

/// The attack table of docs/security.md, for the attacks that ran.
fn print_figures(tally: &Tally) {
    if tally.is_empty() {
        return;
    }
    println!("\n| category | attacks | contained |");
    println!("|---|---|---|");
    for category in Category::ALL {
        if let Some((tried, contained, _)) = tally.get(&category) {
            println!("| {} | {tried} | {contained} |", category.title());
        }
    }
    let tried: usize = tally.values().map(|entry| entry.0).sum();
    let contained: usize = tally.values().map(|entry| entry.1).sum();
    let escaped: usize = tally.values().map(|entry| entry.2).sum();
    println!("\n{tried} attacks tried, {contained} contained, 0 host crashes, {escaped} escapes\n");
}
